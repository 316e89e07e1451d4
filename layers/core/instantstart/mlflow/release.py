"""SageMaker managed MLflow of a cluster, disconnect and cluster deletion: delete the server or app created for the
cluster (ownership tags; a connected pre-existing one is never touched), then the pod identity association, the
service account and the roles.

:mod:`instantstart.mlflow.service` re-exports these (the ``UPDATE_MLFLOW`` disconnect, the storage and add-ons
teardowns call them there).
"""

from __future__ import annotations

import contextlib
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import addons, records
from instantstart.errors import StageFailed
from instantstart.kube import objects
from instantstart.mlflow import identity
from instantstart.mlflow.resources import GOING, NOT_FOUND, arn_of, connection, describe, find_ours, is_owned, status_of
from instantstart.models.mlflow import DEFAULT_NAMESPACE, MlflowKind
from instantstart.naming import owned_by
from instantstart.runtime import Runtime


# -- disconnect and cluster deletion ------------------------------------------------------------
def _ours(rt: Runtime, tag: str) -> list[tuple[MlflowKind, dict[str, Any]]]:
    """Every server or app created for the cluster that still exists (the recorded one, then by name)."""
    out: list[tuple[MlflowKind, dict[str, Any]]] = []
    seen: set[str] = set()
    conn = connection(rt, tag)
    candidates: list[tuple[MlflowKind, dict[str, Any] | None]] = []
    if conn is not None and conn.created:
        candidates.append((conn.kind, describe(rt.client("sagemaker"), conn.kind, conn.arn)))
    candidates += [(kind, find_ours(rt, tag, kind)) for kind in MlflowKind]
    for kind, found in candidates:
        if found is None:
            continue
        arn = arn_of(kind, found)
        if arn in seen or not is_owned(rt, arn, tag):
            continue
        seen.add(arn)
        out.append((kind, found))
    return out


def _delete_ours(rt: Runtime, tag: str) -> str | None:
    """Ask SageMaker to delete ours that can be deleted now (not Creating, not already going); a short status."""
    sm = rt.client("sagemaker")
    asked = []
    for kind, found in _ours(rt, tag):
        status = status_of(kind, found)
        if status in GOING or status == "Creating":
            continue
        try:
            if kind is MlflowKind.TRACKING_SERVER:
                sm.delete_mlflow_tracking_server(TrackingServerName=found["TrackingServerName"])
            else:
                sm.delete_mlflow_app(Arn=found["Arn"])
        except ClientError as exc:
            if error_code(exc) != NOT_FOUND:
                raise
        asked.append(arn_of(kind, found))
    return f"deleting {', '.join(asked)}" if asked else None


def start_release(rt: Runtime, tag: str) -> None:
    """Cluster deletion, storage teardown: ask SageMaker to delete the server or app created for the cluster (a
    running server writes to the bucket), without waiting. Calls ``Delete*`` as :func:`release`."""
    _delete_ours(rt, tag)


def release(rt: Runtime, tag: str) -> list[str]:
    """Remove what the cluster's MLflow connection created; returns what is still going (empty: done).

    Ours (ownership tags) is deleted and waited for (a ``Creating`` one first settles); then the pod identity
    association of the service account (when it carries our tags), the service account (when labelled ours) and
    the pod and server roles. A connected server that existed before is never touched. Calls SageMaker
    ``Describe*``/``ListMlflowApps``/``ListTags``/``Delete*``, EKS ``ListPodIdentityAssociations``/
    ``DescribePodIdentityAssociation``/``DeletePodIdentityAssociation``, IAM role deletion.
    """
    _delete_ours(rt, tag)
    left = [f"{arn_of(kind, found)} ({status_of(kind, found)})" for kind, found in _ours(rt, tag)]
    if left:
        return left
    conn = connection(rt, tag)
    namespace = conn.namespace if conn is not None else None
    eks = rt.client("eks")
    eks_name = records.eks_name(rt, tag)
    try:
        kwargs: dict[str, Any] = {"clusterName": eks_name, "serviceAccount": identity.SERVICE_ACCOUNT}
        if namespace:
            kwargs["namespace"] = namespace
        for assoc in eks.list_pod_identity_associations(**kwargs)["associations"]:
            found = eks.describe_pod_identity_association(clusterName=eks_name, associationId=assoc["associationId"])
            if owned_by(found["association"].get("tags", {}), tag):
                eks.delete_pod_identity_association(clusterName=eks_name, associationId=assoc["associationId"])
                _delete_service_account(rt, eks_name, str(assoc.get("namespace") or namespace or DEFAULT_NAMESPACE))
    except ClientError as exc:
        if error_code(exc) not in ("ResourceNotFoundException",):
            raise
    iam = rt.client("iam")
    for name in (identity.pod_role_name(tag), identity.server_role_name(tag)):
        with contextlib.suppress(StageFailed):  # a role that is not ours is never deleted
            addons.delete_owned_role(iam, name, tag)
    return []


def teardown(rt: Runtime, tag: str) -> list[str]:
    """Cluster deletion (add-ons teardown, polled): :func:`release`; once nothing is left, the recorded connection is
    removed from the cluster record. Returns what is still going."""
    left = release(rt, tag)
    if not left and connection(rt, tag) is not None:
        rt.store.record_mlflow(tag, None, records.now())
    return left


def _delete_service_account(rt: Runtime, eks_name: str, namespace: str) -> None:
    """Delete our service account (labelled managed-by instantstart); an unreachable cluster is skipped."""
    try:
        from instantstart.kube.client import connect, delete, get

        dyn = connect(eks_name, rt.region)
        found = get(dyn, "v1", "ServiceAccount", identity.SERVICE_ACCOUNT, namespace)
        labels = ((found or {}).get("metadata") or {}).get("labels") or {}
        if found is not None and all(labels.get(k) == v for k, v in objects.MANAGED_LABELS.items()):
            delete(dyn, "v1", "ServiceAccount", identity.SERVICE_ACCOUNT, namespace)
    except (ClientError, ValueError):
        pass  # the EKS cluster is gone or has no endpoint: nothing to delete in Kubernetes
