"""Rich tables of the day-2 node answers: a cluster's nodes, the result of a node action, software update or
health check, and HyperPod's operations. Built with the helpers of :mod:`instantstart_client.render`."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from instantstart_client.render import MISSING, add_row, format_time
from instantstart_client.shapes import ChangeResult, ClusterNode, HyperPodOperationSummary, Operation


def nodes_table(nodes: Sequence[ClusterNode], cluster_name: str) -> Table:
    """``GET /clusters/{clusterTag}/nodes`` as a table: instance, group, type, status, Kubernetes node, health."""
    table = Table(title=f"Nodes of {cluster_name} ({len(nodes)})")
    for column in ("Instance", "Group", "Type", "Status", "Launched", "Kubernetes node", "Health"):
        table.add_column(column, no_wrap=True)
    for n in nodes:
        status = n.get("instanceStatus") or MISSING
        message = n.get("instanceStatusMessage")
        add_row(
            table,
            n.get("instanceId"),
            n.get("instanceGroupName"),
            n.get("instanceType"),
            f"{status} ({message})" if message else status,
            format_time(n.get("launchTime")),
            n.get("kubernetesNodeName"),
            n.get("healthStatus") or MISSING,
        )
    return table


def change_result_table(operation: Operation) -> Table:
    """The ``result`` of a node action, software update or health check operation: each node accepted or refused
    (or failed its check), with SageMaker's code and message verbatim."""
    result: ChangeResult = operation.get("result") or {
        "nodeIds": None,
        "successful": None,
        "failed": None,
        "hyperPodOperationId": None,
        "observed": None,
    }
    table = Table(title=f"{operation.get('type')} on {operation.get('clusterTag')}")
    for column in ("Instance", "Outcome", "Code"):
        table.add_column(column, no_wrap=True)
    table.add_column("Message", overflow="fold")
    failed = result.get("failed") or []
    done = {f.get("nodeId") for f in failed}
    for node_id in result.get("successful") or []:
        if node_id not in done:
            add_row(table, node_id, Text("accepted", style="green"), MISSING, MISSING)
    for failure in failed:
        add_row(table, failure.get("nodeId"), Text("failed", style="red"), failure.get("code"), failure.get("message"))
    if result.get("successful") is None:
        for node_id in result.get("nodeIds") or []:
            add_row(table, node_id, Text("pending"), MISSING, MISSING)
    return table


def hyperpod_operations_table(operations: Sequence[HyperPodOperationSummary], cluster_name: str) -> Table:
    """``GET /clusters/{clusterTag}/hyperpod-operations`` as a table, newest first."""
    table = Table(title=f"HyperPod operations of {cluster_name} ({len(operations)}, newest first)")
    for column in ("Operation", "Type", "Status", "Created"):
        table.add_column(column, no_wrap=True)
    for o in operations:
        add_row(table, o.get("operationId"), o.get("type"), o.get("status"), format_time(o.get("creationTime")))
    return table
