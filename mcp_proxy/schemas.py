"""Tool parameter and result schemas, derived from the HTTP API's own pydantic models.

The API (``layers/core/instantstart/models``) is the one authority on field names, patterns, ranges and
allowed values. This module reads them from there so the tool schemas an agent sees cannot drift from
what the API accepts:

- Parameter schemas *advertise* the API's constraints (pattern, length, range, enum, default) so the
  agent can choose valid values, but the proxy does not enforce them itself: a value the API rejects
  comes back as the API's own ``{"error": ...}`` JSON, so a validation added once in the API protects
  every entry point and reads the same everywhere. Only types are checked by the SDK.
- Result schemas are the API's response models with ``additionalProperties: false`` removed, so a
  newer API that adds a field does not break an older proxy's clients.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from instantstart.models.autoscaling import AutoScalingView, UpdateAutoScalingRequest
from instantstart.models.capacity import TrainingPlanList, TrainingPlanOfferingList
from instantstart.models.cluster import (
    HYPERPOD_CLUSTER_NAME_PATTERN,
    INSTANCE_GROUP_NAME_PATTERN,
    INSTANCE_TYPE_PATTERN,
    SUPPORTED_CAPACITY_TYPES,
    AutoPatch,
    ClusterSummary,
    ClusterTag,
    ClusterView,
    CreateClusterRequest,
    DeepHealthCheckType,
    ImportClusterRequest,
    InstanceGroupRequest,
    InstanceStorageConfig,
    KubernetesTaint,
    StageView,
)
from instantstart.models.cluster_events import (
    EVENTS_DEFAULT_PAGE_SIZE,
    EVENTS_MAX_PAGE_SIZE,
    EVENTS_TOKEN_MAX_LENGTH,
    ClusterEventLevel,
    ClusterEventList,
)
from instantstart.models.common import ApiModel, StageName
from instantstart.models.features import FeatureList, UpdateFeaturesRequest
from instantstart.models.hyperpod_operations import (
    HYPERPOD_OPERATION_ID_PATTERN,
    HealthCheckGroup,
    HealthCheckRequest,
    HyperPodOperationList,
    HyperPodOperationStatus,
    HyperPodOperationType,
    HyperPodOperationView,
    SoftwareUpdateRequest,
)
from instantstart.models.instance_groups import InstanceGroupList, UpdateInstanceGroupRequest
from instantstart.models.mlflow import MlflowRunList, MlflowView, UpdateMlflowRequest
from instantstart.models.nodes import (
    NODES_DEFAULT_PAGE_SIZE,
    NODES_MAX_PAGE_SIZE,
    NODES_TOKEN_MAX_LENGTH,
    ClusterNodeList,
    DeleteNodesRequest,
    RebootOrReplaceNodesRequest,
)
from instantstart.models.operation import OperationId, OperationList, OperationView
from instantstart.models.task_governance import (
    COMPUTE_QUOTA_NAME_PATTERN,
    ComputeQuotaList,
    ComputeQuotaView,
    PutSchedulerConfigRequest,
    SchedulerConfigView,
    UpdateComputeQuotaRequest,
)

_CONSTRAINT_KEYS = (
    "type",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "enum",
    "examples",
)

WAIT_MIN_SECONDS = 1
"""Shortest ``wait_seconds`` wait."""
WAIT_MAX_SECONDS = 300
"""Longest ``wait_seconds`` request (inclusive); one call waits at most :data:`WAIT_PER_CALL_MAX_SECONDS` of it."""
WAIT_PER_CALL_MAX_SECONDS = 50
"""Longest wait of one ``wait_seconds`` call: MCP clients commonly time a tool call out at 60 s (progress
notifications do not extend that unless the client opts in), so a call returns after this long at most and
says how much of the requested wait is left."""
WAIT_RECOMMENDED = "30-50"
"""The poll interval the tools and skills recommend, in seconds: one call each."""

START_AFTER_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
"""``startAfter`` of ``GET /catalog/training-plan-offerings`` (``functions/api/api_routes/catalog.py``)."""

IDEMPOTENCY_KEY_PATTERN = r"^[A-Za-z0-9._:-]+$"
"""``Idempotency-Key`` header of the API's write routes (``functions/api/api_routes/common.py``: 1-128 characters)."""
IDEMPOTENCY_KEY_MAX_LENGTH = 128


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an ``anyOf: [X, {"type": "null"}]`` schema, else the schema itself."""
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        concrete = [b for b in branches if b.get("type") != "null"]
        if len(concrete) == 1:
            return {**{k: v for k, v in schema.items() if k != "anyOf"}, **concrete[0]}
    return schema


@cache
def _model_schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True)


def api_constraints(model: type[BaseModel], field: str) -> dict[str, Any]:
    """The JSON-schema constraints of one field of an API model (by its camelCase name).

    Args:
        model: an API request model, e.g. ``CreateClusterRequest``.
        field: the field's JSON name, e.g. ``availabilityZone``.

    Returns:
        The field's ``type``, ``pattern``, length/range/item limits, ``enum`` (resolving ``$ref`` to
        an enum definition) and ``examples``, as present in the API model's schema.
    """
    schema = _model_schema(model)
    prop = _without_null(dict(schema["properties"][field]))
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        prop = {**schema["$defs"][ref.removeprefix("#/$defs/")], **{k: v for k, v in prop.items() if k != "$ref"}}
    return {key: copy.deepcopy(prop[key]) for key in _CONSTRAINT_KEYS if key in prop}


def api_default(model: type[BaseModel], field: str) -> Any:
    """The API's default for a field (by its camelCase name) of an API request model."""
    return _model_schema(model)["properties"][field].get("default")


def _type_constraints(annotation: Any) -> dict[str, Any]:
    schema = TypeAdapter(annotation).json_schema()
    return {key: schema[key] for key in _CONSTRAINT_KEYS if key in schema}


def advertised(description: str, constraints: dict[str, Any], **overrides: Any) -> Any:
    """A pydantic ``Field`` whose JSON schema carries ``constraints`` (not enforced locally).

    Args:
        description: what the agent reads about the parameter.
        constraints: JSON-schema keywords (from :func:`api_constraints`).
        overrides: extra or replacing JSON-schema keywords; ``default`` becomes the field default.
    """
    extra = {k: v for k, v in {**constraints, **overrides}.items() if k not in ("type", "default")}
    if "default" in overrides:
        return Field(default=overrides["default"], description=description, json_schema_extra=extra)
    return Field(description=description, json_schema_extra=extra)


def advertised_constraints(constraints: dict[str, Any]) -> Any:
    """A pydantic ``Field`` that only adds ``constraints`` to the JSON schema (for one branch of a union)."""
    return Field(json_schema_extra={k: v for k, v in constraints.items() if k != "type"})


# -- parameters -----------------------------------------------------------------------------------------

CLUSTER_TAG_CONSTRAINTS = _type_constraints(ClusterTag)
OPERATION_ID_CONSTRAINTS = _type_constraints(OperationId)
STAGE_NAMES = [stage.value for stage in StageName]
CAPACITY_TYPES = [capacity.value for capacity in SUPPORTED_CAPACITY_TYPES]
DEFAULT_INSTANCE_GROUP_NAME = api_default(InstanceGroupRequest, "instanceGroupName")
DEFAULT_CAPACITY_TYPE = api_default(InstanceGroupRequest, "capacityType")

ClusterTagParam = Annotated[
    str,
    advertised(
        "Cluster tag (required, no default): lowercase letter first, then lowercase letters, digits or "
        "hyphens, ending with a letter or digit, 3-24 characters. Names the cluster's AWS and Kubernetes "
        "resources (eks-cluster-<tag>, hp-cluster-<tag>). Get existing tags from cluster_list_all.",
        CLUSTER_TAG_CONSTRAINTS,
    ),
]

AvailabilityZoneParam = Annotated[
    str,
    advertised(
        "Availability Zone name (required, no default), e.g. us-west-2c. Offer only zones returned by "
        "catalog_list_availability_zones.",
        api_constraints(CreateClusterRequest, "availabilityZone"),
    ),
]

IdempotencyKeyParam = Annotated[
    Annotated[
        str,
        advertised_constraints(
            {"pattern": IDEMPOTENCY_KEY_PATTERN, "minLength": 1, "maxLength": IDEMPOTENCY_KEY_MAX_LENGTH}
        ),
    ]
    | None,
    Field(
        default=None,
        description="Optional Idempotency-Key (default: none, a new key per call). Repeating the call with the "
        "same key and the same arguments returns the same operation instead of starting a second one.",
    ),
]


class InstanceGroupInput(BaseModel):
    """One HyperPod instance group of ``cluster_create`` (the ``instanceGroups[]`` item of ``POST /clusters``).

    Only the fields the agent gives are sent; the API fills its defaults and rejects unknown fields.
    """

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False})

    instanceGroupName: str = advertised(
        f"Instance group name (default '{DEFAULT_INSTANCE_GROUP_NAME}'): 1-63 letters, digits and hyphens, "
        "unique within the cluster.",
        api_constraints(InstanceGroupRequest, "instanceGroupName"),
        default=DEFAULT_INSTANCE_GROUP_NAME,
    )
    instanceType: str | None = advertised(
        "HyperPod instance type, e.g. ml.g6.4xlarge (give it or instanceTypes). The user's decision: offer only "
        "types returned by catalog_list_instance_types for the chosen zone.",
        api_constraints(InstanceGroupRequest, "instanceType"),
        default=None,
    )
    instanceCount: int = advertised(
        "Number of instances (required, no default). The user's decision: ask for it, never infer a GPU or "
        "instance count from a tensor-parallel or similar flag.",
        api_constraints(InstanceGroupRequest, "instanceCount"),
    )
    capacityType: str = advertised(
        f"How the capacity is paid for, fixed for the group's life (default '{DEFAULT_CAPACITY_TYPE}'); allowed "
        f"values: {', '.join(CAPACITY_TYPES)}. The user's decision (skill capacity-types): Spot is cheaper but "
        "can be reclaimed; TrainingPlan needs trainingPlanArn (catalog_list_training_plans) and the cluster "
        "moves to the plan's zone.",
        {"enum": CAPACITY_TYPES},
        default=DEFAULT_CAPACITY_TYPE,
    )
    trainingPlanArn: str | None = advertised(
        "Training plan ARN: required exactly when capacityType is TrainingPlan (from catalog_list_training_plans; "
        "Active or Scheduled, same instance type, enough instances).",
        api_constraints(InstanceGroupRequest, "trainingPlanArn"),
        default=None,
    )
    instanceTypes: list[str] | None = advertised(
        "A flexible group: 1-20 distinct instance types HyperPod may launch, in order of preference (instead of "
        "instanceType). Only when the user asks for it.",
        api_constraints(InstanceGroupRequest, "instanceTypes"),
        default=None,
    )
    minInstanceCount: int | None = advertised(
        "Fewest instances the group works with (at most instanceCount). Only when the user asks for it.",
        api_constraints(InstanceGroupRequest, "minInstanceCount"),
        default=None,
    )
    threadsPerCore: int | None = advertised(
        "1 (hyperthreading off) or 2. Only when the user asks for it.",
        api_constraints(InstanceGroupRequest, "threadsPerCore"),
        default=None,
    )
    instanceStorageConfigs: list[InstanceStorageConfig] | None = advertised(
        'Extra EBS volumes per instance, e.g. [{"ebsVolumeConfig": {"volumeSizeInGB": 500}}]. Only when asked.',
        api_constraints(InstanceGroupRequest, "instanceStorageConfigs"),
        default=None,
    )
    onStartDeepHealthChecks: list[str] | None = advertised(
        "Deep health checks run when an instance starts (InstanceStress, InstanceConnectivity, "
        "MultiNodeTrainingValidation); they lengthen node start-up. Only when asked.",
        api_constraints(InstanceGroupRequest, "onStartDeepHealthChecks"),
        default=None,
    )
    efaOnly: bool = advertised(
        "True: EFA-only network interfaces (HyperPod NetworkInterface efa-only). Only when asked.",
        {},
        default=False,
    )
    labels: dict[str, str] | None = advertised(
        "Kubernetes labels of the group's nodes (at most 50). Only when asked.",
        api_constraints(InstanceGroupRequest, "labels"),
        default=None,
    )
    taints: list[KubernetesTaint] | None = advertised(
        "Kubernetes taints of the group's nodes, e.g."
        ' [{"key": "dedicated", "effect": "NoSchedule"}]. Only when asked.',
        api_constraints(InstanceGroupRequest, "taints"),
        default=None,
    )
    subnetId: str | None = advertised(
        "An existing subnet for the group, in the cluster's VPC and zone. Not a user decision: leave it unset "
        "unless the user names a subnet.",
        api_constraints(InstanceGroupRequest, "subnetId"),
        default=None,
    )
    dedicatedSubnet: bool = advertised(
        "True: the group gets its own compute subnet (kept after the group is deleted, reused by a later group "
        "of the same name, deleted with the cluster). Not with subnetId. Only when asked.",
        {},
        default=False,
    )
    autoPatch: AutoPatch | None = advertised(
        'Automatic security patching, e.g. {"patchingStrategy": "WhenIdle"}. Only when asked.',
        {},
        default=None,
    )

    def to_api(self) -> dict[str, Any]:
        """The item as sent to the API: the fields the agent set (and any extra ones, for the API to judge)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


InstanceGroupsParam = Annotated[
    list[InstanceGroupInput],
    advertised(
        "Instance groups of the HyperPod cluster (required, no default), usually one, e.g. "
        '[{"instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}].',
        api_constraints(CreateClusterRequest, "instanceGroups"),
    ),
]

EksClusterNameParam = Annotated[
    str,
    advertised(
        "Name of the existing EKS cluster to import (required, no default), as the user names it.",
        api_constraints(ImportClusterRequest, "eksClusterName"),
    ),
]

HyperPodClusterNameParam = Annotated[
    Annotated[str, advertised_constraints({"pattern": HYPERPOD_CLUSTER_NAME_PATTERN})] | None,
    Field(
        default=None,
        description="An existing HyperPod cluster orchestrated by that EKS cluster, imported with it (default: "
        "none; then instanceGroups is required and the control plane creates the HyperPod cluster).",
    ),
]

ImportAvailabilityZoneParam = Annotated[
    Annotated[str, advertised_constraints(api_constraints(CreateClusterRequest, "availabilityZone"))] | None,
    Field(
        default=None,
        description="Without hyperPodClusterName: zone of the compute subnet created in the cluster's VPC "
        "(default: the zone of the cluster's first subnet).",
    ),
]

ImportInstanceGroupsParam = Annotated[
    Annotated[list[InstanceGroupInput], advertised_constraints({"minItems": 1, "maxItems": 20})] | None,
    Field(
        default=None,
        description="Without hyperPodClusterName (required then; not allowed with it): instance groups of the "
        'HyperPod cluster the control plane creates, e.g. [{"instanceType": "ml.g6.4xlarge", "instanceCount": 1, '
        '"capacityType": "OnDemand"}].',
    ),
]

KubernetesVersionParam = Annotated[
    Annotated[str, advertised_constraints(api_constraints(CreateClusterRequest, "kubernetesVersion"))] | None,
    Field(
        default=None,
        description="EKS Kubernetes version (default: none, the API's default version). Not a user decision: "
        "leave it unset unless the user asked for a version.",
    ),
]

OfferingInstanceTypeParam = Annotated[
    str,
    advertised(
        "Instance type to reserve (required), e.g. ml.p5.48xlarge; training plans reserve large accelerated "
        "types only (the API lists them when another is given).",
        {"pattern": INSTANCE_TYPE_PATTERN},
    ),
]

OfferingInstanceCountParam = Annotated[
    int, advertised("Instances to reserve (required), 1-256.", {"minimum": 1, "maximum": 256})
]

OfferingDurationHoursParam = Annotated[
    Annotated[int, advertised_constraints({"minimum": 1, "maximum": 87600})] | None,
    Field(default=None, description="Plan duration in hours, 1-87600 (default: any)."),
]

OfferingStartAfterParam = Annotated[
    Annotated[str, advertised_constraints({"pattern": START_AFTER_PATTERN})] | None,
    Field(default=None, description="Earliest start, ISO-8601 UTC such as 2026-11-29T17:04:05Z (default: any)."),
]

StageParam = Annotated[
    str,
    advertised(
        "The FAILED stage to run again (required, no default); it and every later stage run again, earlier "
        f"stages are kept. Allowed values, in order: {', '.join(STAGE_NAMES)}.",
        {"enum": STAGE_NAMES},
    ),
]

OperationIdParam = Annotated[
    str,
    advertised(
        "Operation id (required, no default): the operationId of a cluster_create, cluster_retry_stage or "
        "cluster_delete result, e.g. op-0123456789abcdef0123456789abcdef.",
        OPERATION_ID_CONSTRAINTS,
    ),
]

EVENT_LEVELS = [level.value for level in ClusterEventLevel]

EventsMaxResultsParam = Annotated[
    int,
    advertised(
        f"Most events to return (default {EVENTS_DEFAULT_PAGE_SIZE}), 1-{EVENTS_MAX_PAGE_SIZE}.",
        {"minimum": 1, "maximum": EVENTS_MAX_PAGE_SIZE},
        default=EVENTS_DEFAULT_PAGE_SIZE,
    ),
]

EventsNextTokenParam = Annotated[
    Annotated[str, advertised_constraints({"maxLength": EVENTS_TOKEN_MAX_LENGTH})] | None,
    Field(
        default=None,
        description="Optional nextToken of the previous cluster_list_events result (default: none, the newest "
        "events); pass the same level and instanceGroupName as for that call.",
    ),
]

OPERATIONS_DEFAULT_PAGE_SIZE = 20
"""``maxResults`` default of ``GET /clusters/{clusterTag}/operations`` (``functions/api/api_routes/clusters.py``)."""
OPERATIONS_MAX_PAGE_SIZE = 100
OPERATIONS_TOKEN_MAX_LENGTH = 2048

OperationsMaxResultsParam = Annotated[
    int,
    advertised(
        f"Most operations to return (default {OPERATIONS_DEFAULT_PAGE_SIZE}), 1-{OPERATIONS_MAX_PAGE_SIZE}.",
        {"minimum": 1, "maximum": OPERATIONS_MAX_PAGE_SIZE},
        default=OPERATIONS_DEFAULT_PAGE_SIZE,
    ),
]

OperationsNextTokenParam = Annotated[
    Annotated[str, advertised_constraints({"maxLength": OPERATIONS_TOKEN_MAX_LENGTH})] | None,
    Field(
        default=None,
        description="Optional nextToken of the previous cluster_list_operations result (default: none, the "
        "newest operations).",
    ),
]

EventLevelParam = Annotated[
    Annotated[str, advertised_constraints({"enum": EVENT_LEVELS})] | None,
    Field(
        default=None,
        description=f"Optional level filter (default: none, every level); allowed values: {', '.join(EVENT_LEVELS)}. "
        "Use Error to find why a cluster or a node failed.",
    ),
]

EventsInstanceGroupParam = Annotated[
    Annotated[str, advertised_constraints({"pattern": INSTANCE_GROUP_NAME_PATTERN, "maxLength": 63})] | None,
    Field(
        default=None,
        description="Optional instance group name (default: none, every group and the cluster's own events), "
        "e.g. accel.",
    ),
]

InstanceGroupNameParam = Annotated[
    str,
    advertised(
        "Instance group name (required, no default), as instance_group_list shows it, e.g. accel.",
        {"pattern": INSTANCE_GROUP_NAME_PATTERN, "maxLength": 63},
    ),
]

NewGroupNameParam = Annotated[
    str,
    advertised(
        f"Name of the new instance group (default '{DEFAULT_INSTANCE_GROUP_NAME}', usually taken: give another): "
        "1-63 letters, digits and hyphens, unique within the cluster.",
        api_constraints(InstanceGroupRequest, "instanceGroupName"),
        default=DEFAULT_INSTANCE_GROUP_NAME,
    ),
]

NewGroupTypeParam = Annotated[
    str,
    advertised(
        "HyperPod instance type of the new group (required, no default), e.g. ml.g6.4xlarge. The user's decision: "
        "offer only types returned by catalog_list_instance_types for the cluster's zone.",
        api_constraints(InstanceGroupRequest, "instanceType"),
    ),
]

NewGroupCountParam = Annotated[
    int,
    advertised(
        "Number of instances of the new group (required, no default). The user's decision: ask for it.",
        api_constraints(InstanceGroupRequest, "instanceCount"),
    ),
]

NewGroupCapacityParam = Annotated[
    str,
    advertised(
        f"How the capacity is paid for (default '{DEFAULT_CAPACITY_TYPE}'); allowed values: "
        f"{', '.join(CAPACITY_TYPES)}.",
        {"enum": CAPACITY_TYPES},
        default=DEFAULT_CAPACITY_TYPE,
    ),
]

InstanceCountParam = Annotated[
    Annotated[int, advertised_constraints(api_constraints(UpdateInstanceGroupRequest, "instanceCount"))] | None,
    Field(
        default=None,
        description="New number of instances (default: none, unchanged); 0 keeps the group with no instances. "
        "The user's decision: ask for it.",
    ),
]

LabelsParam = Annotated[
    dict[str, str] | None,
    Field(
        default=None,
        description="Kubernetes labels of the group's nodes, replacing the current ones (default: none, unchanged).",
    ),
]

WaitSecondsParam = Annotated[
    int,
    advertised(
        f"Seconds to wait (required, no default), {WAIT_MIN_SECONDS}-{WAIT_MAX_SECONDS} inclusive; one call waits "
        f"at most {WAIT_PER_CALL_MAX_SECONDS} s and reports what is left. Use {WAIT_RECOMMENDED} between status "
        "polls of a long-running operation.",
        {"minimum": WAIT_MIN_SECONDS, "maximum": WAIT_MAX_SECONDS},
    ),
]


# -- results --------------------------------------------------------------------------------------------


class _Result(ApiModel):
    """Base of the proxy's own result envelopes: camelCase, permissive."""

    model_config = ConfigDict(extra="allow")


class ClusterListAllResult(_Result):
    """Result of ``cluster_list_all``: every cluster (all pages)."""

    clusters: list[ClusterSummary]
    count: int = Field(description="Number of clusters.")


class StagesResult(_Result):
    """Result of ``cluster_get_stages``."""

    cluster_tag: str
    stages: list[StageView]


class AvailabilityZoneItem(_Result):
    """One Availability Zone of the API's Region."""

    zone_name: str
    zone_id: str


class AvailabilityZonesResult(_Result):
    """Result of ``catalog_list_availability_zones``."""

    availability_zones: list[AvailabilityZoneItem]
    region: str = Field(description="The Region of the API (and of every zone).")


class InstanceTypesResult(_Result):
    """Result of ``catalog_list_instance_types``."""

    availability_zone: str
    instance_types: list[str]


class WaitResult(_Result):
    """Result of ``wait_seconds``."""

    waited_seconds: int = Field(description="Seconds this call waited.")
    requested_seconds: int = Field(description="Seconds asked for.")
    remaining_seconds: int = Field(
        description="Seconds of the request not waited (the call returned early to stay under client timeouts); "
        "0 when the whole wait fitted in one call."
    )
    message: str = Field(description="What was waited and what to do next.")


def _permissive(schema: Any) -> Any:
    """``schema`` without ``additionalProperties: false`` anywhere (answers may gain fields)."""
    if isinstance(schema, dict):
        return {
            key: _permissive(value)
            for key, value in schema.items()
            if not (key == "additionalProperties" and value is False)
        }
    if isinstance(schema, list):
        return [_permissive(item) for item in schema]
    return schema


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The published ``outputSchema`` of a tool whose structured result is ``model``'s JSON."""
    return dict(_permissive(model.model_json_schema(by_alias=True, mode="serialization")))


OPERATION_SCHEMA = output_schema(OperationView)
CLUSTER_SCHEMA = output_schema(ClusterView)
CLUSTER_LIST_SCHEMA = output_schema(ClusterListAllResult)
STAGES_SCHEMA = output_schema(StagesResult)
TRAINING_PLANS_SCHEMA = output_schema(TrainingPlanList)
TRAINING_PLAN_OFFERINGS_SCHEMA = output_schema(TrainingPlanOfferingList)
ZONES_SCHEMA = output_schema(AvailabilityZonesResult)
INSTANCE_TYPES_SCHEMA = output_schema(InstanceTypesResult)
WAIT_SCHEMA = output_schema(WaitResult)
EVENTS_SCHEMA = output_schema(ClusterEventList)
OPERATIONS_SCHEMA = output_schema(OperationList)
INSTANCE_GROUPS_SCHEMA = output_schema(InstanceGroupList)
FEATURES_SCHEMA = output_schema(FeatureList)
FEATURE_UPDATE_SCHEMA = {k: v for k, v in OPERATION_SCHEMA.items() if k != "required"}
"""PATCH /features answers the operation (202) or ``{clusterTag, features}`` when nothing changes (200): the
operation's schema without required members fits both."""


def _feature_keys() -> list[str]:
    return [str(info.alias) for info in UpdateFeaturesRequest.model_fields.values()]


FeaturesParam = Annotated[
    dict[str, dict[str, Any]],
    Field(
        description="Only the features to change (required; {} changes nothing), by key: "
        + ", ".join(_feature_keys())
        + '. Each value is {"enabled": true|false} plus, for add-on features, an optional "version" pin and, for '
        'tieredCheckpointing, an optional "instanceMemoryAllocationPercentage" (0-100). Example: '
        '{"trainingOperator": {"enabled": true}, "tieredCheckpointing": {"enabled": true, '
        '"instanceMemoryAllocationPercentage": 20}}.',
        json_schema_extra={"propertyNames": {"enum": _feature_keys()}},
    ),
]

# -- task governance --------------------------------------------------------------------------------------
SchedulerConfigParam = Annotated[
    dict[str, Any],
    Field(
        description="The cluster policy (required): priorityClasses [{name, weight 0-100}] (0-10, unique names), "
        "fairShare Enabled|Disabled, idleResourceSharing Enabled|Disabled (SageMaker SchedulerConfig).",
    ),
]
GovernanceTargetVersionParam = Annotated[
    Annotated[int, advertised_constraints(api_constraints(PutSchedulerConfigRequest, "targetVersion"))] | None,
    Field(
        default=None,
        description="The version you read (clusterSchedulerConfigVersion / computeQuotaVersion; default: none, the "
        "current one): the change is refused with 409 if it changed since.",
    ),
]
ComputeQuotaConfigParam = Annotated[
    dict[str, Any],
    Field(
        description="What the team is guaranteed (required): computeQuotaResources [{instanceType, count}], "
        "resourceSharingConfig {strategy Lend|DontLend|LendAndBorrow, borrowLimit}, preemptTeamTasks "
        "Never|LowerPriority (SageMaker ComputeQuotaConfig).",
    ),
]
ComputeQuotaTargetParam = Annotated[
    dict[str, Any],
    Field(
        description="The team (required): teamName (namespace hyperpod-ns-<teamName>), fairShareWeight 0-100.",
    ),
]
ComputeQuotaConfigChangeParam = Annotated[
    dict[str, Any] | None,
    Field(default=None, description="New ComputeQuotaConfig (default: none, unchanged)."),
]
ComputeQuotaTargetChangeParam = Annotated[
    dict[str, Any] | None,
    Field(default=None, description="New fairShareWeight with the same teamName (default: none, unchanged)."),
]
ActivationStateParam = Annotated[
    Annotated[str, advertised_constraints(api_constraints(UpdateComputeQuotaRequest, "activationState"))] | None,
    Field(default=None, description="Enabled or Disabled (default: none, unchanged)."),
]
ComputeQuotaNameParam = Annotated[
    str,
    advertised(
        "Compute quota name (required, no default), <clusterTag>-<teamName> for quotas created here; get it from "
        "compute_quota_list.",
        {"pattern": COMPUTE_QUOTA_NAME_PATTERN, "maxLength": 63},
    ),
]
SCHEDULER_CONFIG_SCHEMA = output_schema(SchedulerConfigView)
COMPUTE_QUOTA_SCHEMA = output_schema(ComputeQuotaView)
COMPUTE_QUOTAS_SCHEMA = output_schema(ComputeQuotaList)

__all__ = [
    "CAPACITY_TYPES",
    "EVENTS_DEFAULT_PAGE_SIZE",
    "EVENT_LEVELS",
    "NODES_DEFAULT_PAGE_SIZE",
    "OPERATIONS_DEFAULT_PAGE_SIZE",
    "STAGE_NAMES",
    "WAIT_MAX_SECONDS",
    "WAIT_MIN_SECONDS",
    "WAIT_PER_CALL_MAX_SECONDS",
    "WAIT_RECOMMENDED",
    "ActivationStateParam",
    "AvailabilityZoneParam",
    "ClusterTagParam",
    "ComputeQuotaConfigChangeParam",
    "ComputeQuotaConfigParam",
    "ComputeQuotaNameParam",
    "ComputeQuotaTargetChangeParam",
    "ComputeQuotaTargetParam",
    "EventLevelParam",
    "EventsInstanceGroupParam",
    "EventsMaxResultsParam",
    "EventsNextTokenParam",
    "GovernanceTargetVersionParam",
    "IdempotencyKeyParam",
    "InstanceGroupInput",
    "InstanceGroupsParam",
    "KubernetesVersionParam",
    "OfferingDurationHoursParam",
    "OfferingInstanceCountParam",
    "OfferingInstanceTypeParam",
    "OfferingStartAfterParam",
    "OperationIdParam",
    "OperationsMaxResultsParam",
    "OperationsNextTokenParam",
    "SchedulerConfigParam",
    "StageParam",
    "WaitSecondsParam",
    "api_constraints",
    "output_schema",
]


# -- nodes and HyperPod operations (day 2) -----------------------------------------------------------------

NODE_IDS_CONSTRAINTS = api_constraints(RebootOrReplaceNodesRequest, "nodeIds")
DELETE_NODE_IDS_CONSTRAINTS = api_constraints(DeleteNodesRequest, "nodeIds")
HYPERPOD_OPERATION_STATUSES = [s.value for s in HyperPodOperationStatus]
HYPERPOD_OPERATION_TYPES = [t.value for t in HyperPodOperationType]
DEEP_HEALTH_CHECKS = [c.value for c in DeepHealthCheckType]

NodeIdsParam = Annotated[
    list[str],
    advertised(
        "EC2 instance ids of nodes of this cluster (required, no default), each once, e.g. ['i-0123456789abcdef0']: "
        "take them from node_list. An id that is not a node of the cluster is refused and nothing is done.",
        NODE_IDS_CONSTRAINTS,
    ),
]

DeleteNodeIdsParam = Annotated[
    list[str],
    advertised(
        "EC2 instance ids of nodes of this cluster to delete (required, no default), each once: take them from "
        "node_list. An id that is not a node of the cluster is refused and nothing is done.",
        DELETE_NODE_IDS_CONSTRAINTS,
    ),
]

NodesMaxResultsParam = Annotated[
    int,
    advertised(
        f"Most nodes to return (default {NODES_DEFAULT_PAGE_SIZE}), 1-{NODES_MAX_PAGE_SIZE}.",
        {"minimum": 1, "maximum": NODES_MAX_PAGE_SIZE},
        default=NODES_DEFAULT_PAGE_SIZE,
    ),
]

NodesNextTokenParam = Annotated[
    Annotated[str, advertised_constraints({"maxLength": NODES_TOKEN_MAX_LENGTH})] | None,
    Field(
        default=None,
        description="Optional nextToken of the previous result of the same tool (default: none, the first page); "
        "pass the same filters as for that call.",
    ),
]

HyperPodOperationStatusParam = Annotated[
    Annotated[str, advertised_constraints({"enum": HYPERPOD_OPERATION_STATUSES})] | None,
    Field(
        default=None,
        description="Optional status filter (default: none); allowed values: "
        f"{', '.join(HYPERPOD_OPERATION_STATUSES)}.",
    ),
]

HyperPodOperationTypeParam = Annotated[
    Annotated[str, advertised_constraints({"enum": HYPERPOD_OPERATION_TYPES})] | None,
    Field(
        default=None,
        description=f"Optional type filter (default: none); allowed values: {', '.join(HYPERPOD_OPERATION_TYPES)}.",
    ),
]

HyperPodOperationIdParam = Annotated[
    str,
    advertised(
        "HyperPod operation id (required, no default): an operationId from hyperpod_operation_list or the "
        "hyperPodOperationId of cluster_start_health_check, a UUID.",
        {"pattern": HYPERPOD_OPERATION_ID_PATTERN},
    ),
]


class HealthCheckGroupInput(BaseModel):
    """One instance group of ``cluster_start_health_check`` (the ``instanceGroups[]`` item of the API)."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"additionalProperties": False})

    instanceGroupName: str = advertised(
        "An instance group of the cluster (required), e.g. accel.",
        api_constraints(HealthCheckGroup, "instanceGroupName"),
    )
    deepHealthChecks: list[str] = advertised(
        f"Checks to run (required), each once; allowed values: {', '.join(DEEP_HEALTH_CHECKS)}.",
        {"items": {"enum": DEEP_HEALTH_CHECKS}, "minItems": 1, "maxItems": len(DEEP_HEALTH_CHECKS)},
    )
    instanceIds: list[str] | None = advertised(
        "Optional: only these nodes of the group (default: every node of the group).",
        api_constraints(HealthCheckGroup, "instanceIds"),
        default=None,
    )

    def to_api(self) -> dict[str, Any]:
        """The item as sent to the API: the fields the agent set."""
        return self.model_dump(exclude_unset=True)


HealthCheckGroupsParam = Annotated[
    list[HealthCheckGroupInput],
    advertised(
        "Instance groups to check (required, no default), e.g. "
        '[{"instanceGroupName": "accel", "deepHealthChecks": ["InstanceStress", "InstanceConnectivity"]}].',
        api_constraints(HealthCheckRequest, "instanceGroups"),
    ),
]

InstanceGroupNamesParam = Annotated[
    Annotated[list[str], advertised_constraints(api_constraints(SoftwareUpdateRequest, "instanceGroupNames"))] | None,
    Field(
        default=None,
        description="Optional instance groups to update (default: none, every group of the cluster).",
    ),
]

NODES_SCHEMA = output_schema(ClusterNodeList)
HYPERPOD_OPERATIONS_SCHEMA = output_schema(HyperPodOperationList)
HYPERPOD_OPERATION_SCHEMA = output_schema(HyperPodOperationView)


# -- managed Karpenter (PUT/GET /clusters/{clusterTag}/autoscaling) ----------------------------------------

AutoScalingEnabledParam = Annotated[
    bool,
    Field(
        description="true turns managed Karpenter on (instanceGroups required), false turns it off (no other "
        "parameter: its NodePool, HyperpodNodeClass and ClusterRole are removed). Required, no default."
    ),
]

AutoScalingGroupsParam = Annotated[
    Annotated[list[str], advertised_constraints(api_constraints(UpdateAutoScalingRequest, "instanceGroups"))] | None,
    Field(
        default=None,
        description="With enabled true (required then): the instance groups Karpenter scales, each at 0 instances, "
        "On-Demand, without onStartDeepHealthChecks, all in one zone; at most 10 (default: none).",
    ),
]

AutoScalingLimitsParam = Annotated[
    dict[str, str | int] | None,
    Field(
        default=None,
        description="With enabled true: NodePool limits, Kubernetes resource name -> quantity, e.g. "
        '{"nvidia.com/gpu": 64, "cpu": "1000"} (default: none, no limit). The user decides: ask.',
    ),
]

ConsolidateAfterParam = Annotated[
    Annotated[str, advertised_constraints(api_constraints(UpdateAutoScalingRequest, "consolidateAfter"))] | None,
    Field(
        default=None,
        description="With enabled true: how long an empty or underutilised node stays before Karpenter removes it, "
        "e.g. 30s or 5m (default: none, the API uses 30s).",
    ),
]

AUTOSCALING_SCHEMA = output_schema(AutoScalingView)


# -- training jobs ----------------------------------------------------------------------------------------------------
from instantstart.models.training_jobs import (  # noqa: E402
    CONTAINER_NAME_MAX,
    CONTAINER_NAME_PATTERN,
    JOB_NAME_MAX,
    JOB_NAME_PATTERN,
    LIST_DEFAULT_PAGE_SIZE,
    LIST_MAX_PAGE_SIZE,
    LIST_TOKEN_MAX_LENGTH,
    LOG_MAX_SINCE_SECONDS,
    LOG_MAX_TAIL_LINES,
    NAMESPACE_PATTERN,
    POD_NAME_MAX,
    POD_NAME_PATTERN,
    CreateTrainingJobRequest,
    TrainingJobAccepted,
    TrainingJobList,
    TrainingJobLogs,
    TrainingJobView,
)

TRAINING_JOB_ACCEPTED_SCHEMA = output_schema(TrainingJobAccepted)
TRAINING_JOBS_SCHEMA = output_schema(TrainingJobList)
TRAINING_JOB_SCHEMA = output_schema(TrainingJobView)
TRAINING_JOB_LOGS_SCHEMA = output_schema(TrainingJobLogs)


def _inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$ref`` to its ``$defs`` replaced by the definition (a tool parameter's schema is
    embedded in the tool's input schema, where ``#/$defs/...`` would point elsewhere)."""
    defs = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                return walk(defs[ref.removeprefix("#/$defs/")])
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return dict(walk(schema))


TRAINING_JOB_REQUEST_SCHEMA: dict[str, Any] = _inline_refs(
    TypeAdapter(CreateTrainingJobRequest).json_schema(by_alias=True)
)
"""The body of POST /clusters/{clusterTag}/training-jobs: one shape per ``recipe`` (oneOf, discriminated)."""

TrainingJobParam = Annotated[
    dict[str, Any],
    Field(
        description="The job, one shape per recipe (the recipe field picks it): pytorch {script, args, nprocPerNode}, "
        "script {command, args}, llamafactory / msswift {configPath | config, model, dataset, outputPath}, verl "
        "{model, trainFiles, valFiles, outputPath, algorithm, overrides}; every recipe: name, instanceType, image "
        "(pinned tag, never latest), nodes, env, runPolicy, team, priorityClass. Read the "
        "instantstart-training-jobs skill first.",
        json_schema_extra=TRAINING_JOB_REQUEST_SCHEMA,
    ),
]

TrainingJobNameParam = Annotated[
    str,
    advertised(
        "Training job name (required, no default), as returned by training_job_list or training_job_create.",
        {"pattern": JOB_NAME_PATTERN, "maxLength": JOB_NAME_MAX},
    ),
]
JobNamespaceParam = Annotated[
    str,
    advertised(
        "Namespace of the job (default: default; a team's jobs run in hyperpod-ns-<team>).",
        {"pattern": NAMESPACE_PATTERN, "maxLength": 63},
        default="default",
    ),
]
JobsNamespaceFilterParam = Annotated[
    Annotated[str, advertised_constraints({"pattern": NAMESPACE_PATTERN, "maxLength": 63})] | None,
    Field(default=None, description="Only jobs of this namespace (default: none, every namespace)."),
]
JOBS_DEFAULT_PAGE_SIZE = LIST_DEFAULT_PAGE_SIZE
"""``maxResults`` default of ``GET /clusters/{clusterTag}/training-jobs``."""
JobsMaxResultsParam = Annotated[
    int,
    advertised(
        f"Most jobs to return (default {LIST_DEFAULT_PAGE_SIZE}), 1-{LIST_MAX_PAGE_SIZE}.",
        {"minimum": 1, "maximum": LIST_MAX_PAGE_SIZE},
        default=LIST_DEFAULT_PAGE_SIZE,
    ),
]
JobsNextTokenParam = Annotated[
    Annotated[str, advertised_constraints({"maxLength": LIST_TOKEN_MAX_LENGTH})] | None,
    Field(default=None, description="Optional nextToken of the previous training_job_list result (default: none)."),
]
JobPodParam = Annotated[
    Annotated[str, advertised_constraints({"pattern": POD_NAME_PATTERN, "maxLength": POD_NAME_MAX})] | None,
    Field(default=None, description="Pod to read (default: rank 0); pod names are in training_job_get."),
]
JobContainerParam = Annotated[
    Annotated[str, advertised_constraints({"pattern": CONTAINER_NAME_PATTERN, "maxLength": CONTAINER_NAME_MAX})] | None,
    Field(default=None, description="Container (default: the job's training container)."),
]
TailLinesParam = Annotated[
    Annotated[int, advertised_constraints({"minimum": 1, "maximum": LOG_MAX_TAIL_LINES})] | None,
    Field(default=None, description="Only the last lines (default: the last 1000 when sinceSeconds is unset)."),
]
SinceSecondsParam = Annotated[
    Annotated[int, advertised_constraints({"minimum": 1, "maximum": LOG_MAX_SINCE_SECONDS})] | None,
    Field(default=None, description="Only lines of the last seconds (default: none)."),
]

# -- managed MLflow (GET/PUT/DELETE /clusters/{clusterTag}/mlflow) ---------------------------------------------

MlflowTrackingServerArnParam = Annotated[
    Annotated[str, advertised_constraints(api_constraints(UpdateMlflowRequest, "trackingServerArn"))] | None,
    Field(
        default=None,
        description="Connect this existing tracking server (an ARN of this account and Region). Give exactly one of "
        "trackingServerArn, mlflowAppArn or create. Default: none.",
    ),
]

MlflowAppArnParam = Annotated[
    Annotated[str, advertised_constraints(api_constraints(UpdateMlflowRequest, "mlflowAppArn"))] | None,
    Field(
        default=None,
        description="Connect this existing MLflow app (an ARN of this account and Region). Default: none.",
    ),
]

MlflowCreateParam = Annotated[
    dict[str, Any] | None,
    Field(
        default=None,
        description='Create one for the cluster instead: {"kind": "trackingServer" | "app", "size": "Small" | '
        '"Medium" | "Large" (tracking servers), "mlflowVersion": "3.0.0" (tracking servers)}. It costs money while '
        "it exists (a tracking server bills per hour by size): the user decides. Default: none.",
    ),
]

MlflowNamespaceParam = Annotated[
    Annotated[str, advertised_constraints(api_constraints(UpdateMlflowRequest, "namespace"))] | None,
    Field(
        default=None,
        description="The training namespace whose service account instantstart-mlflow gets the identity to log "
        "(default: none, the API uses default).",
    ),
]

MLFLOW_SCHEMA = output_schema(MlflowView)
MLFLOW_UPDATE_SCHEMA = {k: v for k, v in OPERATION_SCHEMA.items() if k != "required"}

MLFLOW_RUNS_SCHEMA = output_schema(MlflowRunList)

# -- models and self-managed inference ---------------------------------------------------------------------------------
from instantstart.models.inference import (  # noqa: E402
    DEPLOYMENT_NAME_MAX,
    DEPLOYMENT_NAME_PATTERN,
    MAX_REPLICAS,
    CreateInferenceDeploymentRequest,
    CreateRouterRequest,
    DownloadModelRequest,
    InferenceDeploymentAccepted,
    InferenceDeploymentList,
    InferenceDeploymentView,
    ModelDownloadAccepted,
    ModelList,
)

MODEL_DOWNLOAD_ACCEPTED_SCHEMA = output_schema(ModelDownloadAccepted)
MODELS_SCHEMA = output_schema(ModelList)
INFERENCE_DEPLOYMENT_ACCEPTED_SCHEMA = output_schema(InferenceDeploymentAccepted)
INFERENCE_DEPLOYMENTS_SCHEMA = output_schema(InferenceDeploymentList)
INFERENCE_DEPLOYMENT_SCHEMA = output_schema(InferenceDeploymentView)

ModelDownloadParam = Annotated[
    dict[str, Any],
    Field(
        description='The download: {"source": "huggingface", "modelId": "Qwen/Qwen2.5-0.5B-Instruct", "revision": '
        '"main", "destination": "s3" | "fsx", "hfTokenSecret": {"name", "key"}} - a gated model\'s token only as a '
        "Kubernetes Secret reference, never the token. Read the instantstart-inference skill first.",
        json_schema_extra=_inline_refs(DownloadModelRequest.model_json_schema(by_alias=True)),
    ),
]
InferenceDeploymentParam = Annotated[
    dict[str, Any],
    Field(
        description="The deployment: name, engine (vllm | sglang), modelPath (/s3/models/<modelId> from model_list), "
        "servedModelName, instanceType (one of the cluster's groups), gpus (= tensor parallel size), maxModelLen, "
        'replicas, port, image (pinned), service {"type": "ClusterIP" | "LoadBalancer", "exposure": "internal" | '
        '"internet-facing"}, hfTokenSecret {name, key}. Read the instantstart-inference skill first.',
        json_schema_extra=_inline_refs(CreateInferenceDeploymentRequest.model_json_schema(by_alias=True)),
    ),
]
InferenceRouterParam = Annotated[
    dict[str, Any],
    Field(
        description='The router: {"policy": "cache_aware", "replicas": 1, "autoscaling": {"minReplicas", '
        '"maxReplicas", "prometheusServerAddress", "queueThreshold"}} (autoscaling needs KEDA on the cluster). '
        "Every member has a default but autoscaling's maxReplicas and prometheusServerAddress: {} is a valid body.",
        json_schema_extra=_inline_refs(CreateRouterRequest.model_json_schema(by_alias=True)),
    ),
]
InferenceDeploymentNameParam = Annotated[
    str,
    advertised(
        "Inference deployment name (required, no default), as returned by inference_deployment_list.",
        {"pattern": DEPLOYMENT_NAME_PATTERN, "maxLength": DEPLOYMENT_NAME_MAX},
    ),
]
InferenceReplicasParam = Annotated[
    int,
    advertised(
        f"Pods wanted, 0-{MAX_REPLICAS} (required, no default). Scale-in removes idle pods first and is refused "
        "(409 BoundPodsWouldBeRemoved) below the number of pods serving a bound model.",
        {"minimum": 0, "maximum": MAX_REPLICAS},
    ),
]


from instantstart.models.inference import InvokeDeploymentView  # noqa: E402
from instantstart.models.inference_endpoints import (  # noqa: E402
    ENDPOINT_NAME_MAX,
    ENDPOINT_NAME_PATTERN,
    CreateInferenceEndpointRequest,
    InferenceEndpointAccepted,
    InferenceEndpointList,
    InferenceEndpointView,
    InvokeEndpointView,
)

INFERENCE_ENDPOINT_ACCEPTED_SCHEMA = output_schema(InferenceEndpointAccepted)
INFERENCE_ENDPOINTS_SCHEMA = output_schema(InferenceEndpointList)
INFERENCE_ENDPOINT_SCHEMA = output_schema(InferenceEndpointView)
INVOKE_ENDPOINT_SCHEMA = output_schema(InvokeEndpointView)
INVOKE_DEPLOYMENT_SCHEMA = output_schema(InvokeDeploymentView)
InvokeRouteParam = Annotated[
    Literal["v1/completions", "v1/chat/completions"],
    Field(description="The engine route: v1/completions (default; body has prompt) or v1/chat/completions (messages)."),
]
InvokeViaParam = Annotated[
    Literal["router", "service"] | None,
    Field(description="router (the SGLang router's Service) or service (the workers'); default: the router if any."),
]

InferenceEndpointParam = Annotated[
    dict[str, Any],
    Field(
        description="The managed endpoint: name, instanceType (one of the cluster's groups), replicas, modelSource "
        '{"type": "s3", "modelLocation": "models/<modelId>"} (from model_list; or fsx/huggingface) with worker '
        '{"image" (pinned), "port", "resources": {"gpus", "cpu", "memoryGib"}}, or jumpStart {"modelId"}; optional '
        "kvCacheSpec, intelligentRoutingSpec, tls, autoscaling. Needs the inferenceOperator feature. Read the "
        "instantstart-inference skill first.",
        json_schema_extra=_inline_refs(CreateInferenceEndpointRequest.model_json_schema(by_alias=True)),
    ),
]
InferenceEndpointNameParam = Annotated[
    str,
    advertised(
        "Inference endpoint name (required, no default), as returned by inference_endpoint_list.",
        {"pattern": ENDPOINT_NAME_PATTERN, "maxLength": ENDPOINT_NAME_MAX},
    ),
]
InvokeBodyParam = Annotated[
    dict[str, Any],
    Field(
        description='The JSON object sent to the model (at most 1 MiB serialised), e.g. {"prompt": "Hello", '
        '"max_tokens": 32} or {"messages": [{"role": "user", "content": "Hello"}]}.'
    ),
]
