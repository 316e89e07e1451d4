"""records.parse_error: what a failed stage records from a Step Functions ``Catch`` result (``{"Error", "Cause"}``)."""

from __future__ import annotations

import json

import pytest

from instantstart.clusters.records import parse_error
from instantstart.errors import PollTimeout, StageFailed, aws_error
from instantstart.models.workflow import StepError

pytestmark = pytest.mark.usefixtures("no_network")


def lambda_cause(exc: Exception) -> str:
    """The ``Cause`` Step Functions puts in a Catch result for an exception raised by a Python Lambda."""
    return json.dumps(
        {
            "errorMessage": str(exc),
            "errorType": type(exc).__name__,
            "requestId": "5f2b6c9e-0000-4000-8000-000000000000",
            "stackTrace": ['  File "/var/task/cluster_steps.py", line 22, in lambda_handler\n'],
        }
    )


def test_given_a_stage_failure_with_our_json_message_when_parsing_then_code_and_message_are_verbatim() -> None:
    message = "We currently do not have sufficient ml.p5.48xlarge capacity in the Availability Zone you requested."
    exc = aws_error("InsufficientCapacityException", message)

    parsed = parse_error(StepError(Error="InsufficientCapacityException", Cause=lambda_cause(exc)))

    assert parsed.model_dump() == {"code": "InsufficientCapacityException", "message": message}


def test_given_a_json_message_with_quotes_and_unicode_when_parsing_then_it_round_trips_unchanged() -> None:
    message = 'subnet "subnet-0abc" is not in us-west-2c — pick another zone'
    exc = StageFailed("InvalidSubnet", message)

    parsed = parse_error(StepError(Error="StageFailed", Cause=lambda_cause(exc)))

    assert parsed.model_dump() == {"code": "InvalidSubnet", "message": message}


def test_given_a_plain_lambda_error_when_parsing_then_error_type_is_the_code_and_message_verbatim() -> None:
    cause = json.dumps({"errorType": "KeyError", "errorMessage": "'natGatewayId'"})

    parsed = parse_error(StepError(Error="KeyError", Cause=cause))

    assert parsed.model_dump() == {"code": "KeyError", "message": "'natGatewayId'"}


def test_given_a_lambda_error_type_differing_from_the_sfn_error_when_parsing_then_the_lambda_type_wins() -> None:
    cause = json.dumps({"errorType": "Runtime.ImportModuleError", "errorMessage": "No module named 'kubernetes'"})

    parsed = parse_error(StepError(Error="Lambda.Unknown", Cause=cause))

    assert parsed.model_dump() == {"code": "Runtime.ImportModuleError", "message": "No module named 'kubernetes'"}


def test_given_a_poll_timeout_with_a_text_cause_when_parsing_then_the_text_is_the_message() -> None:
    cause = "NAT Gateway did not finish within 40 polls of 15 seconds"

    parsed = parse_error(StepError(Error="PollTimeout", Cause=cause))

    assert parsed.model_dump() == {"code": "PollTimeout", "message": cause}


def test_given_a_poll_timeout_raised_by_a_step_when_parsing_then_its_code_is_kept() -> None:
    exc = PollTimeout("PollTimeout", "HyperPod cluster did not reach InService in time")

    parsed = parse_error(StepError(Error="PollTimeout", Cause=lambda_cause(exc)))

    assert parsed.model_dump() == {"code": "PollTimeout", "message": "HyperPod cluster did not reach InService in time"}


@pytest.mark.parametrize("error", [{"Error": "States.Timeout"}, {"Error": "States.Timeout", "Cause": ""}])
def test_given_a_states_timeout_without_cause_when_parsing_then_the_code_is_states_timeout(
    error: dict[str, str],
) -> None:
    assert parse_error(StepError.model_validate(error)).model_dump() == {"code": "States.Timeout", "message": ""}


def test_given_a_states_timeout_with_a_cause_when_parsing_then_the_cause_is_the_message() -> None:
    parsed = parse_error(StepError(Error="States.Timeout", Cause="Task timed out after 900 seconds"))

    assert parsed.model_dump() == {"code": "States.Timeout", "message": "Task timed out after 900 seconds"}


@pytest.mark.parametrize("error", [None, {}])
def test_given_no_error_when_parsing_then_it_is_a_states_runtime_error(error: dict[str, str] | None) -> None:
    step_error = StepError.model_validate(error) if error is not None else None
    assert parse_error(step_error).model_dump() == {"code": "States.Runtime", "message": ""}


def test_given_a_json_cause_that_is_not_a_lambda_error_when_parsing_then_the_cause_is_kept_verbatim() -> None:
    cause = json.dumps({"ExecutionArn": "arn:aws:states:us-west-2:123456789012:execution:x:y"})

    parsed = parse_error(StepError(Error="States.TaskFailed", Cause=cause))

    assert parsed.model_dump() == {"code": "States.TaskFailed", "message": cause}


def test_given_an_aws_code_that_is_not_an_identifier_when_raised_then_the_stage_still_records_it_verbatim() -> None:
    exc = aws_error("403", "Forbidden")

    assert type(exc).__name__ == "AwsError"  # the Lambda errorType Retry/Catch match on
    parsed = parse_error(StepError(Error="AwsError", Cause=lambda_cause(exc)))
    assert parsed.model_dump() == {"code": "403", "message": "Forbidden"}
