"""SageMaker managed MLflow of a cluster: ``GET``/``PUT /clusters/{clusterTag}/mlflow``, the ``UPDATE_MLFLOW`` change.

Connecting (an ``UPDATE_MLFLOW`` operation in the update workflow, :mod:`instantstart.clusters.changes`):

1. the API side checks the request before anything changes: an ARN of this account and Region (422 naming
   ``trackingServerArn``/``mlflowAppArn``), that exists (404 naming it) and is not failed or deleting (409 naming
   it); ``create`` is refused when a server or app named ``instantstart-<tag>`` exists that is not ours (409);
2. ``apply``: for ``create``, the server role (:mod:`instantstart.mlflow.identity`) and ``CreateMlflowTrackingServer``
   / ``CreateMlflowApp`` (artifact store ``s3://<cluster bucket>/mlflow/``, ownership tags) unless ours exists;
3. ``check`` (event-or-poll): done once the server or app is ``Created`` (``CreateFailed`` fails the operation
   verbatim) and the pod identity is in place: the pod role, the pod identity association of the training
   namespace's ``instantstart-mlflow`` service account, and that service account in Kubernetes;
4. ``finish``: the connection is recorded on the cluster record (``mlflow``), which :func:`connection` reads.

Disconnecting (``{"enabled": false}``) removes what the connection created: a server or app only when it was created
here (carrying this cluster's ownership tags; a connected pre-existing one is never deleted), then the association,
the service account and the roles. Deleting the cluster does the same (:func:`start_release` from the storage
teardown, before the bucket is looked at; :func:`release` from the add-ons teardown until it is gone).

Run naming convention (for ``GET .../training-jobs/{name}/runs`` and the training recipes): the MLflow experiment is
the cluster tag; every run of a training job carries the run tag ``instantstart.job=<job name>``
(:data:`EXPERIMENT_ENV`, :data:`JOB_RUN_TAG`).

The reads shared with the steps and the release are in :mod:`.resources`, the disconnect and cluster deletion in
:mod:`.release` (both re-exported).

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateMlflowTrackingServer.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeMlflowApp.html
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import addons, changes, records, service
from instantstart.errors import Conflict, NotFound, StageFailed, ValidationFailed
from instantstart.kube import objects
from instantstart.mlflow import identity
from instantstart.mlflow.release import _delete_ours
from instantstart.mlflow.release import (  # re-exported
    release as release,
)
from instantstart.mlflow.release import (
    start_release as start_release,
)
from instantstart.mlflow.release import (
    teardown as teardown,
)
from instantstart.mlflow.resources import (  # re-exported
    EXPERIMENT_ENV as EXPERIMENT_ENV,
)
from instantstart.mlflow.resources import (
    FAILED as FAILED,
)
from instantstart.mlflow.resources import (
    GOING as GOING,
)
from instantstart.mlflow.resources import (
    JOB_NAME_ENV as JOB_NAME_ENV,
)
from instantstart.mlflow.resources import (
    JOB_RUN_TAG as JOB_RUN_TAG,
)
from instantstart.mlflow.resources import (
    NOT_FOUND as NOT_FOUND,
)
from instantstart.mlflow.resources import (
    SETTLED as SETTLED,
)
from instantstart.mlflow.resources import (
    arn_kind as arn_kind,
)
from instantstart.mlflow.resources import (
    arn_of as arn_of,
)
from instantstart.mlflow.resources import (
    connection as connection,
)
from instantstart.mlflow.resources import (
    describe as describe,
)
from instantstart.mlflow.resources import (
    find_ours as find_ours,
)
from instantstart.mlflow.resources import (
    is_owned as is_owned,
)
from instantstart.mlflow.resources import (
    job_environment as job_environment,
)
from instantstart.mlflow.resources import (
    status_of as status_of,
)
from instantstart.models.common import ClusterStatus, OperationType
from instantstart.models.mlflow import (
    DEFAULT_NAMESPACE,
    MlflowChange,
    MlflowConnection,
    MlflowKind,
    MlflowView,
    UpdateMlflowRequest,
)
from instantstart.models.operation import OperationView
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import ownership_tags, storage_bucket_name, tag_list
from instantstart.runtime import Runtime

_CHANGEABLE = (ClusterStatus.READY, ClusterStatus.DEGRADED)


# -- API side -----------------------------------------------------------------------------------
def get_mlflow(rt: Runtime, tag: str) -> MlflowView:
    """The cluster's MLflow connection with the server's or app's status read from SageMaker now (``NotFound`` when
    it is gone). Calls ``DescribeMlflowTrackingServer`` / ``DescribeMlflowApp``.

    Raises:
        NotFound: no live cluster with this tag.
    """
    records.live_cluster(rt, tag)
    conn = connection(rt, tag)
    if conn is None:
        return MlflowView(cluster_tag=tag, connected=False)
    found = describe(rt.client("sagemaker"), conn.kind, conn.arn)
    return MlflowView(
        cluster_tag=tag,
        connected=True,
        kind=conn.kind,
        arn=conn.arn,
        name=conn.name,
        created=conn.created,
        status=status_of(conn.kind, found) if found is not None else "NotFound",
        tracking_server_url=(found or {}).get("TrackingServerUrl"),
        mlflow_version=(found or {}).get("MlflowVersion"),
        artifact_store_uri=(found or {}).get("ArtifactStoreUri") or conn.artifact_store_uri,
        namespace=conn.namespace,
        service_account_name=conn.service_account_name,
        pod_role_arn=conn.pod_role_arn,
        environment=conn.environment,
        operation_id=conn.operation_id,
        connected_at=conn.connected_at,
    )


def check_arn_scope(rt: Runtime, field: str, arn: str) -> None:
    """An MLflow ARN must be of this control plane's account and Region (pods log through this Region's endpoint).

    Raises:
        ValidationFailed: ``MlflowResourceInAnotherRegion`` / ``MlflowResourceInAnotherAccount`` naming ``field``.
    """
    parts = arn.split(":")
    region, account = parts[3], parts[4]
    if region != rt.region:
        raise ValidationFailed(
            f"{field} is in Region {region}; the cluster's MLflow must be in {rt.region}",
            code="MlflowResourceInAnotherRegion",
            details=[{"field": field, "message": f"an ARN in {rt.region}"}],
        )
    if account != rt.account_id:
        raise ValidationFailed(
            f"{field} belongs to account {account}; the cluster's MLflow must be in account {rt.account_id}",
            code="MlflowResourceInAnotherAccount",
            details=[{"field": field, "message": f"an ARN of account {rt.account_id}"}],
        )


def check_connectable(kind: MlflowKind, field: str, arn: str, found: dict[str, Any] | None) -> None:
    """An existing server or app can be connected unless it is missing, failed or being deleted.

    Raises:
        NotFound: ``MlflowResourceNotFound`` naming ``field``.
        Conflict: ``MlflowResourceFailed`` / ``MlflowResourceDeleting`` naming ``field`` and its status.
    """
    if found is None:
        raise NotFound(f"{field} {arn} does not exist", code="MlflowResourceNotFound", details=[{"field": field}])
    status = status_of(kind, found)
    if status in FAILED:
        raise Conflict(
            f"{field} {arn} is {status}; connect a tracking server or app that is not failed",
            code="MlflowResourceFailed",
            details=[{"field": field, "status": status}],
        )
    if status in GOING:
        raise Conflict(
            f"{field} {arn} is {status}", code="MlflowResourceDeleting", details=[{"field": field, "status": status}]
        )


def _leftovers(rt: Runtime, tag: str) -> bool:
    """Whether anything a connection of this cluster creates exists without a recorded connection (a failed op)."""
    iam = rt.client("iam")
    for name in (identity.pod_role_name(tag), identity.server_role_name(tag)):
        try:
            iam.get_role(RoleName=name)
            return True
        except ClientError as exc:
            if error_code(exc) != "NoSuchEntity":
                raise
    return any(
        found is not None and is_owned(rt, arn_of(kind, found), tag)
        for kind in MlflowKind
        for found in [find_ours(rt, tag, kind)]
    )


def update_mlflow(rt: Runtime, tag: str, request: UpdateMlflowRequest) -> MlflowView | OperationView:
    """Connect, create or disconnect: an ``UPDATE_MLFLOW`` operation, or the current view (200, nothing written)
    when the request is already so (the same ARN connected, a created one of that kind, or not connected).

    Calls SageMaker ``DescribeMlflowTrackingServer`` / ``DescribeMlflowApp`` / ``ListMlflowApps`` / ``ListTags`` and
    IAM ``GetRole`` (reads), then Step Functions ``StartExecution``.

    Raises:
        NotFound: no live cluster; the ARN does not exist (``MlflowResourceNotFound`` naming the field).
        Conflict: an operation runs, the cluster is not READY/DEGRADED (``ClusterNotReady``), another connection
            exists (``MlflowAlreadyConnected``), the resource failed or is deleting, or one named
            ``instantstart-<tag>`` exists that is not ours (``MlflowNameTaken`` naming ``create``).
        ValidationFailed: the ARN is in another Region or account (naming the field).
    """
    cluster = records.live_cluster(rt, tag)
    service.refuse_while_running(rt, cluster)
    if cluster.status not in _CHANGEABLE:
        raise Conflict(
            f"cluster '{tag}' is {cluster.status.value}; MLflow can change only on a READY or DEGRADED cluster",
            code="ClusterNotReady",
            details=[{"field": "clusterTag", "status": cluster.status.value}],
        )
    conn = connection(rt, tag)
    if not request.enabled:
        if conn is None and not _leftovers(rt, tag):
            return MlflowView(cluster_tag=tag, connected=False)
        return changes.start_change(rt, cluster, OperationType.UPDATE_MLFLOW, MlflowChange(enabled=False))
    namespace = request.namespace or DEFAULT_NAMESPACE
    if request.create is not None:
        kind = request.create.kind
        if conn is not None:
            if conn.created and conn.kind is kind and conn.namespace == namespace:
                return get_mlflow(rt, tag)
            raise _already_connected(conn, "create")
        found = find_ours(rt, tag, kind)
        if found is not None and not is_owned(rt, arn_of(kind, found), tag):
            raise Conflict(
                f"a {kind.value} named {identity.resource_name(tag)} exists and is not managed by InstantStart for "
                f"'{tag}'; connect it by ARN instead",
                code="MlflowNameTaken",
                details=[{"field": "create", "arn": arn_of(kind, found)}],
            )
        change = MlflowChange(enabled=True, kind=kind, create=request.create, namespace=namespace)
        return changes.start_change(rt, cluster, OperationType.UPDATE_MLFLOW, change)
    field = "trackingServerArn" if request.tracking_server_arn else "mlflowAppArn"
    arn = str(request.tracking_server_arn or request.mlflow_app_arn)
    kind = MlflowKind.TRACKING_SERVER if request.tracking_server_arn else MlflowKind.APP
    check_arn_scope(rt, field, arn)
    if conn is not None:
        if conn.arn == arn and conn.namespace == namespace:
            return get_mlflow(rt, tag)
        raise _already_connected(conn, field)
    check_connectable(kind, field, arn, describe(rt.client("sagemaker"), kind, arn))
    change = MlflowChange(enabled=True, kind=kind, arn=arn, namespace=namespace)
    return changes.start_change(rt, cluster, OperationType.UPDATE_MLFLOW, change)


def _already_connected(conn: MlflowConnection, field: str) -> Conflict:
    return Conflict(
        f"the cluster is connected to {conn.arn} (namespace {conn.namespace}); disconnect it first "
        '(PUT {"enabled": false})',
        code="MlflowAlreadyConnected",
        details=[{"field": field, "arn": conn.arn}],
    )


# -- workflow steps -----------------------------------------------------------------------------
def _change(rt: Runtime, p: StepPayload) -> MlflowChange:
    return changes.operation_change(rt, p, MlflowChange)[1]


def artifact_store_uri(rt: Runtime, tag: str) -> str:
    """The artifact store of a server or app created for the cluster: ``s3://<cluster bucket>/mlflow/``."""
    return f"s3://{storage_bucket_name(tag, rt.account_id, rt.region)}/{identity.ARTIFACT_PREFIX}"


def _create(rt: Runtime, tag: str, change: MlflowChange) -> str:
    """Ensure the server role, then create the server or app unless ours exists; returns a short status."""
    assert change.kind is not None and change.create is not None
    found = find_ours(rt, tag, change.kind)
    if found is not None:
        if not is_owned(rt, arn_of(change.kind, found), tag):
            raise StageFailed("MlflowNameTaken", f"{identity.resource_name(tag)} exists and is not ours")
        return f"{change.kind.value} {identity.resource_name(tag)} exists"
    uri = artifact_store_uri(rt, tag)
    role_arn = identity.ensure_owned_role(
        rt.client("iam"),
        name=identity.server_role_name(tag),
        tag=tag,
        path=rt.settings.STORAGE_ROLE_PATH,
        trust=identity.server_trust(rt.account_id),
        policy_name=identity.SERVER_POLICY,
        policy=identity.server_policy(uri),
        description=f"SageMaker managed MLflow of InstantStart cluster {tag}: its artifact store",
        boundary=rt.settings.STORAGE_PERMISSIONS_BOUNDARY_ARN or None,
    )
    sm = rt.client("sagemaker")
    tags = tag_list(ownership_tags(tag))
    if change.kind is MlflowKind.TRACKING_SERVER:
        kwargs: dict[str, Any] = {
            "TrackingServerName": identity.resource_name(tag),
            "ArtifactStoreUri": uri,
            "RoleArn": role_arn,
            "TrackingServerSize": (change.create.size.value if change.create.size else "Small"),
            "Tags": tags,
        }
        if change.create.mlflow_version:
            kwargs["MlflowVersion"] = change.create.mlflow_version
        sm.create_mlflow_tracking_server(**kwargs)
        return "CreateMlflowTrackingServer"
    sm.create_mlflow_app(Name=identity.resource_name(tag), ArtifactStoreUri=uri, RoleArn=role_arn, Tags=tags)
    return "CreateMlflowApp"


def _target(rt: Runtime, p: StepPayload, change: MlflowChange) -> tuple[MlflowKind, dict[str, Any] | None]:
    assert change.kind is not None
    if change.create is not None:
        return change.kind, find_ours(rt, p.cluster_tag, change.kind)
    return change.kind, describe(rt.client("sagemaker"), change.kind, str(change.arn))


def apply_mlflow_change(rt: Runtime, p: StepPayload) -> StepResult:
    """Make the change once. Connect: nothing yet (the identity follows once the resource is settled); create: the
    server role and ``CreateMlflowTrackingServer``/``CreateMlflowApp`` (idempotent: ours found, nothing called);
    disconnect: ``DeleteMlflowTrackingServer``/``DeleteMlflowApp`` of ours when it can be deleted now.

    Raises:
        StageFailed: ``MlflowNameTaken``, ``RoleNotOwned``; AWS errors leave named by their code.
    """
    change = _change(rt, p)
    if not change.enabled:
        return StepResult(status=_delete_ours(rt, p.cluster_tag) or "nothing of ours to delete yet")
    if change.create is not None:
        return StepResult(status=_create(rt, p.cluster_tag, change))
    return StepResult(status=f"connecting {change.arn}")


def _ensure_identity(rt: Runtime, tag: str, kind: MlflowKind, found: dict[str, Any], namespace: str) -> str:
    """The pod role (policy on this resource), the association and the service account; returns the role ARN."""
    eks_name = records.eks_name(rt, tag)
    role_arn = identity.ensure_owned_role(
        rt.client("iam"),
        name=identity.pod_role_name(tag),
        tag=tag,
        path=rt.settings.STORAGE_ROLE_PATH,
        trust=addons.pod_identity_trust(
            rt.account_id, cluster_name=eks_name, namespace=namespace, service_account=identity.SERVICE_ACCOUNT
        ),
        policy_name=identity.POD_POLICY,
        policy=identity.pod_policy(arn_of(kind, found), found.get("ArtifactStoreUri")),
        description=f"Training pods of InstantStart cluster {tag} logging to SageMaker managed MLflow",
        boundary=rt.settings.STORAGE_PERMISSIONS_BOUNDARY_ARN or None,
    )
    addons.ensure_pod_identity_association(
        rt.client("eks"), eks_name, namespace, identity.SERVICE_ACCOUNT, role_arn, ownership_tags(tag)
    )
    from instantstart.kube.client import apply, connect

    dyn = connect(eks_name, rt.region)
    if namespace != DEFAULT_NAMESPACE:
        apply(dyn, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    apply(
        dyn,
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {
                "name": identity.SERVICE_ACCOUNT,
                "namespace": namespace,
                "labels": dict(objects.MANAGED_LABELS),
            },
        },
    )
    return role_arn


def check_mlflow_change(rt: Runtime, p: StepPayload) -> PollResult:
    """One round of the wait. Connect/create: done once the server or app is settled (``Created``...) and the pod
    identity is in place; disconnect: done once ours is gone and the identity removed.

    Raises:
        StageFailed: ``MlflowCreateFailed`` / ``MlflowResourceFailed`` with SageMaker's status;
            ``MlflowResourceNotFound`` when the connected resource disappeared.
    """
    change = _change(rt, p)
    if not change.enabled:
        left = release(rt, p.cluster_tag)
        return PollResult(done=not left, status=f"deleting {', '.join(left)}" if left else "disconnected")
    kind, found = _target(rt, p, change)
    if found is None:
        if change.create is not None:
            raise StageFailed("MlflowResourceNotFound", f"{identity.resource_name(p.cluster_tag)} is gone")
        raise StageFailed("MlflowResourceNotFound", f"{change.arn} does not exist")
    status = status_of(kind, found)
    if status in FAILED or status in GOING:
        code = "MlflowCreateFailed" if status == "CreateFailed" else "MlflowResourceFailed"
        raise StageFailed(code, f"{arn_of(kind, found)} is {status}")
    if status not in SETTLED and status not in ("Stopped", "Stopping", "Starting", "Updating", "MaintenanceInProgress"):
        return PollResult(done=False, status=f"{kind.value} {status}")
    _ensure_identity(rt, p.cluster_tag, kind, found, change.namespace)
    return PollResult(done=True, status=f"{kind.value} {status}; pod identity in place")


def finish_mlflow_change(rt: Runtime, p: StepPayload) -> None:
    """Record the connection on the cluster record (connect/create), or remove it (disconnect)."""
    change = _change(rt, p)
    if not change.enabled:
        rt.store.record_mlflow(p.cluster_tag, None, records.now())
        return
    kind, found = _target(rt, p, change)
    if found is None:
        raise StageFailed("MlflowResourceNotFound", f"{change.arn or identity.resource_name(p.cluster_tag)} is gone")
    role = rt.client("iam").get_role(RoleName=identity.pod_role_name(p.cluster_tag))["Role"]["Arn"]
    conn = MlflowConnection(
        kind=kind,
        arn=arn_of(kind, found),
        name=str(found.get("TrackingServerName") or found.get("Name") or ""),
        created=change.create is not None,
        artifact_store_uri=found.get("ArtifactStoreUri"),
        namespace=change.namespace,
        service_account_name=identity.SERVICE_ACCOUNT,
        pod_role_arn=str(role),
        operation_id=p.operation_id,
        connected_at=records.now(),
    )
    rt.store.record_mlflow(p.cluster_tag, conn, records.now())


CHANGES = {
    OperationType.UPDATE_MLFLOW: changes.ClusterChange(
        apply=apply_mlflow_change, check=check_mlflow_change, finish=finish_mlflow_change
    )
}
"""The update workflow's handler of MLflow changes."""
