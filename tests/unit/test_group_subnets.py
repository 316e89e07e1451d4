"""Compute subnets of instance groups (capacity/subnets.py) in moto: the VPC's subnet lock under concurrent
callers, a stale lock, dedicated subnets (own /20, reused by name, deleted with the network)."""

from __future__ import annotations

import ipaddress
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
import pytest

from instantstart.capacity import subnets
from instantstart.errors import StageFailed
from instantstart.models.cluster import InstanceGroupRequest
from instantstart.network import vpc
from instantstart.store.table import Store

ZONE = "us-west-2c"


class SlowEc2:
    """An EC2 client whose DescribeSubnets answers late, so two callers both see "no subnet yet" unless a lock
    keeps them apart (the window real EC2 leaves between DescribeSubnets and CreateSubnet, widened)."""

    def __init__(self, ec2: Any, delay: float = 0.3) -> None:
        self._ec2, self._delay = ec2, delay

    def describe_subnets(self, **kwargs: Any) -> Any:
        out = self._ec2.describe_subnets(**kwargs)
        time.sleep(self._delay)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ec2, name)


@pytest.fixture(autouse=True)
def atomic_dynamodb(monkeypatch: pytest.MonkeyPatch) -> None:
    """DynamoDB's conditional writes are atomic; in-process moto checks, then writes. These tests race threads on
    the lock record, so moto's writes take turns here (as the sandbox server's DynamoDB requests do)."""
    from moto.dynamodb.models import DynamoDBBackend

    turn = threading.RLock()
    for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
        original = getattr(DynamoDBBackend, name)

        def serialised(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with turn:
                return __original(self, *args, **kwargs)

        monkeypatch.setattr(DynamoDBBackend, name, serialised)


@pytest.fixture
def ec2(aws: Any) -> Any:
    return aws.client("ec2")


@pytest.fixture
def store(table: str) -> Store:
    return Store(boto3.client("dynamodb", region_name="us-west-2"), table)


@pytest.fixture
def network(ec2: Any) -> dict[str, Any]:
    ids = vpc.ensure_network(ec2, "demo", "us-west-2", ZONE).model_dump(by_alias=True, exclude_none=True)
    vpc.ensure_private_routes(ec2, ids["privateRouteTableId"], ids["natGatewayId"])
    return ids


def where(network: dict[str, Any]) -> dict[str, Any]:
    return {
        "tag": "demo",
        "vpc_id": network["vpcId"],
        "availability_zone": ZONE,
        "nat_gateway_id": network["natGatewayId"],
        "s3_endpoint_id": network["s3EndpointId"],
    }


def subnets_named(ec2: Any, vpc_id: str, name: str) -> list[dict[str, Any]]:
    return ec2.describe_subnets(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "tag:Name", "Values": [name]}]
    )["Subnets"]


def run_concurrently(n: int, call: Any) -> list[Any]:
    start = threading.Barrier(n)

    def one(_: int) -> Any:
        start.wait()
        try:
            return call()
        except Exception as exc:  # noqa: BLE001 - the test looks at what each caller got
            return exc

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def test_given_slow_ec2_without_the_lock_when_two_callers_race_then_they_make_two_subnets_or_fail(
    ec2: Any, network: dict[str, Any]
) -> None:
    # the race the lock exists for: without it, both callers see no subnet and both create one
    slow = SlowEc2(ec2)

    results = run_concurrently(2, lambda: vpc.ensure_compute_subnet(slow, **where(network)))

    created = subnets_named(ec2, network["vpcId"], f"hp-compute-{ZONE}")
    assert len(created) == 2 or any(isinstance(r, Exception) for r in results)


def test_given_concurrent_adds_in_one_zone_when_ensuring_the_group_subnet_then_exactly_one_subnet(
    ec2: Any, network: dict[str, Any], store: Store
) -> None:
    slow = SlowEc2(ec2)

    results = run_concurrently(3, lambda: subnets.ensure_group_subnet(store, slow, **where(network)))

    assert not [r for r in results if isinstance(r, Exception)], results
    created = subnets_named(ec2, network["vpcId"], f"hp-compute-{ZONE}")
    assert len(created) == 1
    assert {r.subnet_id for r in results} == {created[0]["SubnetId"]}
    assert sorted(r.source for r in results) == ["created", "reused", "reused"]


def test_given_a_zone_and_a_dedicated_subnet_created_at_once_then_their_cidrs_do_not_collide(
    ec2: Any, network: dict[str, Any], store: Store
) -> None:
    slow = SlowEc2(ec2)
    calls = iter([None, "accel", "infer"])
    lock = threading.Lock()

    def call() -> Any:
        with lock:
            group = next(calls)
        return subnets.ensure_group_subnet(store, slow, **where(network), dedicated_group=group)

    results = run_concurrently(3, call)

    assert not [r for r in results if isinstance(r, Exception)], results
    blocks = [ipaddress.ip_network(r.cidr_block) for r in results]
    assert len({r.subnet_id for r in results}) == 3
    assert not any(a.overlaps(b) for i, a in enumerate(blocks) for b in blocks[i + 1 :])


def test_given_a_lock_whose_holder_crashed_when_its_lease_expired_then_the_next_caller_takes_it_over(
    ec2: Any, network: dict[str, Any], store: Store
) -> None:
    name = subnets.subnet_lock_name(network["vpcId"])
    store.acquire_lock(name, "crashed-holder", now=int(time.time()) - 120, lease_seconds=60)

    started = time.monotonic()
    result = subnets.ensure_group_subnet(store, ec2, **where(network))

    assert result.source == "created"
    assert time.monotonic() - started < 5  # no wait for an expired lease


def test_given_a_live_lock_when_it_stays_held_past_the_wait_then_subnet_lock_timeout(
    network: dict[str, Any], store: Store
) -> None:
    name = subnets.subnet_lock_name(network["vpcId"])
    store.acquire_lock(name, "busy-holder", now=int(time.time()), lease_seconds=600)
    slept: list[float] = []

    with pytest.raises(StageFailed) as failed, subnets.subnet_lock(store, network["vpcId"], wait_seconds=0.5):
        pass

    assert failed.value.code == "SubnetLockTimeout"
    assert network["vpcId"] in str(failed.value)
    # and a caller that waits gives up only after its wait, backing off between attempts
    fake_now = [1000.0]
    with (
        pytest.raises(StageFailed),
        subnets.subnet_lock(
            store,
            network["vpcId"],
            wait_seconds=10,
            clock=lambda: fake_now[0],
            sleep=lambda s: (slept.append(s), fake_now.__setitem__(0, fake_now[0] + s)),
        ),
    ):
        pass
    assert slept[:3] == [0.2, 0.4, 0.8] and max(slept) <= 5.0 and sum(slept) >= 10


def test_given_a_held_lock_when_the_holder_releases_it_then_a_waiting_caller_gets_it(
    network: dict[str, Any], store: Store
) -> None:
    entered: list[str] = []

    def holder() -> None:
        with subnets.subnet_lock(store, network["vpcId"]):
            entered.append("first")
            time.sleep(0.5)
            entered.append("first done")

    thread = threading.Thread(target=holder)
    thread.start()
    time.sleep(0.1)
    with subnets.subnet_lock(store, network["vpcId"], wait_seconds=10):
        entered.append("second")
    thread.join()

    assert entered == ["first", "first done", "second"]


def test_given_a_dedicated_group_when_its_subnet_is_ensured_twice_then_one_tagged_20_distinct_from_the_zones(
    ec2: Any, network: dict[str, Any], store: Store
) -> None:
    zone = subnets.ensure_group_subnet(store, ec2, **where(network))
    first = subnets.ensure_group_subnet(store, ec2, **where(network), dedicated_group="accel")
    again = subnets.ensure_group_subnet(store, ec2, **where(network), dedicated_group="accel")
    other = subnets.ensure_group_subnet(store, ec2, **where(network), dedicated_group="infer")

    assert (first.source, again.source) == ("created", "reused")
    assert again.subnet_id == first.subnet_id
    assert len({zone.subnet_id, first.subnet_id, other.subnet_id}) == 3
    [subnet] = ec2.describe_subnets(SubnetIds=[first.subnet_id])["Subnets"]
    tags = {t["Key"]: t["Value"] for t in subnet["Tags"]}
    assert tags["Name"] == "hp-group-accel"
    assert tags["instantstart:instance-group"] == "accel"
    assert tags["instantstart:cluster-tag"] == "demo" and tags["instantstart:managed"] == "true"
    assert subnet["AvailabilityZone"] == ZONE
    assert ipaddress.ip_network(subnet["CidrBlock"]).prefixlen == 20
    tables = ec2.describe_route_tables(Filters=[{"Name": "association.subnet-id", "Values": [first.subnet_id]}])
    routes = tables["RouteTables"][0]["Routes"]
    assert any(r.get("NatGatewayId") == network["natGatewayId"] for r in routes)


def test_given_a_dedicated_subnet_when_the_network_is_deleted_then_it_is_gone_with_the_vpc(
    ec2: Any, network: dict[str, Any], store: Store
) -> None:
    # moto records an endpoint's added route tables without the prefix-list route AWS adds; the sandbox's fix
    from instantstart_sandbox import moto_fixes

    moto_fixes.install()
    dedicated = subnets.ensure_group_subnet(store, ec2, **where(network), dedicated_group="accel")

    vpc.delete_network(ec2, "demo")
    assert vpc.delete_network(ec2, "demo") == []

    assert dedicated.subnet_id not in {s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]}
    assert network["vpcId"] not in {v["VpcId"] for v in ec2.describe_vpcs()["Vpcs"]}


def test_given_dedicated_subnet_and_subnet_id_when_validating_a_group_then_422_names_both_fields() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        InstanceGroupRequest.model_validate(
            {
                "instanceGroupName": "accel",
                "instanceType": "ml.g6.4xlarge",
                "instanceCount": 1,
                "subnetId": "subnet-0123456789abcdef0",
                "dedicatedSubnet": True,
            }
        )

    [error] = err.value.errors()
    assert error["loc"] == ("dedicatedSubnet",)
    assert "subnetId" in error["msg"] and "dedicatedSubnet" in error["msg"]
    ok = InstanceGroupRequest.model_validate(
        {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "dedicatedSubnet": True}
    )
    assert ok.dedicated_subnet is True and ok.subnet_id is None


# -- a scale-up HyperPod cannot complete; the record after a change ---------------------------------
CAPACITY = (
    "We currently do not have sufficient ml.g6.4xlarge capacity in the Availability Zone you requested (us-west-2c)."
)
SUMMARY = "InstanceGroup accel in Cluster hp-cluster-demo failed to launch 1 instances; retrying"


def test_given_an_ec2_capacity_message_when_classifying_then_insufficient_capacity_not_final_and_verbatim() -> None:
    from instantstart.clusters.instance_groups import classify_launch_failure

    failure = classify_launch_failure(SUMMARY, CAPACITY)

    assert (failure.code, failure.final) == ("InsufficientCapacity", False)
    assert failure.message == f"{SUMMARY}: {CAPACITY}"


@pytest.mark.parametrize(
    "detail",
    [
        "ResourceLimitExceeded: The account-level service limit 'ml.g6.4xlarge for cluster usage' is 1",
        "Unsupported: Your requested instance type (g6.4xlarge) is not supported in your requested zone.",
    ],
)
def test_given_a_quota_or_unsupported_type_when_classifying_then_final_with_its_own_code(detail: str) -> None:
    from instantstart.clusters.instance_groups import classify_launch_failure

    failure = classify_launch_failure(SUMMARY, detail)

    assert failure.final is True
    assert failure.code == detail.split(":")[0]
    assert SUMMARY in failure.message and detail in failure.message


def test_given_an_unknown_failure_when_classifying_then_instance_launch_failed_and_the_summary_alone() -> None:
    from instantstart.clusters.instance_groups import classify_launch_failure

    failure = classify_launch_failure(SUMMARY, None)

    assert (failure.code, failure.final, failure.message) == ("InstanceLaunchFailed", False, SUMMARY)


def _group(name: str, count: int, **extra: Any) -> InstanceGroupRequest:
    return InstanceGroupRequest.model_validate(
        {"instanceGroupName": name, "instanceType": "ml.g6.4xlarge", "instanceCount": count, **extra}
    )


def test_given_a_scale_and_an_add_when_rebuilding_the_request_then_counts_follow_targets_and_the_add_is_kept() -> None:
    from instantstart.clusters.instance_groups import groups_after_change
    from instantstart.models.instance_groups import InstanceGroupChange

    requested = [_group("accel", 1, labels={"team": "a"}), _group("gone", 1)]
    workers = _group("workers", 2, dedicatedSubnet=True)
    described = [
        {"InstanceGroupName": "accel", "TargetCount": 3, "Status": "InService"},
        {"InstanceGroupName": "workers", "TargetCount": 2, "Status": "InService"},
    ]

    after = groups_after_change(requested, described, InstanceGroupChange(instance_group_name="workers", group=workers))

    assert [(g.instance_group_name, g.instance_count) for g in after] == [("accel", 3), ("workers", 2)]
    assert after[0].labels == {"team": "a"} and after[1].dedicated_subnet is True


def test_given_a_scale_to_0_below_a_minimum_when_rebuilding_then_the_request_stays_valid() -> None:
    from instantstart.clusters.instance_groups import groups_after_change
    from instantstart.models.instance_groups import InstanceGroupChange

    requested = [_group("accel", 3, minInstanceCount=3)]

    down = groups_after_change(
        requested,
        [{"InstanceGroupName": "accel", "TargetCount": 2, "Status": "InService"}],
        InstanceGroupChange(instance_group_name="accel", instance_count=2),
    )
    zero = groups_after_change(
        requested,
        [{"InstanceGroupName": "accel", "TargetCount": 0, "Status": "InService"}],
        InstanceGroupChange(instance_group_name="accel", instance_count=0),
    )

    assert (down[0].instance_count, down[0].min_instance_count) == (2, 2)
    assert (zero[0].instance_count, zero[0].min_instance_count) == (0, 0)  # the stored view shows the empty group
    for group in (*down, *zero):
        InstanceGroupRequest.model_validate(group.model_dump(by_alias=True))  # what a read of the record does


def test_given_a_lease_left_by_a_dead_attempt_when_the_same_operation_retries_then_it_takes_the_lock_back_at_once(
    network: dict[str, Any], store: Store
) -> None:
    name = subnets.subnet_lock_name(network["vpcId"])
    store.acquire_lock(name, "op-1:subnets", now=int(time.time()), lease_seconds=600)  # the attempt that died
    slept: list[float] = []

    with subnets.subnet_lock(store, network["vpcId"], owner="op-1:subnets", sleep=slept.append) as owner:
        assert owner == "op-1:subnets"
    assert slept == [], "the retry of the same operation does not wait out its own dead lease"
    store.acquire_lock(name, "op-1:subnets", now=int(time.time()), lease_seconds=600)
    with (
        pytest.raises(StageFailed) as other,
        subnets.subnet_lock(store, network["vpcId"], owner="op-2:subnets", wait_seconds=0.3),
    ):
        pass
    assert other.value.code == "SubnetLockTimeout", "another operation still waits for the lease"
