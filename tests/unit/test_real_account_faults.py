"""Real-account faults the product absorbs: which AWS errors are retried (and how), and the EKS zone-fallback rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from instantstart.clusters.records import parse_error
from instantstart.clusters.stages.network import offered_zones
from instantstart.clusters.steps import ROLE_PROPAGATION_DELAY, error_name
from instantstart.errors import aws_error
from instantstart.models.resources import NetworkResources
from instantstart.models.workflow import StepError
from instantstart.network import vpc
from instantstart.network.cidr import control_plane_cidrs

ROOT = Path(__file__).resolve().parents[2]
ROLE = "arn:aws:iam::123456789012:role/instantstart-EksClusterRole-1A2B3C"
EKS_ROLE_MESSAGE = (
    f"Role with arn: {ROLE}, could not be assumed because it does not exist or the trusted entity is not correct"
)
SAGEMAKER_ROLE_MESSAGE = (
    f'The execution role ARN "{ROLE}" is invalid. Please ensure that the role exists and that its trust '
    'relationship policy allows the action "sts:AssumeRole" for the service principal "sagemaker.amazonaws.com".'
)


# -- IAM propagation: classified, retried, recorded verbatim -----------------------------------------------------
@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("InvalidParameterException", EKS_ROLE_MESSAGE),
        ("ValidationException", SAGEMAKER_ROLE_MESSAGE),
        ("ValidationException", SAGEMAKER_ROLE_MESSAGE.replace('"', "'")),
        ("ValidationException", f"SageMaker was unable to assume the role '{ROLE}'"),
    ],
)
def test_given_a_role_that_cannot_be_assumed_yet_then_the_error_is_named_role_propagation_delay(
    code: str, message: str
) -> None:
    assert error_name(code, message) == ROLE_PROPAGATION_DELAY


@pytest.mark.parametrize(
    ("code", "message"),
    [
        (
            "ValidationException",
            "1 validation error detected: Value 'ml.x.large' at 'instanceGroups.1.member.instanceType' failed to "
            "satisfy constraint: Member must satisfy enum value set",
        ),
        ("InvalidParameterException", "unsupported Kubernetes version 1.19"),
        ("AccessDeniedException", f"User is not authorized to perform: iam:PassRole on resource: {ROLE}"),
        ("ThrottlingException", "Rate exceeded"),
    ],
)
def test_given_any_other_error_then_its_name_is_its_aws_code(code: str, message: str) -> None:
    assert error_name(code, message) == code


def test_given_a_classified_error_then_the_workflow_matches_the_class_and_records_the_aws_code_verbatim() -> None:
    exc = aws_error(
        "InvalidParameterException", EKS_ROLE_MESSAGE, name=error_name("InvalidParameterException", EKS_ROLE_MESSAGE)
    )
    cause = json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)})

    assert type(exc).__name__ == "RolePropagationDelay"
    recorded = parse_error(StepError(Error=type(exc).__name__, Cause=cause))
    assert recorded.model_dump() == {"code": "InvalidParameterException", "message": EKS_ROLE_MESSAGE}


# -- the ASL's Retry lists ---------------------------------------------------------------------------------------
def _tasks() -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []

    def walk(states: dict[str, Any]) -> None:
        for name, state in states.items():
            if state["Type"] == "Task":
                found.append((name, state))
            for branch in state.get("Branches", []):
                walk(branch["States"])
            if "ItemProcessor" in state:
                walk(state["ItemProcessor"]["States"])

    for asl in ("create_cluster.asl.json", "delete_cluster.asl.json"):
        walk(json.loads((ROOT / "statemachines" / asl).read_text())["States"])
    return found


@pytest.mark.parametrize("service", ["ec2", "eks", "sagemaker", "iam", "s3", "sts", "lambda", "dynamodb", "events"])
def test_given_the_throttle_code_the_sandbox_answers_for_a_service_then_every_task_retries_it(service: str) -> None:
    from instantstart_sandbox.aws.faults import throttling_error

    code = throttling_error(service).code
    for name, state in _tasks():
        assert any(code in r["ErrorEquals"] for r in state["Retry"]), f"{name} does not retry {code}"


@pytest.mark.parametrize("error", [ROLE_PROPAGATION_DELAY, "OperationAborted"])
def test_given_a_transient_real_account_error_then_every_task_retries_it_with_a_bounded_backoff(error: str) -> None:
    for name, state in _tasks():
        retry = next((r for r in state["Retry"] if error in r["ErrorEquals"]), None)
        assert retry is not None, f"{name} does not retry {error}"
        waits = [
            min(retry["IntervalSeconds"] * retry["BackoffRate"] ** n, retry["MaxDelaySeconds"])
            for n in range(retry["MaxAttempts"])
        ]
        # long enough for IAM / S3 to catch up (minutes), short enough to fail a real misconfiguration soon
        assert 300 <= sum(waits) <= 900, f"{name}: {retry}"


# -- the zone-fallback rule --------------------------------------------------------------------------------------
def test_given_the_requested_zone_refused_then_it_is_replaced_by_the_first_offered_zone_not_in_use() -> None:
    zones = vpc.fallback_zones(["us-west-2c", "us-west-2a"], ["us-west-2c"], ["us-west-2a", "us-west-2b", "us-west-2d"])
    assert zones == ["us-west-2b", "us-west-2a"]


def test_given_a_zone_refused_earlier_when_it_is_offered_again_then_it_is_not_chosen() -> None:
    zones = vpc.fallback_zones(
        ["us-west-2b", "us-west-2a"], ["us-west-2c", "us-west-2b"], ["us-west-2a", "us-west-2c", "us-west-2d"]
    )
    assert zones == ["us-west-2d", "us-west-2a"]


def test_given_too_few_offered_zones_then_there_is_no_fallback() -> None:
    assert vpc.fallback_zones(["us-west-2c", "us-west-2a"], ["us-west-2c", "us-west-2a"], ["us-west-2b"]) is None
    assert vpc.fallback_zones(["us-west-2c", "us-west-2a"], ["us-west-2c"], ["us-west-2a"]) is None


def _unsupported_zone(response_extra: dict[str, Any], message: str) -> ClientError:
    response: dict[str, Any] = {
        "Error": {"Code": "UnsupportedAvailabilityZoneException", "Message": message},
        **response_extra,
    }
    return ClientError(response, "CreateCluster")  # type: ignore[arg-type]


def test_given_an_unsupported_zone_error_then_the_offered_zones_come_from_valid_zones_or_the_message() -> None:
    message = (
        "Cannot create cluster 'eks-cluster-demo' because us-west-2c, the targeted availability zone, does not "
        "currently have sufficient capacity to support the cluster. Retry and choose from these availability zones: "
        "us-west-2a, us-west-2b, us-west-2d"
    )
    offered = ["us-west-2a", "us-west-2b", "us-west-2d"]

    assert offered_zones(_unsupported_zone({"validZones": offered}, "capacity")) == offered
    assert offered_zones(_unsupported_zone({}, message)) == offered
    assert offered_zones(_unsupported_zone({}, "no zones named")) == []


# -- moving the control-plane subnets (moto EC2) -----------------------------------------------------------------
def test_given_a_refused_zone_when_moving_the_private_subnets_then_only_that_slot_moves_and_eks_skips_its_public_subnet(
    aws: Any,
) -> None:
    ec2 = aws.client("ec2")
    net = vpc.ensure_network(ec2, "demo", "us-west-2", "us-west-2c")
    assert net.zones == ["us-west-2c", "us-west-2a"]
    kept = str((net.private_subnet_ids or [])[1])

    def move() -> list[str]:
        return vpc.move_private_subnets(
            ec2,
            tag="demo",
            vpc_id=str(net.vpc_id),
            vpc_cidr=str(net.cidr_block),
            private_route_table_id=str(net.private_route_table_id),
            old_zones=["us-west-2c", "us-west-2a"],
            new_zones=["us-west-2d", "us-west-2a"],
        )

    private = move()
    assert move() == private, "moving again changes nothing"

    subnets = {s["SubnetId"]: s for s in ec2.describe_subnets(SubnetIds=private)["Subnets"]}
    assert private[1] == kept
    assert [subnets[s]["AvailabilityZone"] for s in private] == ["us-west-2d", "us-west-2a"]
    assert [subnets[s]["CidrBlock"] for s in private] == control_plane_cidrs(str(net.cidr_block))["private"]
    table = ec2.describe_route_tables(RouteTableIds=[str(net.private_route_table_id)])["RouteTables"][0]
    assert {a["SubnetId"] for a in table["Associations"] if a.get("SubnetId")} == set(private)
    gone = (net.private_subnet_ids or [])[0]
    assert gone not in {s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]}

    moved = net.model_copy(update={"zones": ["us-west-2d", "us-west-2a"], "private_subnet_ids": private})
    public_2a = (net.public_subnet_ids or [])[1]
    assert vpc.eks_subnet_ids(ec2, moved) == [*private, public_2a]
    # a retried network stage keeps the moved zones instead of rebuilding the original ones
    again = vpc.ensure_network(ec2, "demo", "us-west-2", "us-west-2c", ["us-west-2d", "us-west-2a"])
    assert again.private_subnet_ids == private and again.public_subnet_ids == net.public_subnet_ids


def test_given_no_refused_zone_then_eks_gets_every_control_plane_subnet(aws: Any) -> None:
    ec2 = aws.client("ec2")
    net = vpc.ensure_network(ec2, "demo", "us-west-2", "us-west-2c")
    assert vpc.eks_subnet_ids(ec2, net) == [*(net.private_subnet_ids or []), *(net.public_subnet_ids or [])]
    assert vpc.eks_subnet_ids(ec2, NetworkResources(private_subnet_ids=["subnet-1"])) == ["subnet-1"]
