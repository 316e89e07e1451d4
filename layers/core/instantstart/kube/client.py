"""Kubernetes API access for an EKS cluster: client from DescribeCluster + EKS bearer token.

Objects are applied with server-side apply (field manager ``instantstart``) through the official
client's ``DynamicClient``. The ``kubernetes`` package is imported here only, so functions that do
not talk to Kubernetes keep short cold starts.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
import tempfile
from typing import TYPE_CHECKING, Any, cast

from instantstart.aws.clients import client
from instantstart.aws.eks_token import get_token

if TYPE_CHECKING:
    from kubernetes.dynamic import DynamicClient

FIELD_MANAGER = "instantstart"


def _ca_file(ca_data_b64: str) -> str:
    """Path of a file holding the cluster CA (content-addressed, so safe to share across invocations)."""
    pem = base64.b64decode(ca_data_b64)
    digest = hashlib.sha256(pem).hexdigest()[:24]
    path = os.path.join(tempfile.gettempdir(), f"instantstart-ca-{digest}.pem")
    if not os.path.exists(path):
        # A temporary file of its own for each writer (two threads of one process may write the same CA at once:
        # a name made of the process id alone was renamed away under the second one), then one atomic rename.
        fd, tmp = tempfile.mkstemp(prefix=f"instantstart-ca-{digest}.", suffix=".tmp", dir=os.path.dirname(path))
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(pem)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
    return path


def connect(cluster_name: str, region: str, *, timeout: float | None = None) -> DynamicClient:
    """A ``DynamicClient`` for the Kubernetes API of EKS cluster ``cluster_name``.

    Reads ``endpoint`` and ``certificateAuthority.data`` from EKS ``DescribeCluster``
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_DescribeCluster.html) and authenticates
    with a fresh EKS bearer token. TLS is verified against the cluster CA. ``timeout``: seconds each request
    (API discovery included) may take (None: no limit).

    Raises:
        botocore.exceptions.ClientError: DescribeCluster failed (e.g. ResourceNotFoundException).
        ValueError: the cluster has no endpoint yet (not ACTIVE).
    """
    from kubernetes import client as k8s
    from kubernetes.dynamic import DynamicClient

    cluster = client("eks", region).describe_cluster(name=cluster_name)["cluster"]
    endpoint = cluster.get("endpoint")
    ca = cluster.get("certificateAuthority", {}).get("data")
    if not endpoint or not ca:
        raise ValueError(f"EKS cluster {cluster_name} has no endpoint yet (status {cluster.get('status')})")
    config = k8s.Configuration()
    config.host = endpoint
    config.ssl_ca_cert = _ca_file(ca)
    config.verify_ssl = True
    config.api_key = {"authorization": "Bearer " + get_token(cluster_name, region)}
    if timeout is not None:
        config.retries = 0
    api = k8s.ApiClient(config)
    if timeout is not None:  # discovery requests pass no timeout of their own: bound the pool's sockets
        api.rest_client.pool_manager.connection_pool_kw["timeout"] = timeout
    digest = hashlib.sha256(endpoint.encode()).hexdigest()[:16]
    cache = os.path.join(tempfile.gettempdir(), f"instantstart-discovery-{digest}.json")
    dynamic: Any = DynamicClient
    return cast("DynamicClient", dynamic(api, cache_file=cache))


def apply(dyn: DynamicClient, obj: dict[str, Any]) -> dict[str, Any]:
    """Server-side apply ``obj`` (field manager ``instantstart``, conflicts forced); returns the live object.

    Calls ``PATCH`` with ``application/apply-patch+yaml`` on the object's resource path.
    """
    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    client: Any = dyn
    result = client.server_side_apply(
        resource,
        body=obj,
        namespace=obj["metadata"].get("namespace"),
        field_manager=FIELD_MANAGER,
        force_conflicts=True,
    )
    return dict(result.to_dict())


def dry_run(dyn: Any, obj: dict[str, Any]) -> None:
    """Server-side apply ``obj`` with ``dryRun=All``: the API server validates it against its schema (the CRD's
    openAPIV3Schema for a custom resource) and stores nothing. Calls ``PATCH`` (apply-patch) with ``dryRun=All``.

    Raises:
        kubernetes.dynamic.exceptions.DynamicApiError: the API server refused ``obj`` (e.g. 422 naming the field).
    """
    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    dyn.server_side_apply(
        resource,
        body=obj,
        namespace=obj["metadata"].get("namespace"),
        field_manager=FIELD_MANAGER,
        force_conflicts=True,
        dry_run="All",
    )


def get(
    dyn: DynamicClient, api_version: str, kind: str, name: str, namespace: str | None = None
) -> dict[str, Any] | None:
    """One object as a dict, or None when the API answers 404."""
    from kubernetes.dynamic.exceptions import NotFoundError

    resource = dyn.resources.get(api_version=api_version, kind=kind)
    try:
        return dict(resource.get(name=name, namespace=namespace).to_dict())
    except NotFoundError:
        return None


def served(dyn: DynamicClient, api_version: str, kind: str, timeout: float | None = None) -> bool:
    """Whether the API server serves ``kind`` in ``api_version`` (e.g. ``keda.sh/v1alpha1``, ``ScaledObject``) now.

    Reads API discovery for that group version afresh (``GET /apis/{group}/{version}``, or ``/api/v1`` for the
    core group; every authenticated user may read it:
    https://kubernetes.io/docs/reference/using-api/api-concepts/#discovery-apis), not the client's discovery cache:
    a cached "served" outlives an uninstalled CRD within a warm function, and a capability check must not answer
    from it. ``timeout``: seconds the request may take (None: no limit).

    Raises:
        kubernetes.client.exceptions.ApiException: discovery failed other than with 404 (401, 403, 5xx).
    """
    from kubernetes.dynamic.exceptions import NotFoundError

    group, _, version = api_version.rpartition("/")
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    kwargs: dict[str, Any] = {} if timeout is None else {"_request_timeout": timeout}
    try:
        listing = dyn.request("GET", path, **kwargs)
    except NotFoundError:
        return False
    return any(
        r.get("kind") == kind and "/" not in str(r.get("name")) for r in listing.to_dict().get("resources") or []
    )


def list_objects(
    dyn: DynamicClient,
    api_version: str,
    kind: str,
    namespace: str | None = None,
    label_selector: str | None = None,
    timeout: float | None = None,
) -> list[dict[str, Any]]:
    """Every object of a kind (optionally in one namespace, filtered by a label selector; ``timeout`` seconds).

    Raises:
        kubernetes.dynamic.exceptions.ResourceNotFoundError: the kind is not served (not in API discovery, or its
            collection answers 404 because it stopped being served since discovery was cached).
    """
    from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

    resource = dyn.resources.get(api_version=api_version, kind=kind)
    kwargs: dict[str, Any] = {}
    if timeout is not None:
        kwargs["_request_timeout"] = timeout
    if namespace:
        kwargs["namespace"] = namespace
    if label_selector:
        kwargs["label_selector"] = label_selector
    try:
        listed = resource.get(**kwargs)
    except NotFoundError as exc:  # a collection answers 404 only when its kind is not served
        raise ResourceNotFoundError(f"{kind} ({api_version}) is not served") from exc
    return [dict(item) for item in listed.to_dict().get("items", [])]


def delete(
    dyn: DynamicClient,
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None = None,
    *,
    propagation_policy: str | None = None,
) -> bool:
    """Delete one object; True if it existed. ``propagation_policy``: DeleteOptions ``propagationPolicy``
    (``Foreground``: the object stays, with a deletionTimestamp, until the objects it owns are gone; default the
    resource's own, usually ``Background``)."""
    from kubernetes.dynamic.exceptions import NotFoundError

    resource = dyn.resources.get(api_version=api_version, kind=kind)
    body = {"propagationPolicy": propagation_policy} if propagation_policy else None
    try:
        resource.delete(name=name, namespace=namespace, body=body)
    except NotFoundError:
        return False
    return True


def service_proxy_post(
    dyn: DynamicClient,
    namespace: str,
    service: str,
    port: int,
    path: str,
    body: dict[str, Any],
    *,
    max_bytes: int,
    timeout: float,
) -> tuple[int, str | None, bytes]:
    """POST ``body`` (sent as JSON) to ``path`` of Service ``service`` on ``port`` through the service proxy
    (``POST /api/v1/namespaces/{namespace}/services/{service}:{port}/proxy/{path}``, the ``services/proxy``
    subresource: https://kubernetes.io/docs/tasks/access-application-cluster/access-cluster-services/).

    Returns ``(HTTP status, Content-Type, at most max_bytes + 1 bytes of the answer)``: the pod's answer, or the API
    server's own ``Status`` (403 without RBAC for ``services/proxy``, 503 ``no endpoints available``). ``path`` and
    the names are URL-quoted (never a template string). ``timeout``: seconds for the whole call.

    Raises:
        urllib3.exceptions.HTTPError: no connection or no answer in time.
    """
    from urllib.parse import quote

    api: Any = dyn.client
    method, url, headers, payload, post = api.param_serialize(
        "POST",
        "/api/v1/namespaces/{namespace}/services/{name}/proxy/" + quote(path.lstrip("/"), safe="/"),
        path_params={"namespace": namespace, "name": f"{service}:{port}"},
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, headers, payload, post, _request_timeout=timeout).response
    try:
        return int(response.status), response.headers.get("Content-Type"), response.read(max_bytes + 1)
    finally:
        response.release_conn()
