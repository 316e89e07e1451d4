"""Real-account faults through the HTTP API: each is absorbed (zone fallback, bounded retries) or ends the stage
FAILED with the AWS code and message verbatim, and a stage retry succeeds once the fault cleared.

Every test restores the sandbox faults it set (the sandbox is shared by the tests of this file).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from instantstart.naming import eks_cluster_name
from instantstart_client.api import InstantStartClient
from instantstart_sandbox.aws.faults import FaultInjector
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, assert_only_network_ran, terminal

Wait = Callable[..., dict[str, Any]]
ZONE = "us-west-2c"


@pytest.fixture
def faults(sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultInjector]:
    """The sandbox's fault injector; every fault and window is back to what it was after the test."""
    injector: FaultInjector = sandbox.aws.extension.faults
    windows = {
        name: getattr(injector, name)
        for name in ("role_propagation_seconds", "kube_access_seconds", "eni_linger_seconds", "bucket_reuse_seconds")
    }
    yield injector
    monkeypatch.undo()  # spies first, so clear() runs on the real injector
    injector.clear()
    for name, value in windows.items():
        setattr(injector, name, value)


def _client(sandbox: Sandbox, service: str) -> Any:
    return boto3.client(service, endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)


def _stage(cluster: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in cluster["stages"] if s["name"] == name)


def _until(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _stage_errors(cluster: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """Each stage's name, status and error: what an assertion on a cluster's status shows when it fails."""
    return [(s["name"], s["status"], s.get("error")) for s in cluster["stages"]]


def _roles_propagate_from_first_use(
    faults: FaultInjector, monkeypatch: pytest.MonkeyPatch, seconds: float
) -> list[str]:
    """Every role counts as created the first time EKS or SageMaker checks it (a stack deployed moments
    before the create), and cannot be assumed for ``seconds`` (simulated) after that. Returns the refused
    role ARNs, one entry per refusal."""
    real = faults.role_propagating
    first_used: set[str] = set()
    refusals: list[str] = []

    def propagating(role_arn: str) -> bool:
        if ":role/" in role_arn and role_arn not in first_used:
            first_used.add(role_arn)
            faults.role_created(role_arn.rsplit("/", 1)[-1])
        refused = real(role_arn)
        if refused:
            refusals.append(role_arn)
        return refused

    monkeypatch.setattr(faults, "role_propagating", propagating)
    faults.delay_role_propagation(seconds)
    return refusals


def test_given_refused_eks_zones_when_creating_then_the_control_plane_falls_back_to_offered_zones_and_is_ready(
    api: InstantStartClient, sandbox: Sandbox, faults: FaultInjector, wait_for: Wait
) -> None:
    # the requested zone and the first zone offered instead both lack EKS control-plane capacity
    faults.refuse_eks_zone("us-west-2c")
    faults.refuse_eks_zone("us-west-2b")

    api.create_cluster("zonefall", ZONE, [GROUP])
    ready = wait_for(api, "zonefall", terminal)

    assert ready["status"] == "READY", _stage_errors(ready)
    network = _stage(ready, "network")
    assert network["attempts"] == 1
    assert network["resources"]["zones"] == ["us-west-2d", "us-west-2a"]
    assert network["resources"]["refusedZones"] == ["us-west-2c", "us-west-2b"]
    assert network["observedStatus"] == "EKS ACTIVE in us-west-2d, us-west-2a (EKS refused us-west-2c, us-west-2b)"
    ec2 = _client(sandbox, "ec2")
    eks_subnets = _client(sandbox, "eks").describe_cluster(name=eks_cluster_name("zonefall"))["cluster"][
        "resourcesVpcConfig"
    ]["subnetIds"]
    zones = {s["AvailabilityZone"] for s in ec2.describe_subnets(SubnetIds=eks_subnets)["Subnets"]}
    assert zones == {"us-west-2d", "us-west-2a"}
    compute = ec2.describe_subnets(SubnetIds=[_stage(ready, "network")["resources"]["computeSubnetId"]])
    assert compute["Subnets"][0]["AvailabilityZone"] == ZONE, "HyperPod nodes stay in the requested zone"


def test_given_eks_refuses_every_zone_it_offers_when_creating_then_network_fails_verbatim_and_a_retry_is_ready(
    api: InstantStartClient, faults: FaultInjector, wait_for: Wait
) -> None:
    for zone in ("us-west-2a", "us-west-2b", "us-west-2c"):
        faults.refuse_eks_zone(zone)

    api.create_cluster("nozone", ZONE, [GROUP])
    failed = wait_for(api, "nozone", terminal)

    assert failed["status"] == "FAILED"
    network = _stage(failed, "network")
    assert network["status"] == "FAILED"
    # two fallbacks (us-west-2a, then us-west-2b refused), then the third refusal verbatim
    assert network["error"] == {
        "code": "UnsupportedAvailabilityZoneException",
        "message": f"Cannot create cluster '{eks_cluster_name('nozone')}' because us-west-2c, the targeted "
        "availability zone, does not currently have sufficient capacity to support the cluster. Retry and choose "
        "from these availability zones: us-west-2a, us-west-2b, us-west-2d",
    }
    assert network["resources"]["refusedZones"] == ["us-west-2a", "us-west-2b"]
    assert_only_network_ran(failed)

    faults.clear()
    retry = api.retry_stage("nozone", "network")
    ready = wait_for(api, "nozone", lambda c: terminal(c) and c["currentOperationId"] == retry["operationId"])
    assert ready["status"] == "READY", _stage_errors(ready)
    network = _stage(ready, "network")
    assert network["attempts"] == 2 and network["error"] is None
    assert network["resources"]["zones"] == ["us-west-2c", "us-west-2d"]


def test_given_roles_created_moments_before_the_create_when_creating_then_retries_absorb_iam_propagation(
    api: InstantStartClient, faults: FaultInjector, monkeypatch: pytest.MonkeyPatch, wait_for: Wait
) -> None:
    refusals = _roles_propagate_from_first_use(faults, monkeypatch, seconds=60)

    api.create_cluster("iamdelay", ZONE, [GROUP])
    ready = wait_for(api, "iamdelay", terminal)

    assert ready["status"] == "READY", _stage_errors(ready)
    assert all(s["attempts"] == 1 and s["error"] is None for s in ready["stages"])
    assert len(set(refusals)) == 2, f"EKS and SageMaker must each have refused their role: {refusals}"


def test_given_a_role_that_never_propagates_when_creating_then_network_fails_verbatim_and_a_retry_is_ready(
    api: InstantStartClient, faults: FaultInjector, monkeypatch: pytest.MonkeyPatch, wait_for: Wait
) -> None:
    refusals = _roles_propagate_from_first_use(faults, monkeypatch, seconds=10**9)

    api.create_cluster("iamstuck", ZONE, [GROUP])
    failed = wait_for(api, "iamstuck", terminal)

    assert failed["status"] == "FAILED"
    network = _stage(failed, "network")
    assert len(refusals) > 1, "the refusal is retried before the stage fails"
    assert network["error"] == {
        "code": "InvalidParameterException",
        "message": f"Role with arn: {refusals[0]}, could not be assumed because it does not exist or the trusted "
        "entity is not correct",
    }

    faults.delay_role_propagation(0)
    retry = api.retry_stage("iamstuck", "network")
    ready = wait_for(api, "iamstuck", lambda c: terminal(c) and c["currentOperationId"] == retry["operationId"])
    assert ready["status"] == "READY", _stage_errors(ready)
    assert _stage(ready, "network")["attempts"] == 2


def test_given_a_bucket_name_deleted_moments_ago_when_the_tag_is_created_again_then_retries_absorb_it(
    api: InstantStartClient, faults: FaultInjector, monkeypatch: pytest.MonkeyPatch, wait_for: Wait
) -> None:
    api.create_cluster("reborn", ZONE, [GROUP])
    assert wait_for(api, "reborn", terminal)["status"] == "READY"
    delete = api.delete_cluster("reborn")
    _until(lambda: api.get_operation(delete["operationId"])["status"] in ("SUCCEEDED", "FAILED"), "the delete")
    assert api.get_operation(delete["operationId"])["status"] == "SUCCEEDED"

    # S3 keeps the deleted name out of reach for a while: CreateBucket answers OperationAborted
    real = faults.bucket_name_reusable
    refused: list[str] = []

    def reusable(bucket: str) -> bool:
        ok = real(bucket)
        if not ok:
            refused.append(bucket)
        return ok

    monkeypatch.setattr(faults, "bucket_name_reusable", reusable)
    faults.delay_bucket_name_reuse(10**9)
    again = api.create_cluster("reborn", ZONE, [GROUP])
    _until(lambda: bool(refused), "CreateBucket to be refused", timeout=240)
    faults.delay_bucket_name_reuse(0)  # the name is free again

    ready = wait_for(api, "reborn", lambda c: terminal(c) and c["currentOperationId"] == again["operationId"])
    assert ready["status"] == "READY", _stage_errors(ready)
    storage = _stage(ready, "storage")
    assert storage["attempts"] == 1 and storage["error"] is None
    assert storage["resources"]["bucketName"] == refused[0]
