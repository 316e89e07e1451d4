"""``instantstart clusters``: create, import, inspect, retry and delete clusters, list their operations."""

from __future__ import annotations

from typing import Annotated, cast

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
from instantstart_client.render import (
    cluster_overview_table,
    clusters_table,
    drift_table,
    esc,
    events_table,
    failed_stage,
    operations_table,
    print_summary,
    resources_table,
    stages_table,
)
from instantstart_client.shapes import EVENT_LEVELS, InstanceGroupSpec, Operation

clusters_app = typer.Typer(help="Create, inspect, retry and delete clusters.", no_args_is_help=True)


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
        typer.Option("--capacity-type", help=CAPACITY_TYPE_HELP),
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
        typer.Option("--capacity-type", help=CAPACITY_TYPE_HELP),
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
    drift = drift_table(cluster)
    if drift is not None:
        console.print(drift)
        console.print(f"Repair what is repairable: instantstart clusters reconcile {tag}", markup=False)
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


@clusters_app.command("reconcile")
@handle_errors
def clusters_reconcile(
    ctx: typer.Context,
    tag: TagArgument,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Check a cluster for drift now and repair what the control plane owns (a RECONCILE_CLUSTER operation)."""
    state = _state(ctx)
    answer = state.client().reconcile_cluster(tag, idempotency_key=idempotency_key)
    if "operationId" in answer:
        _report_operation(
            state, cast(Operation, answer), as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout
        )
        return
    if state.wants_json(as_json):
        _echo_json(answer)
        return
    state.console.print(f"{tag}: {answer.get('message')}", markup=False, highlight=False, soft_wrap=True)


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
