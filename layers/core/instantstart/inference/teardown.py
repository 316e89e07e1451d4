"""What the managed inference endpoints leave in AWS, found again by their ownership tags and removed.

A managed endpoint (``POST /clusters/{tag}/inference/endpoints``) is an ``InferenceEndpointConfig`` or a
``JumpStartModel`` in namespace ``default``; the HyperPod inference operator makes its SageMaker Model,
EndpointConfig and Endpoint (each bills while it exists). Once the endpoint is InService its operation tags the three
with the cluster's ownership tags (:func:`tag_endpoint_resources`), so they are found again without Kubernetes:

* :func:`dependents` (the inference operator's dependents: ``PATCH features`` refuses to turn it off while any
  exists, or, with ``removeDependents``, removes them first): the custom resources, read through the API's view entry
  (``remove`` False) or deleted as cluster admin, with what SageMaker still holds of ours (``remove`` True);
* :func:`start_removal` (a cluster delete, before HyperPod goes: the operator still runs on the nodes): the custom
  resources are deleted, so the operator removes its SageMaker side through its finalizer;
* :func:`remove_sagemaker_resources` (every round of the dependencies teardown): whatever of the cluster's endpoints,
  endpoint configs and models SageMaker still has (the operator gone with the nodes, or stuck) is deleted directly
  (endpoint first; configs and models once no endpoint of the cluster remains). A resource named like one of the
  cluster's (``instantstart-<tag>-...``) without its ownership tags is kept and listed, with the reason, in the delete
  operation's ``retained``.

SageMaker ``ListEndpoints``/``ListEndpointConfigs`` (``NameContains``), ``ListModels``, ``ListTags``, ``AddTags``,
``DeleteEndpoint``/``DeleteEndpointConfig``/``DeleteModel``; Kubernetes list and delete.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import records
from instantstart.inference import endpoint_builders as eb
from instantstart.models.cluster_views import RetainedResource
from instantstart.models.inference import INFERENCE_NAMESPACE
from instantstart.naming import owned_by, ownership_tags, tag_list
from instantstart.runtime import Runtime

logger = logging.getLogger(__name__)

GONE = ("ValidationException", "ResourceNotFound")
"""SageMaker's answers for a resource that does not exist (``Could not find endpoint ...``)."""

NOT_OURS = "named like this cluster's endpoints but without its ownership tags: not created here, left in place"
"""The reason a cluster delete gives for a SageMaker resource it kept."""


def prefix(tag: str) -> str:
    """The name prefix of the cluster's SageMaker endpoints and endpoint configs: ``instantstart-<tag>-``."""
    return f"{eb.ENDPOINT_PREFIX}{tag}-"


def tag_endpoint_resources(rt: Runtime, tag: str, sagemaker: dict[str, Any]) -> list[str]:
    """Tag the endpoint, config and model the operator reported (``status.endpoints.sagemaker``: ``endpointArn``,
    ``configArn``, ``modelArn``) with the cluster's ownership tags (SageMaker ``AddTags``, idempotent); the ARNs
    tagged. An ARN SageMaker no longer knows is skipped."""
    sm = rt.client("sagemaker")
    done = []
    for key in ("endpointArn", "configArn", "modelArn"):
        arn = sagemaker.get(key)
        if not arn:
            continue
        try:
            sm.add_tags(ResourceArn=str(arn), Tags=tag_list(ownership_tags(tag)))
        except ClientError as exc:
            if error_code(exc) not in GONE:
                raise
            continue
        done.append(str(arn))
    return done


def _admin(rt: Runtime, tag: str) -> Any | None:
    """A cluster-admin Kubernetes client, or None when the EKS cluster cannot be reached (gone, never made)."""
    from instantstart.clusters.kube_reads import admin_or_none

    return admin_or_none(rt, tag, "the inference teardown")


def _objects(dyn: Any) -> list[tuple[str, str, dict[str, Any]]]:
    """``(kind, apiVersion, object)`` of every InferenceEndpointConfig and JumpStartModel in ``default``."""
    from instantstart.inference.endpoint_reads import _version_of
    from instantstart.kube import client as kube

    found = []
    for kind in eb.KINDS:
        version = _version_of(dyn, kind)
        if version is None:
            continue
        api_version = f"{eb.GROUP}/{version}"
        found += [(kind, api_version, o) for o in kube.list_objects(dyn, api_version, kind, INFERENCE_NAMESPACE)]
    return found


def _label(kind: str, obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{kind} {meta.get('namespace') or INFERENCE_NAMESPACE}/{meta.get('name')}"


def _delete_objects(dyn: Any) -> list[str]:
    """Delete every managed endpoint resource (the operator's finalizer removes its SageMaker side); those left."""
    from instantstart.kube import client as kube

    left = []
    for kind, api_version, obj in _objects(dyn):
        meta = obj.get("metadata") or {}
        if not meta.get("deletionTimestamp"):
            kube.delete(dyn, api_version, kind, str(meta.get("name")), INFERENCE_NAMESPACE)
        left.append(_label(kind, obj))
    return left


def dependents(rt: Runtime, tag: str, remove: bool) -> list[str]:
    """What depends on the inference operator of cluster ``tag``: its InferenceEndpointConfigs and JumpStartModels
    (``Kind default/name``) and, with ``remove``, the SageMaker endpoints of ours still there.

    ``remove`` False: a read through the API's access entry. ``remove`` True: one round of removal as cluster admin
    (each resource deleted; the SageMaker side of ours deleted once its resource is gone); what is still there.

    Raises:
        UpstreamUnavailable: (read) Kubernetes could not be read in time.
    """
    if not remove:
        from instantstart.clusters.kube_reads import read_kubernetes

        return [_label(kind, obj) for kind, _, obj in read_kubernetes(rt, tag, _objects)]
    dyn = _admin(rt, tag)
    left = _delete_objects(dyn) if dyn is not None else []
    if left:
        return left
    return remove_sagemaker_resources(rt, tag)


def start_removal(rt: Runtime, tag: str) -> list[str]:
    """A cluster delete's first teardown (before HyperPod goes): delete every managed endpoint resource, so the
    operator, still running on the nodes, removes its SageMaker side. Nothing to wait for (returns nothing);
    a Kubernetes API that cannot be reached is skipped (:func:`remove_sagemaker_resources` removes the rest)."""
    dyn = _admin(rt, tag)
    if dyn is None:
        return []
    try:
        _delete_objects(dyn)
    except Exception as exc:  # noqa: BLE001 - best effort: the SageMaker sweep is what the delete waits on
        logger.info("cluster %s: inference resources not deleted through Kubernetes (%s)", tag, exc)
    return []


def _pages(call: Any, key: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
    token: str | None = None
    while True:
        out = call(**kwargs, **({"NextToken": token} if token else {}))
        yield from out.get(key) or []
        token = out.get("NextToken")
        if not token:
            return


def _owned(sm: Any, arn: str, tag: str) -> bool | None:
    """Whether ``arn`` carries the cluster's ownership tags (None: it is gone)."""
    try:
        return owned_by(sm.list_tags(ResourceArn=arn).get("Tags", []), tag)
    except ClientError as exc:
        if error_code(exc) in GONE:
            return None
        raise


def _delete(call: Any, **kwargs: Any) -> None:
    try:
        call(**kwargs)
    except ClientError as exc:
        if error_code(exc) not in GONE:
            raise


def remove_sagemaker_resources(rt: Runtime, tag: str) -> list[str]:
    """One round of deleting the cluster's SageMaker endpoints, then (none left) their configs and models, found by
    the ownership tags; what is still there (``SageMaker endpoint <name>``...; empty: done). Resources named like the
    cluster's without its tags are kept and recorded on the running delete operation's ``retained``."""
    sm = rt.client("sagemaker")
    kept: list[RetainedResource] = []
    left: list[str] = []
    for ep in _pages(sm.list_endpoints, "Endpoints", NameContains=prefix(tag)):
        name = str(ep["EndpointName"])
        if not name.startswith(prefix(tag)):
            continue
        owned = _owned(sm, str(ep["EndpointArn"]), tag)
        if owned is None:
            continue
        if not owned:
            kept.append(RetainedResource(resource_type="SageMakerEndpoint", name=name, reason=NOT_OURS))
            continue
        left.append(f"SageMaker endpoint {name}")
        if ep.get("EndpointStatus") != "Deleting":
            _delete(sm.delete_endpoint, EndpointName=name)
    if not left:
        for config in _pages(sm.list_endpoint_configs, "EndpointConfigs", NameContains=prefix(tag)):
            name = str(config["EndpointConfigName"])
            owned = _owned(sm, str(config["EndpointConfigArn"]), tag)
            if owned:
                _delete(sm.delete_endpoint_config, EndpointConfigName=name)
            elif owned is False and name.startswith(prefix(tag)):
                kept.append(RetainedResource(resource_type="SageMakerEndpointConfig", name=name, reason=NOT_OURS))
        for model in _pages(sm.list_models, "Models"):
            if _owned(sm, str(model["ModelArn"]), tag):
                _delete(sm.delete_model, ModelName=str(model["ModelName"]))
    if kept:
        _record_kept(rt, tag, kept)
    return left


def _record_kept(rt: Runtime, tag: str, kept: list[RetainedResource]) -> None:
    """Add ``kept`` to the ``retained`` of the cluster's running operation (the delete), once each."""
    cluster = rt.store.get_cluster(tag)
    op = rt.store.get_operation(cluster.current_operation_id) if cluster and cluster.current_operation_id else None
    if op is None or op.status.terminal:
        return
    have = list(op.retained or [])
    seen = {(r.resource_type, r.name) for r in have}
    new = [r for r in kept if (r.resource_type, r.name) not in seen]
    if new:
        rt.store.record_retained(op.operation_id, [*have, *new], records.now())
