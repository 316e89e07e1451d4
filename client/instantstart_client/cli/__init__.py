"""``instantstart``: the command line of the InstantStart HTTP API.

Every command is one or more calls of :class:`instantstart_client.api.InstantStartClient` (SigV4-signed, with the
botocore credential chain); the CLI has no logic the API lacks. Human tables by default, the raw
JSON answers with ``--json``.

Exit codes: 0 success; 1 the watched operation FAILED/CANCELLED, or the user aborted; 2 the API
answered 4xx (or the URL/region/credentials are missing); 3 the API answered 5xx or could not be
reached; 4 ``--wait-timeout`` passed before the operation ended; 130 interrupted while waiting.

The commands live in one module per area, each with its Typer sub-app (``clusters``, ``operations``, ``catalog``,
``groups``, ``nodes`` (with the day-2 HyperPod operations of ``clusters``), ``governance``, ``autoscaling``,
``features``, ``jobs``, ``mlflow``, ``inference`` (``models`` and ``deployments``) and ``endpoints``); what they
share is in ``common``; the root group's class (``repeats.RefuseRepeatsGroup``) refuses a single-value option given
twice, in any command (exit 2, naming it). This module joins them under ``app`` with the global options and ``demo``.
``InstantStartClient``, ``_sleep`` and ``_monotonic`` are looked up here when a command runs, so replacing them on
this package (tests do) reaches every command.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated

import typer

from instantstart_client import __version__
from instantstart_client.api import API_URL_ENV, REGION_ENV, InstantStartClient
from instantstart_client.cli.autoscaling import autoscaling_app
from instantstart_client.cli.catalog import catalog_app
from instantstart_client.cli.clusters import clusters_app
from instantstart_client.cli.common import (
    EXIT_CLIENT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_OPERATION_FAILED,
    EXIT_SERVER_ERROR,
    EXIT_WAIT_TIMEOUT,
    CliState,
    JsonOption,
    _state,
    handle_errors,
)
from instantstart_client.cli.endpoints import endpoints_app
from instantstart_client.cli.features import FEATURE_KEYS, _feature_body, features_app
from instantstart_client.cli.governance import governance_app
from instantstart_client.cli.groups import groups_app
from instantstart_client.cli.inference import deployments_app, models_app
from instantstart_client.cli.jobs import jobs_app
from instantstart_client.cli.mlflow import mlflow_app
from instantstart_client.cli.nodes import nodes_app
from instantstart_client.cli.operations import operations_app
from instantstart_client.cli.repeats import RefuseRepeatsGroup

__all__ = [
    "EXIT_CLIENT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OPERATION_FAILED",
    "EXIT_SERVER_ERROR",
    "EXIT_WAIT_TIMEOUT",
    "FEATURE_KEYS",
    "CliState",
    "InstantStartClient",
    "_feature_body",
    "app",
    "main",
]

_sleep: Callable[[float], None] = time.sleep
_monotonic: Callable[[], float] = time.monotonic

app = typer.Typer(
    name="instantstart",
    cls=RefuseRepeatsGroup,
    help="InstantStart Serverless: create and operate SageMaker HyperPod clusters on EKS through the "
    "InstantStart HTTP API (requests are SigV4-signed with your AWS credentials).",
    epilog="Exit codes: 0 ok, 1 operation failed or aborted, 2 API 4xx / configuration, "
    "3 API 5xx or unreachable, 4 wait timeout, 130 interrupted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(clusters_app, name="clusters")
app.add_typer(operations_app, name="operations")
app.add_typer(catalog_app, name="catalog")
app.add_typer(groups_app, name="groups")
app.add_typer(nodes_app, name="nodes")
app.add_typer(governance_app, name="governance")
app.add_typer(autoscaling_app, name="autoscaling")
app.add_typer(features_app, name="features")
app.add_typer(jobs_app, name="jobs")
app.add_typer(mlflow_app, name="mlflow")
app.add_typer(models_app, name="models")
app.add_typer(deployments_app, name="deployments")
app.add_typer(endpoints_app, name="endpoints")


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"instantstart {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    api_url: Annotated[
        str | None,
        typer.Option("--api-url", envvar=API_URL_ENV, help="Base URL of the InstantStart API.", show_default=False),
    ] = None,
    region: Annotated[
        str | None,
        typer.Option(
            "--region",
            envvar=REGION_ENV,
            help="Region to sign requests for (default: from the execute-api URL or the AWS profile).",
            show_default=False,
        ),
    ] = None,
    json_output: JsonOption = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version_callback, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Global options (they go before the command group, e.g. ``instantstart --json clusters list``)."""
    state = CliState(api_url=api_url, region=region, json_output=json_output)
    ctx.obj = state
    ctx.call_on_close(state.close)


# -- demo ---------------------------------------------------------------------------------------------


@app.command("demo")
@handle_errors
def demo(
    ctx: typer.Context,
    tag: Annotated[str, typer.Option("--tag", help="Cluster tag.")] = "demo",
    az: Annotated[str, typer.Option("--az", help="Availability Zone.")] = "us-west-2c",
    instance_type: Annotated[str, typer.Option("--instance-type", help="HyperPod instance type.")] = "ml.g6.4xlarge",
    count: Annotated[int, typer.Option("--count", help="Number of instances.")] = 1,
    poll_interval: Annotated[float, typer.Option("--poll-interval", min=0.1, help="Seconds between polls.")] = 1.0,
) -> None:
    """The article's walkthrough: inspect clusters and catalog, create a cluster, follow it, summarise."""
    from instantstart_client.demo import run_demo

    state = _state(ctx)
    code = run_demo(
        state.client(),
        state.console,
        cluster_tag=tag,
        availability_zone=az,
        instance_type=instance_type,
        instance_count=count,
        poll_interval=poll_interval,
    )
    raise typer.Exit(code)


def main() -> None:
    """Entry point of the ``instantstart`` console script."""
    app(prog_name="instantstart")
