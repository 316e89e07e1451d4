"""The article's agent transcript as a program: inspect, choose, create, poll to completion, summarise.

It follows the three rules of the article's agent skill: inspect before creating (existing clusters,
offered zones and instance types), ask only decision-grade questions (the arguments: tag, zone,
instance type and count), and poll to a terminal state instead of stopping early. It calls only the
HTTP API through :class:`instantstart_client.api.InstantStartClient`, and shows progress with the CLI's live stage
display (:func:`instantstart_client.progress.watch_operation`).
"""

from __future__ import annotations

from rich.console import Console

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_client.progress import watch_operation
from instantstart_client.render import clusters_table, esc, failed_stage, print_summary
from instantstart_client.shapes import Cluster, InstanceGroupSpec, Operation

PLAN = (
    "Create EKS cluster (network: VPC, subnets, EKS control plane; about 8-12 minutes on AWS)",
    "Switch to the new cluster and verify access",
    "Install dependencies (EKS add-ons and Kubernetes objects)",
    "Create HyperPod cluster",
    "Configure S3 storage",
    "Final verification (nodes Ready and schedulable, storage Bound)",
)


def _print_failed(console: Console, cluster: Cluster, operation: Operation | None = None) -> None:
    stage = failed_stage(cluster)
    tag = cluster.get("clusterTag")
    if stage is not None:
        error = stage.get("error") or {"code": "Unknown", "message": "no error recorded"}
        console.print(
            f"[red]Cluster [bold]{esc(tag)}[/bold] FAILED at stage [bold]{esc(stage['name'])}[/bold] "
            f"(attempt {stage.get('attempts', 0)}): {esc(error.get('code'))}: {esc(error.get('message'))}[/]",
            highlight=False,
            soft_wrap=True,
        )
        console.print(
            f"Earlier stages are kept. Retry with: instantstart clusters retry {tag} {stage['name']} --wait",
            markup=False,
            highlight=False,
        )
    elif operation is not None and operation.get("error"):
        error = operation["error"] or {"code": "", "message": ""}
        console.print(
            f"[red]Operation {esc(operation.get('operationId'))} {esc(operation.get('status'))}: "
            f"{esc(error.get('code'))}: {esc(error.get('message'))}[/]",
            highlight=False,
            soft_wrap=True,
        )
    else:
        console.print(f"[red]Cluster [bold]{esc(tag)}[/bold] is {esc(cluster.get('status'))}.[/]", highlight=False)


def _follow(client: InstantStartClient, console: Console, operation: Operation, poll_interval: float) -> int:
    """Watch ``operation`` live to its end; print the summary on READY. Returns 0 on READY, else 1."""
    result = watch_operation(client, console, operation, poll_interval=poll_interval)
    cluster = result.cluster or client.get_cluster(operation["clusterTag"])
    if result.succeeded and cluster.get("status") == "READY":
        console.print("[bold green]HyperPod cluster creation fully complete![/] Summary:")
        print_summary(console, cluster)
        return 0
    _print_failed(console, cluster, result.operation)
    return 1


def run_demo(
    client: InstantStartClient,
    console: Console,
    cluster_tag: str = "demo",
    availability_zone: str = "us-west-2c",
    instance_type: str = "ml.g6.4xlarge",
    instance_count: int = 1,
    poll_interval: float = 1.0,
) -> int:
    """Create (or find) a HyperPod cluster the way the article's agent does, and summarise it.

    Steps: ``GET /clusters`` (every page); if the tag exists and is READY show its summary, if FAILED
    name the failed stage, if CREATING follow its current operation. Otherwise
    ``GET /catalog/availability-zones`` (is ``availability_zone`` offered?),
    ``GET /catalog/instance-types?availabilityZone=`` (is ``instance_type`` offered there?),
    ``POST /clusters`` (one On-Demand instance group ``accel``), then poll
    ``GET /operations/{id}`` and ``GET /clusters/{tag}`` every ``poll_interval`` seconds with the
    live stage display until the operation ends, and print the summary table.

    Returns:
        0 when the cluster is READY, 1 otherwise (failed stage, zone/type not offered, being deleted).

    Raises:
        ApiError: the API refused a request (e.g. 422 validation of the create, 409 conflict).
        ApiConnectionError: the API is unreachable.
    """
    console.rule("[bold]HyperPod InstantStart[/] — create a cluster")
    console.print("Creating a HyperPod cluster is a multi-step process:")
    for number, step in enumerate(PLAN, start=1):
        console.print(f"  {number}. {step}", highlight=False)

    console.print("\nLet me first check the existing clusters:", style="bold")
    clusters = list(client.iter_clusters())
    console.print(
        f"There {'is' if len(clusters) == 1 else 'are'} currently {len(clusters)} existing "
        f"cluster{'' if len(clusters) == 1 else 's'}."
    )
    if clusters:
        console.print(clusters_table(clusters))

    existing = next((c for c in clusters if c.get("clusterTag") == cluster_tag), None)
    if existing is not None and existing.get("status") != "DELETED":
        try:
            cluster = client.get_cluster(cluster_tag)
        except ApiError as exc:
            if exc.status != 404:
                raise
        else:
            return _existing_cluster(client, console, cluster, poll_interval)

    console.print(f"\nChecking that Availability Zone {esc(availability_zone)} is offered:", style="bold")
    zones = client.list_availability_zones()
    zone = next((z for z in zones if z.get("zoneName") == availability_zone), None)
    if zone is None:
        offered = ", ".join(z.get("zoneName", "") for z in zones) or "none"
        console.print(f"[red]{esc(availability_zone)} is not offered in this Region. Offered: {esc(offered)}[/]")
        return 1
    console.print(f"{esc(availability_zone)} ({esc(zone.get('zoneId'))}) is offered.", highlight=False)

    console.print(f"\nChecking that {esc(instance_type)} is offered in {esc(availability_zone)}:", style="bold")
    instance_types = client.list_instance_types(availability_zone)
    if instance_type not in instance_types:
        offered = ", ".join(instance_types) or "none"
        console.print(
            f"[red]{esc(instance_type)} is not offered in {esc(availability_zone)}. Offered: {esc(offered)}[/]"
        )
        return 1
    console.print(f"{esc(instance_type)} is offered ({len(instance_types)} types in {esc(availability_zone)}).")

    group: InstanceGroupSpec = {
        "instanceGroupName": "accel",
        "instanceType": instance_type,
        "instanceCount": instance_count,
        "capacityType": "OnDemand",
    }
    console.print(
        f"\nCreating cluster [bold]{esc(cluster_tag)}[/] in {esc(availability_zone)} with {instance_count}x "
        f"{esc(instance_type)} (On-Demand):",
        highlight=False,
    )
    operation = client.create_cluster(cluster_tag, availability_zone, [group])
    console.print(
        f"Cluster creation has started (operation {esc(operation['operationId'])}). "
        f"Polling every {poll_interval:g}s until it completes.",
        highlight=False,
    )
    return _follow(client, console, operation, poll_interval)


def _existing_cluster(client: InstantStartClient, console: Console, cluster: Cluster, poll_interval: float) -> int:
    """Report on a cluster that already has the demo's tag; follow it if it is being created."""
    tag = cluster.get("clusterTag")
    status = cluster.get("status")
    if status == "READY":
        console.print(f"Cluster [bold]{esc(tag)}[/] already exists and is [green]READY[/]. Summary:", highlight=False)
        print_summary(console, cluster)
        return 0
    if status == "FAILED":
        _print_failed(console, cluster)
        return 1
    operation_id = cluster.get("currentOperationId")
    if status == "CREATING" and operation_id:
        console.print(
            f"Cluster [bold]{esc(tag)}[/] is being created (operation {esc(operation_id)}); following it.",
            highlight=False,
        )
        return _follow(client, console, client.get_operation(operation_id), poll_interval)
    console.print(
        f"[red]Cluster [bold]{esc(tag)}[/bold] is {esc(status)}; wait for it to finish or choose another tag.[/]",
        highlight=False,
    )
    return 1
