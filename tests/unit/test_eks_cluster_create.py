"""Creating the EKS cluster when a lagging ``DescribeCluster`` said NotFound: ``CreateCluster`` answers
``ResourceInUseException`` and the network stage takes the cluster an earlier attempt made, if it is ours."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from instantstart.clusters.stages.network import create_or_take_eks_cluster
from instantstart.errors import StageFailed
from instantstart.naming import eks_cluster_name, ownership_tags

pytestmark = pytest.mark.usefixtures("no_network")

ROLE = "arn:aws:iam::123456789012:role/eks-cluster"


def request(tag: str, tags: dict[str, str]) -> dict[str, Any]:
    return {
        "name": eks_cluster_name(tag),
        "version": "1.32",
        "roleArn": ROLE,
        "resourcesVpcConfig": {"subnetIds": ["subnet-1", "subnet-2"], "securityGroupIds": ["sg-1"]},
        "tags": tags,
    }


def test_given_our_cluster_exists_when_created_again_then_its_status_is_taken_and_nothing_new_is_made(aws: Any) -> None:
    eks = aws.client("eks")
    first = create_or_take_eks_cluster(eks, "demo", request("demo", ownership_tags("demo")))

    again = create_or_take_eks_cluster(eks, "demo", request("demo", ownership_tags("demo")))

    assert again == first == eks.describe_cluster(name="eks-cluster-demo")["cluster"]["status"]
    assert eks.list_clusters()["clusters"] == ["eks-cluster-demo"]


def test_given_a_cluster_of_that_name_that_is_not_ours_then_the_stage_fails_cluster_not_owned(aws: Any) -> None:
    eks = aws.client("eks")
    eks.create_cluster(**request("demo", {"team": "someone-else"}))

    with pytest.raises(StageFailed) as refused:
        create_or_take_eks_cluster(eks, "demo", request("demo", ownership_tags("demo")))

    assert "ClusterNotOwned" in str(refused.value) and "eks-cluster-demo" in str(refused.value)


def test_given_another_eks_error_then_it_is_raised_verbatim(aws: Any) -> None:
    from botocore.stub import Stubber

    eks = aws.client("eks")
    message = "The subnet ID 'subnet-1' does not exist"
    with Stubber(eks) as stub, pytest.raises(ClientError) as refused:
        stub.add_client_error("create_cluster", service_error_code="InvalidParameterException", service_message=message)
        create_or_take_eks_cluster(eks, "demo", request("demo", ownership_tags("demo")))

    assert refused.value.response["Error"] == {"Code": "InvalidParameterException", "Message": message}
