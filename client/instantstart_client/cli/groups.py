"""``instantstart groups``: list, add, scale, update and delete a cluster's instance groups."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from instantstart_client.cli.common import (
    CAPACITY_TYPE_HELP,
    EXIT_OPERATION_FAILED,
    DedicatedSubnetOption,
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
from instantstart_client.progress import DEFAULT_POLL_INTERVAL
from instantstart_client.shapes import InstanceGroupSpec

groups_app = typer.Typer(help="List, add, scale, update and delete a cluster's instance groups.", no_args_is_help=True)

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
    capacity_type: Annotated[str, typer.Option("--capacity-type", help=CAPACITY_TYPE_HELP)] = "OnDemand",
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
