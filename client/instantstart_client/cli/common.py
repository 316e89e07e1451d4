"""What every command group of the CLI shares: exit codes, the invocation's state and client, the common
options, the error handling, and the reporting (or live following) of an operation."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, ParamSpec, TypeVar

import typer
from rich.console import Console

from instantstart_client import operations
from instantstart_client.api import ApiConnectionError, ApiError, ConfigurationError, InstantStartClient
from instantstart_client.progress import WatchResult, watch_operation
from instantstart_client.render import esc, print_summary
from instantstart_client.render_nodes import change_result_table
from instantstart_client.shapes import Operation

EXIT_OPERATION_FAILED = 1
EXIT_CLIENT_ERROR = 2
EXIT_SERVER_ERROR = 3
EXIT_WAIT_TIMEOUT = 4
EXIT_INTERRUPTED = 130

P = ParamSpec("P")
R = TypeVar("R")


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
            from instantstart_client import cli as package  # its InstantStartClient: tests replace it there

            self._client = package.InstantStartClient(api_url=self.api_url, region=self.region)
        return self._client

    def wants_json(self, local_flag: bool) -> bool:
        """``--json`` given before the command group or after the command."""
        return self.json_output or local_flag

    def close(self) -> None:
        """Close the client's connections."""
        if self._client is not None:
            self._client.close()


def allowed_values(schema: str) -> tuple[str, ...]:
    """The ``enum`` of the shipped OpenAPI document's component schema ``schema`` (e.g. ``CapacityType`` ->
    ``("OnDemand", "Spot", "TrainingPlan")``), so help texts state what the API accepts.

    Raises:
        KeyError: no such schema, or it has no ``enum``.
    """
    return tuple(str(v) for v in operations.document()["components"]["schemas"][schema]["enum"])


def one_of(schema: str) -> str:
    """``"A, B or C"``: the allowed values of ``schema`` (:func:`allowed_values`) for a help text."""
    values = allowed_values(schema)
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


CAPACITY_TYPE_HELP = f"How the capacity is paid for: {one_of('CapacityType')}."

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


def _pairs(values: list[str] | None, option: str) -> list[tuple[str, str]]:
    pairs = [item.partition("=") for item in values or []]
    bad = [k for k, sep, _ in pairs if not sep]
    if bad:
        raise typer.BadParameter(f"{option} takes NAME=VALUE, got {bad[0]!r}")
    return [(k, v) for k, _, v in pairs]
