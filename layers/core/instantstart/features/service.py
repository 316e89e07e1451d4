"""Managed features: ``GET``/``PATCH /clusters/{clusterTag}/features`` and the ``UPDATE_FEATURES`` day-2 change.

API side: :func:`get_features` (observed state now, what was last applied, what each feature installed) and
:func:`update_features` (observe, validate pinned versions, diff; an empty diff answers at once with every
feature ``unchanged`` and no AWS write; otherwise an ``UPDATE_FEATURES`` operation of the update workflow).

Workflow side (:data:`CHANGES`): ``apply`` re-observes, re-diffs and makes one converging round of writes for
each feature to change; each ``check`` round re-observes and makes the next writes (a feature's operator add-on
is created only once the add-ons it requires are ACTIVE) until every feature is settled. Each round writes only
what is missing, so a redelivered task writes nothing twice. A feature that fails (AWS error verbatim) stops
only itself; the operation ends FAILED naming the failed features, with every feature's outcome on it.

Ownership: add-ons, roles, associations and buckets made here carry the cluster's ownership tags; a shared
add-on lists who needs it in its ``instantstart:needed-by`` tag (read back from EKS), and "off" releases only
this feature's claim: the add-on is deleted when nobody needs it any more, never when it existed before.

This module holds the use cases; the parts they call: :mod:`.views` (a feature's state as ``GET`` shows it),
:mod:`.rules` (the refusals of ``PATCH`` before an operation), :mod:`.converge` (one round toward on or off, with
:mod:`.converge_fsx` for fsx's storage) made of the writes of :mod:`.writes`.
"""

from __future__ import annotations

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import changes, records, service
from instantstart.clusters import task_governance as task_governance
from instantstart.errors import Conflict, StageFailed
from instantstart.features import fsx
from instantstart.features.catalog import FEATURES
from instantstart.features.converge import _converge_off as _converge_off
from instantstart.features.converge import converge
from instantstart.features.converge import obs_bucket as obs_bucket
from instantstart.features.converge import teardown as teardown
from instantstart.features.observe import KUBERNETES_KINDS, KUBERNETES_READ_BUDGET_SECONDS, ClusterObservation, observe
from instantstart.features.plan import FeatureRequest, plan, requested
from instantstart.features.rules import CHANGEABLE as _CHANGEABLE
from instantstart.features.rules import check_versions as _check_versions
from instantstart.features.views import feature_state as _state
from instantstart.features.writes import FeatureFailure
from instantstart.features.writes import _Ctx as _Ctx
from instantstart.features.writes import _release as _release
from instantstart.models.cluster import StageError
from instantstart.models.common import OperationType
from instantstart.models.features import (
    FeatureList,
    FeatureOutcome,
    FeatureResult,
    FeaturesChange,
    FeatureUpdateResult,
    UpdateFeaturesRequest,
)
from instantstart.models.operation import OperationView
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.runtime import Runtime


def get_features(rt: Runtime, tag: str) -> FeatureList:
    """Every managed feature of the cluster: observed from AWS and Kubernetes now, plus what PATCH last applied.

    Calls EKS DescribeCluster/DescribeAddon/ListPodIdentityAssociations, IAM GetRole, S3 GetBucketTagging and
    SageMaker DescribeCluster, and lists the features' own Kubernetes objects through the API role's read-only
    access entry within :data:`~instantstart.features.observe.KUBERNETES_READ_BUDGET_SECONDS` (a kind that cannot be
    read is shown in ``kubernetesUnknown``, never an error; reads only: :func:`instantstart.features.observe.observe`).

    Raises:
        NotFound: no live cluster with this tag.
    """
    cluster = records.live_cluster(rt, tag)
    obs = observe(rt, tag, kubernetes=True, kubernetes_budget=KUBERNETES_READ_BUDGET_SECONDS)
    desired = cluster.desired_features.wire() if cluster.desired_features else {}
    return FeatureList(
        cluster_tag=tag,
        kubernetes_version=obs.kubernetes_version,
        features={key: _state(spec, obs, desired.get(key)) for key, spec in FEATURES.items()},
    )


def update_features(rt: Runtime, tag: str, request: UpdateFeaturesRequest) -> FeatureUpdateResult | OperationView:
    """Diff the body against AWS now; start an ``UPDATE_FEATURES`` operation for what differs.

    Returns a :class:`FeatureUpdateResult` (every feature ``unchanged``, nothing written, no operation) when AWS
    already matches the body (``{}`` included), else the operation's view (202).

    Raises:
        NotFound: no live cluster.
        Conflict: an operation runs on the cluster, or the cluster is not READY or DEGRADED; ``FeatureHasDependents``
            when a feature turned off without ``removeDependents`` has dependents (the inference operator's managed
            endpoints; the training operator's, KubeRay's, task governance's and FSx's training workloads: read
            from Kubernetes through the areas' dependents hooks).
        ValidationFailed: a pinned version is not offered for the cluster's Kubernetes version, or
            ``fsx.fileSystem`` is one FSx would refuse (:func:`instantstart.features.fsx.check_file_system`).

    Features with Kubernetes objects of their own (fsx with ``fileSystem``) are not known to be in place here
    (PATCH does not read Kubernetes at the API): they go to the operation, whose workflow reads Kubernetes and writes
    nothing when they are.
    """
    cluster = records.live_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    if cluster.status not in _CHANGEABLE:
        raise Conflict(
            f"cluster '{tag}' is {cluster.status.value}; features can change only on a READY or DEGRADED cluster",
            code="ClusterNotReady",
            details=[{"field": "clusterTag", "status": cluster.status.value}],
        )
    if request.fsx is not None:
        fsx.check_file_system(request.fsx.file_system, request.fsx.enabled)
    obs = observe(rt, tag)
    _check_versions(rt, request, obs)
    to_change, same = plan(request, obs)
    if not to_change:
        return FeatureUpdateResult(
            cluster_tag=tag, features={k: FeatureOutcome(result=FeatureResult.UNCHANGED) for k in same}
        )
    _refuse_dependents(rt, tag, request, to_change)
    return changes.start_change(
        rt, cluster, OperationType.UPDATE_FEATURES, FeaturesChange(request=request, plan=to_change)
    )


def _removing_with_dependents(request: UpdateFeaturesRequest) -> dict[str, bool]:
    """The features the request turns off that others may depend on (their request has ``removeDependents``) ->
    whether it asks to remove those too."""
    return {
        key: bool(getattr(req, "remove_dependents", None))
        for key, req in requested(request).items()
        if hasattr(req, "remove_dependents") and not req.enabled
    }


def _refuse_dependents(rt: Runtime, tag: str, request: UpdateFeaturesRequest, to_change: list[str]) -> None:
    """Turning off a feature others depend on (e.g. the inference operator under managed endpoints) needs
    ``removeDependents``: reads them (:meth:`~instantstart.clusters.registry.StepRegistry.dependents`, Kubernetes).

    Raises:
        Conflict: ``FeatureHasDependents``, naming the feature, its dependents and the field that removes them.
    """
    from instantstart.clusters.registry import REGISTRY

    for key, remove in _removing_with_dependents(request).items():
        if remove or key not in to_change:
            continue
        found = REGISTRY.dependents(key, rt, tag, remove=False)
        if found:
            raise Conflict(
                f"{key} cannot be turned off while {len(found)} resource(s) depend on it: {', '.join(found)}; "
                f'delete them first, or send {{"{key}": {{"enabled": false, "removeDependents": true}}}} '
                "to delete them with it",
                code="FeatureHasDependents",
                details=[{"field": f"{key}.removeDependents", "feature": key, "dependents": found}],
            )


# -- workflow steps -----------------------------------------------------------------------------
def _request(rt: Runtime, p: StepPayload) -> tuple[UpdateFeaturesRequest, dict[str, FeatureOutcome]]:
    op, change = changes.operation_change(rt, p, FeaturesChange)
    return change.request, dict(op.feature_results or {})


def _round(
    rt: Runtime, tag: str, key: str, req: FeatureRequest, obs: ClusterObservation, outcome: FeatureOutcome
) -> None:
    """Advance one pending feature; its outcome becomes changed or failed (AWS error verbatim) when it settles.

    A feature turned off with ``removeDependents`` first removes what depends on it (one round each time, through
    the areas' dependents hooks), and converges off only once nothing is left.
    """
    from instantstart.clusters.registry import REGISTRY

    try:
        if getattr(req, "remove_dependents", None) and not req.enabled:
            left = REGISTRY.dependents(key, rt, tag, remove=True)
            if left:
                note = f"removing dependents: {', '.join(left)}"
                if note not in outcome.actions:
                    outcome.actions = [*outcome.actions, note]
                return
        done, actions = converge(rt, tag, key, req, obs)
    except FeatureFailure as exc:
        outcome.result, outcome.error = FeatureResult.FAILED, StageError(code=exc.code, message=exc.message)
        return
    except ClientError as exc:
        outcome.result = FeatureResult.FAILED
        outcome.error = StageError(code=error_code(exc) or "AwsError", message=error_message(exc))
        return
    outcome.actions = [*outcome.actions, *actions]
    if done:
        outcome.result = FeatureResult.CHANGED


def apply_features(rt: Runtime, p: StepPayload) -> StepResult:
    """Apply an UPDATE_FEATURES operation: observe, diff, one round of writes for each feature that differs.

    A feature AWS already matches is ``unchanged`` (no write). Records the request as the cluster's desired
    features and each feature's outcome on the operation. Idempotent: a redelivered task finds the writes made.
    """
    request, results = _request(rt, p)
    obs = observe(rt, p.cluster_tag, kubernetes=_reads_kubernetes(request))
    to_change, same = plan(request, obs)
    wanted = requested(request)
    for key in same:
        results.setdefault(key, FeatureOutcome(result=FeatureResult.UNCHANGED))
    for key in to_change:
        outcome = results.setdefault(key, FeatureOutcome(result=FeatureResult.PENDING))
        if outcome.result is FeatureResult.PENDING:
            _round(rt, p.cluster_tag, key, wanted[key], obs, outcome)
    now = records.now()
    rt.store.record_feature_results(p.operation_id, results, now)
    cluster = records.cluster_record(rt, p.cluster_tag)
    before = cluster.desired_features or UpdateFeaturesRequest()
    desired = before.model_copy(update={name: getattr(request, name) for name in _given(request)})
    for name in UpdateFeaturesRequest.model_fields:  # removeDependents: an instruction of this PATCH, not a state
        value = getattr(desired, name)
        if getattr(value, "remove_dependents", None) is not None:
            setattr(desired, name, value.model_copy(update={"remove_dependents": None}))
    rt.store.record_desired_features(p.cluster_tag, desired, now)
    return StepResult(status=_summary(results))


def _reads_kubernetes(request: UpdateFeaturesRequest) -> bool:
    """The request names a feature that creates Kubernetes objects of its own (the workflow reads them back)."""
    return any(key in KUBERNETES_KINDS for key in requested(request))


def _given(request: UpdateFeaturesRequest) -> list[str]:
    """The field names of the features present in ``request``."""
    return [name for name in UpdateFeaturesRequest.model_fields if getattr(request, name) is not None]


def _summary(results: dict[str, FeatureOutcome]) -> str:
    return ", ".join(f"{k} {v.result.value}" for k, v in sorted(results.items()))


def check_features(rt: Runtime, p: StepPayload) -> PollResult:
    """One round of the wait: re-observe and advance every pending feature; done when none is pending.

    Raises:
        StageFailed: ``FeatureFailed`` once every feature settled and some failed (each ``<feature>: <code>:
            <message>``); the per-feature outcomes stay on the operation.
    """
    request, results = _request(rt, p)
    pending = [k for k, v in results.items() if v.result is FeatureResult.PENDING]
    if pending:
        obs = observe(rt, p.cluster_tag, kubernetes=_reads_kubernetes(request))
        wanted = requested(request)
        for key in pending:
            _round(rt, p.cluster_tag, key, wanted[key], obs, results[key])
        rt.store.record_feature_results(p.operation_id, results, records.now())
    still = [k for k, v in results.items() if v.result is FeatureResult.PENDING]
    if still:
        return PollResult(done=False, status=f"waiting for {', '.join(sorted(still))}")
    failed = {k: v.error for k, v in results.items() if v.result is FeatureResult.FAILED}
    if failed:
        raise StageFailed(
            "FeatureFailed",
            "; ".join(f"{k}: {e.code}: {e.message}" if e else f"{k}: failed" for k, e in sorted(failed.items())),
        )
    return PollResult(done=True, status=_summary(results))


CHANGES = {OperationType.UPDATE_FEATURES: changes.ClusterChange(apply=apply_features, check=check_features)}
"""The update workflow's handler of feature changes."""
