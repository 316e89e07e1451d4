"""``instantstart clusters reconcile``: the answer without drift, the repair operation, and the refusal."""

from __future__ import annotations

import functools
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
NO_DRIFT = {
    "clusterTag": "demo",
    "drift": [],
    "checkedAt": "2026-12-01T10:00:00Z",
    "message": "no drift: AWS reports what the records say; nothing to do",
}
OPERATION = {
    "operationId": OP_ID,
    "type": "RECONCILE_CLUSTER",
    "status": "PENDING",
    "clusterTag": "demo",
    "statusUrl": f"/operations/{OP_ID}",
    "createdAt": "2026-12-01T10:00:00Z",
    "updatedAt": "2026-12-01T10:00:00Z",
    "startedAt": None,
    "endedAt": None,
    "error": None,
    "result": None,
}
REFUSAL = {
    "error": {
        "code": "DriftNotRepairable",
        "message": "cluster 'demo' drifted, but nothing of it is the control plane's to repair: Addon cert-manager "
        "(tags): not the control plane's own (no instantstart ownership tags): never touched; nothing was done",
        "details": [{"field": "clusterTag", "resourceType": "Addon", "name": "cert-manager", "driftField": "tags"}],
    }
}


@pytest.fixture
def cli(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[Result, list[str]]]:
    """``cli(status, body, *args)``: the CLI against an API whose POST answers ``status`` with ``body``."""
    monkeypatch.setenv("COLUMNS", "200")

    def _run(status: int, body: dict[str, Any], *args: str) -> tuple[Result, list[str]]:
        posts: list[str] = []

        def answer(request: httpx2.Request) -> httpx2.Response:
            posts.append(f"{request.method} {request.url.path}")
            return httpx2.Response(status, json=body)

        transport = httpx2.MockTransport(answer)
        monkeypatch.setattr(
            instantstart_client.cli,
            "InstantStartClient",
            functools.partial(InstantStartClient, transport=transport, sleep=lambda s: None),
        )
        return CliRunner().invoke(app, ["--api-url", API, *args]), posts

    return _run


def test_given_no_drift_then_the_message_and_no_operation(cli: Callable[..., tuple[Result, list[str]]]) -> None:
    result, posts = cli(200, NO_DRIFT, "clusters", "reconcile", "demo")

    assert result.exit_code == 0, result.output
    assert posts == ["POST /clusters/demo/reconcile"]
    assert "demo: no drift" in result.stdout and "operation" not in result.stdout


def test_given_repairable_drift_then_the_operation_and_how_to_follow_it(
    cli: Callable[..., tuple[Result, list[str]]],
) -> None:
    result, _ = cli(202, OPERATION, "clusters", "reconcile", "demo")

    assert result.exit_code == 0, result.output
    assert f"RECONCILE_CLUSTER demo: operation {OP_ID} PENDING" in result.stdout


def test_given_drift_it_must_not_touch_then_the_refusal_names_it(cli: Callable[..., tuple[Result, list[str]]]) -> None:
    result, _ = cli(409, REFUSAL, "clusters", "reconcile", "demo")

    assert result.exit_code != 0
    assert "DriftNotRepairable" in result.output and "cert-manager" in result.output
