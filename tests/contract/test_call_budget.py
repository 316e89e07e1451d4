"""Every route finishes within API Gateway's 30 s: one AWS call of the API function at its worst (every attempt
timing out on connect and read, the longest backoffs between them) ends before the function's Timeout, which ends
before API Gateway's integration timeout; the workflow functions keep a larger budget within their own Timeout."""

from __future__ import annotations

from typing import Any

from instantstart.aws.clients import API_BUDGET, WORKFLOW_BUDGET, _retry_config, client, current_budget, using_budget
from instantstart.kube.reads import KUBERNETES_READ_BUDGET_SECONDS

API_GATEWAY_INTEGRATION_TIMEOUT = 30


def _timeout(template: dict[str, Any], function: str) -> int:
    own = template["Resources"][function]["Properties"].get("Timeout")
    return int(own if own is not None else template["Globals"]["Function"]["Timeout"])


def test_the_api_functions_worst_aws_call_ends_before_its_timeout_which_ends_before_api_gateways(
    template: dict[str, Any],
) -> None:
    api_timeout = _timeout(template, "ApiFunction")
    worst = API_BUDGET.max_attempts * (API_BUDGET.connect_timeout + API_BUDGET.read_timeout) + (1 + 2)

    assert API_BUDGET.max_attempts == 3 and worst == API_BUDGET.worst_case_seconds() == 24
    assert worst < api_timeout < 29 < API_GATEWAY_INTEGRATION_TIMEOUT
    assert api_timeout > KUBERNETES_READ_BUDGET_SECONDS


def test_the_workflow_functions_keep_a_larger_budget_within_their_timeout(template: dict[str, Any]) -> None:
    for function in (
        "ClusterStepsFunction",
        "HyperPodEventsFunction",
        "ExecutionEventsFunction",
        "ReconcileSweepFunction",
    ):
        assert WORKFLOW_BUDGET.worst_case_seconds() < _timeout(template, function), function
    assert WORKFLOW_BUDGET.read_timeout > API_BUDGET.read_timeout


def test_clients_take_the_budget_of_their_context() -> None:
    assert current_budget() is WORKFLOW_BUDGET
    with using_budget(API_BUDGET):
        api = client("sts", "us-west-2")
        assert current_budget() is API_BUDGET
    workflow = client("sts", "us-west-2")

    assert api is not workflow
    assert (api.meta.config.read_timeout, api.meta.config.connect_timeout) == (5, 2)
    assert api.meta.config.retries == {"mode": "standard", "total_max_attempts": 3}
    assert workflow.meta.config.read_timeout == 30 and workflow.meta.config.retries["total_max_attempts"] == 6
    assert _retry_config(API_BUDGET) is _retry_config(API_BUDGET)
