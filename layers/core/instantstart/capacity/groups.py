"""Instance-group rules of day-2 changes: the one normaliser, what may change, and when a change is done.

HyperPod's ``UpdateCluster`` takes whole ``ClusterInstanceGroupSpecification`` s: a field left out of a
resubmitted group can be lost. :func:`spec_from_description` is the only way this control plane turns a
``DescribeCluster`` group (``ClusterInstanceGroupDetails``) back into a specification: every member
that can be sent is kept (renamed where DescribeCluster reports it under another name, e.g.
``TargetCount`` -> ``InstanceCount``, ``KubernetesConfig.DesiredLabels`` -> ``Labels``), read-only members
are dropped, and the allowed keys (also of nested structures) come from the installed botocore
SageMaker model, so a member added to the API is noticed by a unit test instead of silently dropped.

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_UpdateCluster.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupDetails.html
"""

from __future__ import annotations

import copy
from typing import Any

from instantstart.aws.clients import service_model
from instantstart.errors import Conflict
from instantstart.models.common import CapacityType
from instantstart.models.instance_groups import InstanceGroupDetail, UpdateInstanceGroupRequest

SPEC_SHAPE = "ClusterInstanceGroupSpecification"
DETAILS_SHAPE = "ClusterInstanceGroupDetails"

RENAMED: dict[str, str] = {
    "TargetCount": "InstanceCount",
    "MinCount": "MinInstanceCount",
    "DesiredImageId": "ImageId",
    "DesiredImageReleaseVersion": "ImageReleaseVersion",
}
"""DescribeCluster member -> the specification member it is sent back as (the desired, not the current, value)."""

NESTED_RENAMED: dict[str, dict[str, str]] = {
    "KubernetesConfig": {"DesiredLabels": "Labels", "DesiredTaints": "Taints"},
    "InstanceRequirements": {"DesiredInstanceTypes": "InstanceTypes"},
    "AutoPatchConfig": {"DesiredPatchSchedule": "PatchSchedule"},
}
"""Structures DescribeCluster reports as current/desired pairs: the desired member -> the specification member."""

READ_ONLY: frozenset[str] = frozenset(
    {
        "CurrentCount",
        "Status",
        "TrainingPlanStatus",
        "CurrentImageId",
        "CurrentImageReleaseVersion",
        "ImageVersionStatus",
        "ActiveOperations",
        "TargetStateCount",
        "SoftwareUpdateStatus",
        "ActiveSoftwareUpdateConfig",
        "InstanceTypeDetails",
    }
)
"""DescribeCluster members that describe state, not configuration: never sent back."""


def spec_members() -> frozenset[str]:
    """The members of ``ClusterInstanceGroupSpecification`` in the installed botocore model."""
    return frozenset(service_model("sagemaker").shape_for(SPEC_SHAPE).members)


def details_members() -> frozenset[str]:
    """The members of ``ClusterInstanceGroupDetails`` in the installed botocore model."""
    return frozenset(service_model("sagemaker").shape_for(DETAILS_SHAPE).members)


def _conform(value: Any, shape: Any) -> Any:
    """``value`` with only the members ``shape`` (a botocore shape) has, recursively; empty structures dropped."""
    if shape.type_name == "structure" and isinstance(value, dict):
        out = {}
        for key, member in shape.members.items():
            if key in value and value[key] is not None:
                out[key] = _conform(value[key], member)
        return out
    if shape.type_name == "list" and isinstance(value, list):
        return [_conform(v, shape.member) for v in value]
    return copy.deepcopy(value)


def spec_from_description(group: dict[str, Any]) -> dict[str, Any]:
    """The ``UpdateCluster`` specification of a ``DescribeCluster`` instance group, every sendable field kept.

    ``InstanceCount`` is the group's ``TargetCount`` (what HyperPod provisions toward), ``MinInstanceCount``
    its ``MinCount``, ``ImageId``/``ImageReleaseVersion`` the desired ones; ``KubernetesConfig``,
    ``InstanceRequirements`` and ``AutoPatchConfig`` are rebuilt from their desired members. Nested
    structures keep only the members the specification's shapes have. ``InstanceType`` is left out of a
    flexible group (``InstanceRequirements``; the two are mutually exclusive) and ``ImageReleaseVersion``
    when an ``ImageId`` is set. Pure: the input is not changed.
    """
    spec_shape = service_model("sagemaker").shape_for(SPEC_SHAPE)
    raw: dict[str, Any] = {}
    for key, value in group.items():
        if value is None or key in READ_ONLY:
            continue
        target = RENAMED.get(key, key)
        if key in NESTED_RENAMED and isinstance(value, dict):
            value = {NESTED_RENAMED[key].get(k, k): v for k, v in value.items()}
        if target in spec_shape.members and target not in raw:
            raw[target] = value
    if "InstanceCount" not in raw:
        raw["InstanceCount"] = int(group.get("CurrentCount") or 0)
    if raw.get("InstanceRequirements"):
        raw.pop("InstanceType", None)
    if raw.get("ImageId"):
        raw.pop("ImageReleaseVersion", None)
    spec = _conform(raw, spec_shape)
    return {k: v for k, v in spec.items() if v != {} or k == "CapacityRequirements"}


def find_group(groups: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The ``DescribeCluster`` group named ``name``, or None."""
    return next((g for g in groups if g.get("InstanceGroupName") == name), None)


def specs_after_change(
    groups: list[dict[str, Any]], name: str, *, instance_count: int | None = None, labels: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """Every group's specification after changing group ``name`` (its count and/or its Kubernetes labels).

    The other groups' specifications are exactly :func:`spec_from_description` of their description: a
    change of one group never changes another.

    Raises:
        KeyError: no group ``name``.
    """
    if find_group(groups, name) is None:
        raise KeyError(name)
    out = []
    for group in groups:
        spec = spec_from_description(group)
        if group.get("InstanceGroupName") == name:
            if instance_count is not None:
                spec["InstanceCount"] = instance_count
            if labels is not None:
                spec["KubernetesConfig"] = {**spec.get("KubernetesConfig", {}), "Labels": dict(labels)}
        out.append(spec)
    return out


def capacity_type_of(group: dict[str, Any]) -> CapacityType:
    """The group's capacity type: TrainingPlan with a plan, else the key of ``CapacityRequirements`` (OnDemand)."""
    if group.get("TrainingPlanArn"):
        return CapacityType.TRAINING_PLAN
    requirements = group.get("CapacityRequirements") or {}
    return CapacityType.SPOT if "Spot" in requirements else CapacityType.ON_DEMAND


def detail_of(group: dict[str, Any]) -> InstanceGroupDetail:
    """The API view of a ``DescribeCluster`` instance group."""
    return InstanceGroupDetail(
        instance_group_name=str(group["InstanceGroupName"]),
        instance_type=group.get("InstanceType"),
        target_count=group.get("TargetCount"),
        current_count=int(group.get("CurrentCount") or 0),
        capacity_type=capacity_type_of(group),
        training_plan_arn=group.get("TrainingPlanArn"),
        status=group.get("Status"),
        subnet_ids=list((group.get("OverrideVpcConfig") or {}).get("Subnets") or []),
        labels=dict((group.get("KubernetesConfig") or {}).get("DesiredLabels") or {}),
    )


IMMUTABLE_FIELDS = ("instance_type", "capacity_type", "training_plan_arn", "subnet_id")
"""Request fields HyperPod does not change on an existing group.

The UpdateCluster guide lists instance type and count as updatable for some orchestrators; the harsher
reading is applied (a new type, capacity type, plan or subnet is a new group), so a request never
depends on behaviour that differs between Slurm and EKS clusters or between Regions.
"""


def check_mutable(group: dict[str, Any], request: UpdateInstanceGroupRequest) -> None:
    """Refuse a change of a field HyperPod does not allow to change on an existing group.

    A field given with the group's current value is accepted (nothing changes).

    Raises:
        Conflict: ``ImmutableField``, naming the field (camelCase), its current and requested values.
    """
    detail = detail_of(group)
    current: dict[str, Any] = {
        "instance_type": detail.instance_type,
        "capacity_type": detail.capacity_type,
        "training_plan_arn": detail.training_plan_arn,
        "subnet_id": detail.subnet_ids[0] if len(detail.subnet_ids) == 1 else None,
    }
    for field in IMMUTABLE_FIELDS:
        wanted = getattr(request, field)
        if wanted is None:
            continue
        if field == "subnet_id" and wanted in detail.subnet_ids:
            continue
        if wanted != current[field]:
            alias = UpdateInstanceGroupRequest.model_fields[field].alias or field
            raise Conflict(
                f"{alias} of instance group '{detail.instance_group_name}' cannot be changed (it is "
                f"{_show(current[field])}, the request asks for {_show(wanted)}): HyperPod does not change it on "
                "an existing group; add a new group with POST /clusters/{clusterTag}/instance-groups instead",
                code="ImmutableField",
                details=[{"field": alias, "current": _show(current[field]), "requested": _show(wanted)}],
            )


def _show(value: Any) -> str:
    return "none" if value is None else str(getattr(value, "value", value))


def change_done(groups: list[dict[str, Any]], name: str, *, deleted: bool = False) -> tuple[bool, str]:
    """Whether HyperPod finished a change of group ``name``: ``(done, status text)``.

    Done when the group is gone (``deleted``), else when it is ``InService`` with ``CurrentCount`` equal to
    ``TargetCount`` and no active operation.
    """
    group = find_group(groups, name)
    if deleted:
        return (group is None, "deleted" if group is None else f"{name} {group.get('Status')}")
    if group is None:
        return False, f"{name} not reported yet"
    target, current = group.get("TargetCount"), int(group.get("CurrentCount") or 0)
    status = str(group.get("Status"))
    busy = bool(group.get("ActiveOperations"))
    done = status == "InService" and target is not None and current == int(target) and not busy
    return done, f"{name} {status} {current}/{target}"
