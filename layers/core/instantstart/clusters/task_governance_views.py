"""The API views of SageMaker's task governance resources: a scheduler config and a compute quota. Pure.

AWS's PascalCase members become the API's camelCase models; a member AWS holds that the API's rules would refuse
is shown as null rather than failing the read. The use cases are :mod:`instantstart.clusters.task_governance`, from
which every public name here is importable too.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from instantstart.models.common import iso
from instantstart.models.task_governance import (
    ComputeQuotaConfig,
    ComputeQuotaTarget,
    ComputeQuotaView,
    SchedulerConfig,
    SchedulerConfigView,
)


def _lenient(model: Any, value: Any) -> Any:
    """``model`` of an AWS member in API casing, or None when AWS holds something our rules would refuse."""
    if not value:
        return None
    try:
        return model.model_validate(_camel(value))
    except ValidationError:
        return None


def _camel(value: Any) -> Any:
    """AWS PascalCase members to the API's camelCase (``VCpu`` -> ``vCpu``, ``MemoryInGiB`` -> ``memoryInGiB``)."""
    if isinstance(value, dict):
        return {k[:1].lower() + k[1:]: _camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_camel(v) for v in value]
    return value


def _time(value: Any) -> str | None:
    return iso(value) if hasattr(value, "astimezone") else (str(value) if value is not None else None)


def scheduler_config_view(tag: str, described: dict[str, Any], managed: bool) -> SchedulerConfigView:
    """The API view of a ``DescribeClusterSchedulerConfig`` answer."""
    return SchedulerConfigView(
        cluster_tag=tag,
        name=described["Name"],
        cluster_scheduler_config_id=described["ClusterSchedulerConfigId"],
        cluster_scheduler_config_arn=described["ClusterSchedulerConfigArn"],
        cluster_scheduler_config_version=int(described.get("ClusterSchedulerConfigVersion") or 1),
        status=described["Status"],
        failure_reason=described.get("FailureReason"),
        cluster_arn=described.get("ClusterArn"),
        scheduler_config=_lenient(SchedulerConfig, described.get("SchedulerConfig")),
        description=described.get("Description"),
        managed=managed,
        creation_time=_time(described.get("CreationTime")),
        last_modified_time=_time(described.get("LastModifiedTime")),
    )


def compute_quota_view(tag: str, described: dict[str, Any], managed: bool) -> ComputeQuotaView:
    """The API view of a ``DescribeComputeQuota`` answer (or a ``ComputeQuotaSummary``)."""
    return ComputeQuotaView(
        cluster_tag=tag,
        name=described["Name"],
        compute_quota_id=described["ComputeQuotaId"],
        compute_quota_arn=described["ComputeQuotaArn"],
        compute_quota_version=described.get("ComputeQuotaVersion"),
        status=described["Status"],
        failure_reason=described.get("FailureReason"),
        cluster_arn=described.get("ClusterArn"),
        compute_quota_config=_lenient(ComputeQuotaConfig, described.get("ComputeQuotaConfig")),
        compute_quota_target=_lenient(ComputeQuotaTarget, described.get("ComputeQuotaTarget")),
        activation_state=described.get("ActivationState"),
        description=described.get("Description"),
        managed=managed,
        creation_time=_time(described.get("CreationTime")),
        last_modified_time=_time(described.get("LastModifiedTime")),
    )
