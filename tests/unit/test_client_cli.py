"""The ``instantstart`` CLI through typer's CliRunner, against the real API function in process."""

from __future__ import annotations

import functools
import json
import re
import socket
from collections.abc import Callable

import httpx2
import pytest
from inprocess_api import InProcessApi
from typer.testing import CliRunner, Result

import instantstart_client.cli
from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app

SUMMARY = [
    "| EKS Cluster      | eks-cluster-demo                 |",
    "| HyperPod Cluster | hp-cluster-demo                  |",
    "| Node             | 1x ml.g6.4xlarge (On-Demand)     |",
    "| Node Status      | Ready / Schedulable              |",
    "| S3 Storage       | s3-claim mounted (Bound)         |",
]
CREATE = ["clusters", "create", "--tag", "demo", "--az", "us-west-2c", "--instance-type", "ml.g6.4xlarge"]
Run = Callable[..., Result]


def use_transport(monkeypatch: pytest.MonkeyPatch, transport: httpx2.BaseTransport) -> None:
    """Make the CLI's client send through ``transport`` and skip the real backoff sleeps between retries."""
    monkeypatch.setattr(
        instantstart_client.cli,
        "InstantStartClient",
        functools.partial(InstantStartClient, transport=transport, sleep=lambda s: None),
    )


@pytest.fixture
def run(inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run(*args, input=None)``: the CLI with ``--api-url`` of the in-process API."""
    monkeypatch.setenv("COLUMNS", "200")
    use_transport(monkeypatch, inprocess_api)

    def _run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(app, ["--api-url", inprocess_api.url, *args], input=input)

    return _run


# -- reading ------------------------------------------------------------------------------------------


def test_clusters_list_prints_a_table_of_every_cluster(inprocess_api: InProcessApi, run: Run) -> None:
    """Given three clusters, one of them FAILED,
    when `clusters list` runs,
    then one table lists all three with their status and resource names.
    (Following nextToken across pages is the client's iter_clusters, tested with pages of two.)"""
    inprocess_api.add_cluster("bravo", failed_stage="hyperpod")
    inprocess_api.create_cluster("alpha")
    inprocess_api.create_cluster("charlie")

    result = run("clusters", "list")

    assert result.exit_code == 0, result.output
    assert "Clusters (3)" in result.stdout
    for tag in ("alpha", "bravo", "charlie"):
        assert f"eks-cluster-{tag}" in result.stdout and f"hp-cluster-{tag}" in result.stdout
    assert "FAILED" in result.stdout and "CREATING" in result.stdout


@pytest.mark.parametrize("placement", ["global", "command"])
def test_json_output_is_the_raw_answer(inprocess_api: InProcessApi, run: Run, placement: str) -> None:
    """Given one cluster,
    when `--json` is given before the group or after the command,
    then stdout is the API's JSON (parseable, nothing else)."""
    inprocess_api.create_cluster("alpha")
    args = ["--json", "clusters", "list"] if placement == "global" else ["clusters", "list", "--json"]
    result = run(*args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert [c["clusterTag"] for c in body["clusters"]] == ["alpha"] and body["nextToken"] is None


def test_one_page_with_max_results_shows_the_next_token(inprocess_api: InProcessApi, run: Run) -> None:
    """Given two clusters,
    when `clusters list --max-results 1` runs,
    then one cluster is shown with the token of the next page, which then lists the other."""
    inprocess_api.create_cluster("alpha")
    inprocess_api.create_cluster("bravo")
    first = run("--json", "clusters", "list", "--max-results", "1")
    token = json.loads(first.stdout)["nextToken"]
    human = run("clusters", "list", "--max-results", "1")
    second = run("--json", "clusters", "list", "--next-token", token)

    assert token and f"--next-token {token}" in human.stdout
    assert [c["clusterTag"] for c in json.loads(second.stdout)["clusters"]] == ["bravo"]


def test_clusters_get_shows_stages_resources_and_the_summary(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a READY cluster,
    when `clusters get demo` runs,
    then the overview, the six stages, the resources and the article's summary are printed."""
    inprocess_api.add_cluster("demo")
    result = run("clusters", "get", "demo")
    assert result.exit_code == 0, result.output
    for name in ("network", "access", "dependencies", "hyperpod", "storage", "verify"):
        assert name in result.stdout
    assert "s3-claim" in result.stdout and "Kubernetes 1.32" in result.stdout
    assert result.stdout.rstrip().splitlines()[-5:] == SUMMARY


def test_clusters_get_of_a_failed_cluster_names_the_failed_stage(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a cluster FAILED at hyperpod, when it is shown, then the stage's error is printed."""
    inprocess_api.add_cluster("demo", failed_stage="hyperpod")
    result = run("clusters", "get", "demo")
    assert result.exit_code == 0
    assert "Stage hyperpod failed: ResourceLimitExceeded" in result.stdout


def test_clusters_stages_and_operations_get(run: Run) -> None:
    """Given a cluster being created,
    when its stages and its operation are shown,
    then the stage table lists the six stages and the operation table its type and status."""
    created = json.loads(run("--json", *CREATE).stdout)
    stages = run("clusters", "stages", "demo")
    operation = run("operations", "get", created["operationId"])
    stages_json = json.loads(run("clusters", "stages", "demo", "--json").stdout)

    assert stages.exit_code == operation.exit_code == 0
    assert all(name in stages.stdout for name in ("network", "verify"))
    assert "CREATE_CLUSTER" in operation.stdout and created["operationId"] in operation.stdout
    assert [s["order"] for s in stages_json["stages"]] == [1, 2, 3, 4, 5, 6]


def test_catalog_commands_list_zones_and_instance_types(inprocess_api: InProcessApi, run: Run) -> None:
    """Given the Region's catalog,
    when zones and instance types in a zone are listed,
    then the tables show them and the zone is sent as availabilityZone."""
    zones = run("catalog", "zones")
    types = run("catalog", "instance-types", "--az", "us-west-2c")
    assert zones.exit_code == types.exit_code == 0
    assert "us-west-2c" in zones.stdout and "usw2-az3" in zones.stdout
    assert "ml.g6.4xlarge" in types.stdout and "in us-west-2c" in types.stdout
    assert inprocess_api.requests_to("GET", "/catalog/instance-types")[0].query == {"availabilityZone": "us-west-2c"}


# -- creating and waiting -----------------------------------------------------------------------------


def test_create_sends_the_group_and_key_and_prints_the_operation(inprocess_api: InProcessApi, run: Run) -> None:
    """Given create options and an idempotency key,
    when `clusters create` runs without --wait,
    then the POST body holds one instance group, the key is sent, and the operation id is printed."""
    result = run(*CREATE, "--count", "2", "--group-name", "gpu", "--idempotency-key", "demo-create-1")
    assert result.exit_code == 0, result.output
    request = inprocess_api.requests_to("POST", "/clusters")[0]
    assert request.json() == {
        "clusterTag": "demo",
        "availabilityZone": "us-west-2c",
        "instanceGroups": [
            {
                "instanceGroupName": "gpu",
                "instanceType": "ml.g6.4xlarge",
                "instanceCount": 2,
                "capacityType": "OnDemand",
            }
        ],
    }
    assert request.header("Idempotency-Key") == "demo-create-1"
    status, cluster = inprocess_api.call("GET", "/clusters/demo")
    assert status == 200 and cluster["currentOperationId"] in result.stdout and "CREATE_CLUSTER" in result.stdout
    assert cluster["hyperPod"]["instanceGroups"][0]["instanceCount"] == 2


def test_create_wait_follows_the_stages_and_ends_with_the_summary(run: Run) -> None:
    """Given a create that succeeds,
    when `clusters create --wait` runs,
    then each stage's progress is shown and the output ends with the summary table; exit code 0."""
    result = run(*CREATE, "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 0, result.output
    assert "stage 4 hyperpod RUNNING" in result.stdout and "stage 6 verify SUCCEEDED" in result.stdout
    assert result.stdout.rstrip().splitlines()[-5:] == SUMMARY
    assert "is READY" in result.stdout


def test_create_wait_exits_1_and_names_the_failing_stage(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a hyperpod stage that fails with ResourceLimitExceeded,
    when `clusters create --wait` runs,
    then exit code is 1 and stderr has the stage, the AWS error code and message, and the retry hint."""
    inprocess_api.driver.fail("hyperpod")
    result = run(*CREATE, "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 1
    assert "Stage hyperpod failed: ResourceLimitExceeded: The account-level service limit" in result.stderr
    assert "instantstart clusters retry demo hyperpod --wait" in result.stderr
    assert "| EKS Cluster" not in result.stdout


def test_retry_wait_runs_the_failed_stage_again_to_ready(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a cluster FAILED at hyperpod (the fault now cleared),
    when `clusters retry demo hyperpod --wait` runs,
    then the retry is POSTed, hyperpod runs a second attempt, and the summary is printed."""
    inprocess_api.add_cluster("demo", failed_stage="hyperpod")
    result = run("clusters", "retry", "demo", "hyperpod", "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 0, result.output
    assert len(inprocess_api.requests_to("POST", "/clusters/demo/stages/hyperpod/retry")) == 1
    assert "stage 4 hyperpod RUNNING attempt 2" in result.stdout
    assert "network RUNNING" not in result.stdout  # earlier stages are kept
    assert result.stdout.rstrip().splitlines()[-5:] == SUMMARY


def test_wait_with_json_prints_the_final_operation_and_cluster(run: Run) -> None:
    """Given --json and --wait,
    when a create succeeds,
    then stdout is one JSON document with the SUCCEEDED operation and READY cluster (progress on stderr)."""
    result = run("--json", *CREATE, "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["operation"]["status"] == "SUCCEEDED" and body["cluster"]["status"] == "READY"
    assert "stage 1 network" in result.stderr


def test_wait_timeout_exits_4_while_the_operation_continues(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a create that needs more polls than fit in 1 s at a 0.5 s interval,
    when `--wait --wait-timeout 1` runs,
    then the CLI stops waiting with exit code 4 and says how to follow the operation, which is still running."""
    result = run(*CREATE, "--wait", "--poll-interval", "0.5", "--wait-timeout", "1")
    assert result.exit_code == 4
    assert "the operation continues" in result.stderr and "instantstart operations get" in result.stderr
    assert inprocess_api.call("GET", "/clusters/demo")[1]["status"] == "CREATING"


# -- deleting -----------------------------------------------------------------------------------------


def test_delete_asks_for_the_tag_and_aborts_on_a_mismatch(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a READY cluster,
    when `clusters delete demo` is answered with another tag,
    then nothing is deleted and the exit code is 1."""
    inprocess_api.add_cluster("demo")
    result = run("clusters", "delete", "demo", input="dmeo\n")
    assert result.exit_code == 1
    assert "Type the cluster tag" in result.stdout and "does not match" in result.stderr
    assert inprocess_api.requests_to("DELETE", "/clusters/demo") == []
    assert inprocess_api.call("GET", "/clusters/demo")[1]["status"] == "READY"


def test_delete_without_confirmation_input_deletes_nothing(inprocess_api: InProcessApi, run: Run) -> None:
    """Given no terminal input and no --yes, when delete runs, then it aborts without a DELETE."""
    inprocess_api.add_cluster("demo")
    result = run("clusters", "delete", "demo", input="")
    assert result.exit_code == 1
    assert inprocess_api.requests_to("DELETE", "/clusters/demo") == []


def test_delete_with_the_typed_tag_sends_the_delete(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a READY cluster, when the tag is typed, then DELETE is sent and the operation printed."""
    inprocess_api.add_cluster("demo")
    result = run("clusters", "delete", "demo", input="demo\n")
    assert result.exit_code == 0, result.output
    assert len(inprocess_api.requests_to("DELETE", "/clusters/demo")) == 1
    assert "DELETE_CLUSTER" in result.stdout
    assert inprocess_api.call("GET", "/clusters/demo")[1]["status"] == "DELETING"


def test_delete_yes_wait_follows_the_deletion(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a READY cluster, when `delete --yes --wait` runs, then it reports the cluster deleted (GET is 404)."""
    inprocess_api.add_cluster("demo")
    result = run("clusters", "delete", "demo", "--yes", "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 0, result.output
    assert "Cluster demo deleted." in result.stdout
    assert inprocess_api.call("GET", "/clusters/demo")[0] == 404


# -- errors -------------------------------------------------------------------------------------------


def test_a_validation_error_prints_code_message_and_fields_and_exits_2(run: Run) -> None:
    """Given an instance type the API rejects,
    when `clusters create` runs,
    then stderr shows 422, the code, the message and the field detail; exit code 2."""
    result = run("clusters", "create", "--tag", "demo", "--az", "us-west-2c", "--instance-type", "ml.nope.x")
    assert result.exit_code == 2
    assert "422 ValidationError: invalid request: instanceGroups[0].instanceType" in result.stderr
    assert "  - instanceGroups[0].instanceType: " in result.stderr and "ml.g6.4xlarge" in result.stderr
    assert result.stdout == ""


def test_retrying_a_stage_that_did_not_fail_exits_2_with_the_conflict(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a READY cluster, when a SUCCEEDED stage is retried, then 409 StageNotFailed is shown; exit 2."""
    inprocess_api.add_cluster("demo")
    result = run("clusters", "retry", "demo", "network")
    assert result.exit_code == 2
    assert "409 StageNotFailed: stage 'network' is SUCCEEDED" in result.stderr


def test_a_persistent_503_exits_3_after_retries(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given a proxy answering 503 to every attempt (no real sleeping),
    when a command runs,
    then it retries 5 times, prints the error, and exits 3."""
    attempts: list[httpx2.Request] = []

    def unavailable(request: httpx2.Request) -> httpx2.Response:
        attempts.append(request)
        body = {"error": {"code": "ServiceUnavailable", "message": "DynamoDB is unavailable", "details": []}}
        return httpx2.Response(503, json=body)

    use_transport(monkeypatch, httpx2.MockTransport(unavailable))
    result = run("catalog", "zones")
    assert result.exit_code == 3
    assert "503 ServiceUnavailable: DynamoDB is unavailable" in result.stderr
    assert len(attempts) == 5


def test_an_unreachable_api_exits_3(monkeypatch: pytest.MonkeyPatch, no_network: None) -> None:
    """Given nothing listening at the API URL, when a command runs, then it says so and exits 3."""
    monkeypatch.setattr(
        instantstart_client.cli, "InstantStartClient", functools.partial(InstantStartClient, sleep=lambda s: None)
    )
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    with socket.socket() as sock:  # bound, not listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        result = CliRunner().invoke(app, ["--api-url", f"http://127.0.0.1:{sock.getsockname()[1]}", "clusters", "list"])
    assert result.exit_code == 3
    assert "cannot reach the API" in result.stderr


def test_a_missing_api_url_exits_2_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Given neither --api-url nor INSTANTSTART_API_URL, when a command runs, then exit code 2."""
    monkeypatch.delenv("INSTANTSTART_API_URL", raising=False)
    result = CliRunner().invoke(app, ["clusters", "list"])
    assert result.exit_code == 2
    assert "INSTANTSTART_API_URL" in result.stderr


def test_error_text_from_the_api_is_printed_verbatim_even_with_brackets(run: Run) -> None:
    """Given an instance group name the API rejects with its pattern (``[a-zA-Z0-9]...``) in the message,
    or a zone it answers with the list of allowed zones,
    when the command fails,
    then stderr shows the message, the pattern and the allowed values exactly (not read as markup)."""
    bad_group = [*CREATE, "--group-name", "no_underscores"]
    result = run(*bad_group)
    error = json.loads(run("--json", *bad_group).stderr)["error"]

    assert result.exit_code == 2
    [detail] = error["details"]
    assert detail["field"] == "instanceGroups[0].instanceGroupName"
    assert re.search(r"\[[a-zA-Z0-9-]+\]", detail["message"])  # the pattern's character class is in the text
    assert error["message"] in result.stderr
    assert f"  - instanceGroups[0].instanceGroupName: {detail['message']}" in result.stderr

    zone = run(*CREATE[:5], "us-west-2q", *CREATE[6:])
    allowed = "['us-west-2a', 'us-west-2b', 'us-west-2c', 'us-west-2d']"
    assert zone.exit_code == 2
    assert f"  - availabilityZone: not in this Region (allowed: {allowed})" in zone.stderr


def test_a_stage_error_with_brackets_is_shown_verbatim_when_waiting(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a stage failing with a message that contains [bold] and [/],
    when `create --wait` runs,
    then the progress line and the failure report show the message as sent."""
    inprocess_api.driver.fail(
        "access", "AccessDeniedException", "principal [bold]arn:aws:iam::1:role/x[/] is not authorized"
    )
    result = run(*CREATE, "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 1
    message = "AccessDeniedException: principal [bold]arn:aws:iam::1:role/x[/] is not authorized"
    assert f"stage 2 access FAILED attempt 1 {message}" in result.stdout
    assert f"Stage access failed: {message}" in result.stderr


def test_given_json_output_when_the_api_refuses_then_the_error_json_is_printed(run: Run) -> None:
    result = run("--json", "clusters", "get", "nosuch")
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert error["code"] == "ClusterNotFound" and "nosuch" in error["message"]


# -- cancelling and the operations of a cluster -----------------------------------------------------------


def test_operations_cancel_stops_a_running_create_and_says_how_to_go_on(inprocess_api: InProcessApi, run: Run) -> None:
    """Given a create whose first stage is RUNNING,
    when `operations cancel OP_ID` runs,
    then it prints the CANCELLED operation and the delete and retry commands, and the cluster is FAILED;
    a second cancel prints the same operation, and `clusters operations` lists it."""
    inprocess_api.advance_on_poll = False
    op = inprocess_api.create_cluster("demo")
    inprocess_api.driver.step(op["operationId"])

    result = run("operations", "cancel", op["operationId"])

    assert result.exit_code == 0, result.output
    assert "CANCELLED" in result.output and "OperationCancelled" in result.output
    assert "instantstart clusters delete demo" in result.output
    assert "instantstart clusters retry demo STAGE" in result.output
    assert inprocess_api.call("GET", "/clusters/demo")[1]["status"] == "FAILED"
    again = run("--json", "operations", "cancel", op["operationId"])
    assert again.exit_code == 0 and json.loads(again.output)["status"] == "CANCELLED"
    listed = run("clusters", "operations", "demo")
    assert listed.exit_code == 0 and op["operationId"] in listed.output and "CREATE_CLUSTER" in listed.output


def test_operations_cancel_of_an_ended_operation_exits_2_naming_its_status(
    inprocess_api: InProcessApi, run: Run
) -> None:
    op = inprocess_api.create_cluster("demo")
    inprocess_api.driver.run(op["operationId"])

    result = run("operations", "cancel", op["operationId"])

    assert result.exit_code == 2
    assert "OperationAlreadyEnded" in result.output and "SUCCEEDED" in result.output


# -- autoscaling --------------------------------------------------------------------------------------


def test_autoscaling_enable_sends_groups_limits_and_consolidation_and_prints_the_operation(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given an API that accepts the change,
    when `autoscaling enable` runs with two groups, two limits and --consolidate-after,
    then one PUT carries them as the API names them and the UPDATE_AUTOSCALING operation is printed."""
    sent: list[httpx2.Request] = []

    def accept(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        op = {
            "operationId": "op-0123456789abcdef0123456789abcdef",
            "type": "UPDATE_AUTOSCALING",
            "status": "PENDING",
            "clusterTag": "demo",
            "statusUrl": "/operations/op-0123456789abcdef0123456789abcdef",
            "createdAt": "2025-01-01T00:00:00Z",
            "updatedAt": "2025-01-01T00:00:00Z",
        }
        return httpx2.Response(202, json=op)

    use_transport(monkeypatch, httpx2.MockTransport(accept))
    result = run(
        "autoscaling", "enable", "demo", "--instance-group", "auto", "--instance-group", "auto2",
        "--limit", "nvidia.com/gpu=64", "--limit", "cpu=1000", "--consolidate-after", "5m",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    (request,) = sent
    assert (request.method, request.url.path) == ("PUT", "/clusters/demo/autoscaling")
    assert json.loads(request.content) == {
        "enabled": True,
        "instanceGroups": ["auto", "auto2"],
        "limits": {"nvidia.com/gpu": "64", "cpu": "1000"},
        "consolidateAfter": "5m",
    }
    assert "UPDATE_AUTOSCALING demo: operation op-0123456789abcdef0123456789abcdef PENDING" in result.stdout


def test_autoscaling_enable_with_a_limit_without_a_quantity_exits_2_and_sends_nothing(
    run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[httpx2.Request] = []
    use_transport(monkeypatch, httpx2.MockTransport(lambda r: sent.append(r) or httpx2.Response(500)))

    result = run("autoscaling", "enable", "demo", "--instance-group", "auto", "--limit", "nvidia.com/gpu")

    assert result.exit_code == 2
    assert "--limit takes RESOURCE=QUANTITY" in result.output
    assert sent == []


def test_autoscaling_disable_sends_enabled_false_only(run: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[httpx2.Request] = []

    def refuse(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        body = {"error": {"code": "Conflict", "message": "operation op-1 is RUNNING on cluster demo", "details": []}}
        return httpx2.Response(409, json=body)

    use_transport(monkeypatch, httpx2.MockTransport(refuse))
    result = run("autoscaling", "disable", "demo")

    assert result.exit_code == 2
    assert json.loads(sent[0].content) == {"enabled": False}
    assert "409 Conflict: operation op-1 is RUNNING on cluster demo" in result.stderr


def test_autoscaling_get_and_enable_of_an_unknown_cluster_exit_2_naming_it(run: Run) -> None:
    """Given no such cluster, the real API answers 404 naming the cluster (the CLI prints it and exits 2)."""
    result = run("autoscaling", "get", "ghost")
    assert result.exit_code == 2 and "404" in result.stderr and "ghost" in result.stderr

    result = run("autoscaling", "enable", "ghost", "--instance-group", "auto")

    assert result.exit_code == 2
    assert "404" in result.stderr and "ghost" in result.stderr
