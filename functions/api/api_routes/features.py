"""Routes of a cluster's managed features.

Thin: parse, call one core function, map the result.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from api_routes.common import (
    _ACCEPTED,
    ClusterTagPath,
    IdempotencyKey,
    _accepted,
    _errors,
    _json,
    _ok,
    faces,
    idempotency,
    runtime,
)
from instantstart.features import service as features
from instantstart.inference import steps as _inference_steps  # noqa: F401 - registers the inference operator's dependents
from instantstart.models.features import FeatureList, FeatureUpdateResult, UpdateFeaturesRequest
from instantstart.models.operation import OperationView
from instantstart.training import steps as _training_steps  # noqa: F401 - registers the training features' dependents

router = APIGatewayHttpRouter()
_faces = partial(faces, toolset="features")


@router.get(
    "/clusters/<clusterTag>/features",
    operation_id="GetClusterFeatures",
    summary="Managed features of a cluster: observed now, desired, and what each installed",
    description="Each feature (trainingOperator, inferenceOperator, observability, taskGovernance, "
    "tieredCheckpointing) as AWS reports it now (EKS DescribeAddon, ListPodIdentityAssociations, IAM roles by "
    "ownership tag, SageMaker DescribeCluster TieredStorageConfig), what PATCH last applied (desired), its version, "
    "and what it installed: add-ons (with who needs each), roles, pod identity associations, Kubernetes objects.",
    responses={**_ok(FeatureList), **_errors(404, 422, 503)},
    tags=["features"],
    openapi_extensions=_faces(
        "cluster_get_features",
        "Get a cluster's managed features",
        (
            "Get a cluster's managed features (GET /clusters/{clusterTag}/features): for trainingOperator, "
            "inferenceOperator, observability (HyperPod observability with its Prometheus workspace, CloudWatch "
            "Container Insights), taskGovernance, tieredCheckpointing, fsx and kubeRay, whether each is on as AWS "
            "reports it now, what was last applied (desired), the add-on version and status, and what it installed "
            "(add-ons with who needs each, IAM roles, pod identity associations, Kubernetes objects, buckets).\n\n"
            "Call it before cluster_update_features and show the user the current state. Read-only."
        ),
        cli="features get",
        read_only=True,
    ),
)
def get_cluster_features(cluster_tag: ClusterTagPath) -> Response[FeatureList]:
    """The cluster's managed features."""
    return _json(features.get_features(runtime(), cluster_tag))


@router.patch(
    "/clusters/<clusterTag>/features",
    operation_id="UpdateClusterFeatures",
    summary="Turn managed features on or off (explicit diff; asynchronous when something changes)",
    description="Only the features in the body act. Each is compared with what AWS reports now: when every one "
    "already matches (also for {}), the answer is 200 with each feature unchanged and nothing is written. Otherwise "
    "202: an UPDATE_FEATURES operation installs what is missing (the add-ons a feature requires first, its roles "
    "trusting only its own service accounts, pod identity associations, its add-on at the pinned or newest "
    "compatible version) or removes exactly what the feature created; a shared add-on is removed only when "
    "nothing else needs it. The operation lists each feature changed, unchanged or failed (AWS error verbatim).",
    responses={
        200: {"description": "Nothing to change", "content": {"application/json": {"model": FeatureUpdateResult}}},
        **_ACCEPTED,
        **_errors(400, 404, 409, 415, 422, 503),
    },
    tags=["features"],
    openapi_extensions=_faces(
        "cluster_update_features",
        "Turn managed features on or off",
        (
            "Turn managed features on or off (PATCH /clusters/{clusterTag}/features). Only the features given act.\n\n"
            "Which features, and on or off, are the user's decisions: read the instantstart-managed-features skill "
            "for what each costs and needs, and confirm before turning one off (off removes the add-on and the roles "
            "it created; shared add-ons stay while anything else needs them). When AWS already matches, the answer "
            'lists every feature "unchanged" and nothing was started. Otherwise it is an UPDATE_FEATURES operation: '
            "poll it with operation_get and wait_seconds to a terminal state; its features map says changed, "
            "unchanged or failed (AWS error verbatim) per feature. Turning a feature off while something depends "
            "on it (inferenceOperator: managed inference endpoints; trainingOperator: HyperPodPyTorchJobs; kubeRay: "
            "RayJobs, RayClusters, RayServices; taskGovernance: jobs submitted to a queue; fsx: jobs mounting "
            "fsx-claim) is refused (409 FeatureHasDependents naming them) unless that feature's body says "
            '"removeDependents": true (e.g. {"inferenceOperator": {"enabled": false, "removeDependents": true}}), '
            "which deletes them first (endpoints with their SageMaker endpoint, config and model): confirm that "
            "with the user. "
            "Write tool: needs --allow-write."
        ),
        cli="features set",
        destructive=True,
        idempotent=True,
        body="features",
    ),
)
def update_cluster_features(
    cluster_tag: ClusterTagPath,
    request: UpdateFeaturesRequest,
    idempotency_key: IdempotencyKey = None,
) -> Response[Any]:
    """Diff the requested features against AWS; start an operation for what differs."""
    from api_idempotency import run_idempotent

    out = run_idempotent(
        idempotency(),
        route=f"PATCH /clusters/{cluster_tag}/features",
        key=idempotency_key,
        body=request.wire(),
        call=lambda: features.update_features(runtime(), cluster_tag, request).to_api(),
    )
    if "operationId" in out:
        return _accepted(OperationView.model_validate(out))
    return _json(FeatureUpdateResult.model_validate(out))
