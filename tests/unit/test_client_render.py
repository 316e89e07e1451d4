"""What a human sees: the summary table, the stage table and the live progress of an operation."""

from __future__ import annotations

import copy
import io
from datetime import UTC, datetime
from typing import Any

import pytest
from inprocess_api import InProcessApi
from rich.console import Console

from instantstart_client.progress import watch_operation
from instantstart_client.render import StageBoard, format_duration, format_summary, stages_table, summary_rows
from instantstart_client.shapes import Cluster, Stage

SPINNER_FRAMES = set("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
READY_CLUSTER: dict[str, Any] = {
    "clusterTag": "demo",
    "generation": 1,
    "status": "READY",
    "availabilityZone": "us-west-2c",
    "region": "us-west-2",
    "createdAt": "2025-03-04T10:00:00Z",
    "updatedAt": "2025-03-04T10:31:00Z",
    "currentOperationId": None,
    "stages": [],
    "eks": {
        "clusterName": "eks-cluster-demo",
        "clusterArn": "arn:aws:eks:us-west-2:111122223333:cluster/eks-cluster-demo",
        "status": "ACTIVE",
        "kubernetesVersion": "1.32",
        "endpoint": "https://example.eks.amazonaws.com",
        "vpcId": "vpc-0abc",
    },
    "hyperPod": {
        "clusterName": "hp-cluster-demo",
        "clusterArn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abc",
        "status": "InService",
        "instanceGroups": [
            {
                "instanceGroupName": "accel",
                "instanceType": "ml.g6.4xlarge",
                "instanceCount": 1,
                "currentCount": 1,
                "status": "InService",
                "capacityType": "OnDemand",
            }
        ],
    },
    "nodes": [
        {
            "nodeName": "hyperpod-i-0abc",
            "instanceType": "ml.g6.4xlarge",
            "instanceGroupName": "accel",
            "ready": True,
            "healthStatus": "Schedulable",
        }
    ],
    "storage": {
        "bucketName": "instantstart-demo-data",
        "persistentVolumeClaim": "s3-claim",
        "namespace": "default",
        "phase": "Bound",
    },
}
ARTICLE_SUMMARY = """\
| EKS Cluster      | eks-cluster-demo                 |
| HyperPod Cluster | hp-cluster-demo                  |
| Node             | 1x ml.g6.4xlarge (On-Demand)     |
| Node Status      | Ready / Schedulable              |
| S3 Storage       | s3-claim mounted (Bound)         |"""


def cluster(**changes: Any) -> Cluster:
    value = copy.deepcopy(READY_CLUSTER)
    value.update(changes)
    return value  # type: ignore[return-value]


def stage(name: str, order: int, status: str, **fields: Any) -> Stage:
    base: dict[str, Any] = {
        "name": name,
        "order": order,
        "status": status,
        "attempts": 0 if status == "PENDING" else 1,
        "startedAt": None,
        "endedAt": None,
        "observedStatus": None,
        "resources": {},
        "error": None,
    }
    base.update(fields)
    return base  # type: ignore[return-value]


# -- summary ------------------------------------------------------------------------------------------


def test_the_summary_of_a_ready_cluster_is_the_articles_table() -> None:
    """Given the GET /clusters/demo answer of a READY cluster,
    when it is summarised,
    then the five rows are exactly the article's table."""
    assert format_summary(summary_rows(cluster())) == ARTICLE_SUMMARY


def test_summary_values_follow_the_cluster_answer_not_fixed_text() -> None:
    """Given a cluster with two groups, a node that is not ready and a PVC still Pending,
    when it is summarised,
    then every row reflects those values."""
    value: Any = cluster(clusterTag="llm", eks=dict(READY_CLUSTER["eks"], clusterName="eks-cluster-llm"))
    value["hyperPod"]["clusterName"] = "hp-cluster-llm"
    value["hyperPod"]["instanceGroups"].append(
        {
            "instanceGroupName": "big",
            "instanceType": "ml.p5.48xlarge",
            "instanceCount": 4,
            "currentCount": 2,
            "status": "Updating",
            "capacityType": "TrainingPlan",
        }
    )
    value["nodes"].append(
        {
            "nodeName": "n2",
            "instanceType": "ml.p5.48xlarge",
            "instanceGroupName": "big",
            "ready": False,
            "healthStatus": "UnschedulablePendingReplacement",
        }
    )
    value["storage"] = dict(READY_CLUSTER["storage"], phase="Pending")

    rows = dict(summary_rows(value))

    assert rows["EKS Cluster"] == "eks-cluster-llm"
    assert rows["HyperPod Cluster"] == "hp-cluster-llm"
    assert rows["Node"] == "1x ml.g6.4xlarge (On-Demand), 2/4x ml.p5.48xlarge (Training Plan)"
    assert rows["Node Status"] == "1x NotReady / UnschedulablePendingReplacement, 1x Ready / Schedulable"
    assert rows["S3 Storage"] == "s3-claim not mounted (Pending)"
    lines = format_summary(rows.items()).splitlines()
    assert len({len(line) for line in lines}) == 1  # the value column widens for long values


def test_a_cluster_without_resources_yet_summarises_as_missing() -> None:
    """Given a cluster still in its network stage,
    when summarised,
    then EKS/HyperPod/Node show a dash, there are no nodes and storage is not configured."""
    rows = dict(summary_rows(cluster(status="CREATING", eks=None, hyperPod=None, nodes=[], storage=None)))
    assert rows == {
        "EKS Cluster": "—",
        "HyperPod Cluster": "—",
        "Node": "—",
        "Node Status": "No nodes",
        "S3 Storage": "Not configured",
    }


# -- stage table --------------------------------------------------------------------------------------


def test_the_live_stage_table_spins_only_on_the_running_stage() -> None:
    """Given stages SUCCEEDED, RUNNING (40 s so far) and PENDING,
    when the live table is rendered on a terminal,
    then only the RUNNING row has a spinner frame and it shows its elapsed time and observed status."""
    now = datetime(2025, 3, 4, 10, 5, 40, tzinfo=UTC)
    stages = [
        stage("network", 1, "SUCCEEDED", startedAt="2025-03-04T09:55:00Z", endedAt="2025-03-04T10:05:00Z"),
        stage("access", 2, "RUNNING", startedAt="2025-03-04T10:05:00Z", observedStatus="PENDING_ACCESS"),
        stage("dependencies", 3, "PENDING"),
    ]
    out = io.StringIO()
    Console(file=out, width=120, force_terminal=True, color_system=None).print(stages_table(stages, now=now, live=True))
    rows = {line.split("│")[2].strip(): line for line in out.getvalue().splitlines() if line.count("│") > 3}
    assert SPINNER_FRAMES & set(rows["access"])
    assert not SPINNER_FRAMES & set(rows["network"] + rows["dependencies"])
    assert "40s" in rows["access"] and "PENDING_ACCESS" in rows["access"]
    assert "10m 00s" in rows["network"] and "✓ SUCCEEDED" in rows["network"]


def test_a_failed_stage_shows_its_error_code_and_message() -> None:
    """Given a FAILED hyperpod stage,
    when the table is rendered,
    then its row carries the AWS error code and message."""
    failed = stage(
        "hyperpod",
        4,
        "FAILED",
        error={"code": "ResourceLimitExceeded", "message": "quota is 0"},
        startedAt="2025-03-04T10:00:00Z",
        endedAt="2025-03-04T10:01:05Z",
    )
    out = io.StringIO()
    Console(file=out, width=140).print(stages_table([failed]))
    assert "ResourceLimitExceeded: quota is 0" in out.getvalue()
    assert "1m 05s" in out.getvalue()


@pytest.mark.parametrize(
    ("seconds", "text"), [(None, "—"), (0, "0s"), (59.9, "59s"), (65, "1m 05s"), (3725, "1h 02m"), (-3, "0s")]
)
def test_durations_read_like_a_clock(seconds: float | None, text: str) -> None:
    """Given seconds, when formatted, then they read as s / m ss / h mm (never negative)."""
    assert format_duration(seconds) == text


def test_the_board_waits_for_the_first_status() -> None:
    """Given no answer yet, when the board renders, then it says it waits for the first status."""
    out = io.StringIO()
    Console(file=out, width=100).print(StageBoard("demo"))
    assert "waiting for the first status" in out.getvalue()


# -- watching an operation ----------------------------------------------------------------------------


GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1}


def test_watching_polls_at_the_requested_interval_until_the_operation_succeeds(
    inprocess_api: InProcessApi,
) -> None:
    """Given a create operation,
    when it is watched with a 2 s interval (fake sleep),
    then every wait is exactly 2 s, polls alternate operation then cluster, and the result is the
    SUCCEEDED operation with a READY cluster."""
    client = inprocess_api.client()
    op = client.create_cluster("demo", "us-west-2c", [GROUP])  # type: ignore[list-item]
    waits: list[float] = []
    out = io.StringIO()

    result = watch_operation(client, Console(file=out, width=120), op, poll_interval=2.0, sleep=waits.append)

    assert result.succeeded and result.cluster is not None and result.cluster["status"] == "READY"
    assert waits and set(waits) == {2.0}
    polls = [r.path for r in inprocess_api.requests[1:]]
    assert polls[0::2] == [f"/operations/{op['operationId']}"] * (len(waits) + 1)
    assert polls[1::2] == ["/clusters/demo"] * (len(waits) + 1)


def test_off_a_terminal_each_stage_change_is_one_line_in_order(inprocess_api: InProcessApi) -> None:
    """Given a console that is not a terminal (CI log),
    when a create is watched,
    then each stage prints RUNNING then SUCCEEDED, in stage order, and the final table follows."""
    client = inprocess_api.client()
    op = client.create_cluster("demo", "us-west-2c", [GROUP])  # type: ignore[list-item]
    out = io.StringIO()
    watch_operation(client, Console(file=out, width=120), op, poll_interval=0.01)
    lines = [line for line in out.getvalue().splitlines() if " stage " in line]
    expected = [
        (name, status)
        for name in ("network", "access", "dependencies", "hyperpod", "storage", "verify")
        for status in ("RUNNING", "SUCCEEDED")
    ]
    assert [(line.split()[4], line.split()[5]) for line in lines] == expected
    assert out.getvalue().rstrip().endswith("┘")


def test_on_a_terminal_the_live_display_ends_with_the_final_stage_table(inprocess_api: InProcessApi) -> None:
    """Given a terminal console and a stage that fails,
    when the operation is watched,
    then the live display animates (spinner frames were drawn), the final table names the failure,
    and the result reports the failed stage."""
    inprocess_api.driver.fail("storage")
    client = inprocess_api.client()
    op = client.create_cluster("demo", "us-west-2c", [GROUP])  # type: ignore[list-item]
    out = io.StringIO()

    result = watch_operation(client, Console(file=out, width=160, force_terminal=True), op, poll_interval=0.05)

    assert not result.succeeded and result.operation["status"] == "FAILED"
    assert result.failed_stage is not None and result.failed_stage["name"] == "storage"
    assert SPINNER_FRAMES & set(out.getvalue())
    final = out.getvalue().rsplit("Cluster", 1)[-1]
    assert "FAILED" in final and "ResourceLimitExceeded" in final


def test_a_timeout_stops_watching_without_waiting_for_the_end(inprocess_api: InProcessApi) -> None:
    """Given a 5 s timeout and a fake clock advancing 2 s per poll,
    when a create is watched,
    then watching stops as timed out before the operation ends."""
    client = inprocess_api.client()
    op = client.create_cluster("demo", "us-west-2c", [GROUP])  # type: ignore[list-item]
    clock = [0.0]

    result = watch_operation(
        client,
        Console(file=io.StringIO()),
        op,
        poll_interval=2.0,
        timeout=5.0,
        sleep=lambda s: clock.__setitem__(0, clock[0] + s),
        monotonic=lambda: clock[0],
    )

    assert result.timed_out and not result.succeeded
    assert result.operation["status"] == "RUNNING"


def test_given_a_delete_operation_when_shown_then_stages_follow_their_teardown_in_reverse_order() -> None:
    from instantstart_client.progress import stages_as_shown

    cluster = {
        "clusterTag": "t",
        "status": "DELETING",
        "stages": [
            {"name": n, "order": i + 1, "status": "SUCCEEDED", "attempts": 1, "teardownStatus": t}
            for i, (n, t) in enumerate(
                [
                    ("network", None),
                    ("access", None),
                    ("dependencies", None),
                    ("hyperpod", "RUNNING"),
                    ("storage", "SUCCEEDED"),
                    ("verify", "SUCCEEDED"),
                ]
            )
        ],
    }
    shown = stages_as_shown({"type": "DELETE_CLUSTER"}, cluster)  # type: ignore[arg-type]
    assert shown is not None
    assert [(s["name"], s["status"]) for s in shown["stages"]] == [
        ("verify", "SUCCEEDED"),
        ("storage", "SUCCEEDED"),
        ("hyperpod", "RUNNING"),
        ("dependencies", "PENDING"),
        ("access", "PENDING"),
        ("network", "PENDING"),
    ]
    assert stages_as_shown({"type": "CREATE_CLUSTER"}, cluster) is cluster  # type: ignore[arg-type]
