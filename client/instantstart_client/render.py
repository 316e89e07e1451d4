"""How API answers look to a human: tables, the live stage board and the cluster summary.

Shared by the CLI and the demo so both show the same thing. Every value comes from an API answer;
nothing here knows AWS or Kubernetes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from instantstart_client.shapes import (
    TERMINAL_OPERATION_STATUSES,
    AvailabilityZone,
    Cluster,
    ClusterEvent,
    ClusterSummary,
    InstanceGroupInfo,
    NodeInfo,
    Operation,
    Stage,
)

STATUS_STYLES = {
    "PENDING": "dim",
    "RUNNING": "yellow",
    "CREATING": "yellow",
    "DELETING": "yellow",
    "SUCCEEDED": "green",
    "READY": "green",
    "DELETED": "dim",
    "FAILED": "bold red",
    "CANCELLED": "red",
}
STATUS_ICONS = {"PENDING": "·", "SUCCEEDED": "✓", "FAILED": "✗", "CANCELLED": "✗"}
CAPACITY_LABELS = {"OnDemand": "On-Demand", "Spot": "Spot", "TrainingPlan": "Training Plan"}
MISSING = "—"


def esc(value: object) -> str:
    """``value`` as text safe to interpolate into rich markup (API messages may contain ``[...]``)."""
    return escape(str(value))


def cell(value: object) -> Text:
    """A table cell showing ``value`` verbatim (never parsed as markup)."""
    return value if isinstance(value, Text) else Text("" if value is None else str(value))


def add_row(table: Table, *cells: object) -> None:
    """Add a row whose plain-string cells are shown verbatim."""
    table.add_row(*(c if isinstance(c, Spinner) else cell(c) for c in cells))


def utcnow() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(UTC)


def parse_time(value: str | None) -> datetime | None:
    """Parse an API timestamp (ISO-8601, ``Z`` or offset); None for missing or unparsable values."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def format_time(value: str | None) -> str:
    """``2025-03-04 10:11:12`` (UTC) for an API timestamp, the raw value if unparsable, ``—`` if None."""
    parsed = parse_time(value)
    if parsed is None:
        return value or MISSING
    return parsed.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def format_duration(seconds: float | None) -> str:
    """``42s``, ``3m 05s``, ``1h 02m``; ``—`` for None."""
    if seconds is None:
        return MISSING
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def stage_elapsed(stage: Stage, now: datetime) -> float | None:
    """Seconds a stage ran: ``endedAt - startedAt``, or up to ``now`` while it runs; None if not started."""
    started = parse_time(stage.get("startedAt"))
    if started is None:
        return None
    ended = parse_time(stage.get("endedAt"))
    if ended is None:
        if stage.get("status") != "RUNNING":
            return None
        ended = now
    return (ended - started).total_seconds()


def styled_status(status: str | None) -> Text:
    """The status word in its colour."""
    value = status or MISSING
    return Text(value, style=STATUS_STYLES.get(value, ""))


def _stage_detail(stage: Stage) -> Text:
    error = stage.get("error")
    if error:
        return Text(f"{error.get('code')}: {error.get('message')}", style="red")
    observed = stage.get("observedStatus")
    return Text(observed or "", style="dim")


def stages_table(stages: Sequence[Stage], *, now: datetime | None = None, live: bool = False) -> Table:
    """One row per stage: order, name, status, attempts, elapsed, detail (observed status or error).

    With ``live`` the RUNNING stage shows a spinner (animated by a :class:`rich.live.Live`).
    """
    now = now or utcnow()
    table = Table(title=None, show_lines=False, expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("Stage")
    table.add_column("Status")
    table.add_column("Attempts", justify="right")
    table.add_column("Elapsed", justify="right")
    table.add_column("Detail", overflow="fold", max_width=60)
    for stage in sorted(stages, key=lambda s: s.get("order", 0)):
        status = stage.get("status", "")
        status_cell: RenderableType
        if status == "RUNNING" and live:
            status_cell = Spinner("dots", text=styled_status(status), style="yellow")
        else:
            icon = STATUS_ICONS.get(status, "…" if status == "RUNNING" else " ")
            status_cell = Text.assemble((icon + " ", STATUS_STYLES.get(status, "")), styled_status(status))
        add_row(
            table,
            str(stage.get("order", "")),
            stage.get("name", ""),
            status_cell,
            str(stage.get("attempts", 0)),
            format_duration(stage_elapsed(stage, now)),
            _stage_detail(stage),
        )
    return table


class StageBoard:
    """Live progress of one operation on one cluster: a header line and the stage table.

    Rendered lazily (``__rich__``), so a :class:`rich.live.Live` refreshing between polls keeps the
    spinner turning and the running stage's elapsed time counting.
    """

    def __init__(self, cluster_tag: str, *, clock: Callable[[], datetime] = utcnow) -> None:
        self.cluster_tag = cluster_tag
        self.operation: Operation | None = None
        self.cluster: Cluster | None = None
        self._clock = clock

    def update(self, operation: Operation | None, cluster: Cluster | None) -> None:
        """Record the latest answers of ``GET /operations/{id}`` and ``GET /clusters/{tag}``."""
        if operation is not None:
            self.operation = operation
        if cluster is not None:
            self.cluster = cluster

    def __rich__(self) -> RenderableType:
        return self.render(live=True)

    def render(self, *, live: bool = False) -> RenderableType:
        """Header and stage table; ``live`` adds spinners while the operation and a stage run."""
        header = Text.assemble(("Cluster ", "bold"), (self.cluster_tag, "bold cyan"))
        if self.cluster is not None:
            header.append("  ")
            header.append_text(styled_status(self.cluster.get("status")))
        operation_status = None
        if self.operation is not None:
            operation_status = self.operation.get("status")
            header.append(f"   operation {self.operation.get('type', '')} {self.operation.get('operationId')} ")
            header.append_text(styled_status(operation_status))
        top: RenderableType = header
        if live and operation_status not in TERMINAL_OPERATION_STATUSES:
            top = Spinner("dots", text=header, style="yellow")
        stages = self.cluster.get("stages", []) if self.cluster else []
        if not stages:
            return Group(top, Text("waiting for the first status…", style="dim"))
        return Group(top, stages_table(stages, now=self._clock(), live=live))


# -- the summary table of the article ---------------------------------------------------------------


def _group_label(group: InstanceGroupInfo) -> str:
    target = group.get("instanceCount")
    current = group.get("currentCount")
    count = f"{target}" if current is None or current == target else f"{current}/{target}"
    capacity = CAPACITY_LABELS.get(group.get("capacityType") or "", group.get("capacityType") or MISSING)
    types = group.get("instanceType") or "|".join(group.get("instanceTypes") or []) or MISSING
    return f"{count}x {types} ({capacity})"


def _node_status(nodes: Sequence[NodeInfo]) -> str:
    if not nodes:
        return "No nodes"
    states = Counter(
        f"{'Ready' if node.get('ready') else 'NotReady'} / {node.get('healthStatus') or 'Unknown'}" for node in nodes
    )
    if len(states) == 1:
        return next(iter(states))
    return ", ".join(f"{count}x {state}" for state, count in sorted(states.items()))


def _storage_status(cluster: Cluster) -> str:
    storage = cluster.get("storage")
    if not storage:
        return "Not configured"
    phase = storage.get("phase") or "Unknown"
    mounted = "mounted" if phase == "Bound" else "not mounted"
    return f"{storage.get('persistentVolumeClaim')} {mounted} ({phase})"


def summary_rows(cluster: Cluster) -> list[tuple[str, str]]:
    """The article's summary rows, each derived from ``GET /clusters/{tag}``.

    ``EKS Cluster`` (eks.clusterName), ``HyperPod Cluster`` (hyperPod.clusterName), ``Node``
    (``<count>x <type> (<capacity>)`` per instance group), ``Node Status`` (``Ready / <healthStatus>``
    per distinct node state), ``S3 Storage`` (``<pvc> mounted (<phase>)``).
    """
    eks = cluster.get("eks")
    hyperpod = cluster.get("hyperPod")
    groups = hyperpod.get("instanceGroups", []) if hyperpod else []
    return [
        ("EKS Cluster", eks.get("clusterName") if eks else MISSING),
        ("HyperPod Cluster", hyperpod.get("clusterName") if hyperpod else MISSING),
        ("Node", ", ".join(_group_label(g) for g in groups) or MISSING),
        ("Node Status", _node_status(cluster.get("nodes") or [])),
        ("S3 Storage", _storage_status(cluster)),
    ]


def format_summary(rows: Iterable[tuple[str, str]]) -> str:
    """Rows as the article's pipe table, e.g. ``| EKS Cluster      | eks-cluster-demo                 |``.

    The label column is as wide as the longest label, the value column at least 32 characters.
    """
    rows = list(rows)
    label_width = max((len(label) for label, _ in rows), default=0)
    value_width = max([32, *(len(value) for _, value in rows)])
    return "\n".join(f"| {label:<{label_width}} | {value:<{value_width}} |" for label, value in rows)


def print_summary(console: Console, cluster: Cluster) -> None:
    """Print the summary table of ``cluster`` verbatim (no markup, no highlighting)."""
    console.print(format_summary(summary_rows(cluster)), markup=False, highlight=False, soft_wrap=True)


def failed_stage(cluster: Cluster | None) -> Stage | None:
    """The first FAILED stage of ``cluster``, or None."""
    if not cluster:
        return None
    for stage in sorted(cluster.get("stages") or [], key=lambda s: s.get("order", 0)):
        if stage.get("status") == "FAILED":
            return stage
    return None


# -- tables of the other answers --------------------------------------------------------------------


def clusters_table(clusters: Sequence[ClusterSummary]) -> Table:
    """``GET /clusters`` as a table."""
    table = Table(title=f"Clusters ({len(clusters)})")
    for column in ("Tag", "Status", "Nodes ready", "Zone", "EKS cluster", "HyperPod cluster", "Created", "Updated"):
        table.add_column(column)
    for c in clusters:
        groups = c.get("instanceGroups") or []
        ready = f"{sum(g.get('readyNodes', 0) for g in groups)}/{sum(g.get('targetCount', 0) for g in groups)}"
        add_row(
            table,
            c.get("clusterTag", ""),
            styled_status(c.get("status")),
            ready if groups else MISSING,
            c.get("availabilityZone") or MISSING,
            c.get("eksClusterName") or MISSING,
            c.get("hyperPodClusterName") or MISSING,
            format_time(c.get("createdAt")),
            format_time(c.get("updatedAt")),
        )
    return table


EVENT_LEVEL_STYLES = {"Info": "", "Warn": "yellow", "Error": "bold red"}


def events_table(events: Sequence[ClusterEvent], cluster_name: str) -> Table:
    """``GET /clusters/{clusterTag}/events`` as a table, newest first; descriptions verbatim, an Error event's
    ``failureMessage`` (or ``failureMessageNote``) on the line below its description."""
    table = Table(title=f"HyperPod events of {cluster_name} ({len(events)}, newest first)")
    for column in ("Time", "Level", "Resource", "Group", "Instance"):
        table.add_column(column, no_wrap=True)
    table.add_column("Description", overflow="fold")
    for e in events:
        level = e.get("eventLevel")
        add_row(
            table,
            format_time(e.get("eventTime")),
            Text(level or MISSING, style=EVENT_LEVEL_STYLES.get(level or "", "")),
            e.get("resourceType") or MISSING,
            e.get("instanceGroupName") or MISSING,
            e.get("instanceId") or MISSING,
            "\n".join(
                part
                for part in (
                    e.get("description") or MISSING,
                    f"Reason: {e['failureMessage']}" if e.get("failureMessage") else e.get("failureMessageNote"),
                )
                if part
            ),
        )
    return table


def _key_value_table(title: str, rows: Iterable[tuple[str, str | Text]]) -> Table:
    table = Table(title=title, show_header=False)
    table.add_column("Field", style="bold")
    table.add_column("Value", overflow="fold")
    for key, value in rows:
        add_row(table, key, value)
    return table


def cluster_overview_table(cluster: Cluster) -> Table:
    """The cluster's own fields (tag, status, zone, region, generation, times, current operation)."""
    return _key_value_table(
        f"Cluster {cluster.get('clusterTag')}",
        [
            ("Status", styled_status(cluster.get("status"))),
            ("Generation", str(cluster.get("generation", MISSING))),
            ("Region", cluster.get("region") or MISSING),
            ("Availability Zone", cluster.get("availabilityZone") or MISSING),
            ("Created", format_time(cluster.get("createdAt"))),
            ("Updated", format_time(cluster.get("updatedAt"))),
            ("Current operation", cluster.get("currentOperationId") or MISSING),
        ],
    )


def resources_table(cluster: Cluster) -> Table:
    """EKS, HyperPod (per instance group), nodes and storage as last observed."""
    table = Table(title="Resources")
    table.add_column("Kind")
    table.add_column("Name")
    table.add_column("Status")
    table.add_column("Detail", overflow="fold")
    eks = cluster.get("eks")
    if eks:
        add_row(
            table,
            "EKS cluster",
            eks.get("clusterName", ""),
            styled_status(eks.get("status")),
            f"Kubernetes {eks.get('kubernetesVersion') or MISSING}, VPC {eks.get('vpcId') or MISSING}",
        )
    hyperpod = cluster.get("hyperPod")
    if hyperpod:
        add_row(table, "HyperPod cluster", hyperpod.get("clusterName", ""), styled_status(hyperpod.get("status")), "")
        for group in hyperpod.get("instanceGroups") or []:
            add_row(
                table,
                "  instance group",
                group.get("instanceGroupName", ""),
                styled_status(group.get("status")),
                _group_label(group),
            )
    for node in cluster.get("nodes") or []:
        add_row(
            table,
            "Node",
            node.get("nodeName", ""),
            Text("Ready", style="green") if node.get("ready") else Text("NotReady", style="red"),
            f"{node.get('instanceType') or MISSING} in {node.get('instanceGroupName') or MISSING}, "
            f"{node.get('healthStatus') or 'Unknown'}",
        )
    storage = cluster.get("storage")
    if storage:
        add_row(
            table,
            "S3 storage",
            storage.get("persistentVolumeClaim", ""),
            Text(storage.get("phase") or "Unknown", style="green" if storage.get("phase") == "Bound" else ""),
            f"bucket {storage.get('bucketName')}, namespace {storage.get('namespace')}",
        )
    return table


def operation_table(operation: Operation) -> Table:
    """``GET /operations/{id}`` as a key/value table."""
    error = operation.get("error")
    rows: list[tuple[str, str | Text]] = [
        ("Type", operation.get("type") or MISSING),
        ("Status", styled_status(operation.get("status"))),
        ("Cluster", operation.get("clusterTag") or MISSING),
        ("Created", format_time(operation.get("createdAt"))),
        ("Updated", format_time(operation.get("updatedAt"))),
        ("Ended", format_time(operation.get("endedAt"))),
        ("Status URL", operation.get("statusUrl") or MISSING),
    ]
    if operation.get("stage"):
        rows.insert(3, ("Stage", str(operation.get("stage"))))
    if error:
        rows.append(("Error", Text(f"{error.get('code')}: {error.get('message')}", style="red")))
    result = operation.get("result")
    if result:
        if result.get("hyperPodOperationId"):
            rows.append(("HyperPod operation", str(result.get("hyperPodOperationId"))))
        if result.get("nodeIds"):
            rows.append(("Nodes", ", ".join(result.get("nodeIds") or [])))
        if result.get("failed"):
            failed = [f"{f.get('nodeId')} {f.get('code')}: {f.get('message')}" for f in result.get("failed") or []]
            rows.append(("Failed nodes", Text("; ".join(failed), style="red")))
        if result.get("observed"):
            rows.append(("Last seen", str(result.get("observed"))))
    return _key_value_table(f"Operation {operation.get('operationId')}", rows)


def operations_table(operations: Sequence[Operation], cluster_tag: str) -> Table:
    """``GET /clusters/{clusterTag}/operations`` as a table, newest first (as the API orders them)."""
    table = Table(title=f"Operations on {cluster_tag} ({len(operations)})")
    for column in ("Operation", "Type", "Stage", "Status", "Created", "Ended", "Error"):
        table.add_column(column)
    for op in operations:
        error = op.get("error")
        add_row(
            table,
            op.get("operationId", ""),
            op.get("type") or MISSING,
            op.get("stage") or "",
            styled_status(op.get("status")),
            format_time(op.get("createdAt")),
            format_time(op.get("endedAt")),
            f"{error.get('code')}: {error.get('message')}" if error else "",
        )
    return table


def zones_table(zones: Sequence[AvailabilityZone]) -> Table:
    """``GET /catalog/availability-zones`` as a table."""
    table = Table()
    table.add_column(f"Availability Zone ({len(zones)})")
    table.add_column("Zone ID")
    for zone in zones:
        add_row(table, zone.get("zoneName", ""), zone.get("zoneId", ""))
    return table


def instance_types_table(instance_types: Sequence[str], availability_zone: str) -> Table:
    """``GET /catalog/instance-types`` as a one-column table."""
    table = Table()
    table.add_column(f"HyperPod instance types in {availability_zone} ({len(instance_types)})")
    for instance_type in instance_types:
        add_row(table, instance_type)
    return table


def drift_table(cluster: Cluster) -> Table | None:
    """The cluster's drift as last checked (resource, what differs, expected, observed, since, repairable), or None
    when the last check found nothing (or none ran)."""
    drift = cluster.get("drift") or {}
    items = drift.get("items") or []
    if not items:
        return None
    table = Table(title=f"Drift (checked {drift.get('checkedAt') or MISSING})")
    for column in ("Resource", "Name", "Field", "Expected", "Observed", "Since", "Repairable"):
        table.add_column(column, overflow="fold")
    for item in items:
        add_row(
            table,
            item.get("resourceType", ""),
            item.get("name", ""),
            item.get("field", ""),
            item.get("expected") or MISSING,
            item.get("observed") or MISSING,
            item.get("since", ""),
            Text("yes", style="green") if item.get("repairable") else Text("no", style="yellow"),
        )
    return table
