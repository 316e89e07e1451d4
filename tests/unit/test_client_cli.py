"""The ``instantstart`` CLI through typer's CliRunner, against the fake API on 127.0.0.1."""

from __future__ import annotations

import functools
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import instantstart_client.cli
from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app
from instantstart_client.testing import CannedResponse, FakeInstantStartApi, error_body

ACCESS_KEY, SECRET_KEY = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUMMARY = [
    "| EKS Cluster      | eks-cluster-demo                 |",
    "| HyperPod Cluster | hp-cluster-demo                  |",
    "| Node             | 1x ml.g6.4xlarge (On-Demand)     |",
    "| Node Status      | Ready / Schedulable              |",
    "| S3 Storage       | s3-claim mounted (Bound)         |",
]
CREATE = ["clusters", "create", "--tag", "demo", "--az", "us-west-2c", "--instance-type", "ml.g6.4xlarge"]


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
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("COLUMNS", "200")


@pytest.fixture
def fake() -> Iterator[FakeInstantStartApi]:
    """The fake API, checking every request's SigV4 signature."""
    with FakeInstantStartApi(credentials=(ACCESS_KEY, SECRET_KEY, None)) as api:
        yield api


def no_backoff_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the CLI's client skip the real backoff sleeps between retries."""
    monkeypatch.setattr(
        instantstart_client.cli, "InstantStartClient", functools.partial(InstantStartClient, sleep=lambda s: None)
    )


def run(fake_url: str, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(app, ["--api-url", fake_url, *args], input=input)


# -- reading ------------------------------------------------------------------------------------------


def test_clusters_list_prints_a_table_of_every_cluster(fake: FakeInstantStartApi) -> None:
    """Given 3 clusters and a server page size of 2,
    when `clusters list` runs,
    then one table lists all three with their status and resource names."""
    fake.page_size = 2
    fake.add_cluster("alpha")
    fake.add_cluster("bravo", status="FAILED", failed_stage="hyperpod")
    fake.add_cluster("charlie")

    result = run(fake.url, "clusters", "list")

    assert result.exit_code == 0, result.output
    assert "Clusters (3)" in result.stdout
    for tag in ("alpha", "bravo", "charlie"):
        assert f"eks-cluster-{tag}" in result.stdout and f"hp-cluster-{tag}" in result.stdout
    assert "FAILED" in result.stdout
    assert len(fake.requests_to("GET", "/clusters")) == 2


@pytest.mark.parametrize("placement", ["global", "command"])
def test_json_output_is_the_raw_answer(fake: FakeInstantStartApi, placement: str) -> None:
    """Given one cluster,
    when `--json` is given before the group or after the command,
    then stdout is the API's JSON (parseable, nothing else)."""
    fake.add_cluster("alpha")
    args = ["--json", "clusters", "list"] if placement == "global" else ["clusters", "list", "--json"]
    result = run(fake.url, *args)
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert [c["clusterTag"] for c in body["clusters"]] == ["alpha"] and body["nextToken"] is None


def test_one_page_with_max_results_shows_the_next_token(fake: FakeInstantStartApi) -> None:
    """Given two clusters,
    when `clusters list --max-results 1` runs,
    then one cluster is shown with the token of the next page, which then lists the other."""
    fake.add_cluster("alpha")
    fake.add_cluster("bravo")
    first = run(fake.url, "--json", "clusters", "list", "--max-results", "1")
    token = json.loads(first.stdout)["nextToken"]
    human = run(fake.url, "clusters", "list", "--max-results", "1")
    second = run(fake.url, "--json", "clusters", "list", "--next-token", token)

    assert token and f"--next-token {token}" in human.stdout
    assert [c["clusterTag"] for c in json.loads(second.stdout)["clusters"]] == ["bravo"]


def test_clusters_get_shows_stages_resources_and_the_summary(fake: FakeInstantStartApi) -> None:
    """Given a READY cluster,
    when `clusters get demo` runs,
    then the overview, the six stages, the resources and the article's summary are printed."""
    fake.add_cluster("demo")
    result = run(fake.url, "clusters", "get", "demo")
    assert result.exit_code == 0, result.output
    for name in ("network", "access", "dependencies", "hyperpod", "storage", "verify"):
        assert name in result.stdout
    assert "s3-claim" in result.stdout and "Kubernetes 1.32" in result.stdout
    assert result.stdout.rstrip().splitlines()[-5:] == SUMMARY


def test_clusters_get_of_a_failed_cluster_names_the_failed_stage(fake: FakeInstantStartApi) -> None:
    """Given a cluster FAILED at hyperpod, when it is shown, then the stage's error is printed."""
    fake.add_cluster("demo", status="FAILED", failed_stage="hyperpod")
    result = run(fake.url, "clusters", "get", "demo")
    assert result.exit_code == 0
    assert "Stage hyperpod failed: ResourceLimitExceeded" in result.stdout


def test_clusters_stages_and_operations_get(fake: FakeInstantStartApi) -> None:
    """Given a cluster being created,
    when its stages and its operation are shown,
    then the stage table lists the six stages and the operation table its type and status."""
    created = json.loads(run(fake.url, "--json", *CREATE).stdout)
    stages = run(fake.url, "clusters", "stages", "demo")
    operation = run(fake.url, "operations", "get", created["operationId"])
    stages_json = json.loads(run(fake.url, "clusters", "stages", "demo", "--json").stdout)

    assert stages.exit_code == operation.exit_code == 0
    assert all(name in stages.stdout for name in ("network", "verify"))
    assert "CREATE_CLUSTER" in operation.stdout and created["operationId"] in operation.stdout
    assert [s["order"] for s in stages_json["stages"]] == [1, 2, 3, 4, 5, 6]


def test_catalog_commands_list_zones_and_instance_types(fake: FakeInstantStartApi) -> None:
    """Given the fake catalog,
    when zones and instance types in a zone are listed,
    then the tables show them and the zone is sent as availabilityZone."""
    zones = run(fake.url, "catalog", "zones")
    types = run(fake.url, "catalog", "instance-types", "--az", "us-west-2c")
    assert zones.exit_code == types.exit_code == 0
    assert "us-west-2c" in zones.stdout and "usw2-az3" in zones.stdout
    assert "ml.g6.4xlarge" in types.stdout and "in us-west-2c" in types.stdout
    assert fake.requests_to("GET", "/catalog/instance-types")[0].query == {"availabilityZone": "us-west-2c"}


# -- creating and waiting -----------------------------------------------------------------------------


def test_create_sends_the_group_and_key_and_prints_the_operation(fake: FakeInstantStartApi) -> None:
    """Given create options and an idempotency key,
    when `clusters create` runs without --wait,
    then the POST body holds one instance group, the key is sent, and the operation id is printed."""
    result = run(
        fake.url,
        *CREATE,
        "--count",
        "2",
        "--group-name",
        "gpu",
        "--idempotency-key",
        "demo-create-1",
    )
    assert result.exit_code == 0, result.output
    request = fake.requests_to("POST", "/clusters")[0]
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
    operation_id = next(iter(fake.operations))
    assert operation_id in result.stdout and "CREATE_CLUSTER" in result.stdout


def test_create_wait_follows_the_stages_and_ends_with_the_summary(fake: FakeInstantStartApi) -> None:
    """Given a create that succeeds,
    when `clusters create --wait` runs,
    then each stage's progress is shown and the output ends with the summary table; exit code 0."""
    result = run(fake.url, *CREATE, "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 0, result.output
    assert "stage 4 hyperpod RUNNING" in result.stdout and "stage 6 verify SUCCEEDED" in result.stdout
    assert result.stdout.rstrip().splitlines()[-5:] == SUMMARY
    assert "is READY" in result.stdout


def test_create_wait_exits_1_and_names_the_failing_stage(fake: FakeInstantStartApi) -> None:
    """Given a hyperpod stage that fails with ResourceLimitExceeded,
    when `clusters create --wait` runs,
    then exit code is 1 and stderr has the stage, the AWS error code and message, and the retry hint."""
    fake.fail_stage, fake.fail_remaining = "hyperpod", 1
    result = run(fake.url, *CREATE, "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 1
    assert "Stage hyperpod failed: ResourceLimitExceeded: The account-level service limit" in result.stderr
    assert "instantstart clusters retry demo hyperpod --wait" in result.stderr
    assert "| EKS Cluster" not in result.stdout


def test_retry_wait_runs_the_failed_stage_again_to_ready(fake: FakeInstantStartApi) -> None:
    """Given a cluster FAILED at hyperpod (the fault now cleared),
    when `clusters retry demo hyperpod --wait` runs,
    then the retry is POSTed, hyperpod runs a second attempt, and the summary is printed."""
    fake.add_cluster("demo", status="FAILED", failed_stage="hyperpod")
    result = run(fake.url, "clusters", "retry", "demo", "hyperpod", "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 0, result.output
    assert len(fake.requests_to("POST", "/clusters/demo/stages/hyperpod/retry")) == 1
    assert "stage 4 hyperpod RUNNING attempt 2" in result.stdout
    assert "network RUNNING" not in result.stdout  # earlier stages are kept
    assert result.stdout.rstrip().splitlines()[-5:] == SUMMARY


def test_wait_with_json_prints_the_final_operation_and_cluster(fake: FakeInstantStartApi) -> None:
    """Given --json and --wait,
    when a create succeeds,
    then stdout is one JSON document with the SUCCEEDED operation and READY cluster (progress on stderr)."""
    result = run(fake.url, "--json", *CREATE, "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["operation"]["status"] == "SUCCEEDED" and body["cluster"]["status"] == "READY"
    assert "stage 1 network" in result.stderr


def test_wait_timeout_exits_4_while_the_operation_continues(fake: FakeInstantStartApi) -> None:
    """Given a create that needs more polls than fit in 1 s at a 0.5 s interval,
    when `--wait --wait-timeout 1` runs,
    then the CLI stops waiting with exit code 4 and says how to follow the operation."""
    result = run(fake.url, *CREATE, "--wait", "--poll-interval", "0.5", "--wait-timeout", "1")
    assert result.exit_code == 4
    assert "the operation continues" in result.stderr and "instantstart operations get" in result.stderr


# -- deleting -----------------------------------------------------------------------------------------


def test_delete_asks_for_the_tag_and_aborts_on_a_mismatch(fake: FakeInstantStartApi) -> None:
    """Given a READY cluster,
    when `clusters delete demo` is answered with another tag,
    then nothing is deleted and the exit code is 1."""
    fake.add_cluster("demo")
    result = run(fake.url, "clusters", "delete", "demo", input="dmeo\n")
    assert result.exit_code == 1
    assert "Type the cluster tag" in result.stdout and "does not match" in result.stderr
    assert fake.requests_to("DELETE", "/clusters/demo") == []


def test_delete_without_confirmation_input_deletes_nothing(fake: FakeInstantStartApi) -> None:
    """Given no terminal input and no --yes, when delete runs, then it aborts without a DELETE."""
    fake.add_cluster("demo")
    result = run(fake.url, "clusters", "delete", "demo", input="")
    assert result.exit_code == 1
    assert fake.requests_to("DELETE", "/clusters/demo") == []


def test_delete_with_the_typed_tag_sends_the_delete(fake: FakeInstantStartApi) -> None:
    """Given a READY cluster, when the tag is typed, then DELETE is sent and the operation printed."""
    fake.add_cluster("demo")
    result = run(fake.url, "clusters", "delete", "demo", input="demo\n")
    assert result.exit_code == 0, result.output
    assert len(fake.requests_to("DELETE", "/clusters/demo")) == 1
    assert "DELETE_CLUSTER" in result.stdout


def test_delete_yes_wait_follows_the_deletion(fake: FakeInstantStartApi) -> None:
    """Given a READY cluster, when `delete --yes --wait` runs, then it reports the cluster deleted."""
    fake.add_cluster("demo")
    result = run(fake.url, "clusters", "delete", "demo", "--yes", "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 0, result.output
    assert "Cluster demo deleted." in result.stdout
    assert fake.clusters["demo"]["status"] == "DELETED"


# -- errors -------------------------------------------------------------------------------------------


def test_a_validation_error_prints_code_message_and_fields_and_exits_2(fake: FakeInstantStartApi) -> None:
    """Given an instance type the API rejects,
    when `clusters create` runs,
    then stderr shows 422, the code, the message and the field detail; exit code 2."""
    result = run(fake.url, "clusters", "create", "--tag", "demo", "--az", "us-west-2c", "--instance-type", "ml.nope.x")
    assert result.exit_code == 2
    assert "422 ValidationError: the request has invalid fields" in result.stderr
    assert "instanceGroups[0].instanceType: allowed values: ml.g5.8xlarge" in result.stderr
    assert result.stdout == ""


def test_retrying_a_stage_that_did_not_fail_exits_2_with_the_conflict(fake: FakeInstantStartApi) -> None:
    """Given a READY cluster, when a SUCCEEDED stage is retried, then 409 Conflict is shown; exit 2."""
    fake.add_cluster("demo")
    result = run(fake.url, "clusters", "retry", "demo", "network")
    assert result.exit_code == 2
    assert "409 Conflict: stage 'network' is SUCCEEDED, not FAILED" in result.stderr


def test_a_persistent_503_exits_3_after_retries(fake: FakeInstantStartApi, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given an API answering 503 to every attempt (no real sleeping),
    when a command runs,
    then it retries 5 times, prints the error, and exits 3."""
    no_backoff_client(monkeypatch)
    unavailable = CannedResponse(503, error_body("ServiceUnavailable", "DynamoDB is unavailable"))
    fake.inject("GET", "/catalog/availability-zones", *[unavailable] * 5)
    result = run(fake.url, "catalog", "zones")
    assert result.exit_code == 3
    assert "503 ServiceUnavailable: DynamoDB is unavailable" in result.stderr
    assert len(fake.requests) == 5


def test_an_unreachable_api_exits_3(monkeypatch: pytest.MonkeyPatch) -> None:
    """Given nothing listening at the API URL, when a command runs, then it says so and exits 3."""
    no_backoff_client(monkeypatch)
    with socket.socket() as sock:  # bound, not listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        result = run(f"http://127.0.0.1:{sock.getsockname()[1]}", "clusters", "list")
    assert result.exit_code == 3
    assert "cannot reach the API" in result.stderr


def test_a_missing_api_url_exits_2_naming_the_setting() -> None:
    """Given neither --api-url nor INSTANTSTART_API_URL, when a command runs, then exit code 2."""
    result = CliRunner().invoke(app, ["clusters", "list"])
    assert result.exit_code == 2
    assert "INSTANTSTART_API_URL" in result.stderr


def test_error_text_from_the_api_is_printed_verbatim_even_with_brackets(fake: FakeInstantStartApi) -> None:
    """Given a 422 whose message and details hold a regex with [...] and allowed values,
    when the command fails,
    then stderr shows the message, the pattern and the allowed values exactly (not read as markup)."""
    pattern = r"'^ml\.[a-z0-9-]+\.[a-z0-9-]+$'"
    fake.inject(
        "POST",
        "/clusters",
        CannedResponse(
            422,
            error_body(
                "ValidationError",
                f"invalid request: instanceGroups[0].instanceType: String should match pattern {pattern}",
                [
                    {"field": "instanceGroups[0].instanceType", "message": f"should match pattern {pattern}"},
                    {"field": "availabilityZone", "message": "not in this Region", "allowedValues": "[us-west-2a]"},
                ],
            ),
        ),
    )
    result = run(fake.url, *CREATE)
    assert result.exit_code == 2
    assert f"String should match pattern {pattern}" in result.stderr
    assert f"  - instanceGroups[0].instanceType: should match pattern {pattern}" in result.stderr
    assert "  - availabilityZone: not in this Region (allowed: [us-west-2a])" in result.stderr


def test_a_stage_error_with_brackets_is_shown_verbatim_when_waiting(fake: FakeInstantStartApi) -> None:
    """Given a stage failing with a message that contains [bold] and [/],
    when `create --wait` runs,
    then the progress line and the failure report show the message as sent."""
    fake.fail_stage, fake.fail_remaining = "access", 1
    fake.fail_error = ("AccessDeniedException", "principal [bold]arn:aws:iam::1:role/x[/] is not authorized")
    result = run(fake.url, *CREATE, "--wait", "--poll-interval", "0.1")
    assert result.exit_code == 1
    message = "AccessDeniedException: principal [bold]arn:aws:iam::1:role/x[/] is not authorized"
    assert f"stage 2 access FAILED attempt 1 {message}" in result.stdout
    assert f"Stage access failed: {message}" in result.stderr


def test_given_json_output_when_the_api_refuses_then_the_error_json_is_printed(fake: FakeInstantStartApi) -> None:
    result = run(fake.url, "--json", "clusters", "get", "nosuch")
    assert result.exit_code == 2
    error = json.loads(result.stderr)["error"]
    assert error["code"] and error["message"]
