"""The ``instantstart`` CLI's node, software-update and health-check commands: each starts an operation and, with
``--wait``, follows it to its end like the other operations (an API stub answers the 202 and the polls)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from typer.testing import CliRunner, Result

import instantstart_client.cli
from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app

API = "https://abc123.execute-api.us-west-2.amazonaws.com"
OP_ID = "op-0123456789abcdef0123456789abcdef"
NODE = "i-0123456789abcdef0"


def operation(op_type: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "operationId": OP_ID,
        "type": op_type,
        "status": status,
        "clusterTag": "demo",
        "statusUrl": f"/operations/{OP_ID}",
        "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-01T00:00:00Z",
        "startedAt": None,
        "endedAt": None,
        "error": None,
        "result": None,
        **extra,
    }


class Stub:
    """The API: ``POST`` answers 202 with ``started``; ``GET /operations/{id}`` answers ``polls`` in turn."""

    def __init__(self, started: dict[str, Any], polls: list[dict[str, Any]]) -> None:
        self.started = started
        self.polls = polls
        self.posts: list[tuple[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST":
            self.posts.append((request.url.path, json.loads(request.content)))
            return httpx2.Response(202, json=self.started)
        if request.url.path == f"/operations/{OP_ID}":
            return httpx2.Response(200, json=self.polls.pop(0) if len(self.polls) > 1 else self.polls[0])
        body = {"error": {"code": "ClusterNotFound", "message": "no cluster demo", "details": []}}
        return httpx2.Response(404, json=body)


@pytest.fixture
def cli(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``cli(stub, *args, input=None)``: the CLI against ``stub``."""
    monkeypatch.setenv("COLUMNS", "200")

    def _run(stub: Stub, *args: str, input: str | None = None) -> Result:
        transport = httpx2.MockTransport(stub)
        monkeypatch.setattr(
            instantstart_client.cli,
            "InstantStartClient",
            functools.partial(InstantStartClient, transport=transport, sleep=lambda s: None),
        )
        return CliRunner().invoke(app, ["--api-url", API, *args], input=input)

    return _run


def test_nodes_reboot_without_wait_prints_the_operation_and_how_to_follow_it(cli: Callable[..., Result]) -> None:
    stub = Stub(operation("REBOOT_CLUSTER_NODES", "PENDING", result={"nodeIds": [NODE]}), [])

    result = cli(stub, "nodes", "reboot", "demo", NODE)

    assert result.exit_code == 0, result.output
    assert stub.posts == [("/clusters/demo/nodes/reboot", {"nodeIds": [NODE]})]
    assert f"REBOOT_CLUSTER_NODES demo: operation {OP_ID} PENDING" in result.stdout
    assert f"instantstart operations get {OP_ID} --wait" in result.stdout


def test_nodes_reboot_wait_follows_to_failed_and_shows_hyperpods_refusal_verbatim(cli: Callable[..., Result]) -> None:
    refused = {"nodeId": NODE, "code": "InstanceIdInUse", "message": f"Node {NODE} is Rebooting; retry when Running"}
    result_ = {"nodeIds": [NODE], "successful": [], "failed": [refused], "hyperPodOperationId": None, "observed": None}
    stub = Stub(
        operation("REBOOT_CLUSTER_NODES", "PENDING"),
        [
            operation("REBOOT_CLUSTER_NODES", "RUNNING"),
            operation(
                "REBOOT_CLUSTER_NODES",
                "FAILED",
                result=result_,
                error={"code": "InstanceIdInUse", "message": refused["message"]},
                endedAt="2026-01-01T00:01:00Z",
            ),
        ],
    )

    result = cli(stub, "nodes", "reboot", "demo", NODE, "--wait", "--poll-interval", "0.1")

    assert result.exit_code == 1, result.output
    assert f"InstanceIdInUse: Node {NODE} is Rebooting; retry when Running" in result.stderr
    assert NODE in result.stderr and "failed" in result.stderr


def test_nodes_delete_wait_follows_to_succeeded(cli: Callable[..., Result]) -> None:
    done = {"nodeIds": [NODE], "successful": [NODE], "failed": [], "hyperPodOperationId": None, "observed": None}
    stub = Stub(
        operation("DELETE_CLUSTER_NODES", "PENDING"),
        [operation("DELETE_CLUSTER_NODES", "SUCCEEDED", result=done, endedAt="2026-01-01T00:01:00Z")],
    )

    result = cli(stub, "nodes", "delete", "demo", NODE, "--yes", "--wait", "--poll-interval", "0.1")

    assert result.exit_code == 0, result.output
    assert stub.posts == [("/clusters/demo/nodes/delete", {"nodeIds": [NODE]})]
    assert NODE in result.stdout and "accepted" in result.stdout


def test_software_update_sends_the_ami_and_rolling_policy_and_prints_the_operation(
    cli: Callable[..., Result],
) -> None:
    stub = Stub(operation("UPDATE_CLUSTER_SOFTWARE", "PENDING"), [])

    result = cli(
        stub, "clusters", "software-update", "demo", "--image-id", "ami-0123456789abcdef0", "--batch-size", "1"
    )

    assert result.exit_code == 0, result.output
    assert stub.posts == [
        (
            "/clusters/demo/software-update",
            {
                "imageId": "ami-0123456789abcdef0",
                "deploymentConfig": {
                    "rollingUpdatePolicy": {"maximumBatchSize": {"type": "INSTANCE_COUNT", "value": 1}}
                },
            },
        )
    ]
    assert f"UPDATE_CLUSTER_SOFTWARE demo: operation {OP_ID} PENDING" in result.stdout


def test_health_check_wait_exits_1_with_the_failed_nodes_message(cli: Callable[..., Result]) -> None:
    message = "InstanceStress: GPU stress test failed (DCGM diagnostic level 4)"
    failed = {"nodeId": NODE, "code": "DeepHealthCheckFailed", "message": message}
    stub = Stub(
        operation("START_CLUSTER_HEALTH_CHECK", "PENDING"),
        [
            operation(
                "START_CLUSTER_HEALTH_CHECK",
                "FAILED",
                result={"failed": [failed], "hyperPodOperationId": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"},
                error={"code": "DeepHealthCheckFailed", "message": f"instance {NODE}: {message}"},
                endedAt="2026-01-01T00:01:00Z",
            )
        ],
    )

    result = cli(
        stub, "clusters", "health-check", "demo", "--instance-group", "accel", "--wait", "--poll-interval", "0.1"
    )

    assert result.exit_code == 1, result.output
    assert stub.posts == [
        (
            "/clusters/demo/health-checks",
            {
                "instanceGroups": [
                    {"instanceGroupName": "accel", "deepHealthChecks": ["InstanceStress", "InstanceConnectivity"]}
                ]
            },
        )
    ]
    assert f"DeepHealthCheckFailed: instance {NODE}: {message}" in result.stderr


@pytest.mark.parametrize(
    ("op_type", "shows_stage"), [("DOWNLOAD_MODEL", False), ("SCALE_INSTANCE_GROUP", False), ("CREATE_CLUSTER", True)]
)
def test_a_failed_day2_operation_reports_its_own_error_not_a_stage_the_create_left_failed(
    op_type: str, shows_stage: bool
) -> None:
    from instantstart_client.progress import WatchResult

    verify = {
        "name": "verify",
        "order": 6,
        "status": "FAILED",
        "error": {"code": "InsufficientCapacity", "message": "m"},
    }
    failed = operation(op_type, "FAILED", error={"code": "ModelDownloadFailed", "message": "404"})
    result = WatchResult(operation=failed, cluster={"clusterTag": "demo", "status": "DEGRADED", "stages": [verify]})

    assert (result.failed_stage is not None) is shows_stage
