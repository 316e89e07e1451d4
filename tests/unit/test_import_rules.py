"""The import rules of ``instantstart.clusters.importing``: refusals and the stage plan."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart.clusters import importing
from instantstart.errors import Conflict, ValidationFailed
from instantstart.models.cluster import HYPERPOD_KUBERNETES_VERSIONS, KUBERNETES_VERSION_PATTERN, ImportClusterRequest
from instantstart.models.common import StageName, StageStatus

ARN = "arn:aws:eks:us-west-2:123456789012:cluster/platform"


def _eks(**over: Any) -> dict[str, Any]:
    return {
        "name": "platform",
        "arn": ARN,
        "status": "ACTIVE",
        "version": "1.32",
        "accessConfig": {"authenticationMode": "API_AND_CONFIG_MAP"},
        "resourcesVpcConfig": {"vpcId": "vpc-1", "subnetIds": ["subnet-a", "subnet-b"], "securityGroupIds": ["sg-1"]},
        "tags": {"owner": "platform-team"},
    } | over


def test_config_map_only_and_a_cluster_without_access_config_are_refused_naming_the_field() -> None:
    for found in (_eks(accessConfig={"authenticationMode": "CONFIG_MAP"}), _eks(accessConfig=None)):
        with pytest.raises(ValidationFailed) as refused:
            importing.check_authentication_mode(found)
        assert refused.value.code == "UnsupportedAuthenticationMode"
        assert refused.value.details[0]["field"] == "eksClusterName"
        assert refused.value.details[0]["got"] == "CONFIG_MAP"
    assert importing.check_authentication_mode(_eks(accessConfig={"authenticationMode": "API"})) == "API"


def test_kubernetes_versions_come_from_the_one_list() -> None:
    import re

    for version in HYPERPOD_KUBERNETES_VERSIONS:
        assert importing.check_kubernetes_version(_eks(version=version)) == version
        assert re.fullmatch(KUBERNETES_VERSION_PATTERN, version)
    for version in ("1.27", "1.34"):
        assert not re.fullmatch(KUBERNETES_VERSION_PATTERN, version)
        with pytest.raises(ValidationFailed) as refused:
            importing.check_kubernetes_version(_eks(version=version))
        assert refused.value.details[0]["allowedValues"] == list(HYPERPOD_KUBERNETES_VERSIONS)


def test_a_cluster_already_managed_is_refused() -> None:
    owned = _eks(tags={"instantstart:cluster-tag": "demo", "instantstart:managed": "true"})
    with pytest.raises(Conflict) as ours:
        importing.check_not_managed(owned, None)
    assert ours.value.details[0]["clusterTag"] == "demo"
    with pytest.raises(Conflict):
        importing.check_not_managed(_eks(), "other")
    importing.check_not_managed(_eks(), None)


class _SageMaker:
    def __init__(self, clusters: dict[str, dict[str, Any]]) -> None:
        self.clusters = clusters

    def describe_cluster(self, ClusterName: str) -> dict[str, Any]:
        return self.clusters[ClusterName]

    def list_clusters(self, **_: Any) -> dict[str, Any]:
        return {"ClusterSummaries": [{"ClusterName": n} for n in self.clusters]}


def test_hyperpod_of_another_eks_cluster_is_refused_and_attached_ones_are_found() -> None:
    sm = _SageMaker(
        {
            "mine": {"ClusterName": "mine", "ClusterStatus": "InService", "Orchestrator": {"Eks": {"ClusterArn": ARN}}},
            "theirs": {
                "ClusterName": "theirs",
                "ClusterStatus": "InService",
                "Orchestrator": {"Eks": {"ClusterArn": ARN + "-other"}},
            },
        }
    )
    with pytest.raises(ValidationFailed) as mismatch:
        importing.describe_hyperpod_cluster(sm, "theirs", ARN)
    assert mismatch.value.code == "OrchestratorMismatch"
    assert mismatch.value.details[0]["field"] == "hyperPodClusterName"
    assert importing.describe_hyperpod_cluster(sm, "mine", ARN)["ClusterName"] == "mine"
    assert importing.attached_hyperpod_clusters(sm, ARN) == ["mine"]


def _inspection(addons: list[str], hyperpod: bool, access: bool) -> importing.Inspection:
    return importing.Inspection(
        eks=_eks(),
        vpc_cidr="10.42.0.0/16",
        zones=["us-west-2a", "us-west-2b"],
        addons=addons,
        access_entry=access,
        hyperpod={"ClusterName": "hp", "ClusterArn": "arn:hp", "InstanceGroups": []} if hyperpod else None,
    )


def test_stage_plan_marks_existing_resources_imported_and_leaves_the_rest_pending() -> None:
    request = ImportClusterRequest(eks_cluster_name="platform", cluster_tag="adopted")
    found = _inspection(["eks-pod-identity-agent", "coredns"], hyperpod=False, access=False)
    stages = {s.name: s for s in importing.plan_stages(request, found, generation=1, now="t", principal_arn="arn:r")}
    assert stages[StageName.NETWORK].status is StageStatus.SUCCEEDED and stages[StageName.NETWORK].imported
    assert stages[StageName.NETWORK].resources["vpcId"] == "vpc-1"
    assert stages[StageName.NETWORK].resources["securityGroupId"] == "sg-1"
    for name in (StageName.ACCESS, StageName.DEPENDENCIES, StageName.HYPERPOD, StageName.STORAGE, StageName.VERIFY):
        assert stages[name].status is StageStatus.PENDING and not stages[name].imported
    assert stages[StageName.DEPENDENCIES].resources["importedAddons"] == ["eks-pod-identity-agent"]
    assert importing.first_missing_stage(list(stages.values())) is StageName.ACCESS

    every = ["eks-pod-identity-agent", "cert-manager", "aws-mountpoint-s3-csi-driver", "metrics-server"]
    full = {
        s.name: s
        for s in importing.plan_stages(
            request, _inspection(every, hyperpod=True, access=True), generation=1, now="t", principal_arn="arn:r"
        )
    }
    assert [n for n, s in full.items() if s.imported] == [
        StageName.NETWORK,
        StageName.ACCESS,
        StageName.DEPENDENCIES,
        StageName.HYPERPOD,
    ]
    assert importing.first_missing_stage(list(full.values())) is StageName.STORAGE


def test_retained_lists_every_foreign_resource() -> None:
    request = ImportClusterRequest(eks_cluster_name="platform", cluster_tag="adopted")
    view = importing.imported_view(request, _inspection(["coredns"], hyperpod=True, access=True), principal_arn="r")
    kinds = [(r.resource_type, r.name) for r in view.retained]
    assert ("EksCluster", "platform") in kinds and ("HyperPodCluster", "hp") in kinds
    assert ("Subnet", "subnet-b") in kinds and ("EksAddon", "coredns") in kinds and ("EksAccessEntry", "r") in kinds


def test_instance_groups_are_not_allowed_with_a_hyperpod_cluster_name() -> None:
    from pydantic import ValidationError

    group = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1}
    with pytest.raises(ValidationError) as both:
        ImportClusterRequest.model_validate(
            {
                "eksClusterName": "platform",
                "clusterTag": "adopted",
                "hyperPodClusterName": "hp",
                "instanceGroups": [group],
            }
        )
    assert both.value.errors()[0]["loc"] == ("instanceGroups",)
