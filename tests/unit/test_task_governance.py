"""Task governance rules and mappings: request models to SageMaker shapes, the refusals (field named, allowed values),
the error map of SageMaker's answers, and the teardown's ownership rule."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from pydantic import ValidationError

from instantstart.clusters import task_governance as tg
from instantstart.errors import Conflict, NotFound, UpstreamUnavailable, ValidationFailed
from instantstart.models.task_governance import (
    CreateComputeQuotaRequest,
    PutSchedulerConfigRequest,
    UpdateComputeQuotaRequest,
)
from instantstart.naming import compute_quota_name, ownership_tags, scheduler_config_name, tag_list


def client_error(code: str, message: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": message}}, "Operation")


def test_given_a_policy_body_then_it_maps_member_for_member_to_sagemaker_scheduler_config() -> None:
    request = PutSchedulerConfigRequest.model_validate(
        {"schedulerConfig": {"priorityClasses": [{"name": "inference", "weight": 100}], "fairShare": "Enabled"}}
    )

    assert request.scheduler_config.to_aws() == {
        "PriorityClasses": [{"Name": "inference", "Weight": 100}],
        "FairShare": "Enabled",
    }


def test_given_a_quota_body_then_it_maps_to_compute_quota_config_and_target_with_aws_names() -> None:
    request = CreateComputeQuotaRequest.model_validate(
        {
            "computeQuotaConfig": {
                "computeQuotaResources": [
                    {"instanceType": "ml.g6.4xlarge", "count": 2, "vCpu": 4.5, "memoryInGiB": 16},
                    {"instanceType": "ml.p5.48xlarge", "acceleratorPartition": {"type": "mig-1g.10gb", "count": 3}},
                ],
                "resourceSharingConfig": {"strategy": "LendAndBorrow", "borrowLimit": 50},
                "preemptTeamTasks": "Never",
            },
            "computeQuotaTarget": {"teamName": "research", "fairShareWeight": 10},
        }
    )

    assert request.compute_quota_config.to_aws() == {
        "ComputeQuotaResources": [
            {"InstanceType": "ml.g6.4xlarge", "Count": 2, "VCpu": 4.5, "MemoryInGiB": 16},
            {"InstanceType": "ml.p5.48xlarge", "AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 3}},
        ],
        "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
        "PreemptTeamTasks": "Never",
    }
    assert request.compute_quota_target.to_aws() == {"TeamName": "research", "FairShareWeight": 10}


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"schedulerConfig": {"priorityClasses": [{"name": "a", "weight": 101}]}}, ("priorityClasses", 0, "weight")),
        ({"schedulerConfig": {"priorityClasses": [{"name": "a", "weight": -1}]}}, ("priorityClasses", 0, "weight")),
        (
            {"schedulerConfig": {"priorityClasses": [{"name": "Big_Name", "weight": 1}]}},
            ("priorityClasses", 0, "name"),
        ),
        ({"schedulerConfig": {"fairShare": "On"}}, ("fairShare",)),
        (
            {"schedulerConfig": {"priorityClasses": [{"name": f"p{i}", "weight": 1} for i in range(11)]}},
            ("priorityClasses",),
        ),
    ],
)
def test_given_a_policy_out_of_botocores_limits_then_validation_names_the_member(
    body: Any, where: tuple[Any, ...]
) -> None:
    with pytest.raises(ValidationError) as refused:
        PutSchedulerConfigRequest.model_validate(body)

    assert refused.value.errors()[0]["loc"][1:] == where


def test_given_two_priority_classes_with_one_name_then_the_policy_is_refused_naming_it() -> None:
    body = {"schedulerConfig": {"priorityClasses": [{"name": "a", "weight": 1}, {"name": "a", "weight": 2}]}}
    with pytest.raises(ValidationError) as refused:
        PutSchedulerConfigRequest.model_validate(body)

    assert "repeated: a" in str(refused.value)


@pytest.mark.parametrize("team", ["Research", "-team", "team-", "a_b", "x" * 39, ""])
def test_given_a_team_name_that_is_not_a_namespace_safe_label_of_38_then_it_is_refused(team: str) -> None:
    body = {"computeQuotaConfig": {}, "computeQuotaTarget": {"teamName": team}}
    with pytest.raises(ValidationError) as refused:
        CreateComputeQuotaRequest.model_validate(body)

    assert refused.value.errors()[0]["loc"] == ("computeQuotaTarget", "teamName")


@pytest.mark.parametrize(
    ("member", "value"),
    [("borrowLimit", 10_001), ("strategy", "Share")],
)
def test_given_a_sharing_config_out_of_range_then_it_is_refused(member: str, value: Any) -> None:
    sharing: dict[str, Any] = {"strategy": "Lend", member: value}
    with pytest.raises(ValidationError):
        CreateComputeQuotaRequest.model_validate(
            {"computeQuotaConfig": {"resourceSharingConfig": sharing}, "computeQuotaTarget": {"teamName": "a"}}
        )


def test_given_the_longest_tag_and_team_then_the_deterministic_names_fit_sagemaker_and_kubernetes() -> None:
    tag, team = "t" * 24, "a" * 38
    assert len(compute_quota_name(tag, team)) <= 63
    assert len(f"hyperpod-ns-{team}") <= 63
    assert compute_quota_name("demo", "research") == "demo-research"
    assert scheduler_config_name("demo") == "demo-scheduler-config"


def test_given_the_addon_missing_then_the_refusal_names_the_feature_and_the_route() -> None:
    refusal = tg.feature_not_enabled("demo", None)

    assert refusal.code == "FeatureNotEnabled"
    assert refusal.details[0]["field"] == "taskGovernance"
    assert "PATCH /clusters/demo/features" in refusal.message
    assert '{"taskGovernance": {"enabled": true}}' in refusal.message
    assert "amazon-sagemaker-hyperpod-taskgovernance" in refusal.message


@pytest.mark.parametrize(
    ("code", "message", "error", "our_code"),
    [
        ("ConflictException", "TargetVersion 1 does not match the current version 2", Conflict, "ConflictException"),
        ("ResourceLimitExceeded", "too many", Conflict, "ResourceLimitExceeded"),
        ("ValidationException", "Task governance is not enabled for cluster x", Conflict, "FeatureNotEnabled"),
        ("ValidationException", "Value 'x' at 'name' failed", ValidationFailed, "ValidationException"),
        ("ResourceNotFound", "Compute quota q not found", NotFound, "ResourceNotFound"),
        ("ThrottlingException", "Rate exceeded", UpstreamUnavailable, "ServiceUnavailable"),
    ],
)
def test_given_a_sagemaker_refusal_then_it_is_mapped_with_the_message_verbatim(
    code: str, message: str, error: type[Exception], our_code: str
) -> None:
    def refuse(sm: Any) -> Any:
        raise client_error(code, message)

    rt: Any = type("Rt", (), {"client": lambda self, name: object()})()
    with pytest.raises(error) as refused:
        tg.sagemaker_call(rt, "demo", "UpdateComputeQuota", refuse)

    assert message in refused.value.message  # type: ignore[attr-defined]
    assert refused.value.code == our_code  # type: ignore[attr-defined]


class FakeSageMaker:
    """ListComputeQuotas/ListClusterSchedulerConfigs/ListTags/Delete* of one cluster, recording deletes."""

    def __init__(self, quotas: list[dict[str, Any]], configs: list[dict[str, Any]], tags: dict[str, Any]) -> None:
        self.quotas, self.configs, self.tags = quotas, configs, tags
        self.deleted: list[str] = []

    def list_compute_quotas(self, **_: Any) -> dict[str, Any]:
        return {"ComputeQuotaSummaries": self.quotas}

    def list_cluster_scheduler_configs(self, **_: Any) -> dict[str, Any]:
        return {"ClusterSchedulerConfigSummaries": self.configs}

    def list_tags(self, ResourceArn: str) -> dict[str, Any]:
        return {"Tags": self.tags.get(ResourceArn, [])}

    def delete_compute_quota(self, ComputeQuotaId: str) -> None:
        self.deleted.append(ComputeQuotaId)

    def delete_cluster_scheduler_config(self, ClusterSchedulerConfigId: str) -> None:
        self.deleted.append(ClusterSchedulerConfigId)


def test_given_owned_and_foreign_governance_then_teardown_deletes_only_the_owned_and_reports_what_is_left() -> None:
    ours = tag_list(ownership_tags("demo"))
    sm = FakeSageMaker(
        quotas=[
            {"ComputeQuotaId": "q1", "ComputeQuotaArn": "arn:q1", "Name": "demo-research", "Status": "Created"},
            {"ComputeQuotaId": "q2", "ComputeQuotaArn": "arn:q2", "Name": "theirs", "Status": "Created"},
            {"ComputeQuotaId": "q3", "ComputeQuotaArn": "arn:q3", "Name": "demo-vision", "Status": "Deleting"},
            {"ComputeQuotaId": "q4", "ComputeQuotaArn": "arn:q4", "Name": "demo-old", "Status": "Deleted"},
        ],
        configs=[
            {
                "ClusterSchedulerConfigId": "c1",
                "ClusterSchedulerConfigArn": "arn:c1",
                "Name": "demo-scheduler-config",
                "Status": "Updated",
            }
        ],
        tags={
            "arn:q1": ours,
            "arn:q3": ours,
            "arn:q4": ours,
            "arn:c1": ours,
            "arn:q2": [{"Key": "owner", "Value": "x"}],
        },
    )

    left = tg.release_owned(sm, "arn:cluster", "demo")

    assert sm.deleted == ["q1", "c1"]
    assert left == ["demo-research (Deleting)", "demo-vision (Deleting)", "demo-scheduler-config (Deleting)"]


def test_given_nothing_owned_then_teardown_has_nothing_left_and_deletes_nothing() -> None:
    sm = FakeSageMaker(quotas=[], configs=[], tags={})
    assert tg.release_owned(sm, "arn:cluster", "demo") == []
    assert sm.deleted == []


def test_given_an_update_body_then_only_given_members_and_target_version_are_kept() -> None:
    request = UpdateComputeQuotaRequest.model_validate({"activationState": "Disabled", "targetVersion": 3})
    assert request.compute_quota_config is None and request.target_version == 3
    with pytest.raises(ValidationError):
        UpdateComputeQuotaRequest.model_validate({"targetVersion": 0})


def test_given_a_quota_deleted_between_the_listing_and_its_describe_then_it_is_left_out_not_a_404() -> None:
    from instantstart.clusters.task_governance_resources import described_compute_quota

    class Listed:
        """SageMaker answering DescribeComputeQuota for ``q-live`` only (``q-gone`` was deleted meanwhile)."""

        def describe_compute_quota(self, ComputeQuotaId: str) -> dict[str, Any]:
            if ComputeQuotaId == "q-gone":
                raise client_error("ResourceNotFound", f"Compute quota {ComputeQuotaId} not found")
            if ComputeQuotaId == "q-throttled":
                raise client_error("ThrottlingException", "Rate exceeded")
            return {"ComputeQuotaId": ComputeQuotaId, "Name": "team-a"}

    sm = Listed()

    assert described_compute_quota(sm, {"ComputeQuotaId": "q-live"}) == {"ComputeQuotaId": "q-live", "Name": "team-a"}
    assert described_compute_quota(sm, {"ComputeQuotaId": "q-gone"}) is None
    with pytest.raises(ClientError):
        described_compute_quota(sm, {"ComputeQuotaId": "q-throttled"})
