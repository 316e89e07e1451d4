"""The demo flow (the article's transcript as a program) against the fake API."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from instantstart_client.api import InstantStartClient
from instantstart_client.demo import run_demo
from instantstart_client.testing import FakeInstantStartApi

ACCESS_KEY, SECRET_KEY = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUMMARY = """\
| EKS Cluster      | eks-cluster-demo                 |
| HyperPod Cluster | hp-cluster-demo                  |
| Node             | 1x ml.g6.4xlarge (On-Demand)     |
| Node Status      | Ready / Schedulable              |
| S3 Storage       | s3-claim mounted (Bound)         |"""


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy credentials and region; no profile, config file or metadata service."""
    for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION", "INSTANTSTART_API_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))


@pytest.fixture
def fake() -> Iterator[FakeInstantStartApi]:
    """The fake API, checking every request's SigV4 signature."""
    with FakeInstantStartApi(credentials=(ACCESS_KEY, SECRET_KEY, None)) as api:
        yield api


def demo(fake: FakeInstantStartApi, **kwargs: object) -> tuple[int, str]:
    out = io.StringIO()
    code = run_demo(InstantStartClient(fake.url), Console(file=out, width=160), poll_interval=0.01, **kwargs)  # type: ignore[arg-type]
    return code, out.getvalue()


def test_the_demo_inspects_then_creates_walks_every_stage_and_prints_the_summary(
    fake: FakeInstantStartApi,
) -> None:
    """Given two existing clusters and a fresh tag,
    when the demo runs,
    then it lists clusters, checks the zone and the instance type in that zone, creates the cluster,
    shows each stage going RUNNING → SUCCEEDED in order, returns 0 and ends with the summary table."""
    fake.add_cluster("hypd-0304a")
    fake.add_cluster("hypd-0304b")

    code, out = demo(fake)

    assert code == 0
    assert "There are currently 2 existing clusters." in out
    assert [(r.method, r.target) for r in fake.requests[:4]] == [
        ("GET", "/clusters"),
        ("GET", "/catalog/availability-zones"),
        ("GET", "/catalog/instance-types?availabilityZone=us-west-2c"),
        ("POST", "/clusters"),
    ]
    assert fake.requests[3].json()["instanceGroups"] == [
        {
            "instanceGroupName": "accel",
            "instanceType": "ml.g6.4xlarge",
            "instanceCount": 1,
            "capacityType": "OnDemand",
        }
    ]
    stage_lines = [line.split()[3:6] for line in out.splitlines() if " stage " in line]
    assert stage_lines == [
        [str(order), name, status]
        for order, name in enumerate(("network", "access", "dependencies", "hyperpod", "storage", "verify"), 1)
        for status in ("RUNNING", "SUCCEEDED")
    ]
    assert out.rstrip().endswith(SUMMARY)
    assert fake.clusters["demo"]["status"] == "READY"


def test_the_summary_comes_from_the_api_answer(fake: FakeInstantStartApi) -> None:
    """Given another tag, instance type and count,
    when the demo runs,
    then the summary shows those names, that type and count (nothing is fixed text)."""
    code, out = demo(fake, cluster_tag="llm", instance_type="ml.p5.48xlarge", instance_count=2)
    assert code == 0
    tail = out.rstrip().splitlines()[-5:]
    assert tail[0] == "| EKS Cluster      | eks-cluster-llm                  |"
    assert tail[1] == "| HyperPod Cluster | hp-cluster-llm                   |"
    assert tail[2] == "| Node             | 2x ml.p5.48xlarge (On-Demand)    |"


def test_an_existing_ready_cluster_is_reported_and_not_created_again(fake: FakeInstantStartApi) -> None:
    """Given a READY cluster tagged demo,
    when the demo runs,
    then it says the cluster exists and is READY, shows its summary, creates nothing, returns 0."""
    fake.add_cluster("demo")
    code, out = demo(fake)
    assert code == 0
    assert "already exists and is READY" in out
    assert out.rstrip().endswith(SUMMARY)
    assert fake.requests_to("POST", "/clusters") == []


def test_an_existing_failed_cluster_names_the_failed_stage(fake: FakeInstantStartApi) -> None:
    """Given a cluster demo FAILED at its hyperpod stage,
    when the demo runs,
    then it names the stage with the AWS error and the retry command, creates nothing, returns 1."""
    fake.add_cluster("demo", status="FAILED", failed_stage="hyperpod")
    code, out = demo(fake)
    assert code == 1
    assert "FAILED at stage hyperpod (attempt 1): ResourceLimitExceeded" in out
    assert "instantstart clusters retry demo hyperpod --wait" in out
    assert fake.requests_to("POST", "/clusters") == []


def test_a_cluster_being_created_is_followed_to_completion(fake: FakeInstantStartApi) -> None:
    """Given a create of demo already started (by the CLI or an agent),
    when the demo runs,
    then it follows that operation instead of creating again, and prints the summary."""
    client = InstantStartClient(fake.url)
    client.create_cluster(
        "demo",
        "us-west-2c",
        [{"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1}],
    )
    code, out = demo(fake)
    assert code == 0
    assert "is being created" in out
    assert len(fake.requests_to("POST", "/clusters")) == 1
    assert out.rstrip().endswith(SUMMARY)


def test_a_zone_that_is_not_offered_stops_before_creating(fake: FakeInstantStartApi) -> None:
    """Given a zone the Region does not offer, when the demo runs, then it lists the offered zones,
    creates nothing and returns 1."""
    code, out = demo(fake, availability_zone="us-west-2z")
    assert code == 1
    assert "us-west-2z is not offered" in out and "us-west-2a, us-west-2b, us-west-2c" in out
    assert fake.requests_to("POST", "/clusters") == []


def test_an_instance_type_not_offered_in_the_zone_stops_before_creating(fake: FakeInstantStartApi) -> None:
    """Given an instance type the zone does not offer, when the demo runs, then it returns 1 uncreated."""
    fake.instance_types = ["ml.g5.8xlarge"]
    code, out = demo(fake)
    assert code == 1
    assert "ml.g6.4xlarge is not offered in us-west-2c. Offered: ml.g5.8xlarge" in out
    assert fake.requests_to("POST", "/clusters") == []


def test_a_stage_failing_during_the_demo_is_named_and_returns_1(fake: FakeInstantStartApi) -> None:
    """Given a dependencies stage that fails,
    when the demo runs,
    then it returns 1 naming the stage and its error, and prints no summary."""
    fake.fail_stage, fake.fail_remaining = "dependencies", 1
    fake.fail_error = ("InvalidParameterException", "Addon version 9.9 is not supported")
    code, out = demo(fake)
    assert code == 1
    assert "FAILED at stage dependencies (attempt 1): InvalidParameterException: Addon version 9.9" in out
    assert "| EKS Cluster" not in out
