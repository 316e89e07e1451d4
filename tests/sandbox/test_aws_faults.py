"""Real-account behaviours of the AWS sandbox through boto3: add-on health, refused zones, IAM
propagation, lingering network interfaces, S3 name reuse and throttling."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

try:
    from tests.sandbox.conftest_aws import (
        REGION,
        FakeKube,
        add_node,
        aws,
        client,
        clock,
        create_eks,
        kube,
        lifecycle,
        network,
        role,
        single_attempt_client,
        unique,
        wait_for,
    )
except ImportError:  # rootdir not on sys.path
    from conftest_aws import (  # type: ignore[no-redef]  # noqa: F401
        REGION,
        FakeKube,
        add_node,
        aws,
        client,
        clock,
        create_eks,
        kube,
        lifecycle,
        network,
        role,
        single_attempt_client,
        unique,
        wait_for,
    )

from instantstart_sandbox.aws.eks import EksEmulator
from instantstart_sandbox.aws.server import AwsSandboxServer
from instantstart_sandbox.clock import SimClock

Client = Callable[[str], Any]
# the session clock runs 3000x: 3000 simulated seconds are one wall second
ONE_WALL_SECOND = 3000.0


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error = exc.value.response["Error"]
    return str(error["Code"]), str(error.get("Message", ""))


def _eks_events(client: Client, cluster: str) -> Callable[[], list[dict[str, Any]]]:
    """Route this cluster's ``aws.eks`` events to a queue; a function returning those received so far."""
    sqs = client("sqs")
    queue_url = sqs.create_queue(QueueName=unique("eks-events"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events = client("events")
    rule = unique("eks-rule")
    events.put_rule(Name=rule, EventPattern=json.dumps({"source": ["aws.eks"], "detail": {"clusterName": [cluster]}}))
    events.put_targets(Rule=rule, Targets=[{"Id": "q", "Arn": queue_arn}])
    received: list[dict[str, Any]] = []

    def poll() -> list[dict[str, Any]]:
        for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            received.append(json.loads(message["Body"]))
        return received

    return poll


# -- add-on health ------------------------------------------------------------------------------------
def test_given_no_nodes_when_deployment_addons_are_created_then_degraded_until_a_node_joins_then_active(
    client: Client, kube: FakeKube, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    name = create_eks(client, network, role)
    events = _eks_events(client, name)
    for addon in ("cert-manager", "metrics-server", "aws-mountpoint-s3-csi-driver", "eks-pod-identity-agent"):
        eks.create_addon(clusterName=name, addonName=addon)

    def status(addon: str) -> dict[str, Any]:
        return dict(eks.describe_addon(clusterName=name, addonName=addon)["addon"])

    degraded = wait_for(lambda: (a := status("cert-manager"))["status"] == "DEGRADED" and a)
    assert degraded["health"]["issues"][0]["code"] == "InsufficientNumberOfReplicas"
    assert "desired number of replicas" in degraded["health"]["issues"][0]["message"]
    wait_for(lambda: status("metrics-server")["status"] == "DEGRADED")
    wait_for(lambda: status("aws-mountpoint-s3-csi-driver")["status"] == "DEGRADED")  # v2 controller Deployment
    # the DaemonSet-only agent needs no node
    agent = wait_for(lambda: (a := status("eks-pod-identity-agent"))["status"] == "ACTIVE" and a)
    assert agent["health"]["issues"] == []

    # a node that is not Ready or refuses the pods (NoSchedule taint) does not help
    add_node(kube, name, "not-ready", ready=False)
    add_node(kube, name, "tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    time.sleep(3 * 60 / ONE_WALL_SECOND)  # three health checks
    assert status("cert-manager")["status"] == "DEGRADED"

    add_node(kube, name, "ready")
    for addon in ("cert-manager", "metrics-server", "aws-mountpoint-s3-csi-driver"):
        active = wait_for(lambda addon=addon: (a := status(addon))["status"] == "ACTIVE" and a)
        assert active["health"]["issues"] == []

    def kinds() -> set[tuple[str, str]]:
        return {(e["detail-type"], e["detail"]["addonName"]) for e in events()}

    wait_for(
        lambda: (
            {
                ("EKS Addon Health Degraded", "cert-manager"),
                ("EKS Addon Health Restored", "cert-manager"),
                ("EKS Addon Creation Succeeded", "eks-pod-identity-agent"),
            }
            <= kinds()
        )
    )
    degraded_event = next(e for e in events() if e["detail-type"] == "EKS Addon Health Degraded")
    assert degraded_event["source"] == "aws.eks"
    assert degraded_event["detail"]["health"]["issues"][0]["code"] == "InsufficientNumberOfReplicas"


def test_given_no_nodes_when_a_deployment_addon_finishes_creating_then_it_is_never_seen_active_on_the_way_to_degraded(
    client: Client, network: dict[str, Any], role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The add-on's objects are installed and its health evaluated before its status changes: a DescribeAddon made
    meanwhile (here: while the objects are being installed) sees CREATING, never an ACTIVE taken back a moment later."""
    eks = client("eks")
    name = create_eks(client, network, role)
    seen: list[str] = []
    install = EksEmulator._install

    def observed_install(self: EksEmulator, cluster: str, spec: Any, version: str) -> None:
        install(self, cluster, spec, version)
        if cluster == name:
            seen.append(eks.describe_addon(clusterName=name, addonName=spec.name)["addon"]["status"])

    monkeypatch.setattr(EksEmulator, "_install", observed_install)
    eks.create_addon(clusterName=name, addonName="cert-manager")

    degraded = wait_for(
        lambda: (
            (a := eks.describe_addon(clusterName=name, addonName="cert-manager")["addon"])["status"] == "DEGRADED" and a
        )
    )
    assert seen == ["CREATING"]
    assert degraded["health"]["issues"][0]["code"] == "InsufficientNumberOfReplicas"


def test_given_a_degraded_addon_hook_when_nodes_are_ready_then_it_stays_degraded_with_that_issue_until_restored(
    client: Client, kube: FakeKube, network: dict[str, Any], role: str, aws: AwsSandboxServer
) -> None:
    eks = client("eks")
    name = create_eks(client, network, role)
    events = _eks_events(client, name)
    add_node(kube, name, "ready")
    eks.create_addon(clusterName=name, addonName="metrics-server")

    def status() -> dict[str, Any]:
        return dict(eks.describe_addon(clusterName=name, addonName="metrics-server")["addon"])

    wait_for(lambda: status()["status"] == "ACTIVE")
    message = "Conflicts found when trying to apply. Will not continue due to resolve conflicts mode."
    aws.extension.eks.degrade_addon(name, "metrics-server", "ConfigurationConflict", message)
    degraded = status()
    assert degraded["status"] == "DEGRADED"
    assert [(i["code"], i["message"]) for i in degraded["health"]["issues"]] == [("ConfigurationConflict", message)]
    time.sleep(3 * 60 / ONE_WALL_SECOND)  # three health checks with a Ready node: still degraded
    assert status()["health"]["issues"][0]["code"] == "ConfigurationConflict"

    aws.extension.eks.restore_addon(name, "metrics-server")
    restored = status()
    assert restored["status"] == "ACTIVE" and restored["health"]["issues"] == []
    # EventBridge does not order events: "Creation Succeeded", emitted just after the add-on turned ACTIVE, may
    # arrive after the Degraded event the test caused once it saw ACTIVE. The health events follow each other.
    wait_for(
        lambda: (
            [
                e["detail-type"]
                for e in events()
                if e["detail"]["addonName"] == "metrics-server" and "Health" in e["detail-type"]
            ]
            == ["EKS Addon Health Degraded", "EKS Addon Health Restored"]
        )
    )


# -- EKS: a zone without capacity -------------------------------------------------------------------
def test_given_a_refused_zone_when_an_eks_cluster_uses_it_then_unsupported_zone_lists_the_zones_that_work(
    client: Client, aws: AwsSandboxServer, network: dict[str, Any], role: str
) -> None:
    eks = client("eks")
    aws.extension.faults.refuse_eks_zone("us-west-2b", times=1)
    name = unique("eks-cluster")
    with pytest.raises(ClientError) as exc:
        eks.create_cluster(name=name, roleArn=role, resourcesVpcConfig={"subnetIds": network["subnets"]})
    code, message = _error(exc)
    assert code == "UnsupportedAvailabilityZoneException"
    assert message == (
        f"Cannot create cluster '{name}' because us-west-2b, the targeted availability zone, does not currently "
        "have sufficient capacity to support the cluster. Retry and choose from these availability zones: "
        "us-west-2a, us-west-2c, us-west-2d"
    )
    assert exc.value.response["validZones"] == ["us-west-2a", "us-west-2c", "us-west-2d"]
    assert exc.value.response["clusterName"] == name
    # refused once: the retry is accepted
    assert eks.create_cluster(name=name, roleArn=role, resourcesVpcConfig={"subnetIds": network["subnets"]})


# -- IAM eventual consistency ------------------------------------------------------------------------
def _new_role(client: Client, service: str) -> str:
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
    }
    return str(
        client("iam").create_role(RoleName=unique("young-role"), AssumeRolePolicyDocument=json.dumps(trust))["Role"][
            "Arn"
        ]
    )


def test_given_a_role_created_seconds_ago_when_eks_and_hyperpod_use_it_then_refused_until_it_propagates(
    client: Client, aws: AwsSandboxServer, clock: SimClock, network: dict[str, Any], lifecycle: dict[str, str]
) -> None:
    aws.extension.faults.delay_role_propagation(2 * ONE_WALL_SECOND)
    name = unique("eks-cluster")
    with clock.paused():  # the roles are young for every check below, however busy the machine is
        eks_role = _new_role(client, "eks.amazonaws.com")
        sm_role = _new_role(client, "sagemaker.amazonaws.com")
        with pytest.raises(ClientError) as exc:
            client("eks").create_cluster(
                name=name, roleArn=eks_role, resourcesVpcConfig={"subnetIds": network["subnets"]}
            )
        code, message = _error(exc)
        assert code == "InvalidParameterException"
        assert message.startswith(f"Role with arn: {eks_role}, could not be assumed")

        group = {
            "InstanceGroupName": "gpu",
            "InstanceType": "ml.g6.4xlarge",
            "InstanceCount": 1,
            "ExecutionRole": sm_role,
            "LifeCycleConfig": lifecycle,
        }
        hp_name = unique("hp-cluster")
        with pytest.raises(ClientError) as exc:
            client("sagemaker").create_cluster(ClusterName=hp_name, InstanceGroups=[group])
        code, message = _error(exc)
        assert code == "ValidationException"
        assert f"The execution role ARN {sm_role} is invalid" in message

    clock.sleep(2 * ONE_WALL_SECOND + 60)  # the window, in simulated seconds, and a minute
    assert (
        client("eks").create_cluster(name=name, roleArn=eks_role, resourcesVpcConfig={"subnetIds": network["subnets"]})[
            "cluster"
        ]["status"]
        == "CREATING"
    )
    assert client("sagemaker").create_cluster(ClusterName=hp_name, InstanceGroups=[group])["ClusterArn"]


# -- network interfaces that outlive their cluster ---------------------------------------------------
def _own_network(client: Client) -> dict[str, Any]:
    ec2 = client("ec2")
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    a = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.0.0/20", AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    b = ec2.create_subnet(VpcId=vpc, CidrBlock="10.9.16.0/20", AvailabilityZone="us-west-2b")["Subnet"]["SubnetId"]
    sg = ec2.create_security_group(GroupName=unique("sg"), Description="test", VpcId=vpc)["GroupId"]
    return {"vpc": vpc, "subnets": [a, b], "sg": sg}


def _delete_network(client: Client, net: dict[str, Any]) -> None:
    ec2 = client("ec2")
    for subnet in net["subnets"]:
        ec2.delete_subnet(SubnetId=subnet)
    ec2.delete_security_group(GroupId=net["sg"])
    for group in ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [net["vpc"]]}])["SecurityGroups"]:
        if group["GroupName"] != "default":
            ec2.delete_security_group(GroupId=group["GroupId"])
    ec2.delete_vpc(VpcId=net["vpc"])


def _enis(client: Client, vpc: str) -> list[dict[str, Any]]:
    return list(
        client("ec2").describe_network_interfaces(Filters=[{"Name": "vpc-id", "Values": [vpc]}])["NetworkInterfaces"]
    )


def test_given_a_deleted_eks_cluster_when_its_network_is_deleted_then_dependency_violation_until_enis_are_gone(
    client: Client, aws: AwsSandboxServer, role: str
) -> None:
    aws.extension.faults.linger_network_interfaces(2 * ONE_WALL_SECOND)
    net = _own_network(client)
    eks = client("eks")
    name = unique("eks-cluster")
    eks.create_cluster(
        name=name, roleArn=role, resourcesVpcConfig={"subnetIds": net["subnets"], "securityGroupIds": [net["sg"]]}
    )
    wait_for(lambda: eks.describe_cluster(name=name)["cluster"]["status"] == "ACTIVE")
    eks.delete_cluster(name=name)
    wait_for(lambda: name not in eks.list_clusters()["clusters"])

    lingering = _enis(client, net["vpc"])
    assert {e["SubnetId"] for e in lingering} == set(net["subnets"])
    assert all(e["Description"] == f"Amazon EKS {name}" for e in lingering)
    ec2 = client("ec2")
    with pytest.raises(ClientError) as exc:
        ec2.delete_subnet(SubnetId=net["subnets"][0])
    assert _error(exc) == (
        "DependencyViolation",
        f"The subnet '{net['subnets'][0]}' has dependencies and cannot be deleted.",
    )
    with pytest.raises(ClientError) as exc:
        ec2.delete_security_group(GroupId=net["sg"])
    assert _error(exc) == ("DependencyViolation", f"resource {net['sg']} has a dependent object")
    with pytest.raises(ClientError) as exc:
        ec2.delete_vpc(VpcId=net["vpc"])
    assert _error(exc)[0] == "DependencyViolation"

    wait_for(lambda: not _enis(client, net["vpc"]))
    _delete_network(client, net)
    assert not ec2.describe_vpcs(Filters=[{"Name": "vpc-id", "Values": [net["vpc"]]}])["Vpcs"]


def test_given_a_deleted_hyperpod_cluster_when_its_subnet_is_deleted_then_dependency_violation_until_enis_are_gone(
    client: Client, aws: AwsSandboxServer, role: str, lifecycle: dict[str, str]
) -> None:
    aws.extension.faults.linger_network_interfaces(2 * ONE_WALL_SECOND)
    net = _own_network(client)
    sm = client("sagemaker")
    arn = sm.create_cluster(
        ClusterName=unique("hp-cluster"),
        InstanceGroups=[
            {
                "InstanceGroupName": "gpu",
                "InstanceType": "ml.g6.4xlarge",
                "InstanceCount": 1,
                "ExecutionRole": role,
                "LifeCycleConfig": lifecycle,
            }
        ],
        VpcConfig={"Subnets": net["subnets"][:1], "SecurityGroupIds": [net["sg"]]},
    )["ClusterArn"]
    sm.delete_cluster(ClusterName=arn)

    assert {e["SubnetId"] for e in _enis(client, net["vpc"])} == {net["subnets"][0]}
    with pytest.raises(ClientError) as exc:
        client("ec2").delete_subnet(SubnetId=net["subnets"][0])
    assert _error(exc)[0] == "DependencyViolation"
    wait_for(lambda: not _enis(client, net["vpc"]))
    client("ec2").delete_subnet(SubnetId=net["subnets"][0])


# -- S3 bucket names -------------------------------------------------------------------------------
def test_given_a_bucket_just_deleted_when_its_name_is_created_again_then_operation_aborted_until_the_window_ends(
    client: Client, aws: AwsSandboxServer, clock: SimClock
) -> None:
    aws.extension.faults.delay_bucket_name_reuse(ONE_WALL_SECOND)
    s3 = client("s3")
    bucket = unique("instantstart-data")
    config = {"LocationConstraint": REGION}
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration=config)
    with clock.paused():  # the create below runs inside the window, however busy the machine is
        s3.delete_bucket(Bucket=bucket)
        with pytest.raises(ClientError) as exc:
            s3.create_bucket(Bucket=bucket, CreateBucketConfiguration=config)
    assert _error(exc) == (
        "OperationAborted",
        "A conflicting conditional operation is currently in progress against this resource. Please try again.",
    )
    assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
    clock.sleep(ONE_WALL_SECOND + 60)  # the window, in simulated seconds, and a minute
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration=config)
    assert bucket in {b["Name"] for b in s3.list_buckets()["Buckets"]}


# -- throttling -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("service", "operation", "call", "code", "status"),
    [
        ("eks", "ListClusters", lambda c: c.list_clusters(), "ThrottlingException", 400),
        ("sagemaker", "ListClusters", lambda c: c.list_clusters(), "ThrottlingException", 400),
        ("ec2", "DescribeVpcs", lambda c: c.describe_vpcs(), "RequestLimitExceeded", 503),
        ("iam", "ListRoles", lambda c: c.list_roles(), "Throttling", 400),
        ("s3", "ListBuckets", lambda c: c.list_buckets(), "SlowDown", 503),
        ("lambda", "ListFunctions", lambda c: c.list_functions(), "TooManyRequestsException", 429),
        ("stepfunctions", "ListStateMachines", lambda c: c.list_state_machines(), "ThrottlingException", 400),
    ],
)
def test_given_throttling_when_an_operation_is_called_then_the_services_throttling_error_until_it_passes(
    aws: AwsSandboxServer,
    service: str,
    operation: str,
    call: Callable[[Any], Any],
    code: str,
    status: int,
) -> None:
    no_retries = single_attempt_client(aws, service)
    aws.extension.faults.throttle(service, operation, times=2)
    for _ in range(2):
        with pytest.raises(ClientError) as exc:
            call(no_retries)
        assert _error(exc)[0] == code
        assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert call(no_retries)["ResponseMetadata"]["HTTPStatusCode"] == 200


def test_given_throttling_fewer_times_than_botocore_retries_when_called_then_the_caller_sees_success(
    aws: AwsSandboxServer,
) -> None:
    retrying = boto3.client(
        "eks",
        endpoint_url=aws.endpoint_url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": 3}),
    )
    aws.extension.faults.throttle("eks", "ListClusters", times=2)
    response = retrying.list_clusters()
    assert response["ResponseMetadata"]["RetryAttempts"] == 2


def test_given_sdk_backoff_on_the_clock_when_throttled_past_every_attempt_then_same_attempts_without_real_waits(
    aws: AwsSandboxServer, clock: SimClock
) -> None:
    """botocore's backoff between attempts (up to 20 s each in AWS) runs on the simulated clock: every attempt is
    still made and the caller still sees the throttling error, in a fraction of the real-time backoff."""
    from instantstart_sandbox import lambdas

    retrying = boto3.client(
        "eks",
        endpoint_url=aws.endpoint_url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": 6}),
    )
    aws.extension.faults.throttle("eks", "ListClusters", times=100)
    lambdas.sdk_backoff_on(clock)
    started = time.monotonic()
    try:
        with pytest.raises(ClientError) as exc:
            retrying.list_clusters()
    finally:
        lambdas.sdk_backoff_on(None)
    assert _error(exc)[0] == "ThrottlingException"
    assert exc.value.response["ResponseMetadata"]["RetryAttempts"] == 5
    assert time.monotonic() - started < 2  # five real-time backoffs would average 0.5+1+2+4+8 s


def _single_attempt(aws: AwsSandboxServer, service: str) -> Any:
    aws.extension.faults.clear()  # what earlier tests left pending
    return single_attempt_client(aws, service)


def test_given_a_connect_timeout_when_called_then_botocore_raises_connect_timeout_and_nothing_is_created(
    aws: AwsSandboxServer,
) -> None:
    from botocore.exceptions import ConnectTimeoutError

    from instantstart_sandbox.aws import transport

    transport.install()
    ec2 = _single_attempt(aws, "ec2")
    before = len(ec2.describe_vpcs()["Vpcs"])
    aws.extension.faults.timeout("ec2", "CreateVpc", times=1)
    with pytest.raises(ConnectTimeoutError) as exc:
        ec2.create_vpc(CidrBlock="10.77.0.0/16")
    assert str(exc.value).startswith("Connect timeout on endpoint URL")
    assert len(ec2.describe_vpcs()["Vpcs"]) == before, "the request never reached AWS"
    assert ec2.create_vpc(CidrBlock="10.77.0.0/16")["Vpc"]["VpcId"], "one call only"


def test_given_a_read_timeout_when_called_then_aws_did_the_work_and_botocore_raises_read_timeout(
    aws: AwsSandboxServer,
) -> None:
    from botocore.exceptions import ReadTimeoutError

    from instantstart_sandbox.aws import transport

    transport.install()
    ec2 = _single_attempt(aws, "ec2")
    before = len(ec2.describe_vpcs()["Vpcs"])
    aws.extension.faults.timeout("ec2", "CreateVpc", times=1, kind="read-timeout")
    with pytest.raises(ReadTimeoutError):
        ec2.create_vpc(CidrBlock="10.78.0.0/16")
    assert len(ec2.describe_vpcs()["Vpcs"]) == before + 1, "AWS created it; only the answer was lost"


def test_given_connect_timeouts_fewer_than_botocore_attempts_when_called_then_the_caller_sees_success(
    aws: AwsSandboxServer,
) -> None:
    from instantstart_sandbox.aws import transport

    transport.install()
    aws.extension.faults.clear()
    retrying = boto3.client(
        "eks",
        endpoint_url=aws.endpoint_url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"mode": "standard", "total_max_attempts": 4}),
    )
    aws.extension.faults.timeout("eks", "ListClusters", times=3)
    assert retrying.list_clusters()["ResponseMetadata"]["RetryAttempts"] == 3
    assert [t.code for t in aws.extension.faults.taken] == ["connect-timeout"] * 3


def test_given_a_fault_scoped_by_label_when_other_callers_call_then_only_the_labelled_calls_fail(
    aws: AwsSandboxServer,
) -> None:
    from instantstart_sandbox import iam_audit

    iam_audit.install()
    eks = _single_attempt(aws, "eks")
    only_b = lambda call: call.label == "cluster-b"  # noqa: E731
    aws.extension.faults.inject("eks", "ListClusters", "AccessDeniedException", "no", times=1, when=only_b)
    token = iam_audit._LABEL.set("cluster-a")
    try:
        eks.list_clusters()  # another cluster's call passes
    finally:
        iam_audit._LABEL.reset(token)
    token = iam_audit._LABEL.set("cluster-b")
    try:
        with pytest.raises(ClientError) as exc:
            eks.list_clusters()
    finally:
        iam_audit._LABEL.reset(token)
    assert _error(exc) == ("AccessDeniedException", "no")
    assert [c.label for c in aws.extension.calls.calls("eks")][-2:] == ["cluster-a", "cluster-b"]
    assert aws.extension.faults.pending() == []
    aws.extension.faults.inject("eks", "ListClusters", "AccessDeniedException", "no", times=2, when=only_b)
    assert aws.extension.faults.withdraw(only_b) == 2 and aws.extension.faults.pending() == []
