"""Given a capacity failure, the hyperpod stage fails verbatim, later stages wait, and a retry completes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, terminal

CAPACITY_MESSAGE = "We currently do not have sufficient capacity for ml.g6.4xlarge in us-west-2c."


def test_given_no_capacity_when_creating_then_hyperpod_fails_and_a_retry_makes_it_ready(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    sandbox.aws.extension.faults.fail_hyperpod_capacity("ml.g6.4xlarge", CAPACITY_MESSAGE, times=1)
    op = api.create_cluster("retry", "us-west-2c", [GROUP])

    failed = wait_for(api, "retry", terminal)
    assert failed["status"] == "FAILED"
    stages = {s["name"]: s for s in failed["stages"]}
    assert [stages[n]["status"] for n in ("network", "access", "dependencies")] == ["SUCCEEDED"] * 3
    assert stages["hyperpod"]["status"] == "FAILED"
    assert stages["hyperpod"]["error"]["code"] == "HyperPodClusterFailed"
    assert CAPACITY_MESSAGE in stages["hyperpod"]["error"]["message"]
    assert stages["storage"]["status"] == "PENDING" and stages["verify"]["status"] == "PENDING"
    operation = api.get_operation(op["operationId"])
    assert operation["status"] == "FAILED" and operation["error"]["code"] == "HyperPodClusterFailed"

    with pytest.raises(ApiError) as err:
        api.retry_stage("retry", "storage")
    assert err.value.status == 409 and "PENDING" in err.value.message

    retry = api.retry_stage("retry", "hyperpod")
    assert retry["type"] == "RETRY_STAGE" and retry["stage"] == "hyperpod"
    ready = wait_for(api, "retry", lambda c: terminal(c) and c["currentOperationId"] == retry["operationId"])
    assert ready["status"] == "READY", ready["stages"]
    stages = {s["name"]: s for s in ready["stages"]}
    assert stages["network"]["attempts"] == 1, "earlier stages are not run again"
    assert stages["hyperpod"]["attempts"] == 2 and stages["hyperpod"]["error"] is None
    assert all(s["status"] == "SUCCEEDED" for s in ready["stages"])
    assert api.get_operation(retry["operationId"])["status"] == "SUCCEEDED"


def test_given_an_api_error_from_aws_when_creating_then_the_stage_records_the_aws_code_verbatim(
    api: InstantStartClient, sandbox: Sandbox, wait_for: Callable[..., dict[str, Any]]
) -> None:
    message = "The account-level service limit 'Maximum number of VPCs' is 5 VPCs."
    sandbox.aws.extension.faults.inject("ec2", "CreateVpc", "VpcLimitExceeded", message, times=1)
    api.create_cluster("vpclimit", "us-west-2c", [GROUP])
    failed = wait_for(api, "vpclimit", terminal)
    network = failed["stages"][0]
    assert failed["status"] == "FAILED"
    assert network["status"] == "FAILED"
    assert network["error"] == {"code": "VpcLimitExceeded", "message": message}
    assert all(s["status"] == "PENDING" for s in failed["stages"][1:])
