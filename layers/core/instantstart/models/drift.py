"""Drift: what differs between a cluster's records and what AWS reports of its resources.

:mod:`instantstart.clusters.drift` finds it (read-only AWS calls) and stores it on the cluster record; ``GET
/clusters/{clusterTag}`` shows it (``drift``) and ``POST /clusters/{clusterTag}/reconcile`` repairs what is the
control plane's own.
"""

from __future__ import annotations

from pydantic import Field

from instantstart.models.common import ApiModel

MAX_DRIFT_ITEMS = 50
"""The most drift items stored on a cluster record: one per resource and field (the EKS cluster, its add-ons,
the HyperPod cluster, its instance groups, roles, storage), never per node; the rest are counted, not stored."""

DRIFT_EXAMPLE_TIME = "2026-11-29T17:04:05Z"


class DriftItem(ApiModel):
    """One difference between the records and what AWS reports, as first seen at ``since``."""

    resource_type: str = Field(
        description="What differs, by AWS's name: EksCluster, Addon, HyperPodCluster, InstanceGroup, IamRole, "
        "S3Bucket.",
        examples=["Addon"],
    )
    name: str = Field(description="Its name or id, as AWS names it.", examples=["metrics-server"])
    field: str = Field(
        description="What differs: exists (deleted outside), version, status, health, tags, TargetCount, InstanceType.",
        examples=["exists"],
    )
    expected: str | None = Field(
        default=None, description="What the records say (null: it should not exist).", examples=["ACTIVE"]
    )
    observed: str | None = Field(default=None, description="What AWS reports now (null: not found).", examples=[None])
    since: str = Field(
        description="When this difference was first seen (ISO-8601 UTC); kept while it lasts.",
        examples=[DRIFT_EXAMPLE_TIME],
    )
    owned: bool = Field(
        description="True when the resource is the control plane's own (created here, with its instantstart:* "
        "ownership tags); false for what it found or someone else made.",
        examples=[True],
    )
    repairable: bool = Field(
        description="True when POST /clusters/{clusterTag}/reconcile repairs it (e.g. re-creates a deleted add-on "
        "the control plane installed); false: reported only.",
        examples=[True],
    )
    message: str = Field(
        description="What happened and what to do, in one sentence.",
        examples=["add-on metrics-server was deleted outside the control plane; POST reconcile re-creates it"],
    )

    @property
    def key(self) -> tuple[str, str, str]:
        """What identifies the item across checks: resource type, name, field."""
        return (self.resource_type, self.name, self.field)


class DriftView(ApiModel):
    """The drift of a cluster as last checked (``GET /clusters/{clusterTag}`` reads the record, never AWS)."""

    checked_at: str | None = Field(
        default=None,
        description="When drift was last checked (ISO-8601 UTC); null when never.",
        examples=[DRIFT_EXAMPLE_TIME],
    )
    items: list[DriftItem] = Field(
        default_factory=list, description=f"What differs, at most {MAX_DRIFT_ITEMS}; empty: nothing."
    )
    more_items: int = Field(default=0, description="Differences found beyond the items listed.", examples=[0], ge=0)


class ReconcileAnswer(ApiModel):
    """Body of ``POST /clusters/{clusterTag}/reconcile`` when nothing differs (200, no operation)."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    drift: list[DriftItem] = Field(default_factory=list, description="What differs: empty.")
    checked_at: str = Field(description="When drift was checked (ISO-8601 UTC).", examples=[DRIFT_EXAMPLE_TIME])
    message: str = Field(
        description="What the check found.", examples=["no drift: AWS reports what the records say; nothing to do"]
    )


class ReconcileChange(ApiModel):
    """The change of a ``RECONCILE_CLUSTER`` operation: what it repairs."""

    addons: list[str] = Field(
        default_factory=list,
        description="The dependencies stage's add-ons to re-create (deleted outside).",
        max_length=MAX_DRIFT_ITEMS,
    )
