"""The comparison rules of drift detection: what the records expect against what AWS reported. Pure.

:mod:`instantstart.clusters.drift` reads AWS into an :class:`Observed` and the records into an :class:`Expected`;
:func:`compare` turns the two into :class:`~instantstart.models.drift.DriftItem` s (``since`` = the check's time;
:func:`merge` keeps the ``since`` of an item already recorded). Only the control plane's own add-ons it re-creates
are ``repairable``; everything else is reported (docs/decisions.md, "Drift: repaired vs reported").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from instantstart.models.drift import MAX_DRIFT_ITEMS, DriftItem
from instantstart.naming import owned_by

EKS_CLUSTER = "EksCluster"
ADDON = "Addon"
HYPERPOD_CLUSTER = "HyperPodCluster"
INSTANCE_GROUP = "InstanceGroup"
IAM_ROLE = "IamRole"
S3_BUCKET = "S3Bucket"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
KUBERNETES_KINDS = frozenset({PERSISTENT_VOLUME_CLAIM})
"""The Kubernetes kinds drift covers: kept as recorded when Kubernetes could not be read."""

HEALTHY_ADDON = frozenset({"ACTIVE", "CREATING", "UPDATING"})
"""EKS add-on statuses that are not drift (a change under way is not a difference)."""


@dataclass(frozen=True)
class ExpectedGroup:
    """An instance group as the records ask for it (the cluster's ``request.instanceGroups``)."""

    name: str
    instance_type: str | None
    instance_count: int
    autoscaled: bool = False
    """Managed Karpenter sets its counts: ``TargetCount`` is not compared."""


@dataclass(frozen=True)
class Expected:
    """What the records say one cluster has (read by :func:`instantstart.clusters.drift.expected_of`)."""

    tag: str
    eks_cluster_name: str
    eks_owned: bool
    kubernetes_version: str | None
    addons: tuple[str, ...]
    """Add-ons the control plane installed (the dependencies stage's, less those found at import)."""
    foreign_addons: tuple[str, ...]
    """Add-ons found at import that the cluster relies on (not the control plane's own)."""
    repairable_addons: frozenset[str]
    """Of :attr:`addons`, those ``POST reconcile`` re-creates (the dependencies stage's rule)."""
    hyperpod_name: str
    hyperpod_owned: bool
    hyperpod_in_service: bool
    """The records say READY: the HyperPod cluster must be InService."""
    groups: tuple[ExpectedGroup, ...]
    roles: tuple[str, ...]
    """Names of the IAM roles the control plane created for the cluster."""
    bucket: str | None
    """The S3 bucket the storage stage created (None: none, or kept from an earlier generation)."""
    claim: tuple[str, str] | None = None
    """``(namespace, name)`` of the PersistentVolumeClaim the storage stage applied (``s3-claim``)."""


@dataclass
class Observed:
    """What AWS reported (None: not found)."""

    eks: dict[str, Any] | None
    """EKS ``DescribeCluster``'s ``cluster``."""
    addons: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """EKS ``DescribeAddon``'s ``addon`` by name, for every expected add-on and every other listed one."""
    hyperpod: dict[str, Any] | None = None
    """SageMaker ``DescribeCluster``."""
    roles: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """IAM ``GetRole``'s ``Role`` by name."""
    bucket_tags: list[dict[str, str]] | None = None
    """S3 ``GetBucketTagging``'s ``TagSet`` ([] when the bucket has none); None: no such bucket."""
    claim: dict[str, Any] | None = None
    """The PersistentVolumeClaim as Kubernetes answers it; None: not found."""
    kubernetes_error: str | None = None
    """Why Kubernetes could not be read (then nothing of it is compared)."""


def _item(
    now: str,
    kind: str,
    name: str,
    what: str,
    expected: Any,
    observed: Any,
    *,
    owned: bool,
    message: str,
    repairable: bool = False,
) -> DriftItem:
    return DriftItem(
        resource_type=kind,
        name=name,
        field=what,
        expected=None if expected is None else str(expected),
        observed=None if observed is None else str(observed),
        since=now,
        owned=owned,
        repairable=repairable and owned,
        message=message,
    )


def compare_eks(exp: Expected, obs: Observed, now: str) -> list[DriftItem]:
    """The EKS cluster: gone, or another Kubernetes version than recorded (upgraded elsewhere)."""
    name, owned = exp.eks_cluster_name, exp.eks_owned
    if obs.eks is None:
        return [
            _item(
                now,
                EKS_CLUSTER,
                name,
                "exists",
                "ACTIVE",
                None,
                owned=owned,
                message=f"EKS cluster {name} was deleted outside the control plane; delete the cluster",
            )
        ]
    version = obs.eks.get("version")
    if exp.kubernetes_version and version and version != exp.kubernetes_version:
        return [
            _item(
                now,
                EKS_CLUSTER,
                name,
                "version",
                exp.kubernetes_version,
                version,
                owned=owned,
                message=f"EKS cluster {name} runs Kubernetes {version}, the records say {exp.kubernetes_version}: "
                "upgraded outside the control plane; reported, never downgraded",
            )
        ]
    return []


def _unhealthy(now: str, name: str, addon: dict[str, Any]) -> DriftItem:
    """The ``health`` item of an owned add-on that is not ACTIVE, with EKS's health issues verbatim."""
    issues = _health(addon)
    return _item(
        now,
        ADDON,
        name,
        "health",
        "ACTIVE",
        addon.get("status"),
        owned=True,
        message=f"add-on {name} is {addon.get('status')}" + (f": {issues}" if issues else ""),
    )


def _health(addon: dict[str, Any]) -> str:
    issues = addon.get("health", {}).get("issues") or []
    return "; ".join(f"{i.get('code')}: {i.get('message')}" for i in issues)


def compare_addons(exp: Expected, obs: Observed, now: str) -> list[DriftItem]:
    """The add-ons: one the control plane installed gone (repairable when :attr:`Expected.repairable_addons` has
    it), there again without its ownership tags (someone else's now: never touched), or unhealthy; an add-on the
    cluster relies on from import gone (reported)."""
    out: list[DriftItem] = []
    for name in exp.addons:
        addon = obs.addons.get(name)
        if addon is None:
            repairable = name in exp.repairable_addons
            out.append(
                _item(
                    now,
                    ADDON,
                    name,
                    "exists",
                    "ACTIVE",
                    None,
                    owned=True,
                    repairable=repairable,
                    message=f"add-on {name} was deleted outside the control plane; "
                    + ("POST reconcile re-creates it" if repairable else "re-apply the feature that needs it"),
                )
            )
        elif not owned_by(addon.get("tags"), exp.tag):
            out.append(
                _item(
                    now,
                    ADDON,
                    name,
                    "tags",
                    f"instantstart:cluster-tag={exp.tag}",
                    "untagged",
                    owned=False,
                    message=f"add-on {name} exists without this cluster's ownership tags (re-created outside "
                    "the control plane): it is left as it is",
                )
            )
        elif str(addon.get("status")) not in HEALTHY_ADDON:
            out.append(_unhealthy(now, name, addon))
    for name in exp.foreign_addons:
        if obs.addons.get(name) is None:
            out.append(
                _item(
                    now,
                    ADDON,
                    name,
                    "exists",
                    "ACTIVE",
                    None,
                    owned=False,
                    message=f"add-on {name}, found at import, was deleted; it is not the control plane's to "
                    "re-create: install it again on the EKS cluster",
                )
            )
    known = set(exp.addons) | set(exp.foreign_addons)
    for name, addon in sorted(obs.addons.items()):
        # another add-on the control plane installed (a feature's, by its ownership tags): its health only
        if name in known or addon is None or not owned_by(addon.get("tags"), exp.tag):
            continue
        if str(addon.get("status")) not in HEALTHY_ADDON:
            out.append(_unhealthy(now, name, addon))
    return out


def compare_hyperpod(exp: Expected, obs: Observed, now: str) -> list[DriftItem]:
    """The HyperPod cluster (gone; not InService while the records say READY) and its instance groups (gone;
    added outside; ``TargetCount`` or ``InstanceType`` other than the records ask: changed outside)."""
    name, owned = exp.hyperpod_name, exp.hyperpod_owned
    hp = obs.hyperpod
    if hp is None:
        return [
            _item(
                now,
                HYPERPOD_CLUSTER,
                name,
                "exists",
                "InService",
                None,
                owned=owned,
                message=f"HyperPod cluster {name} was deleted outside the control plane; delete the cluster (or "
                "create it again)",
            )
        ]
    out: list[DriftItem] = []
    status = hp.get("ClusterStatus")
    if exp.hyperpod_in_service and status != "InService":
        out.append(
            _item(
                now,
                HYPERPOD_CLUSTER,
                name,
                "status",
                "InService",
                status,
                owned=owned,
                message=f"HyperPod cluster {name} is {status} while the cluster is READY",
            )
        )
    described = {str(g.get("InstanceGroupName")): g for g in hp.get("InstanceGroups") or []}
    for group in exp.groups:
        found = described.get(group.name)
        label = f"{name}/{group.name}"
        if found is None:
            out.append(
                _item(
                    now,
                    INSTANCE_GROUP,
                    label,
                    "exists",
                    group.instance_count,
                    None,
                    owned=owned,
                    message=f"instance group {group.name} was deleted outside the control plane; add it again "
                    "with POST /clusters/{clusterTag}/instance-groups",
                )
            )
            continue
        target = found.get("TargetCount", found.get("InstanceCount"))
        if not group.autoscaled and target is not None and int(target) != group.instance_count:
            out.append(
                _item(
                    now,
                    INSTANCE_GROUP,
                    label,
                    "TargetCount",
                    group.instance_count,
                    target,
                    owned=owned,
                    message=f"instance group {group.name} was scaled outside the control plane to {target} "
                    f"(the records say {group.instance_count}); scale it through the API to make either count "
                    "the record",
                )
            )
        kind = found.get("InstanceType")
        if group.instance_type and kind and kind != group.instance_type:
            out.append(
                _item(
                    now,
                    INSTANCE_GROUP,
                    label,
                    "InstanceType",
                    group.instance_type,
                    kind,
                    owned=owned,
                    message=f"instance group {group.name} runs {kind}, the records say {group.instance_type}",
                )
            )
    wanted = {g.name for g in exp.groups}
    for extra in sorted(set(described) - wanted):
        out.append(
            _item(
                now,
                INSTANCE_GROUP,
                f"{name}/{extra}",
                "exists",
                None,
                described[extra].get("Status"),
                owned=False,
                message=f"instance group {extra} was added outside the control plane; it is left as it is",
            )
        )
    return out


def compare_roles(exp: Expected, obs: Observed, now: str) -> list[DriftItem]:
    """The IAM roles the control plane created: gone, or without the cluster's ownership tags."""
    out: list[DriftItem] = []
    for name in exp.roles:
        role = obs.roles.get(name)
        if role is None:
            out.append(
                _item(
                    now,
                    IAM_ROLE,
                    name,
                    "exists",
                    "present",
                    None,
                    owned=True,
                    message=f"IAM role {name} was deleted outside the control plane; the add-ons that use it "
                    "lose their AWS access",
                )
            )
        elif not owned_by(role.get("Tags") or [], exp.tag):
            out.append(
                _item(
                    now,
                    IAM_ROLE,
                    name,
                    "tags",
                    f"instantstart:cluster-tag={exp.tag}",
                    "untagged",
                    owned=False,
                    message=f"IAM role {name} exists without this cluster's ownership tags: it is left as it is",
                )
            )
    return out


def compare_storage(exp: Expected, obs: Observed, now: str) -> list[DriftItem]:
    """The S3 bucket the storage stage created: gone, or without the cluster's ownership tags."""
    if exp.bucket is None:
        return []
    if obs.bucket_tags is None:
        return [
            _item(
                now,
                S3_BUCKET,
                exp.bucket,
                "exists",
                "present",
                None,
                owned=True,
                message=f"S3 bucket {exp.bucket} was deleted outside the control plane; the s3-claim volume has "
                "no storage",
            )
        ]
    if not owned_by(obs.bucket_tags, exp.tag):
        return [
            _item(
                now,
                S3_BUCKET,
                exp.bucket,
                "tags",
                f"instantstart:cluster-tag={exp.tag}",
                "untagged",
                owned=False,
                message=f"S3 bucket {exp.bucket} lost this cluster's ownership tags",
            )
        ]
    return []


def compare_kubernetes(exp: Expected, obs: Observed, now: str) -> list[DriftItem]:
    """The storage stage's PersistentVolumeClaim: gone, or not ``Bound``; nothing when Kubernetes was not read."""
    if exp.claim is None or obs.kubernetes_error is not None:
        return []
    name = "/".join(exp.claim)
    if obs.claim is None:
        return [
            _item(
                now,
                PERSISTENT_VOLUME_CLAIM,
                name,
                "exists",
                "Bound",
                None,
                owned=True,
                message=f"PersistentVolumeClaim {name} was deleted outside the control plane; pods that mount it "
                "do not start",
            )
        ]
    phase = (obs.claim.get("status") or {}).get("phase")
    if phase != "Bound":
        return [
            _item(
                now,
                PERSISTENT_VOLUME_CLAIM,
                name,
                "phase",
                "Bound",
                phase,
                owned=True,
                message=f"PersistentVolumeClaim {name} is {phase}",
            )
        ]
    return []


def compare(exp: Expected, obs: Observed, now: str) -> list[DriftItem]:
    """Every difference between ``exp`` and ``obs``, ``since`` = ``now``. A missing EKS cluster hides its add-ons;
    a missing HyperPod cluster hides its groups (one item says it all)."""
    out = compare_eks(exp, obs, now)
    if obs.eks is not None:
        out += compare_addons(exp, obs, now)
    out += compare_hyperpod(exp, obs, now)
    out += compare_roles(exp, obs, now)
    out += compare_storage(exp, obs, now)
    if obs.eks is not None:
        out += compare_kubernetes(exp, obs, now)
    return out


def merge(previous: Sequence[DriftItem], current: Iterable[DriftItem]) -> tuple[list[DriftItem], list[DriftItem]]:
    """``(items, new)``: the current items with the ``since`` of the same item already recorded (same resource,
    name and field, and the same observed value), and those that were not recorded. What no longer differs is gone.
    """
    before = {(i.key, i.observed): i for i in previous}
    items: list[DriftItem] = []
    new: list[DriftItem] = []
    for item in current:
        old = before.get((item.key, item.observed))
        if old is not None:
            items.append(item.model_copy(update={"since": old.since}))
        else:
            items.append(item)
            new.append(item)
    return items, new


def bounded(items: Sequence[DriftItem]) -> tuple[list[DriftItem], int]:
    """The items stored (at most :data:`MAX_DRIFT_ITEMS`, repairable ones first) and how many are left out."""
    ordered = sorted(items, key=lambda i: not i.repairable)
    return ordered[:MAX_DRIFT_ITEMS], max(0, len(ordered) - MAX_DRIFT_ITEMS)
