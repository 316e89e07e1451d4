"""Managed Karpenter models of ``/clusters/{clusterTag}/autoscaling`` (HyperPod ``AutoScaling``).

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterAutoScalingConfig.html;
the Kubernetes objects: https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-autoscaling-nodeclass.html
"""

from __future__ import annotations

import re

from pydantic import Field, ValidationInfo, field_validator

from instantstart.models.cluster import INSTANCE_GROUP_NAME_PATTERN, INSTANCE_GROUP_NAME_RULE, TIMESTAMP_EXAMPLE
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule

MAX_NODE_CLASS_GROUPS = 10
"""Instance groups one ``HyperpodNodeClass`` may list (HyperPod's documented limit)."""

RESOURCE_NAME_PATTERN = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$")
"""A Kubernetes resource name: ``cpu``, ``memory``, ``nvidia.com/gpu``, ``aws.amazon.com/neuron``."""

QUANTITY_PATTERN = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|Mi|Gi|Ti|Pi|Ei|M|G|T|P|E)?$")
"""A non-negative Kubernetes quantity: ``64``, ``1000Gi``, ``500m``."""

QUANTITY_RULE = "a non-negative Kubernetes quantity such as 64, 1000Gi or 500m"

DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
DURATION_RULE = "a Karpenter duration such as 30s, 5m or 1h30m"

AUTOSCALING_GROUP = Field(
    pattern=INSTANCE_GROUP_NAME_PATTERN,
    min_length=1,
    max_length=63,
    json_schema_extra=pattern_rule(INSTANCE_GROUP_NAME_RULE),
)


class UpdateAutoScalingRequest(ApiModel):
    """Body of ``PUT /clusters/{clusterTag}/autoscaling``: managed Karpenter on or off.

    On (``enabled: true``): ``instanceGroups`` (1-10 existing groups, each at 0 instances, in one zone,
    On-Demand, without on-start deep health checks) become the ``HyperpodNodeClass``; the ``NodePool`` has
    consolidation on (``consolidateAfter``) and the resource ``limits`` given. Off (``enabled: false``):
    no other field; what turning it on created is removed.
    """

    enabled: bool = Field(
        strict=True,
        description="true: managed Karpenter on (HyperPod AutoScaling Mode Enable); false: off (Mode Disable).",
        examples=[True],
    )
    instance_groups: list[str] | None = Field(
        default=None,
        validate_default=True,
        min_length=1,
        max_length=MAX_NODE_CLASS_GROUPS,
        description=f"With enabled true (required): 1-{MAX_NODE_CLASS_GROUPS} distinct instance groups Karpenter "
        "scales (the HyperpodNodeClass's instanceGroups). Each must exist with 0 instances, be On-Demand, have no "
        "onStartDeepHealthChecks, and all must sit in one Availability Zone.",
        examples=[["auto"]],
    )
    limits: dict[str, str | int] | None = Field(
        default=None,
        description="With enabled true: the NodePool's resource limits (Kubernetes resource name -> quantity), "
        "e.g. {'cpu': 1000, 'nvidia.com/gpu': 64}; Karpenter adds no node past them. Absent: no limit.",
        examples=[{"cpu": "1000", "nvidia.com/gpu": 64}],
    )
    consolidate_after: str | None = Field(
        default=None,
        pattern=DURATION_PATTERN,
        max_length=16,
        description="With enabled true: how long a node stays empty or underutilised before Karpenter removes it "
        "(NodePool disruption.consolidateAfter; consolidation is always on). Default 30s.",
        examples=["30s"],
        json_schema_extra=pattern_rule(DURATION_RULE),
    )

    @field_validator("instance_groups")
    @classmethod
    def _distinct_groups_exactly_when_enabled(cls, value: list[str] | None, info: ValidationInfo) -> list[str] | None:
        enabled = info.data.get("enabled")
        if value is None:
            if enabled is True:
                raise ValueError(
                    f"instanceGroups is required with enabled: true (1-{MAX_NODE_CLASS_GROUPS} instance group names)"
                )
            return None
        if enabled is False:
            raise ValueError("instanceGroups is only for enabled: true; turning autoscaling off takes no other field")
        rule = re.compile(INSTANCE_GROUP_NAME_PATTERN)
        for name in value:
            if not rule.match(name) or len(name) > 63:
                raise ValueError(f"'{name}' is not an instance group name: {INSTANCE_GROUP_NAME_RULE}")
        if len(set(value)) != len(value):
            raise ValueError("instance group names must be distinct")
        return value

    @field_validator("limits")
    @classmethod
    def _resource_quantities(cls, value: dict[str, str | int] | None, info: ValidationInfo) -> dict[str, str] | None:
        if value is None:
            return None
        _only_when_enabled("limits", info)
        out: dict[str, str] = {}
        for name, quantity in value.items():
            if not RESOURCE_NAME_PATTERN.match(name):
                raise ValueError(f"'{name}' is not a Kubernetes resource name such as cpu, memory or nvidia.com/gpu")
            text = str(quantity)
            if isinstance(quantity, bool) or not QUANTITY_PATTERN.match(text):
                raise ValueError(f"limits['{name}'] must be {QUANTITY_RULE}, got {quantity!r}")
            out[name] = text
        return out

    @field_validator("consolidate_after")
    @classmethod
    def _consolidate_only_when_enabled(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            _only_when_enabled("consolidateAfter", info)
        return value


def _only_when_enabled(field: str, info: ValidationInfo) -> None:
    if info.data.get("enabled") is False:
        raise ValueError(f"{field} is only for enabled: true; turning autoscaling off takes no other field")


class AutoScalingChange(ApiModel):
    """What an ``UPDATE_AUTOSCALING`` operation changes (stored on the operation record, read by its steps)."""

    enabled: bool
    instance_groups: list[str] = Field(default_factory=list)
    limits: dict[str, str] | None = None
    consolidate_after: str = "30s"


class KarpenterResources(ApiModel):
    """What the last ``UPDATE_AUTOSCALING`` operation left on the cluster (recorded on the hyperpod stage).

    Written whole each time (so turning off clears it): ``enabled`` false with no groups after an off.
    """

    enabled: bool = False
    cluster_role_arn: str | None = None
    node_pool: str | None = None
    node_class: str | None = None
    instance_groups: list[str] = Field(default_factory=list)
    limits: dict[str, str] | None = None
    consolidate_after: str | None = None
    operation_id: str | None = None
    updated_at: str | None = None


class AutoScalingView(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/autoscaling``: what HyperPod reports and what Karpenter was given."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    hyper_pod_cluster_name: str = Field(description="HyperPod cluster name.", examples=["hp-cluster-demo"])
    mode: str | None = Field(
        default=None,
        description="HyperPod AutoScaling.Mode now (DescribeCluster): Enable or Disable; null when never set.",
        examples=["Enable"],
    )
    auto_scaler_type: str | None = Field(
        default=None, description="HyperPod AutoScaling.AutoScalerType (Karpenter).", examples=["Karpenter"]
    )
    status: str | None = Field(
        default=None,
        description="HyperPod AutoScaling.Status: Creating, InService, Deleting or Failed.",
        examples=["InService"],
    )
    failure_message: str | None = Field(
        default=None, description="HyperPod AutoScaling.FailureMessage, verbatim.", examples=[None]
    )
    cluster_role_arn: str | None = Field(
        default=None,
        description="The IAM role HyperPod assumes to scale groups for Karpenter (DescribeCluster ClusterRole).",
        examples=["arn:aws:iam::123456789012:role/instantstart/instantstart-demo-hp-autoscaling"],
    )
    node_pool: str | None = Field(
        default=None,
        description="The NodePool (karpenter.sh/v1) this control plane applied; null when off.",
        examples=["instantstart"],
    )
    node_class: str | None = Field(
        default=None,
        description="The HyperpodNodeClass (karpenter.sagemaker.amazonaws.com/v1) it references; null when off.",
        examples=["instantstart"],
    )
    instance_groups: list[str] = Field(
        default_factory=list,
        description="The instance groups of the node class (Karpenter scales them).",
        examples=[["auto"]],
    )
    limits: dict[str, str] | None = Field(
        default=None, description="The NodePool's resource limits.", examples=[{"nvidia.com/gpu": "64"}]
    )
    consolidate_after: str | None = Field(
        default=None, description="The NodePool's disruption.consolidateAfter.", examples=["30s"]
    )
    updated_at: str | None = Field(
        default=None,
        description="When the last autoscaling operation applied this (ISO-8601 UTC).",
        examples=[TIMESTAMP_EXAMPLE],
    )
    operation_id: str | None = Field(
        default=None, description="The last autoscaling operation that succeeded.", examples=[None]
    )
