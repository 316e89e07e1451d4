"""EKS bearer tokens for the Kubernetes API (the aws-iam-authenticator scheme).

A token is ``k8s-aws-v1.`` + URL-safe base64 (no padding) of a presigned STS ``GetCallerIdentity``
URL whose signed headers include ``x-k8s-aws-id: <cluster name>``. EKS accepts it for about 15
minutes; tokens are minted per Kubernetes connection, by one STS client per process and Region. See
https://docs.aws.amazon.com/eks/latest/userguide/cluster-auth.html.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from typing import Any

from instantstart.aws.clients import new_client

K8S_AWS_ID_HEADER = "x-k8s-aws-id"
TOKEN_PREFIX = "k8s-aws-v1."
PRESIGN_EXPIRES_SECONDS = 60


@lru_cache(maxsize=16)
def _presigner(region: str) -> Any:
    """The process's STS client of ``region`` that signs ``x-k8s-aws-id`` into ``GetCallerIdentity`` URLs.

    Kept per process, as :func:`instantstart.aws.clients.client` keeps the others: building a client costs several
    milliseconds of CPU, and a warm Lambda mints a token on every Kubernetes connection. Presigning makes no call.
    """
    sts = new_client("sts", region)
    sts.meta.events.register("provide-client-params.sts.GetCallerIdentity", _retrieve_cluster_name)
    sts.meta.events.register("before-sign.sts.GetCallerIdentity", _inject_cluster_name_header)
    return sts


def _retrieve_cluster_name(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
    if K8S_AWS_ID_HEADER in params:
        context[K8S_AWS_ID_HEADER] = params.pop(K8S_AWS_ID_HEADER)


def _inject_cluster_name_header(request: Any, **_: Any) -> None:
    if K8S_AWS_ID_HEADER in request.context:
        request.headers[K8S_AWS_ID_HEADER] = request.context[K8S_AWS_ID_HEADER]


def get_token(cluster_name: str, region: str) -> str:
    """A bearer token for the Kubernetes API of EKS cluster ``cluster_name``.

    Calls nothing over the network: it presigns STS ``GetCallerIdentity``
    (https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html).
    """
    url = _presigner(region).generate_presigned_url(
        "get_caller_identity",
        Params={K8S_AWS_ID_HEADER: cluster_name},
        ExpiresIn=PRESIGN_EXPIRES_SECONDS,
        HttpMethod="GET",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
