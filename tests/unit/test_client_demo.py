"""The demo flow (the article's transcript as a program) against the real API function in process."""

from __future__ import annotations

import io

from inprocess_api import InProcessApi
from rich.console import Console

from instantstart_client.demo import run_demo

SUMMARY = """\
| EKS Cluster      | eks-cluster-demo                 |
| HyperPod Cluster | hp-cluster-demo                  |
| Node             | 1x ml.g6.4xlarge (On-Demand)     |
| Node Status      | Ready / Schedulable              |
| S3 Storage       | s3-claim mounted (Bound)         |"""


def demo(api: InProcessApi, **kwargs: object) -> tuple[int, str]:
    out = io.StringIO()
    code = run_demo(api.client(), Console(file=out, width=160), poll_interval=0.01, **kwargs)  # type: ignore[arg-type]
    return code, out.getvalue()


def test_the_demo_inspects_then_creates_walks_every_stage_and_prints_the_summary(
    inprocess_api: InProcessApi,
) -> None:
    """Given two existing clusters and a fresh tag,
    when the demo runs,
    then it lists clusters, checks the zone and the instance type in that zone, creates the cluster,
    shows each stage going RUNNING → SUCCEEDED in order, returns 0 and ends with the summary table."""
    inprocess_api.add_cluster("hypd-0304a")
    inprocess_api.add_cluster("hypd-0304b")

    code, out = demo(inprocess_api)

    assert code == 0
    assert "There are currently 2 existing clusters." in out
    assert [(r.method, r.target) for r in inprocess_api.requests[:4]] == [
        ("GET", "/clusters"),
        ("GET", "/catalog/availability-zones"),
        ("GET", "/catalog/instance-types?availabilityZone=us-west-2c"),
        ("POST", "/clusters"),
    ]
    assert inprocess_api.requests[3].json()["instanceGroups"] == [
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
    assert inprocess_api.call("GET", "/clusters/demo")[1]["status"] == "READY"


def test_the_summary_comes_from_the_api_answer(inprocess_api: InProcessApi) -> None:
    """Given another tag, instance type and count,
    when the demo runs,
    then the summary shows those names, that type and count (nothing is fixed text)."""
    code, out = demo(inprocess_api, cluster_tag="llm", instance_type="ml.p5.48xlarge", instance_count=2)
    assert code == 0
    tail = out.rstrip().splitlines()[-5:]
    assert tail[0] == "| EKS Cluster      | eks-cluster-llm                  |"
    assert tail[1] == "| HyperPod Cluster | hp-cluster-llm                   |"
    assert tail[2] == "| Node             | 2x ml.p5.48xlarge (On-Demand)    |"


def test_an_existing_ready_cluster_is_reported_and_not_created_again(inprocess_api: InProcessApi) -> None:
    """Given a READY cluster tagged demo,
    when the demo runs,
    then it says the cluster exists and is READY, shows its summary, creates nothing, returns 0."""
    inprocess_api.add_cluster("demo")
    code, out = demo(inprocess_api)
    assert code == 0
    assert "already exists and is READY" in out
    assert out.rstrip().endswith(SUMMARY)
    assert inprocess_api.requests_to("POST", "/clusters") == []


def test_an_existing_failed_cluster_names_the_failed_stage(inprocess_api: InProcessApi) -> None:
    """Given a cluster demo FAILED at its hyperpod stage,
    when the demo runs,
    then it names the stage with the AWS error and the retry command, creates nothing, returns 1."""
    inprocess_api.add_cluster("demo", failed_stage="hyperpod")
    code, out = demo(inprocess_api)
    assert code == 1
    assert "FAILED at stage hyperpod (attempt 1): ResourceLimitExceeded" in out
    assert "instantstart clusters retry demo hyperpod --wait" in out
    assert inprocess_api.requests_to("POST", "/clusters") == []


def test_a_cluster_being_created_is_followed_to_completion(inprocess_api: InProcessApi) -> None:
    """Given a create of demo already started (by the CLI or an agent),
    when the demo runs,
    then it follows that operation instead of creating again, and prints the summary."""
    inprocess_api.create_cluster("demo")
    code, out = demo(inprocess_api)
    assert code == 0
    assert "is being created" in out
    assert inprocess_api.requests_to("POST", "/clusters") == []
    assert out.rstrip().endswith(SUMMARY)


def test_a_zone_that_is_not_offered_stops_before_creating(inprocess_api: InProcessApi) -> None:
    """Given a zone the Region does not offer, when the demo runs, then it lists the offered zones,
    creates nothing and returns 1."""
    code, out = demo(inprocess_api, availability_zone="us-west-2z")
    assert code == 1
    assert "us-west-2z is not offered" in out and "us-west-2a, us-west-2b, us-west-2c, us-west-2d" in out
    assert inprocess_api.requests_to("POST", "/clusters") == []


def test_an_instance_type_not_offered_in_the_zone_stops_before_creating(inprocess_api: InProcessApi) -> None:
    """Given an instance type the zone does not offer (Trainium in us-west-2c), when the demo runs,
    then it names the type and the zone's offered types and returns 1 uncreated."""
    code, out = demo(inprocess_api, instance_type="ml.trn1.32xlarge")
    assert code == 1
    assert "ml.trn1.32xlarge is not offered in us-west-2c. Offered: " in out
    assert "ml.g6.4xlarge" in out.split("Offered: ", 1)[1]
    assert inprocess_api.requests_to("POST", "/clusters") == []


def test_a_stage_failing_during_the_demo_is_named_and_returns_1(inprocess_api: InProcessApi) -> None:
    """Given a dependencies stage that fails,
    when the demo runs,
    then it returns 1 naming the stage and its error, and prints no summary."""
    inprocess_api.driver.fail("dependencies", "InvalidParameterException", "Addon version 9.9 is not supported")
    code, out = demo(inprocess_api)
    assert code == 1
    assert "FAILED at stage dependencies (attempt 1): InvalidParameterException: Addon version 9.9" in out
    assert "| EKS Cluster" not in out
