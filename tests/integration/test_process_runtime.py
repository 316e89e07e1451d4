"""What `sam build` ships, run as Lambda runs it: every function an awslambdaric process on the built artifacts.

A cluster is created, scaled (day 2) and deleted with each execution environment a process of its own (the process
runtime of `make demo`), a workflow step killed mid-create converges, and a build without a locked package fails the
API's import the way Lambda does.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox import artifacts, lambda_process, lambdas
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, finished, ready_cluster

ROOT = Path(__file__).resolve().parents[2]
TAG = "procrt"


@pytest.fixture(scope="module")
def process_runtime(sandbox: Sandbox) -> Iterator[Sandbox]:
    """The session's sandbox with the process runtime for this module (the thread runtime again after it)."""
    sandbox.use_lambda_runtime("process")
    yield sandbox
    sandbox.use_lambda_runtime("thread")


def test_a_cluster_is_created_scaled_and_deleted_by_functions_running_as_lambda_processes(
    process_runtime: Sandbox, api: InstantStartClient
) -> None:
    steps = process_runtime.function_name("ClusterStepsFunction")
    crash = process_runtime.lambda_faults.crash(
        steps, after_calls=0, after_operation="CreateVpc", when={"clusterTag": TAG, "action": "ensure_network"}
    )
    before = len(lambdas.invocations())

    cluster = ready_cluster(api, TAG, [GROUP])
    assert cluster["status"] == "READY"
    assert crash.remaining == 0 and crash.fired[0]["errorType"] == "Runtime.ExitError", crash.fired
    scaled = finished(api, api.update_instance_group(TAG, GROUP["instanceGroupName"], {"instanceCount": 2}))
    assert scaled["status"] == "SUCCEEDED", scaled
    hyperpod = boto3.client("sagemaker", endpoint_url=process_runtime.aws_endpoint_url, region_name="us-west-2")
    described = hyperpod.describe_cluster(ClusterName=f"hp-cluster-{TAG}")["InstanceGroups"][0]
    assert (described["TargetCount"], described["CurrentCount"]) == (2, 2)
    deleted = finished(api, api.delete_cluster(TAG))
    assert deleted["status"] == "SUCCEEDED", deleted
    with pytest.raises(ApiError) as gone:
        api.get_cluster(TAG)
    assert gone.value.status == 404

    ran = lambdas.invocations()[before:]
    functions = {entry["function"] for entry in ran}
    assert {steps, process_runtime.function_name("ApiFunction")} <= functions
    # the calls were counted in the function's own process (by its access key), not in this one
    assert sum(entry["calls"] for entry in ran if entry["function"] == steps) > 50


def test_a_build_without_a_locked_package_fails_the_api_with_runtime_import_module_error(
    process_runtime: Sandbox, api: InstantStartClient, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    command = [
        sys.executable,
        str(ROOT / "tools" / "lambda_build.py"),
        "all",
        "--platform",
        "host",
        "--out",
        str(build),
    ]
    subprocess.run([*command, "--omit", "pydantic", "--only", "CoreLayer", "--only", "ApiFunction"], check=True)
    name = process_runtime.function_name("ApiFunction")
    shipped = lambdas.REGISTRY[name]
    lambdas.REGISTRY[name] = dataclasses.replace(
        shipped,
        code_dir=artifacts.function_dir(build, "ApiFunction"),
        layers=(artifacts.layer_dir(build, artifacts.CORE_LAYER),),
    )
    try:
        with pytest.raises(ApiError) as refused:
            api.create_cluster("nopydantic", "us-west-2c", [GROUP])
        assert refused.value.status == 500
        client = boto3.client("lambda", endpoint_url=process_runtime.aws_endpoint_url, region_name="us-west-2")
        answer = client.invoke(FunctionName=name, Payload=json.dumps({"rawPath": "/clusters"}))
        error = json.loads(answer["Payload"].read())
        assert answer.get("FunctionError"), "the invocation failed"
        assert error["errorType"] == "Runtime.ImportModuleError"
        assert "No module named 'pydantic'" in error["errorMessage"]
    finally:
        lambdas.REGISTRY[name] = shipped
    assert api.list_clusters()["clusters"] is not None, "the shipped build serves again"
    assert lambda_process.environment_of("no-such-key") is None
