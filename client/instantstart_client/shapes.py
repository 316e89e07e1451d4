"""JSON shapes of the InstantStart HTTP API, as the client sees them (camelCase keys).

These are static hints for the dicts the client returns; the server is the authority on the shapes
(its pydantic models generate ``api_schema/openapi.json``). Fields the server adds later are kept in
the dicts unchanged, so readers use ``.get`` for optional fields. ``tests/contract/test_client_shapes.py``
checks every shape and tuple here against that document.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

CLUSTER_STATUSES = ("CREATING", "READY", "DEGRADED", "FAILED", "DELETING", "DELETED")
STAGE_STATUSES = ("PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")
OPERATION_STATUSES = ("PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")
TERMINAL_OPERATION_STATUSES = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})
STAGE_NAMES = ("network", "access", "dependencies", "hyperpod", "storage", "verify")
"""The stages of a cluster, in the order they run."""
EVENT_LEVELS = ("Info", "Warn", "Error")
"""Levels of HyperPod cluster events (the ``level`` filter of ``GET /clusters/{clusterTag}/events``)."""


class ErrorDetail(TypedDict):
    """One entry of ``error.details``: the field concerned and, for a 422, its rule."""

    field: str
    message: NotRequired[str]
    type: NotRequired[str]
    allowedValues: NotRequired[list[str]]


class ErrorBody(TypedDict):
    """``error`` of every 4xx/5xx answer of the API (``{"error": {"code", "message", "details"}}``)."""

    code: str
    message: str
    details: list[ErrorDetail]


class ErrorResponse(TypedDict):
    """Body of every 4xx/5xx answer of the API: ``{"error": {"code", "message", "details"}}``.

    :meth:`instantstart_client.api.ApiError.error_response` gives this body for any failed answer (the API's
    own, or one built from API Gateway's ``{"message"}`` or a non-JSON body); the CLI's ``--json`` and the MCP
    proxy's tool errors print it.
    """

    error: ErrorBody


class ErrorInfo(TypedDict):
    """``{"code", "message"}`` of a failed stage or operation (the AWS error, verbatim)."""

    code: str
    message: str


class InstanceGroupSpec(TypedDict):
    """One instance group of ``POST /clusters`` (the API names it ``accel`` when no name is given)."""

    instanceGroupName: NotRequired[str]
    instanceType: NotRequired[str | None]
    instanceCount: int
    capacityType: NotRequired[str]
    trainingPlanArn: NotRequired[str | None]
    instanceTypes: NotRequired[list[str] | None]
    minInstanceCount: NotRequired[int | None]
    threadsPerCore: NotRequired[int | None]
    instanceStorageConfigs: NotRequired[list[dict[str, Any]] | None]
    onStartDeepHealthChecks: NotRequired[list[str] | None]
    efaOnly: NotRequired[bool]
    labels: NotRequired[dict[str, str] | None]
    taints: NotRequired[list[dict[str, Any]] | None]
    subnetId: NotRequired[str | None]
    dedicatedSubnet: NotRequired[bool]
    autoPatch: NotRequired[dict[str, Any] | None]


class Operation(TypedDict):
    """``GET /operations/{operationId}`` and every 202 answer."""

    operationId: str
    type: str
    status: str
    clusterTag: str
    statusUrl: str
    createdAt: str
    updatedAt: str
    endedAt: str | None
    error: ErrorInfo | None
    stage: NotRequired[str | None]
    instanceGroupName: NotRequired[str | None]
    result: NotRequired[ChangeResult | None]


class InstanceGroupDetail(TypedDict):
    """One instance group of ``GET /clusters/{clusterTag}/instance-groups`` (what HyperPod reports now)."""

    instanceGroupName: str
    instanceType: str | None
    targetCount: int | None
    currentCount: int
    capacityType: str | None
    trainingPlanArn: str | None
    status: str | None
    subnetIds: list[str]
    labels: dict[str, str]


class InstanceGroupList(TypedDict):
    """``GET /clusters/{clusterTag}/instance-groups``."""

    clusterTag: str
    hyperPodClusterName: str
    hyperPodStatus: str | None
    instanceGroups: list[InstanceGroupDetail]


class AutoScaling(TypedDict):
    """``GET /clusters/{clusterTag}/autoscaling``: HyperPod's AutoScaling now and the NodePool last applied."""

    clusterTag: str
    hyperPodClusterName: str
    mode: str | None
    autoScalerType: str | None
    status: str | None
    failureMessage: str | None
    clusterRoleArn: str | None
    nodePool: str | None
    nodeClass: str | None
    instanceGroups: list[str]
    limits: dict[str, str] | None
    consolidateAfter: str | None
    updatedAt: str | None
    operationId: str | None


class OperationPage(TypedDict):
    """``GET /clusters/{clusterTag}/operations``: one page of the cluster's operations, newest first."""

    clusterTag: str
    operations: list[Operation]
    nextToken: str | None


class Stage(TypedDict):
    """One stage of a cluster workflow (``network``, ``access``, ... ``verify``)."""

    name: str
    order: int
    status: str
    attempts: int
    startedAt: str | None
    endedAt: str | None
    observedStatus: str | None
    resources: dict[str, Any]
    error: ErrorInfo | None
    teardownStatus: NotRequired[str | None]


class EksInfo(TypedDict):
    """The EKS cluster as last observed."""

    clusterName: str
    clusterArn: str | None
    status: str | None
    kubernetesVersion: str | None
    endpoint: str | None
    vpcId: str | None


class InstanceGroupInfo(TypedDict):
    """A HyperPod instance group as last observed."""

    instanceGroupName: str
    instanceType: str | None
    instanceCount: int
    currentCount: int | None
    status: str | None
    capacityType: str
    trainingPlanArn: NotRequired[str | None]
    instanceTypes: NotRequired[list[str] | None]


class HyperPodInfo(TypedDict):
    """The HyperPod cluster as last observed."""

    clusterName: str
    clusterArn: str | None
    status: str | None
    instanceGroups: list[InstanceGroupInfo]


class NodeInfo(TypedDict):
    """A Kubernetes node of a HyperPod instance group."""

    nodeName: str
    instanceType: str | None
    instanceGroupName: str | None
    ready: bool
    healthStatus: str | None


class StorageInfo(TypedDict):
    """The S3 storage mounted through the Mountpoint for S3 CSI driver."""

    bucketName: str
    persistentVolumeClaim: str
    namespace: str
    phase: str | None


class DriftItemInfo(TypedDict):
    """One difference between the records and AWS (``drift.items``)."""

    resourceType: str
    name: str
    field: str
    expected: str | None
    observed: str | None
    since: str
    owned: bool
    repairable: bool
    message: str


class DriftInfo(TypedDict):
    """The drift of a cluster as last checked."""

    checkedAt: str | None
    items: list[DriftItemInfo]
    moreItems: int


class Cluster(TypedDict):
    """``GET /clusters/{clusterTag}``."""

    clusterTag: str
    generation: int
    status: str
    availabilityZone: str
    region: str
    createdAt: str
    updatedAt: str
    currentOperationId: str | None
    stages: list[Stage]
    eks: EksInfo | None
    hyperPod: HyperPodInfo | None
    nodes: list[NodeInfo]
    storage: StorageInfo | None
    drift: DriftInfo


class StageStatusView(TypedDict):
    """A stage's name and status in ``GET /clusters``."""

    name: str
    status: str


class InstanceGroupCounts(TypedDict):
    """An instance group's node counts in ``GET /clusters``."""

    instanceGroupName: str
    instanceType: str | None
    targetCount: int
    currentCount: int | None
    readyNodes: int
    status: str | None


class ClusterSummary(TypedDict):
    """One entry of ``GET /clusters``."""

    clusterTag: str
    status: str
    availabilityZone: str
    createdAt: str
    updatedAt: str
    eksClusterName: str
    hyperPodClusterName: str
    currentOperationId: str | None
    stages: list[StageStatusView]
    instanceGroups: list[InstanceGroupCounts]


class ClusterPage(TypedDict):
    """``GET /clusters``: one page of clusters and the token of the next page (None on the last)."""

    clusters: list[ClusterSummary]
    nextToken: str | None


class AvailabilityZone(TypedDict):
    """One entry of ``GET /catalog/availability-zones``."""

    zoneName: str
    zoneId: str


class ClusterEvent(TypedDict):
    """One HyperPod event of ``GET /clusters/{clusterTag}/events`` (SageMaker's, description verbatim)."""

    eventId: str
    eventTime: str
    eventLevel: str | None
    description: str | None
    instanceGroupName: str | None
    instanceId: str | None
    resourceType: str
    operationId: str | None
    failureMessage: str | None
    failureMessageNote: str | None


class ClusterEventPage(TypedDict):
    """``GET /clusters/{clusterTag}/events``: one page of events, newest first, and the next page's token."""

    clusterTag: str
    hyperPodClusterName: str
    events: list[ClusterEvent]
    nextToken: str | None


class TrainingPlan(TypedDict):
    """One entry of ``GET /catalog/training-plans`` (SageMaker ``TrainingPlanSummary``)."""

    trainingPlanArn: str
    trainingPlanName: str
    status: str
    instanceType: str | None
    totalInstanceCount: int | None
    availableInstanceCount: int | None
    availabilityZone: str | None
    startTime: str | None
    endTime: str | None


class TrainingPlanOffering(TypedDict):
    """One entry of ``GET /catalog/training-plan-offerings`` (SageMaker ``TrainingPlanOffering``)."""

    trainingPlanOfferingId: str
    instanceType: str | None
    instanceCount: int | None
    availabilityZone: str | None
    startTime: str | None
    endTime: str | None
    durationHours: int | None
    upfrontFee: str | None
    currencyCode: str | None


NODE_HEALTH_STATUSES = ("Schedulable", "Unschedulable", "UnschedulablePendingReboot", "UnschedulablePendingReplacement")
"""Values of the sagemaker.amazonaws.com/node-health-status label HyperPod sets on a node."""
HYPERPOD_OPERATION_STATUSES = ("InProgress", "Superseded", "Done")
"""SageMaker ``ClusterOperationStatus`` (the ``status`` filter of the HyperPod operation listing)."""
HYPERPOD_OPERATION_TYPES = ("Scaling", "DeepHealthCheck")
"""SageMaker ``ClusterOperationType`` (the ``type`` filter of ``GET /clusters/{clusterTag}/hyperpod-operations``)."""
DEEP_HEALTH_CHECKS = ("InstanceStress", "InstanceConnectivity", "MultiNodeTrainingValidation")
"""SageMaker ``DeepHealthCheckType`` values of ``POST /clusters/{clusterTag}/health-checks``."""


class ClusterNode(TypedDict):
    """One node of ``GET /clusters/{clusterTag}/nodes`` (SageMaker's, with its Kubernetes node and health label)."""

    instanceId: str
    nodeLogicalId: str | None
    instanceGroupName: str
    instanceType: str
    instanceStatus: str
    instanceStatusMessage: str | None
    launchTime: str | None
    kubernetesNodeName: str
    healthStatus: str | None
    healthStatusReason: str | None


class ClusterNodePage(TypedDict):
    """``GET /clusters/{clusterTag}/nodes``: one page of nodes and the next page's token."""

    clusterTag: str
    hyperPodClusterName: str
    nodes: list[ClusterNode]
    nextToken: str | None


class NodeFailure(TypedDict):
    """A node HyperPod refused to act on, with SageMaker's code and message verbatim."""

    nodeId: str
    code: str
    message: str


class ChangeResult(TypedDict):
    """``result`` of a node action, software update or deep health check operation: what AWS answered."""

    nodeIds: list[str] | None
    successful: list[str] | None
    failed: list[NodeFailure] | None
    hyperPodOperationId: str | None
    observed: str | None


class HyperPodOperationSummary(TypedDict):
    """One entry of ``GET /clusters/{clusterTag}/hyperpod-operations``."""

    operationId: str
    type: str
    status: str
    creationTime: str | None


class HyperPodOperationPage(TypedDict):
    """``GET /clusters/{clusterTag}/hyperpod-operations``: one page, newest first."""

    clusterTag: str
    hyperPodClusterName: str
    operations: list[HyperPodOperationSummary]
    nextToken: str | None


class HyperPodOperation(TypedDict):
    """``GET /clusters/{clusterTag}/hyperpod-operations/{operationId}``."""

    operationId: str
    type: str
    status: str
    creationTime: str | None
    clusterTag: str
    scalingDetails: list[dict[str, Any]]
    deepHealthCheckDetails: list[dict[str, Any]]
    events: list[ClusterEvent]
    moreEvents: bool
