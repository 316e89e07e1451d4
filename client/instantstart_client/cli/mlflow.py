"""``instantstart mlflow``: SageMaker managed MLflow of a cluster (show, connect, create, disconnect, runs)."""

from __future__ import annotations

from typing import Annotated, Any, cast

import typer

from instantstart_client.cli.common import (
    IdempotencyOption,
    JsonOption,
    PollOption,
    TagArgument,
    WaitOption,
    WaitTimeoutOption,
    _echo_json,
    _report_operation,
    _state,
    handle_errors,
)
from instantstart_client.cli.jobs import NamespaceOption
from instantstart_client.progress import DEFAULT_POLL_INTERVAL
from instantstart_client.shapes import Operation

mlflow_app = typer.Typer(
    help="SageMaker managed MLflow of a cluster: show, connect an existing one, create one, disconnect.",
    no_args_is_help=True,
)

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
