"""SageMaker HyperPod in the AWS sandbox: validation, lifecycle, Kubernetes nodes, events, faults."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from instantstart_sandbox.clock import SimClock

try:
    from tests.sandbox.conftest_aws import (
        FakeKube,
        _no_leftover_faults,
        aws,
        client,
        clock,
        create_eks,
        eks_cluster,
        kube,
        lifecycle,
        network,
        role,
        unique,
        wait_for,
    )
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        FakeKube,
        _no_leftover_faults,
        aws,
        client,
        clock,
        create_eks,
        eks_cluster,
        kube,
        lifecycle,
        network,
        role,
        unique,
        wait_for,
    )

Client = Callable[[str], Any]


def _request(
    eks_name: str, network: dict[str, Any], role: str, lifecycle: dict[str, str], **overrides: Any
) -> dict[str, Any]:
    group = {
        "InstanceGroupName": "worker-group-1",
        "InstanceType": "ml.g5.8xlarge",
        "InstanceCount": 2,
        "LifeCycleConfig": dict(lifecycle),
        "ExecutionRole": role,
        "OverrideVpcConfig": {"Subnets": [network["subnets"][1]], "SecurityGroupIds": [network["sg"]]},
        "KubernetesConfig": {"Labels": {"team": "ml"}},
    }
    group.update(overrides.pop("group", {}))
    request = {
        "ClusterName": unique("hp-cluster"),
        "InstanceGroups": [group],
        "Orchestrator": {"Eks": {"ClusterArn": f"arn:aws:eks:us-west-2:123456789012:cluster/{eks_name}"}},
        "VpcConfig": {"Subnets": [network["subnets"][0]], "SecurityGroupIds": [network["sg"]]},
        "NodeRecovery": "Automatic",
        "Tags": [{"Key": "instantstart:managed", "Value": "true"}],
    }
    request.update(overrides)
    return request


def _nodes(kube: FakeKube, eks_name: str, hp_name: str) -> list[dict[str, Any]]:
    selector = f"sagemaker.amazonaws.com/cluster-name={hp_name}"
    return list(kube.cluster(eks_name).list("v1", "Node", label_selector=selector))


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    return exc.value.response["Error"]["Code"], exc.value.response["Error"]["Message"]


def test_given_active_eks_when_hyperpod_cluster_is_created_then_creating_to_in_service_with_nodes(
    clock: SimClock,
    client: Client,
    kube: FakeKube,
    eks_cluster: str,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = client("sagemaker")
    request = _request(eks_cluster, network, role, lifecycle)
    with clock.paused():  # the first answer, however late this thread runs
        arn = sm.create_cluster(**request)["ClusterArn"]
        first = sm.describe_cluster(ClusterName=request["ClusterName"])
    assert arn.startswith("arn:aws:sagemaker:us-west-2:123456789012:cluster/")
    assert first["ClusterStatus"] == "Creating"
    assert first["InstanceGroups"][0]["Status"] == "Creating"
    assert first["InstanceGroups"][0]["CurrentCount"] == 0
    assert first["Orchestrator"] == request["Orchestrator"]
    assert first["NodeRecovery"] == "Automatic"
    assert "ThreadsPerCore" in first["InstanceGroups"][0]  # optional in the request, reported anyway

    described = wait_for(lambda: (d := sm.describe_cluster(ClusterName=arn))["ClusterStatus"] == "InService" and d)
    group = described["InstanceGroups"][0]
    assert (group["Status"], group["CurrentCount"], group["TargetCount"]) == ("InService", 2, 2)
    assert group["OverrideVpcConfig"]["Subnets"] == [network["subnets"][1]]
    assert group["LifeCycleConfig"] == lifecycle

    # The Kubernetes nodes register as the instances come up, not atomically with the status InService: wait for them
    # as a client would.
    nodes = wait_for(lambda: len(n := _nodes(kube, eks_cluster, request["ClusterName"])) == 2 and n)
    node = nodes[0]
    labels = node["metadata"]["labels"]
    assert node["metadata"]["name"].startswith("hyperpod-i-")
    assert labels["node.kubernetes.io/instance-type"] == "ml.g5.8xlarge"
    assert labels["sagemaker.amazonaws.com/node-health-status"] == "Schedulable"
    assert labels["sagemaker.amazonaws.com/compute-type"] == "hyperpod"
    assert labels["sagemaker.amazonaws.com/cluster-name"] == request["ClusterName"]
    assert labels["topology.kubernetes.io/zone"] == "us-west-2b"  # the group's override subnet
    assert labels["team"] == "ml"
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "1"
    assert node["status"]["capacity"]["cpu"] == "32"
    assert {"type": "Ready", "status": "True"}.items() <= node["status"]["conditions"][-1].items()

    listed = sm.list_cluster_nodes(ClusterName=request["ClusterName"])["ClusterNodeSummaries"]
    assert sorted(f"hyperpod-{n['InstanceId']}" for n in listed) == sorted(n["metadata"]["name"] for n in nodes)
    detail = sm.describe_cluster_node(ClusterName=arn, NodeId=listed[0]["InstanceId"])["NodeDetails"]
    assert detail["InstanceStatus"]["Status"] == "Running"
    assert detail["Placement"]["AvailabilityZone"] == "us-west-2b"

    summaries = sm.list_clusters(NameContains=request["ClusterName"])["ClusterSummaries"]
    assert [(s["ClusterName"], s["ClusterStatus"]) for s in summaries] == [(request["ClusterName"], "InService")]
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "instantstart:managed", "Value": "true"}]


def test_given_a_hyperpod_cluster_when_deleted_then_it_goes_deleting_then_not_found_and_nodes_leave(
    client: Client,
    kube: FakeKube,
    eks_cluster: str,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = client("sagemaker")
    request = _request(eks_cluster, network, role, lifecycle, group={"InstanceCount": 1})
    arn = sm.create_cluster(**request)["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService")
    assert len(_nodes(kube, eks_cluster, request["ClusterName"])) == 1

    assert sm.delete_cluster(ClusterName=request["ClusterName"])["ClusterArn"] == arn
    assert sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "Deleting"

    def gone() -> bool:
        try:
            sm.describe_cluster(ClusterName=arn)
        except ClientError as exc:
            return exc.response["Error"]["Code"] == "ResourceNotFound"
        return False

    wait_for(gone)
    assert _nodes(kube, eks_cluster, request["ClusterName"]) == []
    # a deleted name can be used again
    sm.create_cluster(**request)


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (
            lambda r, n: r["InstanceGroups"][0].update(ExecutionRole="arn:aws:iam::123456789012:role/missing"),
            "execution role",
        ),
        (
            lambda r, n: r["VpcConfig"].update(Subnets=["subnet-0000000000000000a"]),
            "subnet-0000000000000000a",
        ),
        (
            lambda r, n: r["InstanceGroups"][0].update(
                OverrideVpcConfig={"Subnets": ["subnet-0bad"], "SecurityGroupIds": [n["sg"]]}
            ),
            "subnet-0bad",
        ),
        (
            lambda r, n: r["VpcConfig"].update(SecurityGroupIds=["sg-0000000000000000a"]),
            "sg-0000000000000000a",
        ),
        (lambda r, n: r["InstanceGroups"][0]["LifeCycleConfig"].update(OnCreate="missing.sh"), "missing.sh"),
        (lambda r, n: r["InstanceGroups"][0].update(InstanceType="ml.g5.9xlarge"), "ml.g5.9xlarge"),
        (lambda r, n: r["InstanceGroups"][0].update(InstanceType="g5.8xlarge"), "g5.8xlarge"),
        (
            lambda r, n: r.update(
                Orchestrator={"Eks": {"ClusterArn": "arn:aws:eks:us-west-2:123456789012:cluster/nope"}}
            ),
            "does not exist",
        ),
    ],
    ids=[
        "missing-role",
        "unknown-subnet",
        "unknown-override-subnet",
        "unknown-sg",
        "missing-lifecycle-script",
        "unknown-instance-type",
        "non-ml-instance-type",
        "unknown-eks-cluster",
    ],
)
def test_given_an_invalid_request_when_hyperpod_cluster_is_created_then_validation_exception_names_it(
    client: Client,
    eks_cluster: str,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
    mutate: Callable[[dict[str, Any], dict[str, Any]], None],
    fragment: str,
) -> None:
    request = _request(eks_cluster, network, role, lifecycle)
    mutate(request, network)
    with pytest.raises(ClientError) as exc:
        client("sagemaker").create_cluster(**request)
    code, message = _error(exc)
    assert code == "ValidationException"
    assert fragment in message


def test_given_an_eks_cluster_still_creating_when_hyperpod_cluster_is_created_then_validation_exception(
    client: Client, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    eks = client("eks")
    name = unique("eks-cluster")
    eks.create_cluster(
        name=name,
        roleArn=role,
        resourcesVpcConfig={"subnetIds": network["subnets"]},
        accessConfig={"authenticationMode": "API"},
    )
    with pytest.raises(ClientError) as exc:
        client("sagemaker").create_cluster(**_request(name, network, role, lifecycle))
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "CREATING" in message


def test_given_a_config_map_eks_cluster_when_hyperpod_cluster_is_created_then_validation_exception(
    client: Client, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    name = create_eks(client, network, role, mode="CONFIG_MAP")
    with pytest.raises(ClientError) as exc:
        client("sagemaker").create_cluster(**_request(name, network, role, lifecycle))
    assert _error(exc)[0] == "ValidationException"


def test_given_an_existing_name_when_hyperpod_cluster_is_created_again_then_resource_in_use(
    client: Client, eks_cluster: str, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = client("sagemaker")
    request = _request(eks_cluster, network, role, lifecycle)
    sm.create_cluster(**request)
    with pytest.raises(ClientError) as exc:
        sm.create_cluster(**request)
    assert _error(exc)[0] == "ResourceInUse"


def test_given_no_capacity_for_the_instance_type_when_cluster_is_created_then_it_is_accepted_and_fails(
    clock: SimClock,
    aws: Any,
    client: Client,
    eks_cluster: str,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    aws.extension.faults.fail_hyperpod_capacity("ml.p5.48xlarge", times=1)  # the older mode: one CreateCluster
    sm = client("sagemaker")
    request = _request(eks_cluster, network, role, lifecycle, group={"InstanceType": "ml.p5.48xlarge"})
    with clock.paused():
        arn = sm.create_cluster(**request)["ClusterArn"]
        assert sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "Creating"
    failed = wait_for(lambda: (d := sm.describe_cluster(ClusterName=arn))["ClusterStatus"] == "Failed" and d)
    assert "do not have sufficient ml.p5.48xlarge capacity" in failed["FailureMessage"]
    assert "(us-west-2b)" in failed["FailureMessage"], "the Availability Zone of the group's subnet"
    # the fault is consumed: the next cluster with the same type is created
    again = _request(
        eks_cluster, network, role, lifecycle, group={"InstanceType": "ml.p5.48xlarge", "InstanceCount": 0}
    )
    arn2 = sm.create_cluster(**again)["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn2)["ClusterStatus"] == "InService")


def test_given_a_rule_on_hyperpod_state_changes_when_cluster_is_created_then_events_reach_the_sqs_target(
    client: Client, eks_cluster: str, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sqs, events, sm = client("sqs"), client("events"), client("sagemaker")
    queue_url = sqs.create_queue(QueueName=unique("hp-events"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    request = _request(eks_cluster, network, role, lifecycle, group={"InstanceCount": 1})
    rule = unique("hp-state")
    events.put_rule(
        Name=rule,
        EventPattern=json.dumps(
            {
                "source": ["aws.sagemaker"],
                "detail-type": ["SageMaker HyperPod Cluster State Change"],
                "detail": {"ClusterName": [request["ClusterName"]]},
            }
        ),
    )
    events.put_targets(Rule=rule, Targets=[{"Id": "q", "Arn": queue_arn}])

    arn = sm.create_cluster(**request)["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService")

    received: list[dict[str, Any]] = []

    def both_seen() -> bool:
        for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            received.append(json.loads(message["Body"]))
        return len(received) >= 2

    wait_for(both_seen)
    assert [e["detail"]["ClusterStatus"] for e in received] == ["Creating", "InService"]
    event = received[-1]
    assert event["source"] == "aws.sagemaker"
    assert event["detail-type"] == "SageMaker HyperPod Cluster State Change"
    assert event["resources"] == [arn]
    assert event["detail"]["ClusterArn"] == arn
    assert event["detail"]["InstanceGroups"][0]["CurrentCount"] == 1


def test_given_an_in_service_cluster_when_a_group_is_scaled_then_it_updates_and_nodes_follow(
    client: Client,
    kube: FakeKube,
    eks_cluster: str,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sm = client("sagemaker")
    request = _request(eks_cluster, network, role, lifecycle, group={"InstanceCount": 1})
    arn = sm.create_cluster(**request)["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService")
    group = dict(request["InstanceGroups"][0], InstanceCount=3)
    sm.update_cluster(ClusterName=arn, InstanceGroups=[group])
    assert sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "Updating"
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService")
    assert sm.describe_cluster(ClusterName=arn)["InstanceGroups"][0]["CurrentCount"] == 3
    assert len(_nodes(kube, eks_cluster, request["ClusterName"])) == 3


def test_given_an_in_service_node_when_its_health_is_reported_then_node_label_changes_and_the_event_is_emitted(
    aws: Any,
    client: Client,
    kube: FakeKube,
    eks_cluster: str,
    network: dict[str, Any],
    role: str,
    lifecycle: dict[str, str],
) -> None:
    sqs, events, sm = client("sqs"), client("events"), client("sagemaker")
    queue_url = sqs.create_queue(QueueName=unique("hp-health"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    request = _request(eks_cluster, network, role, lifecycle, group={"InstanceCount": 1})
    rule = unique("hp-health")
    events.put_rule(
        Name=rule,
        EventPattern=json.dumps(
            {
                "source": ["aws.sagemaker"],
                "detail-type": ["SageMaker HyperPod Cluster Node Health Event"],
                "detail": {"ClusterName": [request["ClusterName"]]},
            }
        ),
    )
    events.put_targets(Rule=rule, Targets=[{"Id": "q", "Arn": queue_arn}])
    arn = sm.create_cluster(**request)["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService")
    [node] = sm.list_cluster_nodes(ClusterName=arn)["ClusterNodeSummaries"]

    aws.extension.hyperpod.report_node_health(arn, node["InstanceId"], "UnschedulablePendingReplacement")

    [k8s_node] = _nodes(kube, eks_cluster, request["ClusterName"])
    assert k8s_node["metadata"]["labels"]["sagemaker.amazonaws.com/node-health-status"] == (
        "UnschedulablePendingReplacement"
    )
    [message] = wait_for(lambda: sqs.receive_message(QueueUrl=queue_url).get("Messages"))
    detail = json.loads(message["Body"])["detail"]
    assert detail["InstanceId"] == node["InstanceId"]
    assert detail["HealthSummary"]["HealthStatus"] == "UnschedulablePendingReplacement"


def test_given_an_in_service_cluster_when_a_node_is_batch_deleted_then_its_group_shrinks(
    client: Client, kube: FakeKube, eks_cluster: str, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = client("sagemaker")
    request = _request(eks_cluster, network, role, lifecycle, group={"InstanceCount": 2})
    arn = sm.create_cluster(**request)["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService")
    victim = sm.list_cluster_nodes(ClusterName=arn)["ClusterNodeSummaries"][0]["InstanceId"]
    result = sm.batch_delete_cluster_nodes(ClusterName=arn, NodeIds=[victim, "i-0000000000000000f"])
    assert result["Successful"] == [victim]
    assert [f["NodeId"] for f in result["Failed"]] == ["i-0000000000000000f"]
    group = sm.describe_cluster(ClusterName=arn)["InstanceGroups"][0]
    assert (group["CurrentCount"], group["TargetCount"]) == (1, 1)
    assert len(_nodes(kube, eks_cluster, request["ClusterName"])) == 1


def test_given_an_in_service_cluster_when_its_software_is_updated_then_system_updating_then_in_service(
    client: Client, eks_cluster: str, network: dict[str, Any], role: str, lifecycle: dict[str, str]
) -> None:
    sm = client("sagemaker")
    request = _request(eks_cluster, network, role, lifecycle, group={"InstanceCount": 1})
    arn = sm.create_cluster(**request)["ClusterArn"]
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService")
    assert sm.update_cluster_software(ClusterName=arn, ImageId="ami-0123456789abcdef0")["ClusterArn"] == arn
    updating = sm.describe_cluster(ClusterName=arn)
    assert updating["ClusterStatus"] == "SystemUpdating"
    group = updating["InstanceGroups"][0]
    assert (group["Status"], group["SoftwareUpdateStatus"]) == ("SystemUpdating", "InProgress")
    assert group["DesiredImageId"] == "ami-0123456789abcdef0" and "CurrentImageId" not in group
    wait_for(lambda: sm.describe_cluster(ClusterName=arn)["ClusterStatus"] == "InService")
    group = sm.describe_cluster(ClusterName=arn)["InstanceGroups"][0]
    assert (group["Status"], group["SoftwareUpdateStatus"]) == ("InService", "Succeeded")
    assert group["CurrentImageId"] == group["DesiredImageId"] == "ami-0123456789abcdef0"
