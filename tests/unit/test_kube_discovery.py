"""Whether a kind is served is read from the API server at the moment of asking, never from the discovery cache that
``instantstart.kube.client.connect`` keeps on disk: a CRD removed from a cluster (KEDA uninstalled) stops being
served for the next capability check, within one process and across connects that share the cache file."""

from __future__ import annotations

import base64
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from instantstart.inference import builders
from instantstart.kube import client as kube
from instantstart_sandbox.kube.server import KubeApiServer
from tests.keda import SCALED_OBJECT_CRD

CLUSTER = "eks-cluster-discovery"


class _Eks:
    """DescribeCluster of the one emulated cluster (the only EKS call ``connect`` makes)."""

    def __init__(self, server: KubeApiServer) -> None:
        self.server = server

    def describe_cluster(self, name: str) -> dict[str, Any]:
        ca = base64.b64encode(self.server.ca_pem.encode()).decode()
        endpoint = self.server.endpoint(name)
        return {"cluster": {"endpoint": endpoint, "certificateAuthority": {"data": ca}, "status": "ACTIVE"}}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Iterator[KubeApiServer]:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the discovery cache and CA files land here
    srv = KubeApiServer()
    srv.start()
    srv.add_cluster(CLUSTER)
    monkeypatch.setattr(kube, "client", lambda service, region: _Eks(srv))
    monkeypatch.setattr(kube, "get_token", lambda name, region: "k8s-aws-v1.test")
    try:
        yield srv
    finally:
        srv.stop()


def _keda(dyn: Any) -> bool:
    return kube.served(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND, timeout=5)


def test_given_keda_uninstalled_after_a_check_when_checking_again_then_scaled_object_is_not_served(
    server: KubeApiServer,
) -> None:
    # Given a warm function that saw ScaledObject served (and cached discovery on disk)
    dyn = kube.connect(CLUSTER, "us-west-2", timeout=5)
    absent_at_first = _keda(dyn)
    kube.apply(dyn, SCALED_OBJECT_CRD)
    installed = _keda(dyn)
    dyn.resources.get(api_version=builders.KEDA_API_VERSION, kind=builders.KEDA_KIND)  # now in the cached discovery

    # When KEDA's CRD is deleted and the next invocation connects again (same endpoint, same cache file)
    assert kube.delete(dyn, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "scaledobjects.keda.sh")
    same_client = _keda(dyn)
    next_invocation = _keda(kube.connect(CLUSTER, "us-west-2", timeout=5))

    # Then both checks answer what the cluster serves now
    assert (absent_at_first, installed, same_client, next_invocation) == (False, True, False, False)


def test_given_a_kind_removed_after_discovery_when_listing_it_then_it_reads_as_not_served(
    server: KubeApiServer,
) -> None:
    dyn = kube.connect(CLUSTER, "us-west-2", timeout=5)
    kube.apply(dyn, SCALED_OBJECT_CRD)
    assert kube.list_objects(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND) == []

    kube.delete(dyn, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "scaledobjects.keda.sh")

    with pytest.raises(ResourceNotFoundError, match="ScaledObject"):
        kube.list_objects(dyn, builders.KEDA_API_VERSION, builders.KEDA_KIND)


def test_core_group_kinds_are_read_from_api_v1(server: KubeApiServer) -> None:
    dyn = kube.connect(CLUSTER, "us-west-2", timeout=5)

    assert kube.served(dyn, "v1", "ConfigMap") and not kube.served(dyn, "v1", "ScaledObject")
