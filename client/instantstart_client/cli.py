"""``instantstart``: the command line of the InstantStart HTTP API.

Every command is one or more calls of :class:`instantstart_client.api.InstantStartClient` (SigV4-signed, with the
botocore credential chain); the CLI has no logic the API lacks. Human tables by default, the raw
JSON answers with ``--json``.

Exit codes: 0 success; 1 the watched operation FAILED/CANCELLED, or the user aborted; 2 the API
answered 4xx (or the URL/region/credentials are missing); 3 the API answered 5xx or could not be
reached; 4 ``--wait-timeout`` passed before the operation ended; 130 interrupted while waiting.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar, cast

import typer
from rich.console import Console
from rich.table import Table

from instantstart_client import __version__
from instantstart_client.api import (
    API_URL_ENV,
    REGION_ENV,
    ApiConnectionError,
    ApiError,
    ConfigurationError,
    InstantStartClient,
)
from instantstart_client.progress import DEFAULT_POLL_INTERVAL, WatchResult, watch_operation
from instantstart_client.render import (
    change_result_table,
    cluster_overview_table,
    clusters_table,
    esc,
    events_table,
    failed_stage,
    hyperpod_operations_table,
    instance_types_table,
    nodes_table,
    operation_table,
    operations_table,
    print_summary,
    resources_table,
    stages_table,
    zones_table,
)
from instantstart_client.shapes import (
    DEEP_HEALTH_CHECKS,
    EVENT_LEVELS,
    HYPERPOD_OPERATION_STATUSES,
    HYPERPOD_OPERATION_TYPES,
    InstanceGroupSpec,
    Operation,
)

EXIT_OPERATION_FAILED = 1
EXIT_CLIENT_ERROR = 2
EXIT_SERVER_ERROR = 3
EXIT_WAIT_TIMEOUT = 4
EXIT_INTERRUPTED = 130

P = ParamSpec("P")
R = TypeVar("R")

app = typer.Typer(
    name="instantstart",
    help="InstantStart Serverless: create and operate SageMaker HyperPod clusters on EKS through the "
    "InstantStart HTTP API (requests are SigV4-signed with your AWS credentials).",
    epilog="Exit codes: 0 ok, 1 operation failed or aborted, 2 API 4xx / configuration, "
    "3 API 5xx or unreachable, 4 wait timeout, 130 interrupted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
clusters_app = typer.Typer(help="Create, inspect, retry and delete clusters.", no_args_is_help=True)
operations_app = typer.Typer(help="Inspect, follow and cancel long-running operations.", no_args_is_help=True)
catalog_app = typer.Typer(help="What the account and Region can run.", no_args_is_help=True)
app.add_typer(clusters_app, name="clusters")
app.add_typer(operations_app, name="operations")
app.add_typer(catalog_app, name="catalog")
groups_app = typer.Typer(help="List, add, scale, update and delete a cluster's instance groups.", no_args_is_help=True)
app.add_typer(groups_app, name="groups")
nodes_app = typer.Typer(help="List, reboot, replace and delete the nodes of a cluster.", no_args_is_help=True)
app.add_typer(nodes_app, name="nodes")
governance_app = typer.Typer(
    help="Task governance of a cluster: the scheduler config (priority classes, fair share) and team compute quotas.",
    no_args_is_help=True,
)
app.add_typer(governance_app, name="governance")


@dataclass
class CliState:
    """Global options and the lazily created client of one invocation."""

    api_url: str | None = None
    region: str | None = None
    json_output: bool = False
    console: Console = field(default_factory=Console)
    err_console: Console = field(default_factory=lambda: Console(stderr=True))
    _client: InstantStartClient | None = None

    def client(self) -> InstantStartClient:
        """The API client (created on first use, so ``--help`` needs no URL or credentials)."""
        if self._client is None:
            self._client = InstantStartClient(api_url=self.api_url, region=self.region)
        return self._client

    def wants_json(self, local_flag: bool) -> bool:
        """``--json`` given before the command group or after the command."""
        return self.json_output or local_flag

    def close(self) -> None:
        """Close the client's connections."""
        if self._client is not None:
            self._client.close()


JsonOption = Annotated[bool, typer.Option("--json", help="Print the raw JSON answer.")]
TagArgument = Annotated[str, typer.Argument(help="Cluster tag, e.g. demo.", show_default=False)]
IdempotencyOption = Annotated[
    str | None,
    typer.Option(
        "--idempotency-key",
        help="Idempotency-Key header: repeating the request with the same key returns the same operation.",
    ),
]
DedicatedSubnetOption = Annotated[
    bool,
    typer.Option(
        "--dedicated-subnet",
        help="Give the group its own compute subnet (a /20 in the cluster's zone) instead of the zone's shared one "
        "(request field dedicatedSubnet).",
    ),
]
WaitOption = Annotated[
    bool, typer.Option("--wait", help="Follow the operation live until it ends; exit 1 if it fails.")
]
PollOption = Annotated[
    float, typer.Option("--poll-interval", min=0.1, help="Seconds between status polls with --wait.")
]
WaitTimeoutOption = Annotated[
    float | None,
    typer.Option("--wait-timeout", min=1, help="Stop waiting after this many seconds (the operation continues)."),
]


def _state(ctx: typer.Context) -> CliState:
    state = ctx.find_object(CliState)
    if state is None:  # a sub-app invoked on its own (tests); use defaults
        state = CliState()
        ctx.obj = state
    return state


def _echo_json(value: Any) -> None:
    # Plain stdout, not rich: no wrapping or colour codes inside JSON.
    typer.echo(json.dumps(value, indent=2, sort_keys=False))


def _print_api_error(console: Console, exc: ApiError) -> None:
    console.print(
        f"[bold red]Error[/] {exc.status} [bold]{esc(exc.code)}[/]: {esc(exc.message)}", highlight=False, soft_wrap=True
    )
    for detail in exc.details:
        where = detail.get("field") or "-"
        line = f"  - {where}: {detail['message']}" if detail.get("message") else f"  - {where}"
        if detail.get("allowedValues"):
            line += f" (allowed: {detail['allowedValues']})"
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Map client errors to a message on stderr and the documented exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        err = Console(stderr=True)
        try:
            return func(*args, **kwargs)
        except ApiError as exc:
            state = getattr(kwargs.get("ctx"), "obj", None)
            if kwargs.get("as_json") or (isinstance(state, CliState) and state.json_output):
                # --json: the API's error JSON, unchanged, for scripts (stderr keeps stdout for answers).
                err.print_json(json.dumps(exc.error_response()))
            else:
                _print_api_error(err, exc)
            raise typer.Exit(EXIT_CLIENT_ERROR if 400 <= exc.status < 500 else EXIT_SERVER_ERROR) from exc
        except ApiConnectionError as exc:
            err.print(f"[bold red]Error[/] cannot reach the API: {esc(exc.message)}", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_SERVER_ERROR) from exc
        except ConfigurationError as exc:
            err.print(f"[bold red]Error[/] {esc(exc)}", highlight=False, soft_wrap=True)
            raise typer.Exit(EXIT_CLIENT_ERROR) from exc

    return wrapper


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


# -- waiting ------------------------------------------------------------------------------------------


def _follow(
    state: CliState,
    operation: Operation,
    *,
    as_json: bool,
    poll_interval: float,
    wait_timeout: float | None,
) -> None:
    """Watch ``operation`` to its end, print the outcome, and exit non-zero unless it SUCCEEDED."""
    progress_console = state.err_console if as_json else state.console
    try:
        result = watch_operation(
            state.client(), progress_console, operation, poll_interval=poll_interval, timeout=wait_timeout
        )
    except KeyboardInterrupt:
        state.err_console.print(
            f"\nStopped watching; operation {operation['operationId']} continues. "
            f"Follow it with: instantstart operations get {operation['operationId']} --wait",
            highlight=False,
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    if as_json:
        _echo_json({"operation": result.operation, "cluster": result.cluster})
    else:
        _print_outcome(state, result)
    if result.timed_out:
        raise typer.Exit(EXIT_WAIT_TIMEOUT)
    if not result.succeeded:
        if as_json:
            _print_failure(state.err_console, result)
        raise typer.Exit(EXIT_OPERATION_FAILED)


def _print_failure(console: Console, result: WatchResult) -> None:
    operation = result.operation
    console.print(
        f"[bold red]Operation {esc(operation.get('operationId'))} {esc(operation.get('status'))}[/]", highlight=False
    )
    stage = result.failed_stage
    if stage is not None:
        error = stage.get("error") or {"code": "Unknown", "message": "no error recorded"}
        console.print(
            f"Stage [bold]{esc(stage['name'])}[/] failed: "
            f"[bold]{esc(error.get('code'))}[/]: {esc(error.get('message'))}",
            highlight=False,
            soft_wrap=True,
        )
        tag = operation.get("clusterTag")
        console.print(
            f"Retry it with: instantstart clusters retry {tag} {stage['name']} --wait",
            markup=False,
            highlight=False,
        )
    elif operation.get("error"):
        error = operation["error"] or {"code": "", "message": ""}
        console.print(
            f"[bold]{esc(error.get('code'))}[/]: {esc(error.get('message'))}", highlight=False, soft_wrap=True
        )


def _print_outcome(state: CliState, result: WatchResult) -> None:
    operation = result.operation
    tag = operation.get("clusterTag")
    if result.timed_out:
        state.err_console.print(
            f"Still {operation.get('status')} when --wait-timeout passed; the operation continues. "
            f"Follow it with: instantstart operations get {operation.get('operationId')} --wait",
            markup=False,
            highlight=False,
        )
        return
    if operation.get("result"):
        (state.console if result.succeeded else state.err_console).print(change_result_table(operation))
    if not result.succeeded:
        _print_failure(state.err_console, result)
        return
    if operation.get("type") == "DELETE_CLUSTER":
        state.console.print(f"Cluster [bold]{esc(tag)}[/] deleted.", highlight=False)
        return
    if result.cluster is not None:
        state.console.print(
            f"Cluster [bold]{esc(tag)}[/] is [green]{esc(result.cluster.get('status'))}[/]. Summary:", highlight=False
        )
        print_summary(state.console, result.cluster)


def _print_started(state: CliState, operation: Operation) -> None:
    op_id = operation.get("operationId")
    state.console.print(
        f"{esc(operation.get('type'))} [bold]{esc(operation.get('clusterTag'))}[/]: operation {esc(op_id)} "
        f"{esc(operation.get('status'))}",
        highlight=False,
    )
    state.console.print(
        f"Follow it with: instantstart operations get {op_id} --wait  (or add --wait)", markup=False, highlight=False
    )


# -- clusters -----------------------------------------------------------------------------------------


@clusters_app.command("list")
@handle_errors
def clusters_list(
    ctx: typer.Context,
    max_results: Annotated[
        int | None, typer.Option("--max-results", min=1, help="Page size; prints one page and its token.")
    ] = None,
    next_token: Annotated[str | None, typer.Option("--next-token", help="Token of the page to print.")] = None,
    as_json: JsonOption = False,
) -> None:
    """List clusters (every page, unless --max-results or --next-token asks for one page)."""
    state = _state(ctx)
    client = state.client()
    if max_results is None and next_token is None:
        clusters = list(client.iter_clusters())
        token = None
    else:
        page = client.list_clusters(max_results=max_results, next_token=next_token)
        clusters, token = page.get("clusters") or [], page.get("nextToken")
    if state.wants_json(as_json):
        _echo_json({"clusters": clusters, "nextToken": token})
        return
    state.console.print(clusters_table(clusters))
    if token:
        state.console.print(f"More clusters: --next-token {token}", markup=False, highlight=False, soft_wrap=True)


@clusters_app.command("create")
@handle_errors
def clusters_create(
    ctx: typer.Context,
    tag: Annotated[str, typer.Option("--tag", help="Cluster tag (names eks-cluster-<tag>, hp-cluster-<tag>).")],
    az: Annotated[str, typer.Option("--az", help="Availability Zone of the HyperPod compute subnet.")],
    instance_type: Annotated[str, typer.Option("--instance-type", help="HyperPod instance type, e.g. ml.g6.4xlarge.")],
    count: Annotated[
        int, typer.Option("--count", help="Number of instances, at least 1 (the add-ons of the create need a node).")
    ] = 1,
    capacity_type: Annotated[
        str,
        typer.Option("--capacity-type", help="OnDemand, Spot or TrainingPlan (the API says which it accepts)."),
    ] = "OnDemand",
    group_name: Annotated[str, typer.Option("--group-name", help="Instance group name.")] = "accel",
    kubernetes_version: Annotated[
        str | None,
        typer.Option("--kubernetes-version", help="EKS Kubernetes version (API default if unset)."),
    ] = None,
    dedicated_subnet: DedicatedSubnetOption = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a cluster: EKS, dependencies, HyperPod instance group, S3 storage, verification."""
    state = _state(ctx)
    group: InstanceGroupSpec = {
        "instanceGroupName": group_name,
        "instanceType": instance_type,
        "instanceCount": count,
        "capacityType": capacity_type,
    }
    if dedicated_subnet:
        group["dedicatedSubnet"] = True
    operation = state.client().create_cluster(
        tag, az, [group], kubernetes_version=kubernetes_version, idempotency_key=idempotency_key
    )
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@clusters_app.command("import")
@handle_errors
def clusters_import(
    ctx: typer.Context,
    eks_cluster_name: Annotated[str, typer.Option("--eks-cluster-name", help="The existing EKS cluster to import.")],
    tag: Annotated[str, typer.Option("--tag", help="Cluster tag to manage it under.")],
    hyperpod_cluster_name: Annotated[
        str | None,
        typer.Option("--hyperpod-cluster-name", help="An existing HyperPod cluster of this EKS cluster to import."),
    ] = None,
    az: Annotated[
        str | None,
        typer.Option("--az", help="Without --hyperpod-cluster-name: zone of the new compute subnet (API default)."),
    ] = None,
    instance_type: Annotated[
        str | None,
        typer.Option("--instance-type", help="Without --hyperpod-cluster-name (required then): the instance type."),
    ] = None,
    count: Annotated[int, typer.Option("--count", help="Number of instances.")] = 1,
    capacity_type: Annotated[
        str,
        typer.Option("--capacity-type", help="OnDemand, Spot or TrainingPlan (the API says which it accepts)."),
    ] = "OnDemand",
    group_name: Annotated[str, typer.Option("--group-name", help="Instance group name.")] = "accel",
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Import an existing EKS cluster (and its HyperPod cluster); only the missing stages run."""
    state = _state(ctx)
    groups: list[InstanceGroupSpec] | None = None
    if instance_type is not None:
        groups = [
            {
                "instanceGroupName": group_name,
                "instanceType": instance_type,
                "instanceCount": count,
                "capacityType": capacity_type,
            }
        ]
    operation = state.client().import_cluster(
        eks_cluster_name,
        tag,
        hyper_pod_cluster_name=hyperpod_cluster_name,
        availability_zone=az,
        instance_groups=groups,
        idempotency_key=idempotency_key,
    )
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


def _report_operation(
    state: CliState,
    operation: Operation,
    as_json: bool,
    *,
    wait: bool,
    poll_interval: float,
    wait_timeout: float | None,
) -> None:
    """What every command that starts an operation prints: the live progress with ``--wait``, else the 202."""
    json_out = state.wants_json(as_json)
    if wait:
        _follow(state, operation, as_json=json_out, poll_interval=poll_interval, wait_timeout=wait_timeout)
    elif json_out:
        _echo_json(operation)
    else:
        _print_started(state, operation)


@clusters_app.command("get")
@handle_errors
def clusters_get(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """Show a cluster: status, stages, AWS/Kubernetes resources and, when READY, the summary."""
    state = _state(ctx)
    cluster = state.client().get_cluster(tag)
    if state.wants_json(as_json):
        _echo_json(cluster)
        return
    console = state.console
    console.print(cluster_overview_table(cluster))
    if cluster.get("stages"):
        console.print(stages_table(cluster["stages"]))
    console.print(resources_table(cluster))
    stage = failed_stage(cluster)
    if stage is not None:
        error = stage.get("error") or {"code": "Unknown", "message": "no error recorded"}
        console.print(
            f"[red]Stage [bold]{esc(stage['name'])}[/bold] failed: "
            f"{esc(error.get('code'))}: {esc(error.get('message'))}[/]",
            highlight=False,
            soft_wrap=True,
        )
    if cluster.get("status") == "READY":
        print_summary(console, cluster)


@clusters_app.command("stages")
@handle_errors
def clusters_stages(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """Show the stages of a cluster (status, attempts, elapsed, observed status or error)."""
    state = _state(ctx)
    stages = state.client().get_stages(tag)
    if state.wants_json(as_json):
        _echo_json({"stages": stages})
        return
    state.console.print(stages_table(stages))


@clusters_app.command("events")
@handle_errors
def clusters_events(
    ctx: typer.Context,
    tag: TagArgument,
    level: Annotated[
        str | None,
        typer.Option("--level", help=f"Only events of this level: {', '.join(EVENT_LEVELS)}.", show_default=False),
    ] = None,
    instance_group: Annotated[
        str | None, typer.Option("--instance-group", help="Only events of this instance group.", show_default=False)
    ] = None,
    max_results: Annotated[
        int | None, typer.Option("--max-results", min=1, max=100, help="Events per page, 1-100 (API default 20).")
    ] = None,
    next_token: Annotated[str | None, typer.Option("--next-token", help="Token of the page to print.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a page of the cluster's HyperPod events (SageMaker's own), newest first."""
    state = _state(ctx)
    page = state.client().list_cluster_events(
        tag, max_results=max_results, next_token=next_token, level=level, instance_group_name=instance_group
    )
    if state.wants_json(as_json):
        _echo_json(page)
        return
    state.console.print(events_table(page.get("events") or [], page.get("hyperPodClusterName") or tag))
    token = page.get("nextToken")
    if token:
        filters = "".join(
            f" {flag} {value}" for flag, value in (("--level", level), ("--instance-group", instance_group)) if value
        )
        state.console.print(
            f"More events: instantstart clusters events {tag}{filters} --next-token {token}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


@clusters_app.command("retry")
@handle_errors
def clusters_retry(
    ctx: typer.Context,
    tag: TagArgument,
    stage: Annotated[str, typer.Argument(help="The FAILED stage to run again (it and the stages after it).")],
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Retry a FAILED stage; earlier stages are kept, later ones run again."""
    state = _state(ctx)
    operation = state.client().retry_stage(tag, stage, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@clusters_app.command("delete")
@handle_errors
def clusters_delete(
    ctx: typer.Context,
    tag: TagArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a cluster and the AWS and Kubernetes resources it created (asks you to type the tag)."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(f"This deletes cluster '{tag}' and its resources. Type the cluster tag to confirm")
        if typed.strip() != tag:
            state.err_console.print("Aborted: the tag you typed does not match; nothing was deleted.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    operation = state.client().delete_cluster(tag, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@clusters_app.command("operations")
@handle_errors
def clusters_operations(
    ctx: typer.Context,
    tag: TagArgument,
    max_results: Annotated[
        int | None,
        typer.Option("--max-results", min=1, max=100, help="Operations per page, 1-100 (API default 20)."),
    ] = None,
    next_token: Annotated[str | None, typer.Option("--next-token", help="Token of the page to print.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a page of this control plane's operations on a cluster (creates, retries, deletes), newest first."""
    state = _state(ctx)
    page = state.client().list_cluster_operations(tag, max_results=max_results, next_token=next_token)
    if state.wants_json(as_json):
        _echo_json(page)
        return
    state.console.print(operations_table(page.get("operations") or [], tag))
    token = page.get("nextToken")
    if token:
        state.console.print(
            f"More operations: instantstart clusters operations {tag} --next-token {token}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


# -- operations ---------------------------------------------------------------------------------------


@operations_app.command("get")
@handle_errors
def operations_get(
    ctx: typer.Context,
    operation_id: Annotated[str, typer.Argument(help="Operation id (from a 202 answer).")],
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show an operation; with --wait, follow it live until it ends."""
    state = _state(ctx)
    operation = state.client().get_operation(operation_id)
    json_out = state.wants_json(as_json)
    if wait:
        _follow(state, operation, as_json=json_out, poll_interval=poll_interval, wait_timeout=wait_timeout)
    elif json_out:
        _echo_json(operation)
    else:
        state.console.print(operation_table(operation))


@operations_app.command("cancel")
@handle_errors
def operations_cancel(
    ctx: typer.Context,
    operation_id: Annotated[str, typer.Argument(help="Operation id of a PENDING or RUNNING operation.")],
    idempotency_key: IdempotencyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Cancel a running operation: its workflow stops, it ends CANCELLED and its cluster FAILED.

    The cluster can then be deleted (clusters delete tears down whatever exists) or the cancelled stage retried.
    """
    state = _state(ctx)
    operation = state.client().cancel_operation(operation_id, idempotency_key=idempotency_key)
    if state.wants_json(as_json):
        _echo_json(operation)
        return
    state.console.print(operation_table(operation))
    tag = operation.get("clusterTag")
    state.console.print(
        f"Next: instantstart clusters delete {tag}  (tears down what was created), or find the CANCELLED stage "
        f"with instantstart clusters stages {tag} and retry it with instantstart clusters retry {tag} STAGE",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


# -- nodes and HyperPod operations (day 2) ------------------------------------------------------------

NodeIdsArgument = Annotated[list[str], typer.Argument(help="EC2 instance ids of nodes of the cluster (nodes list).")]


@nodes_app.command("list")
@handle_errors
def nodes_list(
    ctx: typer.Context,
    tag: TagArgument,
    instance_group: Annotated[
        str | None, typer.Option("--instance-group", help="Only nodes of this instance group.", show_default=False)
    ] = None,
    max_results: Annotated[
        int | None, typer.Option("--max-results", min=1, max=100, help="Nodes per page, 1-100 (API default 20).")
    ] = None,
    next_token: Annotated[str | None, typer.Option("--next-token", help="Token of the page to print.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Show a page of the cluster's nodes: instance, status, Kubernetes node and health label."""
    state = _state(ctx)
    page = state.client().list_cluster_nodes(
        tag, max_results=max_results, next_token=next_token, instance_group_name=instance_group
    )
    if state.wants_json(as_json):
        _echo_json(page)
        return
    state.console.print(nodes_table(page.get("nodes") or [], page.get("hyperPodClusterName") or tag))
    token = page.get("nextToken")
    if token:
        group = f" --instance-group {instance_group}" if instance_group else ""
        state.console.print(
            f"More nodes: instantstart nodes list {tag}{group} --next-token {token}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


@nodes_app.command("reboot")
@handle_errors
def nodes_reboot(
    ctx: typer.Context,
    tag: TagArgument,
    node_ids: NodeIdsArgument,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Reboot nodes (same instances; NotReady for a few minutes, then Schedulable): a REBOOT_CLUSTER_NODES
    operation that ends when the nodes are back."""
    state = _state(ctx)
    operation = state.client().reboot_cluster_nodes(tag, node_ids, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@nodes_app.command("replace")
@handle_errors
def nodes_replace(
    ctx: typer.Context,
    tag: TagArgument,
    node_ids: NodeIdsArgument,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replace nodes with new instances (new ids; the old instances and their local data are gone): a
    REPLACE_CLUSTER_NODES operation that ends when the group is back at its target."""
    state = _state(ctx)
    operation = state.client().replace_cluster_nodes(tag, node_ids, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@nodes_app.command("delete")
@handle_errors
def nodes_delete(
    ctx: typer.Context,
    tag: TagArgument,
    node_ids: NodeIdsArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete nodes; their group's count is lowered so none is replaced (asks you to type the tag): a
    DELETE_CLUSTER_NODES operation that ends when the nodes are gone."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(
            f"This deletes {len(node_ids)} node(s) of cluster '{tag}'. Type the cluster tag to confirm"
        )
        if typed.strip() != tag:
            state.err_console.print("Aborted: the tag you typed does not match; no node was deleted.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    operation = state.client().delete_cluster_nodes(tag, node_ids, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@clusters_app.command("software-update")
@handle_errors
def clusters_software_update(
    ctx: typer.Context,
    tag: TagArgument,
    instance_groups: Annotated[
        list[str] | None, typer.Option("--instance-group", help="A group to update (repeatable; default: all).")
    ] = None,
    batch_size: Annotated[
        int | None, typer.Option("--batch-size", min=1, help="Rolling update: most instances updated at once.")
    ] = None,
    wait_interval: Annotated[
        int | None, typer.Option("--wait-interval", min=0, max=3600, help="Rolling update: seconds between batches.")
    ] = None,
    image_id: Annotated[str | None, typer.Option("--image-id", help="AMI id, or 'default'.")] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Update the nodes' software (UpdateClusterSoftware), optionally rolling in batches: an UPDATE_CLUSTER_SOFTWARE
    operation that ends when HyperPod reports the update done."""
    state = _state(ctx)
    body: dict[str, object] = {}
    if instance_groups:
        body["instanceGroupNames"] = instance_groups
    if image_id:
        body["imageId"] = image_id
    deployment: dict[str, object] = {}
    if batch_size:
        deployment["rollingUpdatePolicy"] = {"maximumBatchSize": {"type": "INSTANCE_COUNT", "value": batch_size}}
    if wait_interval is not None:
        deployment["waitIntervalInSeconds"] = wait_interval
    if deployment:
        body["deploymentConfig"] = deployment
    operation = state.client().update_cluster_software(tag, body, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@clusters_app.command("health-check")
@handle_errors
def clusters_health_check(
    ctx: typer.Context,
    tag: TagArgument,
    instance_groups: Annotated[list[str], typer.Option("--instance-group", help="A group to check (repeatable).")],
    checks: Annotated[
        list[str] | None,
        typer.Option(
            "--check",
            help=f"A check to run (repeatable): {', '.join(DEEP_HEALTH_CHECKS)}; default all "
            "but MultiNodeTrainingValidation.",
        ),
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run deep health checks on instance groups: a START_CLUSTER_HEALTH_CHECK operation that ends with HyperPod's
    DeepHealthCheck operation (FAILED when a node failed a check)."""
    state = _state(ctx)
    chosen = checks or ["InstanceStress", "InstanceConnectivity"]
    groups = [{"instanceGroupName": g, "deepHealthChecks": chosen} for g in instance_groups]
    operation = state.client().start_cluster_health_check(tag, groups, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@clusters_app.command("hyperpod-operations")
@handle_errors
def clusters_hyperpod_operations(
    ctx: typer.Context,
    tag: TagArgument,
    operation: Annotated[str | None, typer.Option("--operation", help="Show this operation with its events.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help=f"Only: {', '.join(HYPERPOD_OPERATION_STATUSES)}.")
    ] = None,
    type: Annotated[str | None, typer.Option("--type", help=f"Only: {', '.join(HYPERPOD_OPERATION_TYPES)}.")] = None,
    max_results: Annotated[
        int | None, typer.Option("--max-results", min=1, max=100, help="Operations per page (API default 20).")
    ] = None,
    next_token: Annotated[str | None, typer.Option("--next-token", help="Token of the page to print.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Show HyperPod's own operations on a cluster (Scaling, DeepHealthCheck), or one with its events."""
    state = _state(ctx)
    client = state.client()
    if operation:
        found = client.get_hyperpod_operation(tag, operation)
        if state.wants_json(as_json):
            _echo_json(found)
            return
        state.console.print(hyperpod_operations_table([found], f"hp-cluster-{tag}"))
        state.console.print(events_table(found.get("events") or [], f"operation {operation}"))
        return
    page = client.list_hyperpod_operations(
        tag, max_results=max_results, next_token=next_token, status=status, type=type
    )
    if state.wants_json(as_json):
        _echo_json(page)
        return
    state.console.print(hyperpod_operations_table(page.get("operations") or [], page.get("hyperPodClusterName") or tag))
    token = page.get("nextToken")
    if token:
        state.console.print(
            f"More: instantstart clusters hyperpod-operations {tag} --next-token {token}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


# -- catalog ------------------------------------------------------------------------------------------


@catalog_app.command("zones")
@handle_errors
def catalog_zones(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Availability Zones of the API's Region."""
    state = _state(ctx)
    zones = state.client().list_availability_zones()
    if state.wants_json(as_json):
        _echo_json({"availabilityZones": zones})
        return
    state.console.print(zones_table(zones))


@catalog_app.command("instance-types")
@handle_errors
def catalog_instance_types(
    ctx: typer.Context,
    az: Annotated[str, typer.Option("--az", help="Availability Zone, e.g. us-west-2c.")],
    as_json: JsonOption = False,
) -> None:
    """HyperPod instance types offered in an Availability Zone."""
    state = _state(ctx)
    instance_types = state.client().list_instance_types(az)
    if state.wants_json(as_json):
        _echo_json({"instanceTypes": instance_types})
        return
    state.console.print(instance_types_table(instance_types, az))


@catalog_app.command("training-plans")
@handle_errors
def catalog_training_plans(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """The account's SageMaker training plans (status, zone, instance type and count, start and end)."""
    state = _state(ctx)
    plans = state.client().list_training_plans()
    if state.wants_json(as_json):
        _echo_json({"trainingPlans": plans})
        return
    table = Table(title="Training plans")
    for column in ("Name", "Status", "Zone", "Instances", "Available", "Start", "End", "ARN"):
        table.add_column(column)
    for p in plans:
        table.add_row(
            p["trainingPlanName"],
            p["status"],
            p.get("availabilityZone") or "-",
            f"{p.get('totalInstanceCount') or 0}x {p.get('instanceType') or '-'}",
            str(p.get("availableInstanceCount") if p.get("availableInstanceCount") is not None else "-"),
            p.get("startTime") or "-",
            p.get("endTime") or "-",
            p["trainingPlanArn"],
        )
    state.console.print(table)


@catalog_app.command("training-plan-offerings")
@handle_errors
def catalog_training_plan_offerings(
    ctx: typer.Context,
    instance_type: Annotated[str, typer.Option("--instance-type", help="Instance type, e.g. ml.p5.48xlarge.")],
    count: Annotated[int, typer.Option("--count", help="Instances to reserve, 1-256.")],
    duration_hours: Annotated[int | None, typer.Option("--duration-hours", help="Plan duration in hours.")] = None,
    start_after: Annotated[
        str | None, typer.Option("--start-after", help="Earliest start, ISO-8601 UTC (2026-11-29T17:04:05Z).")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Purchasable training plan offerings for HyperPod clusters."""
    state = _state(ctx)
    offerings = state.client().search_training_plan_offerings(
        instance_type=instance_type, instance_count=count, duration_hours=duration_hours, start_after=start_after
    )
    if state.wants_json(as_json):
        _echo_json({"trainingPlanOfferings": offerings})
        return
    table = Table(title=f"Training plan offerings for {count}x {instance_type}")
    for column in ("Offering", "Zone", "Start", "End", "Hours", "Upfront fee"):
        table.add_column(column)
    for o in offerings:
        table.add_row(
            o["trainingPlanOfferingId"],
            o.get("availabilityZone") or "-",
            o.get("startTime") or "-",
            o.get("endTime") or "-",
            str(o.get("durationHours") or "-"),
            f"{o.get('upfrontFee') or '-'} {o.get('currencyCode') or ''}".strip(),
        )
    state.console.print(table)


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


GroupArgument = Annotated[str, typer.Argument(help="Instance group name, e.g. accel.", show_default=False)]


@groups_app.command("list")
@handle_errors
def groups_list(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's instance groups as HyperPod reports them now."""
    state = _state(ctx)
    listing = state.client().list_instance_groups(tag)
    if state.wants_json(as_json):
        _echo_json(listing)
        return
    from rich.table import Table

    table = Table(title=f"{listing['hyperPodClusterName']} ({listing.get('hyperPodStatus') or 'absent'})")
    for column in ("Group", "Type", "Current/Target", "Capacity", "Status", "Subnets"):
        table.add_column(column)
    for g in listing["instanceGroups"]:
        table.add_row(
            g["instanceGroupName"],
            str(g.get("instanceType") or "-"),
            f"{g.get('currentCount', 0)}/{g.get('targetCount')}",
            str(g.get("capacityType") or "-"),
            str(g.get("status") or "-"),
            ", ".join(g.get("subnetIds") or []),
        )
    state.console.print(table)


@groups_app.command("add")
@handle_errors
def groups_add(
    ctx: typer.Context,
    tag: TagArgument,
    group_name: Annotated[str, typer.Option("--group-name", help="Name of the new instance group.")],
    instance_type: Annotated[str, typer.Option("--instance-type", help="HyperPod instance type, e.g. ml.g6.4xlarge.")],
    count: Annotated[
        int,
        typer.Option("--count", help="Number of instances (0: the group starts empty, e.g. for managed Karpenter)."),
    ] = 1,
    capacity_type: Annotated[
        str, typer.Option("--capacity-type", help="OnDemand (what the API accepts).")
    ] = "OnDemand",
    dedicated_subnet: DedicatedSubnetOption = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Add an instance group to a READY cluster (in the cluster zone's compute subnet)."""
    state = _state(ctx)
    group: InstanceGroupSpec = {
        "instanceGroupName": group_name,
        "instanceType": instance_type,
        "instanceCount": count,
        "capacityType": capacity_type,
    }
    if dedicated_subnet:
        group["dedicatedSubnet"] = True
    operation = state.client().add_instance_group(tag, group, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@groups_app.command("scale")
@handle_errors
def groups_scale(
    ctx: typer.Context,
    tag: TagArgument,
    group: GroupArgument,
    count: Annotated[int, typer.Option("--count", help="New number of instances (0 keeps the group, empty).")],
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Scale an instance group to --count instances."""
    state = _state(ctx)
    operation = state.client().update_instance_group(
        tag, group, {"instanceCount": count}, idempotency_key=idempotency_key
    )
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@groups_app.command("update")
@handle_errors
def groups_update(
    ctx: typer.Context,
    tag: TagArgument,
    group: GroupArgument,
    label: Annotated[
        list[str] | None, typer.Option("--label", help="KEY=VALUE Kubernetes label of the group's nodes (repeat).")
    ] = None,
    count: Annotated[int | None, typer.Option("--count", help="New number of instances.")] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Replace an instance group's Kubernetes labels (and optionally its count)."""
    state = _state(ctx)
    changes: dict[str, Any] = {}
    if label is not None:
        pairs = [item.partition("=") for item in label]
        bad = [k for k, sep, _ in pairs if not sep]
        if bad:
            raise typer.BadParameter(f"--label takes KEY=VALUE, got {bad[0]!r}")
        changes["labels"] = {k: v for k, _, v in pairs}
    if count is not None:
        changes["instanceCount"] = count
    operation = state.client().update_instance_group(tag, group, changes, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@groups_app.command("delete")
@handle_errors
def groups_delete(
    ctx: typer.Context,
    tag: TagArgument,
    group: GroupArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove an instance group and its instances (asks you to type the group name)."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(f"This removes instance group '{group}' of '{tag}' and its instances. Type the group name")
        if typed.strip() != group:
            state.err_console.print("Aborted: the name you typed does not match; nothing was removed.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    operation = state.client().delete_instance_group(tag, group, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


autoscaling_app = typer.Typer(help="Managed Karpenter of a cluster: show, turn on, turn off.", no_args_is_help=True)
app.add_typer(autoscaling_app, name="autoscaling")


@autoscaling_app.command("get")
@handle_errors
def autoscaling_get(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """HyperPod's AutoScaling now and the NodePool / HyperpodNodeClass last applied."""
    state = _state(ctx)
    found = state.client().get_autoscaling(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    state.console.print(
        f"{found['hyperPodClusterName']}: Karpenter {found.get('mode') or 'never enabled'}"
        f" ({found.get('status') or '-'})"
    )
    if found.get("failureMessage"):
        state.console.print(f"  failure: {found['failureMessage']}")
    if found.get("nodePool"):
        limits = ", ".join(f"{k}={v}" for k, v in (found.get("limits") or {}).items()) or "none"
        state.console.print(
            f"  NodePool {found['nodePool']} -> HyperpodNodeClass {found.get('nodeClass')}: groups "
            f"{', '.join(found.get('instanceGroups') or [])}; limits {limits}; consolidateAfter "
            f"{found.get('consolidateAfter')}"
        )
    if found.get("clusterRoleArn"):
        state.console.print(f"  ClusterRole {found['clusterRoleArn']}")


@autoscaling_app.command("enable")
@handle_errors
def autoscaling_enable(
    ctx: typer.Context,
    tag: TagArgument,
    instance_groups: Annotated[
        list[str],
        typer.Option("--instance-group", help="A group Karpenter scales (repeatable, 1-10; each at 0 instances)."),
    ],
    limit: Annotated[
        list[str] | None,
        typer.Option("--limit", help="RESOURCE=QUANTITY NodePool limit, e.g. nvidia.com/gpu=64 (repeatable)."),
    ] = None,
    consolidate_after: Annotated[
        str | None, typer.Option("--consolidate-after", help="Karpenter duration, e.g. 30s (default 30s).")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn managed Karpenter on for --instance-group groups (NodePool with consolidation and --limit limits)."""
    state = _state(ctx)
    limits: dict[str, str | int] | None = None
    if limit is not None:
        pairs = [item.partition("=") for item in limit]
        bad = [k for k, sep, v in pairs if not sep or not k or not v]
        if bad:
            raise typer.BadParameter(f"--limit takes RESOURCE=QUANTITY, got {bad[0]!r}")
        limits = {k: v for k, _, v in pairs}
    operation = state.client().update_autoscaling(
        tag,
        enabled=True,
        instance_groups=list(instance_groups),
        limits=limits,
        consolidate_after=consolidate_after,
        idempotency_key=idempotency_key,
    )
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@autoscaling_app.command("disable")
@handle_errors
def autoscaling_disable(
    ctx: typer.Context,
    tag: TagArgument,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn managed Karpenter off: its NodePool, HyperpodNodeClass and ClusterRole are removed."""
    state = _state(ctx)
    operation = state.client().update_autoscaling(tag, enabled=False, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


# ---------------------------------------------------------------- task governance
GOVERNANCE_SETTLED = ("Created", "Updated")
"""SageMaker statuses of a task governance resource that settled."""

GovernanceWaitOption = Annotated[
    bool,
    typer.Option("--wait", help="Poll until SageMaker reports it Created/Updated (or gone); exit 1 if it failed."),
]


def _governance_wait(
    state: CliState,
    read: Callable[[], dict[str, Any] | None],
    *,
    gone: bool,
    poll_interval: float,
    wait_timeout: float | None,
) -> dict[str, Any] | None:
    """Poll ``read`` until the resource settled (or is gone when ``gone``); a ``*Failed`` status exits 1 with
    SageMaker's FailureReason verbatim, running out of ``wait_timeout`` exits 4."""
    import time

    deadline = time.monotonic() + wait_timeout if wait_timeout else None
    while True:
        current = read()
        if current is None and gone:
            return None
        if current is not None:
            status = str(current.get("status"))
            if status.endswith("Failed"):
                state.err_console.print(
                    f"{current.get('name')} {status}: {current.get('failureReason') or ''}",
                    markup=False,
                    soft_wrap=True,
                )
                raise typer.Exit(EXIT_OPERATION_FAILED)
            if not gone and status in GOVERNANCE_SETTLED:
                return current
        if deadline is not None and time.monotonic() >= deadline:
            state.err_console.print("Stopped waiting; SageMaker keeps working (check again with the list command).")
            raise typer.Exit(EXIT_WAIT_TIMEOUT)
        time.sleep(poll_interval)


def _print_governance(state: CliState, answer: dict[str, Any] | None, as_json: bool, what: str) -> None:
    if state.wants_json(as_json):
        _echo_json(answer)
    elif answer is None:
        state.console.print(f"{what}: gone")
    else:
        version = answer.get("clusterSchedulerConfigVersion") or answer.get("computeQuotaVersion")
        state.console.print(f"{what} {answer.get('name')}: {answer.get('status')} (version {version})")


def _pairs(values: list[str] | None, option: str) -> list[tuple[str, str]]:
    pairs = [item.partition("=") for item in values or []]
    bad = [k for k, sep, _ in pairs if not sep]
    if bad:
        raise typer.BadParameter(f"{option} takes NAME=VALUE, got {bad[0]!r}")
    return [(k, v) for k, _, v in pairs]


def _resources(values: list[str] | None) -> list[dict[str, Any]] | None:
    if values is None:
        return None
    out = []
    for instance_type, count in _pairs(values, "--resource"):
        if not count.isdigit():
            raise typer.BadParameter(f"--resource takes INSTANCE_TYPE=COUNT, got {instance_type}={count!r}")
        out.append({"instanceType": instance_type, "count": int(count)})
    return out


@governance_app.command("policy")
@handle_errors
def governance_policy(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's scheduler config (priority classes, fair share) as SageMaker describes it now."""
    state = _state(ctx)
    config = state.client().get_scheduler_config(tag)
    if state.wants_json(as_json):
        _echo_json(config)
        return
    body = config.get("schedulerConfig") or {}
    classes = ", ".join(f"{pc['name']}={pc['weight']}" for pc in body.get("priorityClasses") or []) or "-"
    state.console.print(
        f"{config['name']}: {config['status']} (version {config['clusterSchedulerConfigVersion']}), fair share "
        f"{body.get('fairShare') or '-'}, priority classes {classes}"
    )
    if config.get("failureReason"):
        state.console.print(f"failure: {config['failureReason']}")


@governance_app.command("set-policy")
@handle_errors
def governance_set_policy(
    ctx: typer.Context,
    tag: TagArgument,
    priority_class: Annotated[
        list[str] | None, typer.Option("--priority-class", help="NAME=WEIGHT (0-100), repeatable.")
    ] = None,
    fair_share: Annotated[str | None, typer.Option("--fair-share", help="Enabled or Disabled.")] = None,
    target_version: Annotated[
        int | None, typer.Option("--target-version", help="The version you read: refused (409) if it changed.")
    ] = None,
    wait: GovernanceWaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create or replace the cluster's scheduler config (needs the taskGovernance feature)."""
    state = _state(ctx)
    config: dict[str, Any] = {}
    if priority_class is not None:
        classes = []
        for name, weight in _pairs(priority_class, "--priority-class"):
            if not weight.isdigit():
                raise typer.BadParameter(f"--priority-class takes NAME=WEIGHT, got {name}={weight!r}")
            classes.append({"name": name, "weight": int(weight)})
        config["priorityClasses"] = classes
    if fair_share is not None:
        config["fairShare"] = fair_share
    body: dict[str, Any] = {"schedulerConfig": config}
    if target_version is not None:
        body["targetVersion"] = target_version
    answer: dict[str, Any] | None = state.client().put_scheduler_config(tag, body)
    if wait:
        answer = _governance_wait(
            state,
            lambda: state.client().get_scheduler_config(tag),
            gone=False,
            poll_interval=poll_interval,
            wait_timeout=wait_timeout,
        )
    _print_governance(state, answer, as_json, "scheduler config")


@governance_app.command("quotas")
@handle_errors
def governance_quotas(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's compute quotas (one per team)."""
    state = _state(ctx)
    listing = state.client().list_compute_quotas(tag)
    if state.wants_json(as_json):
        _echo_json(listing)
        return
    table = Table(title=f"compute quotas of {tag}")
    for column in ("Name", "Team", "Resources", "Sharing", "Status", "Version"):
        table.add_column(column)
    for q in listing["computeQuotas"]:
        config = q.get("computeQuotaConfig") or {}
        resources = ", ".join(
            f"{r['instanceType']}x{r.get('count')}" for r in config.get("computeQuotaResources") or []
        )
        table.add_row(
            q["name"],
            str((q.get("computeQuotaTarget") or {}).get("teamName") or "-"),
            resources or "-",
            str((config.get("resourceSharingConfig") or {}).get("strategy") or "-"),
            str(q["status"]),
            str(q.get("computeQuotaVersion")),
        )
    state.console.print(table)


def _quota_reader(state: CliState, tag: str, name: str) -> Callable[[], dict[str, Any] | None]:
    def read() -> dict[str, Any] | None:
        quotas = state.client().list_compute_quotas(tag)["computeQuotas"]
        return next((q for q in quotas if q["name"] == name), None)

    return read


@governance_app.command("create-quota")
@handle_errors
def governance_create_quota(
    ctx: typer.Context,
    tag: TagArgument,
    team: Annotated[str, typer.Option("--team", help="Team name (its namespace is hyperpod-ns-<team>).")],
    resource: Annotated[
        list[str] | None, typer.Option("--resource", help="INSTANCE_TYPE=COUNT the team is guaranteed, repeatable.")
    ] = None,
    fair_share_weight: Annotated[int | None, typer.Option("--fair-share-weight", help="0-100.")] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", help="Lend, DontLend or LendAndBorrow.")] = None,
    borrow_limit: Annotated[int | None, typer.Option("--borrow-limit", help="Percent of the quota, 0-10000.")] = None,
    preempt_team_tasks: Annotated[
        str | None, typer.Option("--preempt-team-tasks", help="Never or LowerPriority.")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: GovernanceWaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a team's compute quota (named <tag>-<team>; needs the taskGovernance feature)."""
    state = _state(ctx)
    config: dict[str, Any] = {"computeQuotaResources": _resources(resource) or []}
    if strategy is not None:
        config["resourceSharingConfig"] = {"strategy": strategy}
        if borrow_limit is not None:
            config["resourceSharingConfig"]["borrowLimit"] = borrow_limit
    if preempt_team_tasks is not None:
        config["preemptTeamTasks"] = preempt_team_tasks
    target: dict[str, Any] = {"teamName": team}
    if fair_share_weight is not None:
        target["fairShareWeight"] = fair_share_weight
    body = {"computeQuotaConfig": config, "computeQuotaTarget": target}
    answer: dict[str, Any] | None = state.client().create_compute_quota(tag, body, idempotency_key=idempotency_key)
    if wait and answer is not None:
        answer = _governance_wait(
            state,
            _quota_reader(state, tag, str(answer["name"])),
            gone=False,
            poll_interval=poll_interval,
            wait_timeout=wait_timeout,
        )
    _print_governance(state, answer, as_json, "compute quota")


@governance_app.command("update-quota")
@handle_errors
def governance_update_quota(
    ctx: typer.Context,
    tag: TagArgument,
    name: Annotated[str, typer.Argument(help="Compute quota name, e.g. demo-research.", show_default=False)],
    resource: Annotated[
        list[str] | None, typer.Option("--resource", help="INSTANCE_TYPE=COUNT, repeatable (replaces the list).")
    ] = None,
    fair_share_weight: Annotated[int | None, typer.Option("--fair-share-weight", help="0-100.")] = None,
    activation_state: Annotated[str | None, typer.Option("--activation-state", help="Enabled or Disabled.")] = None,
    target_version: Annotated[
        int | None, typer.Option("--target-version", help="The version you read: refused (409) if it changed.")
    ] = None,
    wait: GovernanceWaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change a team's compute quota (only what you give changes)."""
    state = _state(ctx)
    body: dict[str, Any] = {}
    if resource is not None:
        body["computeQuotaConfig"] = {"computeQuotaResources": _resources(resource)}
    if fair_share_weight is not None:
        current = _quota_reader(state, tag, name)()
        team = ((current or {}).get("computeQuotaTarget") or {}).get("teamName")
        if not team:
            raise typer.BadParameter(f"compute quota {name!r} not found on {tag!r}")
        body["computeQuotaTarget"] = {"teamName": team, "fairShareWeight": fair_share_weight}
    if activation_state is not None:
        body["activationState"] = activation_state
    if target_version is not None:
        body["targetVersion"] = target_version
    answer: dict[str, Any] | None = state.client().update_compute_quota(tag, name, body)
    if wait:
        answer = _governance_wait(
            state, _quota_reader(state, tag, name), gone=False, poll_interval=poll_interval, wait_timeout=wait_timeout
        )
    _print_governance(state, answer, as_json, "compute quota")


@governance_app.command("delete-quota")
@handle_errors
def governance_delete_quota(
    ctx: typer.Context,
    tag: TagArgument,
    name: Annotated[str, typer.Argument(help="Compute quota name, e.g. demo-research.", show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: GovernanceWaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a team's compute quota (asks you to type its name)."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(f"This removes compute quota '{name}' of '{tag}' and its team queues. Type the quota name")
        if typed.strip() != name:
            state.err_console.print("Aborted: the name you typed does not match; nothing was removed.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    answer: dict[str, Any] | None = state.client().delete_compute_quota(tag, name, idempotency_key=idempotency_key)
    if wait:
        answer = _governance_wait(
            state, _quota_reader(state, tag, name), gone=True, poll_interval=poll_interval, wait_timeout=wait_timeout
        )
    _print_governance(state, answer, as_json, "compute quota")


def main() -> None:
    """Entry point of the ``instantstart`` console script."""
    app(prog_name="instantstart")


if __name__ == "__main__":
    main()


features_app = typer.Typer(
    help="Managed features (training/inference operators, observability, task governance, tiered checkpointing, "
    "FSx for Lustre, KubeRay).",
    no_args_is_help=True,
)
app.add_typer(features_app, name="features")

FEATURE_KEYS = (
    "trainingOperator",
    "inferenceOperator",
    "observability",
    "taskGovernance",
    "tieredCheckpointing",
    "fsx",
    "kubeRay",
)


def _feature_body(
    enable: list[str],
    disable: list[str],
    version: list[str],
    memory_percentage: int | None,
    options: list[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """The PATCH body from --enable/--disable/--version KEY=VERSION/--memory-percentage/--option KEY.FIELD=JSON.

    An ``--option`` value is parsed as JSON when it is JSON (``true``, ``1200``, ``{"storageCapacity": 1200}``),
    else kept as a string; the API validates keys, fields and values.

    Raises:
        typer.BadParameter: an ``--option`` without ``KEY.FIELD=VALUE``.
    """
    body: dict[str, dict[str, Any]] = {}
    for key in enable:
        body[key] = {"enabled": True}
    for key in disable:
        body[key] = {"enabled": False}
    for pin in version:
        key, _, value = pin.partition("=")
        body.setdefault(key, {"enabled": True})["version"] = value
    if memory_percentage is not None:
        body.setdefault("tieredCheckpointing", {"enabled": True})["instanceMemoryAllocationPercentage"] = (
            memory_percentage
        )
    for option in options or []:
        path, sep, raw = option.partition("=")
        key, dot, field = path.partition(".")
        if not sep or not dot or not key or not field:
            raise typer.BadParameter(f"expected KEY.FIELD=VALUE, got {option!r}", param_hint="--option")
        try:
            parsed: Any = json.loads(raw)
        except ValueError:
            parsed = raw
        body.setdefault(key, {"enabled": True})[field] = parsed
    return body


@features_app.command("get")
@handle_errors
def features_get(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """Each managed feature: observed now, what was last applied, version and what it installed."""
    state = _state(ctx)
    listing = state.client().get_features(tag)
    if state.wants_json(as_json):
        _echo_json(listing)
        return
    from rich.table import Table

    table = Table(title=f"Features of {tag} (Kubernetes {listing.get('kubernetesVersion') or '-'})")
    for column in ("Feature", "Enabled", "Status", "Version", "Add-ons (needed by)", "Roles"):
        table.add_column(column)
    for key, f in listing["features"].items():
        addons = ", ".join(
            f"{a['addonName']} {a['status']} ({' '.join(a.get('neededBy') or []) or '-'})" for a in f.get("addons", [])
        )
        table.add_row(
            key,
            "yes" if f["enabled"] else "no",
            str(f.get("status") or "-"),
            str(f.get("version") or "-"),
            addons or "-",
            str(len(f.get("roles") or [])),
        )
    state.console.print(table)


@features_app.command("set")
@handle_errors
def features_set(
    ctx: typer.Context,
    tag: TagArgument,
    enable: Annotated[list[str], typer.Option("--enable", help=f"Turn a feature on: {', '.join(FEATURE_KEYS)}.")] = [],  # noqa: B006
    disable: Annotated[
        list[str], typer.Option("--disable", help="Turn a feature off (removes what it installed).")
    ] = [],  # noqa: B006
    version: Annotated[
        list[str], typer.Option("--version", help="Pin an add-on version: KEY=VERSION (e.g. trainingOperator=v1.1.0).")
    ] = [],  # noqa: B006
    memory_percentage: Annotated[
        int | None,
        typer.Option("--memory-percentage", help="tieredCheckpointing InstanceMemoryAllocationPercentage (0-100)."),
    ] = None,
    option: Annotated[
        list[str],
        typer.Option(
            "--option",
            help="A feature setting KEY.FIELD=VALUE (VALUE as JSON when it parses), e.g. observability.cloudWatch=true "
            "or fsx.fileSystem='{\"storageCapacity\": 1200}'.",
        ),
    ] = [],  # noqa: B006
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn features on or off (only those named act). Prints 'unchanged' when AWS already matches."""
    state = _state(ctx)
    body = _feature_body(enable, disable, version, memory_percentage, option)
    result = state.client().update_features(tag, body, idempotency_key=idempotency_key)
    if "operationId" not in result:
        if state.wants_json(as_json):
            _echo_json(result)
            return
        for key, outcome in result["features"].items():
            state.console.print(f"{key}: {outcome['result']}")
        if not result["features"]:
            state.console.print("nothing to change")
        return
    _report_operation(
        state,
        cast(Operation, result),
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        wait_timeout=wait_timeout,
    )


# -- training jobs ----------------------------------------------------------------------------------------------------

jobs_app = typer.Typer(
    help="Training jobs of a cluster: create from a recipe (pytorch, script, llamafactory, msswift, verl), list, "
    "get, read or follow logs, delete.",
    no_args_is_help=True,
)
app.add_typer(jobs_app, name="jobs")

RECIPES = ("pytorch", "script", "llamafactory", "msswift", "verl")
JOB_TERMINAL_STATUSES = ("Succeeded", "Failed")
LOG_FOLLOW_INTERVAL = 5.0
"""Seconds between two log reads of ``jobs logs --follow``."""
_sleep: Callable[[float], None] = time.sleep
_monotonic: Callable[[], float] = time.monotonic

JobNameArgument = Annotated[str, typer.Argument(help="Training job name, e.g. llama-sft-1.", show_default=False)]
NamespaceOption = Annotated[
    str, typer.Option("--namespace", "-n", help="Namespace of the job (a team's jobs: hyperpod-ns-<team>).")
]


def _job_body(
    recipe: str,
    options: dict[str, Any],
    env: list[str] | None,
    overrides: list[str] | None,
    from_file: str | None,
) -> dict[str, Any]:
    """The POST body: ``--file`` (a JSON body) first, then every option given; None options are left out."""
    body: dict[str, Any] = {}
    if from_file:
        try:
            with open(from_file, encoding="utf-8") as handle:
                loaded = json.load(handle)
        except (OSError, ValueError) as exc:
            raise typer.BadParameter(f"--file {from_file}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise typer.BadParameter(f"--file {from_file} must hold a JSON object (the request body)")
        body.update(loaded)
    body["recipe"] = recipe
    body.update({key: value for key, value in options.items() if value not in (None, [])})
    if env:
        body["env"] = {**body.get("env", {}), **dict(_pairs(env, "--env"))}
    if overrides:
        body["overrides"] = {**body.get("overrides", {}), **dict(_pairs(overrides, "--override"))}
    return body


@jobs_app.command("create")
@handle_errors
def jobs_create(
    ctx: typer.Context,
    tag: TagArgument,
    recipe: Annotated[str, typer.Option("--recipe", help=f"Recipe: {', '.join(RECIPES)}.")],
    name: Annotated[str | None, typer.Option("--name", help="Job name (DNS-1123, e.g. llama-sft-1).")] = None,
    instance_type: Annotated[
        str | None, typer.Option("--instance-type", help="Instance type of the pods, e.g. ml.g5.8xlarge.")
    ] = None,
    image: Annotated[str | None, typer.Option("--image", help="Container image with a pinned tag or digest.")] = None,
    nodes: Annotated[int | None, typer.Option("--nodes", help="Nodes, one pod each (default 1).")] = None,
    nproc_per_node: Annotated[
        int | None, typer.Option("--nproc-per-node", help="Processes (GPUs) per pod (default: the type's GPUs).")
    ] = None,
    script: Annotated[str | None, typer.Option("--script", help="pytorch: the training script path.")] = None,
    command: Annotated[
        list[str] | None, typer.Option("--command", help="script: one argv element of the command (repeat).")
    ] = None,
    arg: Annotated[list[str] | None, typer.Option("--arg", help="An argument (argv element, repeat).")] = None,
    config_path: Annotated[
        str | None, typer.Option("--config-path", help="llamafactory/msswift: YAML config under /s3 or /fsx.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model (Hugging Face id or a path).")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", help="llamafactory/msswift: dataset name(s).")] = None,
    output_path: Annotated[
        str | None, typer.Option("--output-path", help="Checkpoints directory under /s3 or /fsx.")
    ] = None,
    train_files: Annotated[str | None, typer.Option("--train-files", help="verl: training parquet.")] = None,
    val_files: Annotated[str | None, typer.Option("--val-files", help="verl: validation parquet.")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", help="KEY=VALUE environment variable (repeat).")] = None,
    override: Annotated[
        list[str] | None, typer.Option("--override", help="verl: KEY=VALUE Hydra override (repeat).")
    ] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Namespace (default: default).")] = None,
    team: Annotated[str | None, typer.Option("--team", help="Task governance team (Kueue queue).")] = None,
    priority_class: Annotated[str | None, typer.Option("--priority-class", help="Kueue priority class.")] = None,
    from_file: Annotated[
        str | None,
        typer.Option("--file", "-f", help="A JSON request body (e.g. with runPolicy); options given override it."),
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a training job from a recipe. The API checks the training operator, GPUs and nodes first (exit 2 with
    its 4xx), then an operation applies the job; follow the job with `jobs get` and `jobs logs --follow`."""
    state = _state(ctx)
    options = {
        "name": name,
        "instanceType": instance_type,
        "image": image,
        "nodes": nodes,
        "nprocPerNode": nproc_per_node,
        "script": script,
        "command": command,
        "args": arg,
        "configPath": config_path,
        "model": model,
        "dataset": dataset,
        "outputPath": output_path,
        "trainFiles": train_files,
        "valFiles": val_files,
        "namespace": namespace,
        "team": team,
        "priorityClass": priority_class,
    }
    body = _job_body(recipe, options, env, override, from_file)
    accepted = state.client().create_training_job(tag, body, idempotency_key=idempotency_key)
    _report_job_operation(state, tag, accepted, as_json, wait=wait, poll_interval=poll_interval, timeout=wait_timeout)


def _report_job_operation(
    state: CliState,
    tag: str,
    accepted: dict[str, Any],
    as_json: bool,
    *,
    wait: bool,
    poll_interval: float,
    timeout: float | None,
) -> None:
    operation = cast(Operation, accepted["operation"])
    if wait:
        _follow(state, operation, as_json=state.wants_json(as_json), poll_interval=poll_interval, wait_timeout=timeout)
        return
    if state.wants_json(as_json):
        _echo_json(accepted)
        return
    state.console.print(
        f"{esc(operation.get('type'))} {esc(accepted['kind'])} [bold]{esc(accepted['namespace'])}/"
        f"{esc(accepted['name'])}[/] on {esc(tag)}: operation {esc(operation.get('operationId'))} "
        f"{esc(operation.get('status'))}",
        highlight=False,
    )
    state.console.print(
        f"Follow it with: instantstart jobs get {tag} {accepted['name']} -n {accepted['namespace']}  "
        f"(logs: instantstart jobs logs {tag} {accepted['name']} -n {accepted['namespace']} --follow)",
        markup=False,
        highlight=False,
    )


def _age(seconds: int | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


@jobs_app.command("list")
@handle_errors
def jobs_list(
    ctx: typer.Context,
    tag: TagArgument,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Only this namespace (default: every one).")
    ] = None,
    max_results: Annotated[int | None, typer.Option("--max-results", help="Most jobs per page (1-100).")] = None,
    next_token: Annotated[str | None, typer.Option("--next-token", help="nextToken of the previous page.")] = None,
    as_json: JsonOption = False,
) -> None:
    """The cluster's training jobs, newest first: status, restarts, age."""
    state = _state(ctx)
    listing = state.client().list_training_jobs(
        tag, namespace=namespace, max_results=max_results, next_token=next_token
    )
    if state.wants_json(as_json):
        _echo_json(listing)
        return
    table = Table(title=f"training jobs of {tag}")
    for column in ("Name", "Namespace", "Kind", "Recipe", "Status", "Restarts", "Age"):
        table.add_column(column)
    for job in listing["trainingJobs"]:
        table.add_row(
            job["name"],
            job["namespace"],
            job["kind"],
            str(job.get("recipe") or "-"),
            job["status"],
            str(job["restarts"]),
            _age(job.get("ageSeconds")),
        )
    state.console.print(table)
    if not listing["trainingJobs"]:
        state.console.print("no training jobs")
    if listing.get("nextToken"):
        state.console.print(f"More: --next-token {listing['nextToken']}", markup=False, highlight=False)


@jobs_app.command("get")
@handle_errors
def jobs_get(
    ctx: typer.Context,
    tag: TagArgument,
    name: JobNameArgument,
    namespace: NamespaceOption = "default",
    as_json: JsonOption = False,
) -> None:
    """A training job: status (and why it failed), spec summary, pods (node, phase, restarts), restart history."""
    state = _state(ctx)
    job = state.client().get_training_job(tag, name, namespace=namespace)
    if state.wants_json(as_json):
        _echo_json(job)
        return
    console = state.console
    console.print(
        f"[bold]{esc(job['namespace'])}/{esc(job['name'])}[/] {esc(job['kind'])} ({esc(job.get('recipe') or '-')}): "
        f"[bold]{esc(job['status'])}[/], {job['restarts']} restarts, age {_age(job.get('ageSeconds'))}",
        highlight=False,
    )
    if job.get("reason"):
        console.print(f"Reason: {esc(job['reason'])}", highlight=False, soft_wrap=True)
    spec = job.get("spec") or {}
    shown = ", ".join(f"{k}={spec[k]}" for k in ("instanceType", "nodes", "nprocPerNode", "image") if spec.get(k))
    if shown:
        console.print(f"Spec: {esc(shown)}", highlight=False, soft_wrap=True)
    pods = Table(title="pods")
    for column in ("Rank", "Pod", "Node", "Phase", "Restarts"):
        pods.add_column(column)
    for pod in job["pods"]:
        pods.add_row(
            "-" if pod.get("rank") is None else str(pod["rank"]),
            pod["name"],
            str(pod.get("nodeName") or "-"),
            str(pod.get("phase") or "-"),
            str(pod["restarts"]),
        )
    console.print(pods)
    if job.get("restartHistory"):
        history = Table(title="restart history")
        for column in ("When", "Type", "Reason", "Message"):
            history.add_column(column)
        for c in job["restartHistory"]:
            history.add_row(
                str(c.get("lastTransitionTime") or "-"),
                c["type"],
                str(c.get("reason") or "-"),
                str(c.get("message") or ""),
            )
        console.print(history)


def _new_lines(previous: list[str], lines: list[str]) -> list[str]:
    """``lines`` without the head that repeats the end of ``previous`` (a sinceSeconds window overlaps the last)."""
    for k in range(min(len(previous), len(lines)), 0, -1):
        if previous[-k:] == lines[:k]:
            return lines[k:]
    return lines


@jobs_app.command("logs")
@handle_errors
def jobs_logs(
    ctx: typer.Context,
    tag: TagArgument,
    name: JobNameArgument,
    namespace: NamespaceOption = "default",
    pod: Annotated[str | None, typer.Option("--pod", help="Pod (default: rank 0; names in `jobs get`).")] = None,
    container: Annotated[str | None, typer.Option("--container", help="Container.")] = None,
    tail: Annotated[int | None, typer.Option("--tail", help="Only the last lines (default 1000).")] = None,
    since: Annotated[int | None, typer.Option("--since", help="Only lines of the last seconds.")] = None,
    follow: Annotated[
        bool,
        typer.Option("--follow", help="Keep reading new lines (sinceSeconds) until the job ends; exit 1 if it Failed."),
    ] = False,
    poll_interval: Annotated[
        float, typer.Option("--poll-interval", min=0.1, help="Seconds between reads with --follow.")
    ] = LOG_FOLLOW_INTERVAL,
    as_json: JsonOption = False,
) -> None:
    """Log text of one pod of the job (rank 0 by default); --follow polls for new lines until the job ends."""
    state = _state(ctx)
    client = state.client()
    json_out = state.wants_json(as_json)
    answer = client.get_training_job_logs(
        tag, name, namespace=namespace, pod=pod, container=container, tail_lines=tail, since_seconds=since
    )
    if json_out and not follow:
        _echo_json(answer)
        return
    chosen = answer["pod"]
    if answer.get("truncated"):
        state.err_console.print(f"(older lines of {chosen} cut to the API's size bound)", highlight=False)
    printed = answer["text"].splitlines()
    for line in printed:
        typer.echo(line)
    if not follow:
        return
    last_read = _monotonic()
    try:
        while True:
            _sleep(poll_interval)
            status = client.get_training_job(tag, name, namespace=namespace)["status"]
            now = _monotonic()
            window = max(1, math.ceil(now - last_read) + 1)  # one second of overlap; repeats are dropped
            answer = client.get_training_job_logs(
                tag, name, namespace=namespace, pod=chosen, container=container, since_seconds=window
            )
            last_read = now
            fresh = _new_lines(printed, answer["text"].splitlines())
            for line in fresh:
                typer.echo(line)
            printed = (printed + fresh)[-1000:]
            if status in JOB_TERMINAL_STATUSES:
                state.err_console.print(f"Job {namespace}/{name} {status}.", highlight=False)
                if status == "Failed":
                    raise typer.Exit(EXIT_OPERATION_FAILED)
                return
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


@jobs_app.command("delete")
@handle_errors
def jobs_delete(
    ctx: typer.Context,
    tag: TagArgument,
    name: JobNameArgument,
    namespace: NamespaceOption = "default",
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a training job and its pods (asks you to type the job name); its processes stop."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(
            f"This deletes training job '{namespace}/{name}' of '{tag}' and its pods. Type the job name"
        )
        if typed.strip() != name:
            state.err_console.print("Aborted: the name you typed does not match; nothing was deleted.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    accepted = state.client().delete_training_job(tag, name, namespace=namespace, idempotency_key=idempotency_key)
    _report_job_operation(state, tag, accepted, as_json, wait=wait, poll_interval=poll_interval, timeout=wait_timeout)


# ---------------------------------------------------------------- managed MLflow
mlflow_app = typer.Typer(
    help="SageMaker managed MLflow of a cluster: show, connect an existing one, create one, disconnect.",
    no_args_is_help=True,
)
app.add_typer(mlflow_app, name="mlflow")

MlflowNamespaceOption = Annotated[
    str | None,
    typer.Option("--namespace", help="Training namespace whose service account gets the identity (default: default)."),
]


def _report_mlflow(
    state: Any,
    result: dict[str, Any],
    as_json: bool,
    *,
    wait: bool,
    poll_interval: float,
    wait_timeout: float | None,
) -> None:
    """An UPDATE_MLFLOW operation (202) is reported like any operation; a 200 prints the connection."""
    if "connected" not in result:  # an operation (the view carries the operationId of its connection)
        _report_operation(
            state, cast(Operation, result), as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout
        )
        return
    if state.wants_json(as_json):
        _echo_json(result)
        return
    _print_mlflow(state, result)


def _print_mlflow(state: Any, found: dict[str, Any]) -> None:
    if not found.get("connected"):
        state.console.print(f"{found['clusterTag']}: MLflow not connected")
        return
    origin = "created here" if found.get("created") else "existing"
    state.console.print(
        f"{found['clusterTag']}: {found.get('kind')} {found.get('arn')} ({origin}): {found.get('status')}"
    )
    if found.get("trackingServerUrl"):
        state.console.print(f"  url {found['trackingServerUrl']}")
    state.console.print(f"  artifacts {found.get('artifactStoreUri') or '-'}")
    state.console.print(
        f"  pods: namespace {found.get('namespace')}, serviceAccount {found.get('serviceAccountName')}, "
        f"role {found.get('podRoleArn')}"
    )
    for key, value in (found.get("environment") or {}).items():
        state.console.print(f"  env {key}={value}")


@mlflow_app.command("get")
@handle_errors
def mlflow_get(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's MLflow connection, with the server's status read from SageMaker now."""
    state = _state(ctx)
    found = state.client().get_mlflow(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    _print_mlflow(state, found)


@mlflow_app.command("connect")
@handle_errors
def mlflow_connect(
    ctx: typer.Context,
    tag: TagArgument,
    arn: Annotated[str, typer.Argument(help="A tracking server or MLflow app ARN of this account and Region.")],
    namespace: MlflowNamespaceOption = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Connect an existing tracking server or MLflow app (it is never deleted by disconnect)."""
    state = _state(ctx)
    key = "mlflowAppArn" if ":mlflow-app/" in arn else "trackingServerArn"
    body: dict[str, Any] = {key: arn}
    if namespace:
        body["namespace"] = namespace
    result = state.client().update_mlflow(tag, body, idempotency_key=idempotency_key)
    _report_mlflow(state, result, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@mlflow_app.command("create")
@handle_errors
def mlflow_create(
    ctx: typer.Context,
    tag: TagArgument,
    kind: Annotated[str, typer.Option("--kind", help="trackingServer or app.")] = "trackingServer",
    size: Annotated[str | None, typer.Option("--size", help="Small, Medium or Large (tracking servers).")] = None,
    mlflow_version: Annotated[
        str | None, typer.Option("--mlflow-version", help="MLflow version, e.g. 3.0.0 (tracking servers).")
    ] = None,
    namespace: MlflowNamespaceOption = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a tracking server or app for the cluster (artifacts in the cluster bucket under mlflow/)."""
    state = _state(ctx)
    create: dict[str, Any] = {"kind": kind}
    if size:
        create["size"] = size
    if mlflow_version:
        create["mlflowVersion"] = mlflow_version
    body: dict[str, Any] = {"create": create}
    if namespace:
        body["namespace"] = namespace
    result = state.client().update_mlflow(tag, body, idempotency_key=idempotency_key)
    _report_mlflow(state, result, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@mlflow_app.command("disconnect")
@handle_errors
def mlflow_disconnect(
    ctx: typer.Context,
    tag: TagArgument,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Disconnect: removes the pod identity, and the server or app only when it was created here."""
    state = _state(ctx)
    result = state.client().delete_mlflow(tag, idempotency_key=idempotency_key)
    _report_mlflow(state, result, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@mlflow_app.command("runs")
@handle_errors
def mlflow_runs(
    ctx: typer.Context,
    tag: TagArgument,
    job: Annotated[str, typer.Argument(help="The training job's name (its runs carry instantstart.job=<name>).")],
    namespace: NamespaceOption = "default",
    as_json: JsonOption = False,
) -> None:
    """A training job's MLflow runs: status, params and the latest metrics (404 when the job does not exist)."""
    state = _state(ctx)
    found = state.client().list_training_job_runs(tag, job, namespace=namespace)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    if not found["runs"]:
        state.console.print(f"no runs of {job} in experiment {found['experimentName']}")
    for run in found["runs"]:
        metrics = ", ".join(f"{k}={v:g}" for k, v in run.get("metrics", {}).items()) or "-"
        params = ", ".join(f"{k}={v}" for k, v in run.get("params", {}).items()) or "-"
        state.console.print(
            f"{run['runId']} {run.get('runName') or ''} {run.get('status')}: {metrics}; params {params}"
        )


# ---------------------------------------------------------------- models and self-managed inference
models_app = typer.Typer(
    help="Models in the cluster's storage: download from Hugging Face (a Kubernetes Job), list what is stored.",
    no_args_is_help=True,
)
app.add_typer(models_app, name="models")
deployments_app = typer.Typer(
    help="Self-managed inference (vLLM or SGLang Deployment + Service): create, list, get, scale, invoke, delete, "
    "router.",
    no_args_is_help=True,
)
app.add_typer(deployments_app, name="deployments")

DeploymentNameArgument = Annotated[str, typer.Argument(help="Deployment name, e.g. qwen-vllm.", show_default=False)]


def _secret_ref(value: str | None, option: str) -> dict[str, str] | None:
    """``NAME:KEY`` -> ``{"name", "key"}`` (a Secret reference; the token itself is never an option)."""
    if value is None:
        return None
    name, sep, key = value.partition(":")
    if not sep or not name or not key:
        raise typer.BadParameter(f"{option} takes SECRET_NAME:KEY (e.g. hf-token:token), not {value!r}")
    return {"name": name, "key": key}


def _report_accepted(
    state: CliState,
    accepted: dict[str, Any],
    what: str,
    follow_hint: str,
    as_json: bool,
    *,
    wait: bool,
    poll_interval: float,
    timeout: float | None,
) -> None:
    operation = cast(Operation, accepted["operation"])
    if wait:
        _follow(state, operation, as_json=state.wants_json(as_json), poll_interval=poll_interval, wait_timeout=timeout)
        return
    if state.wants_json(as_json):
        _echo_json(accepted)
        return
    state.console.print(
        f"{esc(operation.get('type'))} {esc(what)}: operation {esc(operation.get('operationId'))} "
        f"{esc(operation.get('status'))}",
        highlight=False,
    )
    state.console.print(follow_hint, markup=False, highlight=False)


@models_app.command("download")
@handle_errors
def models_download(
    ctx: typer.Context,
    tag: TagArgument,
    model_id: Annotated[str, typer.Argument(help="Hugging Face model id, e.g. Qwen/Qwen2.5-0.5B-Instruct.")],
    revision: Annotated[str | None, typer.Option("--revision", help="Branch, tag or commit (default main).")] = None,
    destination: Annotated[str, typer.Option("--destination", help="s3 (the cluster bucket) or fsx.")] = "s3",
    hf_token_secret: Annotated[
        str | None, typer.Option("--hf-token-secret", help="Gated models: SECRET_NAME:KEY of a Secret in default.")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Download a model into the cluster's storage; the operation ends when the Job completed."""
    state = _state(ctx)
    body: dict[str, Any] = {"source": "huggingface", "modelId": model_id, "destination": destination}
    if revision:
        body["revision"] = revision
    ref = _secret_ref(hf_token_secret, "--hf-token-secret")
    if ref:
        body["hfTokenSecret"] = ref
    accepted = state.client().download_model(tag, body, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['modelId']} -> {accepted['location']} (Job {accepted['jobName']})",
        f"Pods will see it at {accepted['modelPath']}; list stored models with: instantstart models list {tag}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@models_app.command("list")
@handle_errors
def models_list(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """Models in the cluster's bucket and on its FSx for Lustre file system (read from storage): where, path pods
    see, size, files; says why the file system is not listed when it cannot be."""
    state = _state(ctx)
    found = state.client().list_models(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    fsx = found.get("fsx") or {}
    if not found["models"]:
        state.console.print(f"no models in s3://{found.get('bucket')}/models/", highlight=False)
    else:
        table = Table(title=f"models of {tag}")
        for column in ("Model", "Storage", "Path", "Size (bytes)", "Files", "Last modified"):
            table.add_column(column)
        for m in found["models"]:
            table.add_row(
                m["modelId"],
                str(m.get("destination")),
                m["modelPath"],
                str(m["sizeBytes"]),
                str(m["files"]),
                str(m.get("lastModified")),
            )
        state.console.print(table)
    if fsx and not fsx.get("listed"):
        state.console.print(f"fsx not listed: {fsx.get('reason')}", highlight=False)


def _model_body(body: str) -> dict[str, Any]:
    """The BODY argument of an invoke command as a JSON object (typer's usage error otherwise)."""
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise typer.BadParameter(f"BODY is not JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise typer.BadParameter("BODY must be a JSON object")
    return payload


def _print_model_answer(state: CliState, answer: dict[str, Any], as_json: bool) -> None:
    """An invoke answer: the whole view with --json, else the model's JSON, else its text."""
    if state.wants_json(as_json) or answer.get("body") is not None:
        _echo_json(answer if state.wants_json(as_json) else answer["body"])
        return
    state.console.print(answer.get("text") or "", markup=False, highlight=False)


@deployments_app.command("create")
@handle_errors
def deployments_create(
    ctx: typer.Context,
    tag: TagArgument,
    name: Annotated[str, typer.Option("--name", help="Deployment name (DNS-1035, e.g. qwen-vllm).")],
    engine: Annotated[str, typer.Option("--engine", help="vllm or sglang.")],
    model_path: Annotated[str, typer.Option("--model-path", help="Model directory, e.g. /s3/models/<modelId>.")],
    served_model_name: Annotated[str, typer.Option("--served-model-name", help="Model name clients send.")],
    instance_type: Annotated[str, typer.Option("--instance-type", help="One of the cluster's instance types.")],
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs per replica = tensor parallel size.")] = None,
    replicas: Annotated[int | None, typer.Option("--replicas", help="Pods (default 1).")] = None,
    max_model_len: Annotated[int | None, typer.Option("--max-model-len", help="Most tokens of a sequence.")] = None,
    port: Annotated[int | None, typer.Option("--port", help="Port (default vllm 8000, sglang 30000).")] = None,
    image: Annotated[str | None, typer.Option("--image", help="Pinned engine image (default: the engine's).")] = None,
    service_type: Annotated[
        str | None, typer.Option("--service-type", help="ClusterIP (default) or LoadBalancer (an internal NLB).")
    ] = None,
    internet_facing: Annotated[
        bool, typer.Option("--internet-facing", help="With LoadBalancer: reachable from the internet.")
    ] = False,
    hf_token_secret: Annotated[
        str | None, typer.Option("--hf-token-secret", help="SECRET_NAME:KEY of a Secret with a Hugging Face token.")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Deploy a model with vLLM or SGLang; follow readiness with `deployments get`."""
    state = _state(ctx)
    body: dict[str, Any] = {
        "name": name,
        "engine": engine,
        "modelPath": model_path,
        "servedModelName": served_model_name,
        "instanceType": instance_type,
    }
    optional = {"gpus": gpus, "replicas": replicas, "maxModelLen": max_model_len, "port": port, "image": image}
    body.update({k: v for k, v in optional.items() if v is not None})
    if service_type or internet_facing:
        body["service"] = {"type": service_type or "LoadBalancer"}
        if internet_facing:
            body["service"]["exposure"] = "internet-facing"
    ref = _secret_ref(hf_token_secret, "--hf-token-secret")
    if ref:
        body["hfTokenSecret"] = ref
    accepted = state.client().create_inference_deployment(tag, body, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['namespace']}/{accepted['name']} on {tag}",
        f"Follow it with: instantstart deployments get {tag} {accepted['name']}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@deployments_app.command("list")
@handle_errors
def deployments_list(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's inference deployments: engine, status, replicas ready/desired."""
    state = _state(ctx)
    found = state.client().list_inference_deployments(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    if not found["deployments"]:
        state.console.print("no inference deployments")
        return
    table = Table(title=f"inference deployments of {tag}")
    for column in ("Name", "Engine", "Model", "Instance type", "GPUs", "Status", "Ready"):
        table.add_column(column)
    for d in found["deployments"]:
        table.add_row(
            d["name"],
            str(d.get("engine") or "-"),
            str(d.get("servedModelName") or "-"),
            str(d.get("instanceType") or "-"),
            str(d.get("gpus") or "-"),
            d["status"],
            f"{d['readyReplicas']}/{d['desiredReplicas']}",
        )
    state.console.print(table)


@deployments_app.command("get")
@handle_errors
def deployments_get(
    ctx: typer.Context, tag: TagArgument, name: DeploymentNameArgument, as_json: JsonOption = False
) -> None:
    """A deployment: status, replicas, Service URL, pods (node, phase, ready, bound model)."""
    state = _state(ctx)
    d = state.client().get_inference_deployment(tag, name)
    if state.wants_json(as_json):
        _echo_json(d)
        return
    console = state.console
    console.print(
        f"[bold]{esc(d['namespace'])}/{esc(d['name'])}[/] {esc(d.get('engine') or '-')} "
        f"{esc(d.get('servedModelName') or '-')}: [bold]{esc(d['status'])}[/], "
        f"{d['readyReplicas']}/{d['desiredReplicas']} ready",
        highlight=False,
    )
    if d.get("service"):
        console.print(f"Service: {d['service']['type']} {d['service']['url']}", markup=False, highlight=False)
    if d.get("router"):
        console.print(f"Router: {d['router']['url']}", markup=False, highlight=False)
    pods = Table(title="pods")
    for column in ("Pod", "Node", "Phase", "Ready", "Bound model"):
        pods.add_column(column)
    for pod in d["pods"]:
        pods.add_row(
            pod["name"],
            str(pod.get("nodeName") or "-"),
            str(pod.get("phase") or "-"),
            "yes" if pod["ready"] else "no",
            str(pod.get("boundModel") or "-"),
        )
    console.print(pods)


@deployments_app.command("scale")
@handle_errors
def deployments_scale(
    ctx: typer.Context,
    tag: TagArgument,
    name: DeploymentNameArgument,
    replicas: Annotated[int, typer.Option("--replicas", help="Pods wanted (idle pods are removed first).")],
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Scale a deployment; a scale-in that would remove a pod serving a bound model is refused (exit 2)."""
    state = _state(ctx)
    accepted = state.client().scale_inference_deployment(tag, name, replicas, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['namespace']}/{accepted['name']} -> {replicas} replicas",
        f"Follow it with: instantstart deployments get {tag} {name}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@deployments_app.command("invoke")
@handle_errors
def deployments_invoke(
    ctx: typer.Context,
    tag: TagArgument,
    name: DeploymentNameArgument,
    body: Annotated[str, typer.Argument(help='The JSON object sent to the engine, e.g. \'{"prompt": "Hello"}\'.')],
    chat: Annotated[
        bool, typer.Option("--chat", help="Call v1/chat/completions (messages) instead of v1/completions (prompt).")
    ] = False,
    via: Annotated[
        str | None,
        typer.Option("--via", help="router or service (default: the router when the deployment has one)."),
    ] = None,
    idempotency_key: IdempotencyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Call the engine (OpenAI-compatible route, through the Kubernetes service proxy; at most 1 MiB sent)."""
    state = _state(ctx)
    payload = _model_body(body)
    answer = state.client().invoke_inference_deployment(
        tag,
        name,
        payload,
        route="v1/chat/completions" if chat else None,
        via=via,
        idempotency_key=idempotency_key,
    )
    _print_model_answer(state, answer, as_json)


@deployments_app.command("delete")
@handle_errors
def deployments_delete(
    ctx: typer.Context,
    tag: TagArgument,
    name: DeploymentNameArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a deployment with its Service and router (asks you to type its name)."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(f"This deletes inference deployment '{name}' of '{tag}' and its Service. Type its name")
        if typed.strip() != name:
            state.err_console.print("Aborted: the name you typed does not match; nothing was deleted.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    accepted = state.client().delete_inference_deployment(tag, name, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['namespace']}/{accepted['name']}",
        f"Check with: instantstart deployments list {tag}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@deployments_app.command("router")
@handle_errors
def deployments_router(
    ctx: typer.Context,
    tag: TagArgument,
    name: DeploymentNameArgument,
    policy: Annotated[str | None, typer.Option("--policy", help="cache_aware (default), round_robin, ...")] = None,
    min_replicas: Annotated[int | None, typer.Option("--min-replicas", help="KEDA: fewest workers.")] = None,
    max_replicas: Annotated[
        int | None, typer.Option("--max-replicas", help="KEDA: most workers (turns it on).")
    ] = None,
    prometheus: Annotated[
        str | None, typer.Option("--prometheus", help="KEDA: Prometheus URL scraping the workers.")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Put the SGLang cache-aware router in front of an SGLang deployment; --max-replicas adds KEDA autoscaling."""
    state = _state(ctx)
    body: dict[str, Any] = {}
    if policy:
        body["policy"] = policy
    if max_replicas is not None or prometheus is not None:
        scaling: dict[str, Any] = {"maxReplicas": max_replicas, "prometheusServerAddress": prometheus}
        if min_replicas is not None:
            scaling["minReplicas"] = min_replicas
        body["autoscaling"] = {k: v for k, v in scaling.items() if v is not None}
    accepted = state.client().create_inference_router(tag, name, body, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"router of {accepted['namespace']}/{accepted['name']}",
        f"Follow it with: instantstart deployments get {tag} {name}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


# ---------------------------------------------------------------- managed inference endpoints
endpoints_app = typer.Typer(
    help="Managed inference endpoints (the HyperPod inference operator, a SageMaker endpoint): create, list, get, "
    "invoke, delete.",
    no_args_is_help=True,
)
app.add_typer(endpoints_app, name="endpoints")

EndpointNameArgument = Annotated[str, typer.Argument(help="Endpoint name, e.g. qwen-managed.", show_default=False)]


@endpoints_app.command("create")
@handle_errors
def endpoints_create(
    ctx: typer.Context,
    tag: TagArgument,
    body_file: Annotated[
        Path | None,
        typer.Option("--body", help="A JSON file with the whole request (modelSource, worker, kvCacheSpec, ...)."),
    ] = None,
    name: Annotated[str | None, typer.Option("--name", help="Endpoint name (without --body).")] = None,
    instance_type: Annotated[str | None, typer.Option("--instance-type", help="e.g. ml.g6.4xlarge.")] = None,
    s3_model: Annotated[
        str | None, typer.Option("--s3-model", help="Model prefix in the cluster's bucket, e.g. models/Qwen/Qwen2.5.")
    ] = None,
    image: Annotated[str | None, typer.Option("--image", help="Worker image with a pinned tag or digest.")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs per worker.")] = None,
    replicas: Annotated[int | None, typer.Option("--replicas", help="Workers.")] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Deploy a model as a managed endpoint: --body FILE, or --name/--instance-type/--s3-model/--image."""
    state = _state(ctx)
    if body_file is not None:
        body: dict[str, Any] = dict(json.loads(body_file.read_text()))
    else:
        missing = [o for o, v in (("--name", name), ("--instance-type", instance_type), ("--image", image)) if not v]
        if missing or not s3_model:
            raise typer.BadParameter(f"give --body FILE, or {', '.join(missing + ['--s3-model'] * (not s3_model))}")
        body = {
            "name": name,
            "instanceType": instance_type,
            "modelSource": {"type": "s3", "modelLocation": s3_model},
            "worker": {"image": image, **({"resources": {"gpus": gpus}} if gpus is not None else {})},
        }
        if replicas is not None:
            body["replicas"] = replicas
    accepted = state.client().create_inference_endpoint(tag, body, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['kind']} {accepted['namespace']}/{accepted['name']} ({accepted['apiVersion']}) on {tag}",
        f"Follow it with: instantstart endpoints get {tag} {accepted['name']}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )


@endpoints_app.command("list")
@handle_errors
def endpoints_list(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's managed endpoints: kind, state, replicas, SageMaker endpoint."""
    state = _state(ctx)
    found = state.client().list_inference_endpoints(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    if not found["endpoints"]:
        state.console.print("no managed inference endpoints")
        return
    table = Table(title=f"managed inference endpoints of {tag}")
    for column in ("Name", "Kind", "Instance type", "State", "Ready", "SageMaker endpoint"):
        table.add_column(column)
    for e in found["endpoints"]:
        table.add_row(
            e["name"],
            e["kind"],
            str(e.get("instanceType") or "-"),
            str(e.get("state") or "-"),
            f"{e.get('readyReplicas') or 0}/{e.get('replicas') or 0}",
            str(e.get("endpointName") or "-"),
        )
    state.console.print(table)


@endpoints_app.command("get")
@handle_errors
def endpoints_get(
    ctx: typer.Context, tag: TagArgument, name: EndpointNameArgument, as_json: JsonOption = False
) -> None:
    """An endpoint: state and message, conditions, SageMaker endpoint, worker pods' events."""
    state = _state(ctx)
    e = state.client().get_inference_endpoint(tag, name)
    if state.wants_json(as_json):
        _echo_json(e)
        return
    console = state.console
    console.print(
        f"[bold]{esc(e['namespace'])}/{esc(e['name'])}[/] {esc(e['kind'])} {esc(e['apiVersion'])}: "
        f"[bold]{esc(e.get('state') or '-')}[/]" + (f" - {esc(e['message'])}" if e.get("message") else ""),
        highlight=False,
    )
    sm = e.get("sagemaker")
    if sm:
        console.print(
            f"SageMaker endpoint {sm['name']}: {sm.get('state') or '-'} ({sm.get('status') or 'not found'}) "
            f"{sm.get('endpointArn') or ''}",
            markup=False,
            highlight=False,
        )
    for c in e["conditions"]:
        console.print(f"  {c.get('type')}={c.get('status')} {c.get('reason') or ''}", markup=False, highlight=False)
    for ev in e["events"]:
        console.print(
            f"  {ev['pod']}: {ev.get('type') or ''} {ev.get('reason') or ''} {ev.get('message') or ''}",
            markup=False,
            highlight=False,
        )


@endpoints_app.command("invoke")
@handle_errors
def endpoints_invoke(
    ctx: typer.Context,
    tag: TagArgument,
    name: EndpointNameArgument,
    body: Annotated[str, typer.Argument(help='The JSON object sent to the model, e.g. \'{"prompt": "Hello"}\'.')],
    idempotency_key: IdempotencyOption = None,
    as_json: JsonOption = False,
) -> None:
    """Call the model (SageMaker InvokeEndpoint; at most 1 MiB sent, the answer cut at 256 KiB)."""
    state = _state(ctx)
    payload = _model_body(body)
    answer = state.client().invoke_inference_endpoint(tag, name, payload, idempotency_key=idempotency_key)
    _print_model_answer(state, answer, as_json)


@endpoints_app.command("delete")
@handle_errors
def endpoints_delete(
    ctx: typer.Context,
    tag: TagArgument,
    name: EndpointNameArgument,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete an endpoint; the operator removes its SageMaker endpoint, config and model (asks you to type its name)."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(
            f"This deletes managed endpoint '{name}' of '{tag}' and its SageMaker endpoint. Type its name"
        )
        if typed.strip() != name:
            state.err_console.print("Aborted: the name you typed does not match; nothing was deleted.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    accepted = state.client().delete_inference_endpoint(tag, name, idempotency_key=idempotency_key)
    _report_accepted(
        state,
        accepted,
        f"{accepted['kind']} {accepted['namespace']}/{accepted['name']}",
        f"Check with: instantstart endpoints list {tag}",
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        timeout=wait_timeout,
    )
