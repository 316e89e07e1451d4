"""``instantstart governance``: the bodies the commands send, and --wait following SageMaker's status (an API stub)."""

from __future__ import annotations

import functools
import json
from typing import Any

import httpx2
import pytest
from typer.testing import CliRunner, Result

import instantstart_client.cli
from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app

URL = "https://abc123.execute-api.us-west-2.amazonaws.com"


class Stub:
    """Answers the governance routes; GETs answer the next of ``statuses`` for the written resource."""

    def __init__(self, statuses: list[str], failure: str | None = None) -> None:
        self.statuses, self.failure = statuses, failure
        self.requests: list[tuple[str, str, Any]] = []

    def view(self, status: str, **extra: Any) -> dict[str, Any]:
        return {"name": "demo-research", "status": status, "computeQuotaVersion": 1, "failureReason": extra.get("f")}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, request.url.path, body))
        if request.method == "GET":
            status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
            quota = self.view(status, f=self.failure if status.endswith("Failed") else None)
            if request.url.path.endswith("/scheduler-config"):
                return httpx2.Response(200, json={**quota, "name": "demo-scheduler-config", "schedulerConfig": {}})
            return httpx2.Response(200, json={"clusterTag": "demo", "computeQuotas": [quota] if status else []})
        return httpx2.Response(202, json=self.view("Creating"))


@pytest.fixture
def stub_run(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    def run(stub: Stub, *args: str, input: str | None = None) -> Result:
        transport = httpx2.MockTransport(stub)
        monkeypatch.setattr(
            instantstart_client.cli,
            "InstantStartClient",
            functools.partial(InstantStartClient, transport=transport, sleep=lambda s: None),
        )
        return CliRunner().invoke(app, ["--api-url", URL, "--region", "us-west-2", *args], input=input)

    return run


def test_set_policy_sends_the_scheduler_config_and_waits_until_created(stub_run: Any) -> None:
    stub = Stub(["Creating", "Created"])
    result = stub_run(
        stub,
        "governance",
        "set-policy",
        "demo",
        "--priority-class",
        "inference=100",
        "--fair-share",
        "Enabled",
        "--target-version",
        "3",
        "--wait",
        "--poll-interval",
        "0.1",
    )

    assert result.exit_code == 0, result.output
    method, path, body = stub.requests[0]
    assert (method, path) == ("PUT", "/clusters/demo/scheduler-config")
    assert body == {
        "schedulerConfig": {"priorityClasses": [{"name": "inference", "weight": 100}], "fairShare": "Enabled"},
        "targetVersion": 3,
    }
    assert "Created" in result.output


def test_create_quota_wait_exits_1_with_sagemakers_failure_reason(stub_run: Any) -> None:
    stub = Stub(["Creating", "CreateFailed"], failure="Insufficient capacity for ml.g6.4xlarge in the cluster")
    result = stub_run(
        stub,
        "governance",
        "create-quota",
        "demo",
        "--team",
        "research",
        "--resource",
        "ml.g6.4xlarge=2",
        "--strategy",
        "Lend",
        "--wait",
        "--poll-interval",
        "0.1",
    )

    assert result.exit_code == 1
    assert "Insufficient capacity for ml.g6.4xlarge in the cluster" in result.output
    _, path, body = stub.requests[0]
    assert path == "/clusters/demo/compute-quotas"
    assert body == {
        "computeQuotaConfig": {
            "computeQuotaResources": [{"instanceType": "ml.g6.4xlarge", "count": 2}],
            "resourceSharingConfig": {"strategy": "Lend"},
        },
        "computeQuotaTarget": {"teamName": "research"},
    }


def test_delete_quota_asks_for_the_name_and_sends_nothing_on_a_mismatch(stub_run: Any) -> None:
    stub = Stub(["Created"])
    result = stub_run(stub, "governance", "delete-quota", "demo", "demo-research", input="other\n")

    assert result.exit_code == 1
    assert [r for r in stub.requests if r[0] == "DELETE"] == []


def test_a_bad_resource_option_is_refused_before_any_request(stub_run: Any) -> None:
    stub = Stub(["Created"])
    result = stub_run(stub, "governance", "create-quota", "demo", "--team", "t", "--resource", "ml.g6.4xlarge")

    assert result.exit_code == 2
    assert stub.requests == []
