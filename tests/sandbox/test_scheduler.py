"""EventBridge Scheduler in the sandbox: the expressions and windows a schedule may deploy with, refused as a deploy
error otherwise (the firing itself: tests/integration/test_reconcile_sweep.py)."""

from __future__ import annotations

import pytest

from instantstart_sandbox.aws.scheduler import ScheduleDeployError, create, rate_seconds

TARGET = {"Arn": "arn:aws:lambda:us-west-2:123456789012:function:f", "RoleArn": "arn:aws:iam::123456789012:role/r"}


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [("rate(1 minute)", 60), ("rate(10 minutes)", 600), ("rate(1 hour)", 3600), ("rate(2 days)", 172_800)],
)
def test_rate_expressions_give_their_period(expression: str, seconds: int) -> None:
    assert rate_seconds(expression) == seconds


@pytest.mark.parametrize(
    "expression",
    ["rate(1 minutes)", "rate(10 minute)", "rate(0 minutes)", "cron(0/10 * * * ? *)", "at(2026-12-01T00:00:00)", ""],
)
def test_other_expressions_are_a_deploy_error(expression: str) -> None:
    with pytest.raises(ScheduleDeployError, match="ScheduleExpression"):
        rate_seconds(expression)


def test_a_flexible_window_or_a_target_that_is_not_a_function_is_a_deploy_error() -> None:
    base = {"ScheduleExpression": "rate(10 minutes)", "Target": TARGET}
    with pytest.raises(ScheduleDeployError, match="FlexibleTimeWindow Mode OFF"):
        create(None, "s", {**base, "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 5}})
    with pytest.raises(ScheduleDeployError, match="Lambda function ARN"):
        create(None, "s", {**base, "FlexibleTimeWindow": {"Mode": "OFF"}, "Target": {"Arn": "arn:aws:sqs:x"}})
