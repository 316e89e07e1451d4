"""``instantstart operations``: inspect, follow and cancel long-running operations."""

from __future__ import annotations

from typing import Annotated

import typer

from instantstart_client.cli.common import (
    IdempotencyOption,
    JsonOption,
    PollOption,
    WaitOption,
    WaitTimeoutOption,
    _echo_json,
    _follow,
    _state,
    handle_errors,
)
from instantstart_client.progress import DEFAULT_POLL_INTERVAL
from instantstart_client.render import operation_table

operations_app = typer.Typer(help="Inspect, follow and cancel long-running operations.", no_args_is_help=True)


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
