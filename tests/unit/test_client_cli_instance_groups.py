"""The ``instantstart`` CLI's issue-8 commands (instance groups, nodes, HyperPod operations, training plans, a
cluster's operations) through typer's CliRunner, against the real API function in process (moto behind it).

The in-process workflow driver never creates the HyperPod cluster, so the tests that need one create
``hp-cluster-<tag>`` in moto themselves (SageMaker CreateCluster). moto 5.2.5 has no ListClusterOperations,
ListTrainingPlans or SearchTrainingPlanOfferings: those tests give moto's SageMaker an answer for the call (as
the conftest does for Service Quotas), so the API's mapping and the CLI's table are what is under test.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from inprocess_api import InProcessApi
from typer.testing import CliRunner, Result

import instantstart_client.cli
from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app

Run = Callable[..., Result]
ROLE = "arn:aws:iam::123456789012:role/hyperpod-execution"
LIFECYCLE = {"SourceS3Uri": "s3://sagemaker-lifecycle-demo/scripts/", "OnCreate": "on_create.sh"}
CLUSTER_ARN = "arn:aws:sagemaker:us-west-2:123456789012:cluster/hp-cluster-demo"
PLAN_ARN = "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p5-active"


@pytest.fixture
def run(inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run(*args, input=None)``: the CLI with ``--api-url`` of the in-process API."""
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(
        instantstart_client.cli,
        "InstantStartClient",
        functools.partial(InstantStartClient, transport=inprocess_api, sleep=lambda s: None),
    )

    def _run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(app, ["--api-url", inprocess_api.url, *args], input=input)

    return _run


def hyperpod_cluster(aws: Any, tag: str, *groups: tuple[str, int]) -> None:
    """``hp-cluster-<tag>`` InService in moto with ``groups`` (name, count) of ml.g5.8xlarge (moto's list of
    HyperPod types lacks ml.g6)."""
    aws.client("sagemaker").create_cluster(
        ClusterName=f"hp-cluster-{tag}",
        InstanceGroups=[
            {
                "InstanceGroupName": name,
                "InstanceType": "ml.g5.8xlarge",
                "InstanceCount": count,
                "LifeCycleConfig": LIFECYCLE,
                "ExecutionRole": ROLE,
                "ThreadsPerCore": 1,
            }
            for name, count in groups
        ],
    )


@pytest.fixture
def ready(inprocess_api: InProcessApi, aws: Any) -> Iterator[None]:
    """Cluster ``demo`` READY with its HyperPod cluster InService (groups accel 1 and spare 2)."""
    inprocess_api.add_cluster("demo")
    hyperpod_cluster(aws, "demo", ("accel", 1), ("spare", 2))
    yield


def sagemaker_answers(monkeypatch: pytest.MonkeyPatch, **answers: dict[str, Any]) -> list[dict[str, Any]]:
    """moto's SageMaker answers ``answers`` (snake_case action -> JSON body); returns the requests it got."""
    from moto.sagemaker.responses import SageMakerResponse

    seen: list[dict[str, Any]] = []
    for action, body in answers.items():

        def answer(self: Any, body: dict[str, Any] = body) -> str:
            seen.append(json.loads(self.body or "{}"))
            return json.dumps(body)

        monkeypatch.setattr(SageMakerResponse, action, answer, raising=False)
    return seen


# -- instance groups ------------------------------------------------------------------------------------


def test_groups_list_prints_each_group_with_current_and_target_counts(ready: None, run: Run) -> None:
    """Given a READY cluster whose HyperPod cluster has groups accel (1) and spare (2),
    when `groups list demo` runs (and with --json),
    then the table shows both groups with their counts and type; the JSON lists the same groups."""
    result = run("groups", "list", "demo")
    raw = run("groups", "list", "demo", "--json")

    assert result.exit_code == 0, result.output
    assert "hp-cluster-demo (InService)" in result.stdout
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.count("│") > 3}
    assert "1/1" in rows["accel"] and "2/2" in rows["spare"] and "ml.g5.8xlarge" in rows["spare"]
    body = json.loads(raw.stdout)
    assert [(g["instanceGroupName"], g["targetCount"]) for g in body["instanceGroups"]] == [("accel", 1), ("spare", 2)]


def test_groups_list_of_an_unknown_cluster_exits_2_with_the_404(run: Run, inprocess_api: InProcessApi) -> None:
    result = run("groups", "list", "nosuch")

    assert result.exit_code == 2
    assert "nosuch" in result.stderr and "404" in result.stderr


@pytest.mark.parametrize("dedicated", [True, False])
def test_groups_add_sends_the_group_with_dedicated_subnet_and_prints_the_operation(
    ready: None, run: Run, inprocess_api: InProcessApi, dedicated: bool
) -> None:
    """Given a READY cluster,
    when `groups add demo --group-name karpenter --count 0 [--dedicated-subnet]` runs,
    then the API gets the group (instanceCount 0, dedicatedSubnet only with the flag) and the CLI prints the
    ADD_INSTANCE_GROUP operation with how to follow it."""
    flag = ["--dedicated-subnet"] if dedicated else []
    args = ["--group-name", "karpenter", "--instance-type", "ml.g6.4xlarge", "--count", "0", *flag]

    result = run("groups", "add", "demo", *args)

    assert result.exit_code == 0, result.output
    sent = inprocess_api.requests_to("POST", "/clusters/demo/instance-groups")[-1].json()
    expected = {
        "instanceGroupName": "karpenter",
        "instanceType": "ml.g6.4xlarge",
        "instanceCount": 0,
        "capacityType": "OnDemand",
    }
    assert sent == ({**expected, "dedicatedSubnet": True} if dedicated else expected)
    assert "ADD_INSTANCE_GROUP demo: operation op-" in result.stdout and "PENDING" in result.stdout
    op_id = json.loads(run("clusters", "operations", "demo", "--json").stdout)["operations"][0]["operationId"]
    assert f"instantstart operations get {op_id} --wait" in result.stdout


def test_groups_add_of_a_taken_name_exits_2_naming_it(ready: None, run: Run) -> None:
    result = run("groups", "add", "demo", "--group-name", "spare", "--instance-type", "ml.g6.4xlarge")

    assert result.exit_code == 2
    assert "instance group 'spare' already exists" in result.stderr


def test_groups_scale_sends_the_count_and_a_negative_count_is_a_422_naming_instance_count(
    ready: None, run: Run, inprocess_api: InProcessApi
) -> None:
    """Given a READY cluster,
    when `groups scale demo spare --count 0` runs, then a SCALE_INSTANCE_GROUP operation starts with count 0;
    when --count is -1, then the CLI exits 2 with the API's 422 naming instanceCount and nothing starts."""
    bad = run("groups", "scale", "demo", "spare", "--count", "-1")
    good = run("groups", "scale", "demo", "spare", "--count", "0", "--json")

    assert bad.exit_code == 2
    assert "instanceCount" in bad.stderr and "422" in bad.stderr
    assert good.exit_code == 0, good.output
    assert [r.json() for r in inprocess_api.requests_to("PATCH", "/clusters/demo/instance-groups/spare")] == [
        {"instanceCount": -1},
        {"instanceCount": 0},
    ]
    assert json.loads(good.stdout)["type"] == "SCALE_INSTANCE_GROUP"
    listed = json.loads(run("clusters", "operations", "demo", "--json").stdout)["operations"]
    assert [o["type"] for o in listed] == ["SCALE_INSTANCE_GROUP", "CREATE_CLUSTER"]


def test_groups_delete_asks_for_the_name_and_a_wrong_answer_removes_nothing(
    ready: None, run: Run, inprocess_api: InProcessApi
) -> None:
    """Given a READY cluster,
    when `groups delete demo spare` is answered with another name, then it exits 1 and sends nothing;
    when answered with `spare`, then a DELETE_INSTANCE_GROUP operation starts."""
    wrong = run("groups", "delete", "demo", "spare", input="accel\n")
    assert wrong.exit_code == 1
    assert "nothing was removed" in wrong.stderr
    assert inprocess_api.requests_to("DELETE", "/clusters/demo/instance-groups/spare") == []

    right = run("groups", "delete", "demo", "spare", input="spare\n")

    assert right.exit_code == 0, right.output
    assert "DELETE_INSTANCE_GROUP demo: operation op-" in right.stdout
    assert len(inprocess_api.requests_to("DELETE", "/clusters/demo/instance-groups/spare")) == 1


def test_groups_delete_of_an_unknown_group_exits_2_listing_the_groups(ready: None, run: Run) -> None:
    result = run("groups", "delete", "demo", "nosuch", "--yes")

    assert result.exit_code == 2
    assert "instance group 'nosuch' does not exist" in result.stderr and "accel, spare" in result.stderr


# -- create with 0 instances --------------------------------------------------------------------------


def test_clusters_create_with_0_instances_exits_2_naming_instance_groups_and_the_addons(
    run: Run, inprocess_api: InProcessApi
) -> None:
    """Given no cluster, when `clusters create ... --count 0` runs (its only group empty),
    then the API answers 422 naming instanceGroups and the add-ons that need a node, and no cluster exists."""
    result = run("clusters", "create", "--tag", "demo", "--az", "us-west-2c", "--instance-type", "ml.g6.4xlarge",
                 "--count", "0")  # fmt: skip

    assert result.exit_code == 2
    assert "instanceGroups" in result.stderr and "cert-manager" in result.stderr
    assert "metrics-server" in result.stderr
    assert json.loads(run("clusters", "list", "--json").stdout)["clusters"] == []


def test_clusters_create_with_dedicated_subnet_sends_it_on_the_group(run: Run, inprocess_api: InProcessApi) -> None:
    args = ["--tag", "demo", "--az", "us-west-2c", "--instance-type", "ml.g6.4xlarge", "--dedicated-subnet"]

    result = run("clusters", "create", *args)

    assert result.exit_code == 0, result.output
    sent = inprocess_api.requests_to("POST", "/clusters")[-1].json()
    assert sent["instanceGroups"][0]["dedicatedSubnet"] is True


# -- nodes ----------------------------------------------------------------------------------------------


def test_nodes_list_prints_the_nodes_of_the_hyperpod_cluster_and_filters_by_group(
    ready: None, run: Run, aws: Any
) -> None:
    """Given the HyperPod cluster's nodes as SageMaker lists them,
    when `nodes list demo` runs, then each node is a row with its group and type;
    with --instance-group spare only spare's nodes are shown."""
    listed = aws.client("sagemaker").list_cluster_nodes(ClusterName="hp-cluster-demo")["ClusterNodeSummaries"]
    by_group: dict[str, list[str]] = {}
    for n in listed:
        by_group.setdefault(n["InstanceGroupName"], []).append(n["InstanceId"])

    everything = run("nodes", "list", "demo")
    spare = run("--json", "nodes", "list", "demo", "--instance-group", "spare")

    assert everything.exit_code == 0, everything.output
    assert f"Nodes of hp-cluster-demo ({len(listed)})" in everything.stdout
    for group, ids in by_group.items():
        for instance_id in ids:
            row = next(line for line in everything.stdout.splitlines() if instance_id in line)
            assert group in row and "ml.g5.8xlarge" in row
    assert [n["instanceId"] for n in json.loads(spare.stdout)["nodes"]] == by_group.get("spare", [])


def test_nodes_list_with_a_bad_group_name_exits_2_naming_instance_group_name(ready: None, run: Run) -> None:
    result = run("nodes", "list", "demo", "--instance-group", "Not_A_Name")

    assert result.exit_code == 2
    assert "instanceGroupName" in result.stderr


# -- HyperPod operations ----------------------------------------------------------------------------------


def test_clusters_hyperpod_operations_prints_hyperpods_operations_newest_first(
    ready: None, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given SageMaker lists a DeepHealthCheck and a Scaling operation of hp-cluster-demo,
    when `clusters hyperpod-operations demo --status InProgress` runs,
    then the table shows both with type and status, and the filter reached SageMaker."""
    created = datetime(2026, 11, 29, 17, 4, 5, tzinfo=UTC).timestamp()
    seen = sagemaker_answers(
        monkeypatch,
        list_cluster_operations={
            "ClusterOperationSummaries": [
                {
                    "OperationId": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
                    "ClusterArn": CLUSTER_ARN,
                    "Type": "DeepHealthCheck",
                    "Status": "InProgress",
                    "CreationTime": created + 60,
                },
                {
                    "OperationId": "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809",
                    "ClusterArn": CLUSTER_ARN,
                    "Type": "Scaling",
                    "Status": "InProgress",
                    "CreationTime": created,
                },
            ]
        },
    )

    result = run("clusters", "hyperpod-operations", "demo", "--status", "InProgress")

    assert result.exit_code == 0, result.output
    assert "HyperPod operations of hp-cluster-demo (2, newest first)" in result.stdout
    lines = result.stdout.splitlines()
    deep = next(i for i, line in enumerate(lines) if "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0" in line)
    scaling = next(i for i, line in enumerate(lines) if "1a2b3c4d-5e6f-7081-92a3-b4c5d6e7f809" in line)
    assert deep < scaling and "DeepHealthCheck" in lines[deep] and "Scaling" in lines[scaling]
    assert seen and seen[-1]["ClusterName"] == "hp-cluster-demo"
    assert "InProgress" in json.dumps(seen[-1])


def test_clusters_hyperpod_operations_with_an_unknown_status_is_refused(ready: None, run: Run) -> None:
    result = run("clusters", "hyperpod-operations", "demo", "--status", "Sleeping")

    assert result.exit_code == 2
    assert "Sleeping" in result.output


# -- training plans -----------------------------------------------------------------------------------------


def test_catalog_training_plans_prints_each_plan(
    run: Run, inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
    sagemaker_answers(
        monkeypatch,
        list_training_plans={
            "TrainingPlanSummaries": [
                {
                    "TrainingPlanArn": PLAN_ARN,
                    "TrainingPlanName": "p5-active",
                    "Status": "Active",
                    "StartTime": start,
                    "EndTime": start + 7 * 86400,
                    "TotalInstanceCount": 4,
                    "AvailableInstanceCount": 3,
                    "InUseInstanceCount": 1,
                    "TargetResources": ["hyperpod-cluster"],
                    "ReservedCapacitySummaries": [
                        {
                            "ReservedCapacityArn": "arn:aws:sagemaker:us-west-2:123456789012:reserved-capacity/rc-1",
                            "InstanceType": "ml.p5.48xlarge",
                            "TotalInstanceCount": 4,
                            "Status": "Active",
                            "AvailabilityZone": "us-west-2c",
                        }
                    ],
                }
            ]
        },
    )

    result = run("catalog", "training-plans")

    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "p5-active" in line and "Active" in line)
    assert "us-west-2c" in row and "4x ml.p5.48xlarge" in row and "│ 3 " in row and PLAN_ARN in row


def test_catalog_training_plan_offerings_prints_each_offering_and_sends_the_search(
    run: Run, inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
    seen = sagemaker_answers(
        monkeypatch,
        search_training_plan_offerings={
            "TrainingPlanOfferings": [
                {
                    "TrainingPlanOfferingId": "tpo-0123456789abcdef",
                    "TargetResources": ["hyperpod-cluster"],
                    "RequestedStartTimeAfter": start,
                    "DurationHours": 168,
                    "UpfrontFee": "12345.67",
                    "CurrencyCode": "USD",
                    "ReservedCapacityOfferings": [
                        {
                            "InstanceType": "ml.p5.48xlarge",
                            "InstanceCount": 2,
                            "AvailabilityZone": "us-west-2c",
                            "DurationHours": 168,
                            "StartTime": start,
                            "EndTime": start + 168 * 3600,
                        }
                    ],
                }
            ]
        },
    )

    result = run("catalog", "training-plan-offerings", "--instance-type", "ml.p5.48xlarge", "--count", "2",
                 "--duration-hours", "168")  # fmt: skip
    too_many = run("catalog", "training-plan-offerings", "--instance-type", "ml.p5.48xlarge", "--count", "300")

    assert result.exit_code == 0, result.output
    assert "Training plan offerings for 2x ml.p5.48xlarge" in result.stdout
    row = next(line for line in result.stdout.splitlines() if "tpo-0123456789abcdef" in line)
    assert "us-west-2c" in row and "168" in row and "12345.67 USD" in row
    assert seen[0]["InstanceType"] == "ml.p5.48xlarge" and seen[0]["InstanceCount"] == 2
    assert seen[0]["TargetResources"] == ["hyperpod-cluster"]
    assert too_many.exit_code == 2 and "instanceCount" in too_many.stderr
    assert len(seen) == 1  # the 422 never reached SageMaker


# -- a cluster's operations ---------------------------------------------------------------------------------


def test_clusters_operations_lists_the_control_planes_operations_newest_first(
    run: Run, inprocess_api: InProcessApi, aws: Any
) -> None:
    """Given a cluster created (SUCCEEDED) then being deleted,
    when `clusters operations demo` runs, then both operations are rows, the delete first;
    `--max-results 1` shows the token of the next page."""
    inprocess_api.add_cluster("demo")
    assert run("clusters", "delete", "demo", "--yes").exit_code == 0

    result = run("clusters", "operations", "demo")
    page = run("clusters", "operations", "demo", "--max-results", "1")
    unknown = run("clusters", "operations", "nosuch")

    assert result.exit_code == 0, result.output
    assert "Operations on demo (2)" in result.stdout
    lines = result.stdout.splitlines()
    delete = next(i for i, line in enumerate(lines) if "DELETE_CLUSTER" in line)
    create = next(i for i, line in enumerate(lines) if "CREATE_CLUSTER" in line)
    assert delete < create and "SUCCEEDED" in lines[create]
    assert "--next-token" in page.stdout and "Operations on demo (1)" in page.stdout
    assert unknown.exit_code == 2
