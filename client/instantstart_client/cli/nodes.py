"""``instantstart nodes`` (list, reboot, replace, delete) and the day-2 HyperPod operations of ``instantstart
clusters`` (software-update, health-check, hyperpod-operations)."""

from __future__ import annotations

from typing import Annotated

import typer

from instantstart_client.cli.clusters import clusters_app
from instantstart_client.cli.common import (
    EXIT_OPERATION_FAILED,
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
from instantstart_client.render import events_table
from instantstart_client.render_nodes import hyperpod_operations_table, nodes_table
from instantstart_client.shapes import DEEP_HEALTH_CHECKS, HYPERPOD_OPERATION_STATUSES, HYPERPOD_OPERATION_TYPES

nodes_app = typer.Typer(help="List, reboot, replace and delete the nodes of a cluster.", no_args_is_help=True)

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
