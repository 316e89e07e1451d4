"""A cluster's EKS and HyperPod names: read once per generation, never carried over to the tag's next generation."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart.clusters import records
from instantstart.runtime import CLUSTER_NAMES_KEPT, Runtime


@pytest.fixture
def gets(demo: Runtime, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tags whose cluster record was read (DynamoDB ``GetItem``) through the store."""
    read: list[str] = []
    original = demo.store.get_cluster

    def get_cluster(tag: str) -> Any:
        read.append(tag)
        return original(tag)

    monkeypatch.setattr(demo.store, "get_cluster", get_cluster)
    return read


def _recreate_as_import(rt: Runtime, generation: int, eks: str, hyperpod: str) -> None:
    """The tag's record moves to ``generation`` with other names (a delete, then an import of other clusters)."""
    imported = {
        "eksClusterName": {"S": eks},
        "eksClusterArn": {"S": f"arn:aws:eks:us-west-2:123456789012:cluster/{eks}"},
        "kubernetesVersion": {"S": "1.32"},
        "authenticationMode": {"S": "API_AND_CONFIG_MAP"},
        "vpcId": {"S": "vpc-0123456789abcdef0"},
        "subnetIds": {"L": [{"S": "subnet-0123456789abcdef0"}]},
        "securityGroupId": {"S": "sg-0123456789abcdef0"},
        "hyperPodClusterName": {"S": hyperpod},
    }
    rt.client("dynamodb").update_item(
        TableName=rt.store.table_name,
        Key={"PK": {"S": "CLUSTER#demo"}, "SK": {"S": "META"}},
        UpdateExpression="SET generation = :g, imported = :i",
        ExpressionAttributeValues={":g": {"N": str(generation)}, ":i": {"M": imported}},
    )


def test_given_a_generation_when_its_names_are_asked_again_then_the_record_is_read_once(
    demo: Runtime, gets: list[str]
) -> None:
    first = (records.eks_name(demo, "demo", 1), records.hyperpod_name(demo, "demo", 1))
    again = (records.eks_name(demo, "demo", 1), records.hyperpod_name(demo, "demo", 1))

    assert first == again == ("eks-cluster-demo", "hp-cluster-demo")
    assert gets == ["demo"]


def test_given_the_tag_taken_by_a_new_generation_then_its_own_names_are_read_and_the_old_ones_kept(
    demo: Runtime, gets: list[str]
) -> None:
    assert records.eks_name(demo, "demo", 1) == "eks-cluster-demo"
    _recreate_as_import(demo, 2, "their-eks", "their-hyperpod")

    assert (records.eks_name(demo, "demo", 2), records.hyperpod_name(demo, "demo", 2)) == (
        "their-eks",
        "their-hyperpod",
    )
    assert records.eks_name(demo, "demo") == "their-eks", "without a generation: the record as it is now"
    assert records.eks_name(demo, "demo", 1) == "eks-cluster-demo", "a late step of generation 1 keeps its names"
    assert gets == ["demo", "demo", "demo"]


def test_given_a_step_of_a_generation_the_record_does_not_hold_then_its_names_are_not_kept(
    demo: Runtime, gets: list[str]
) -> None:
    assert records.eks_name(demo, "demo", 7) == "eks-cluster-demo"
    assert records.eks_name(demo, "demo", 7) == "eks-cluster-demo"

    assert gets == ["demo", "demo"] and (("demo", 7) not in demo.cluster_names)


def test_given_more_generations_than_kept_then_the_oldest_half_is_forgotten(demo: Runtime) -> None:
    for generation in range(CLUSTER_NAMES_KEPT + 1):
        demo.remember_cluster_names(f"t{generation}", 1, ("e", "h"))

    assert len(demo.cluster_names) == CLUSTER_NAMES_KEPT // 2 + 1
    assert ("t0", 1) not in demo.cluster_names and (f"t{CLUSTER_NAMES_KEPT}", 1) in demo.cluster_names
