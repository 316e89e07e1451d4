"""EKS bearer tokens: presigned STS GetCallerIdentity URLs naming the cluster, from one STS client per Region."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from instantstart.aws import eks_token


def _url(token: str) -> str:
    assert token.startswith(eks_token.TOKEN_PREFIX)
    body = token[len(eks_token.TOKEN_PREFIX) :]
    return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Credentials of this test and AWS's own endpoints; presigners built for another test's environment are
    dropped before and after."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_STS", raising=False)
    eks_token._presigner.cache_clear()
    yield
    eks_token._presigner.cache_clear()


def test_given_two_clusters_when_tokens_are_minted_then_each_url_signs_its_own_cluster_name() -> None:
    signed: list[str] = []

    def record(request: Any, **_: Any) -> None:
        signed.append(request.headers[eks_token.K8S_AWS_ID_HEADER])

    eks_token._presigner("us-west-2").meta.events.register("before-sign.sts.GetCallerIdentity", record)
    try:
        first = urlsplit(_url(eks_token.get_token("eks-cluster-a", "us-west-2")))
        second = urlsplit(_url(eks_token.get_token("eks-cluster-b", "us-west-2")))
    finally:
        eks_token._presigner("us-west-2").meta.events.unregister("before-sign.sts.GetCallerIdentity", record)
    assert signed == ["eks-cluster-a", "eks-cluster-b"], "each token signs its own name, none left from the last"
    for url in (first, second):
        query = parse_qs(url.query)
        assert url.netloc == "sts.us-west-2.amazonaws.com"
        assert query["Action"] == ["GetCallerIdentity"]
        assert query["X-Amz-Expires"] == [str(eks_token.PRESIGN_EXPIRES_SECONDS)]
        assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
        assert eks_token.K8S_AWS_ID_HEADER not in query, "the name is a signed header, not a parameter"
        assert "/us-west-2/sts/aws4_request" in query["X-Amz-Credential"][0]
    assert parse_qs(first.query)["X-Amz-Signature"] != parse_qs(second.query)["X-Amz-Signature"]


def test_given_many_tokens_when_minted_then_one_sts_client_per_region_signs_them() -> None:
    eks_token._presigner.cache_clear()
    for cluster in ("a", "b", "c"):
        eks_token.get_token(f"eks-cluster-{cluster}", "us-west-2")
    eks_token.get_token("eks-cluster-a", "eu-west-1")
    info = eks_token._presigner.cache_info()
    assert (info.misses, info.hits) == (2, 2)
    west = eks_token._presigner("us-west-2")
    assert west.meta.region_name == "us-west-2"
    assert eks_token._presigner("eu-west-1").meta.region_name == "eu-west-1"
