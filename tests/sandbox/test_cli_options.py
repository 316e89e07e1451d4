"""``instantstart-sandbox serve`` fault options and the engine log."""

from __future__ import annotations

import inspect
import json
import logging
from pathlib import Path

import pytest
import typer

from instantstart_sandbox.aws.faults import FaultInjector
from instantstart_sandbox.cli import apply_fault_options, parse_throttle, serve
from instantstart_sandbox.stepfunctions import route_engine_logs


def test_given_serve_fault_options_when_applied_then_the_injector_has_them_and_the_terminal_says_so() -> None:
    faults = FaultInjector(lambda: 0.0)
    said = apply_fault_options(
        faults,
        refuse_zones=["us-west-2d"],
        throttles=["eks:CreateAddon:2"],
        role_propagation_seconds=20,
        eni_linger_seconds=600,
        bucket_reuse_seconds=60,
    )
    assert faults.take_refused_zone(["us-west-2a", "us-west-2d"]) == "us-west-2d"
    assert faults.take_refused_zone(["us-west-2d"]) == "us-west-2d"  # until cleared
    assert [faults.take("eks", "CreateAddon") is not None for _ in range(3)] == [True, True, False]
    assert (faults.role_propagation_seconds, faults.eni_linger_seconds, faults.bucket_reuse_seconds) == (20, 600, 60)
    assert faults.kube_access_seconds == 30  # the default
    assert len(said) == 6


def test_given_no_fault_options_when_serve_starts_then_every_real_account_window_is_on_and_said() -> None:
    defaults = {
        name: param.default for name, param in inspect.signature(serve).parameters.items() if name.endswith("_seconds")
    }
    assert defaults == {
        "role_propagation_seconds": 15,
        "kube_access_seconds": 30,
        "eni_linger_seconds": 120,
        "bucket_reuse_seconds": 60,
    }
    faults = FaultInjector(lambda: 0.0)
    faults.delay_role_propagation(0)
    said = apply_fault_options(faults, **defaults)
    assert (
        faults.role_propagation_seconds,
        faults.kube_access_seconds,
        faults.eni_linger_seconds,
        faults.bucket_reuse_seconds,
    ) == (15, 30, 120, 60)
    assert said == [
        "New IAM roles cannot be assumed by SageMaker/EKS for 15 s. (simulated)",
        "New EKS access entries answer 401/403 on Kubernetes for 30 s. (simulated)",
        "Network interfaces outlive deleted clusters by 120 s (DependencyViolation). (simulated)",
        "Deleted S3 bucket names cannot be reused for 60 s (OperationAborted). (simulated)",
    ]


def test_given_a_new_injector_or_a_cleared_one_then_the_real_account_windows_are_at_their_defaults() -> None:
    now = [0.0]
    faults = FaultInjector(lambda: now[0])
    faults.role_created("execution-role")
    faults.bucket_deleted("bucket")
    assert faults.role_propagating("arn:aws:iam::123456789012:role/execution-role")
    assert not faults.bucket_name_reusable("bucket")
    now[0] = 60.0
    assert not faults.role_propagating("arn:aws:iam::123456789012:role/execution-role")
    assert faults.bucket_name_reusable("bucket")
    faults.linger_network_interfaces(0)
    faults.delay_bucket_name_reuse(0)
    faults.clear()
    assert (faults.eni_linger_seconds, faults.bucket_reuse_seconds) == (120, 60)


@pytest.mark.parametrize("spec", ["eks", "eks:", ":CreateAddon", "eks:CreateAddon:x", "eks:CreateAddon:0"])
def test_given_a_malformed_throttle_option_when_parsed_then_bad_parameter(spec: str) -> None:
    with pytest.raises(typer.BadParameter):
        parse_throttle(spec)


def test_given_the_engine_log_when_moto_logs_then_the_record_goes_to_the_file_not_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = route_engine_logs(tmp_path / "engine.log")
    logging.getLogger("moto.stepfunctions.parser.asl.component.eval_component").error("Exception=X at '%s'", "repr")
    for handler in logging.getLogger("moto").handlers:
        handler.flush()
    assert "Exception=X at 'repr'" in path.read_text()
    captured = capsys.readouterr()
    assert "Exception=X" not in captured.out + captured.err


def test_given_a_failed_execution_whose_cause_is_a_lambda_error_then_its_terminal_line_has_no_stack_trace() -> None:
    from instantstart_sandbox.stepfunctions import _cause_line

    cause = json.dumps(
        {
            "errorType": "ClientError",
            "errorMessage": "An error occurred (ThrottlingException) when calling the DeleteCluster operation",
            "stackTrace": ["Traceback (most recent call last):\n", '  File "steps.py", line 1\n'],
        }
    )
    assert _cause_line(cause) == (
        "ClientError: An error occurred (ThrottlingException) when calling the DeleteCluster operation"
    )
    assert _cause_line("States.Timeout\n  after 60 s") == "States.Timeout after 60 s"
