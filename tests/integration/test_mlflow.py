"""Given a READY cluster in the sandbox, when a user connects SageMaker managed MLflow through the HTTP API (creating a
tracking server, or connecting one created outside), then SageMaker, IAM, EKS Pod Identity and Kubernetes show the
connection and the identity training pods log with; disconnecting removes only what the control plane created, and
bad ARNs are refused naming the field before anything changes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.integration.conftest import GROUP, finished, ready_cluster

TAG = "mlflw"
EKS = f"eks-cluster-{TAG}"
SERVER = f"instantstart-{TAG}"
POD_ROLE = f"instantstart-{TAG}-mlflow"
SERVER_ROLE = f"instantstart-{TAG}-mlflow-server"
SERVICE_ACCOUNT = "instantstart-mlflow"
SFT_JOB = {
    "recipe": "pytorch",
    "instanceType": "ml.g6.4xlarge",
    "image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311",
    "script": "/s3/code/train.py",
}


@pytest.fixture(scope="module")
def cluster(api: InstantStartClient, sandbox: Sandbox) -> dict[str, Any]:
    """The ``mlflw`` cluster, READY."""
    return ready_cluster(api, TAG, [GROUP])


def eventually(check: Callable[[], bool], timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return check()


def server_status(sandbox: Sandbox, name: str) -> str | None:
    sm = boto3.client("sagemaker", region_name=sandbox.region)
    try:
        return str(sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"])
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "ResourceNotFound"
        return None


def role(sandbox: Sandbox, name: str) -> dict[str, Any] | None:
    iam = boto3.client("iam", region_name=sandbox.region)
    try:
        return dict(iam.get_role(RoleName=name)["Role"])
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "NoSuchEntity"
        return None


def associations(sandbox: Sandbox, namespace: str = "default") -> list[dict[str, Any]]:
    eks = boto3.client("eks", region_name=sandbox.region)
    return list(
        eks.list_pod_identity_associations(clusterName=EKS, namespace=namespace, serviceAccount=SERVICE_ACCOUNT)[
            "associations"
        ]
    )


def service_account(sandbox: Sandbox, namespace: str = "default") -> dict[str, Any] | None:
    found = sandbox.kube.cluster(EKS).get("v1", "ServiceAccount", SERVICE_ACCOUNT, namespace=namespace)
    return dict(found) if found else None


def bucket(sandbox: Sandbox) -> str:
    return f"instantstart-{TAG}-{sandbox.account_id}-{sandbox.region}"


def test_when_an_arn_is_bad_then_4xx_names_the_field_and_nothing_starts(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    account, region = sandbox.account_id, sandbox.region
    with pytest.raises(ApiError) as other_region:
        api.update_mlflow(TAG, {"trackingServerArn": f"arn:aws:sagemaker:eu-west-1:{account}:mlflow-tracking-server/x"})
    with pytest.raises(ApiError) as other_account:
        api.update_mlflow(
            TAG, {"trackingServerArn": f"arn:aws:sagemaker:{region}:999999999999:mlflow-tracking-server/x"}
        )
    with pytest.raises(ApiError) as missing:
        api.update_mlflow(
            TAG, {"trackingServerArn": f"arn:aws:sagemaker:{region}:{account}:mlflow-tracking-server/gone"}
        )
    with pytest.raises(ApiError) as malformed:
        api.update_mlflow(TAG, {"mlflowAppArn": "arn:aws:s3:::not-mlflow"})
    with pytest.raises(ApiError) as two:
        api.update_mlflow(TAG, {"create": {"kind": "app"}, "trackingServerArn": "x"})

    assert other_region.value.status == 422 and other_region.value.code == "MlflowResourceInAnotherRegion"
    assert other_region.value.details[0]["field"] == "trackingServerArn"
    assert other_account.value.status == 422 and other_account.value.details[0]["field"] == "trackingServerArn"
    assert missing.value.status == 404 and missing.value.code == "MlflowResourceNotFound"
    assert missing.value.details[0]["field"] == "trackingServerArn"
    assert malformed.value.status == 422 and malformed.value.details[0]["field"] == "mlflowAppArn"
    assert two.value.status == 422
    with pytest.raises(ApiError) as not_connected:
        api.list_training_job_runs(TAG, "sft")
    assert not_connected.value.status == 409 and not_connected.value.code == "MlflowNotConnected"
    assert api.get_mlflow(TAG)["connected"] is False
    assert api.list_cluster_operations(TAG)["operations"][0]["type"] == "CREATE_CLUSTER"


def test_when_a_tracking_server_is_created_then_it_logs_to_the_cluster_bucket_and_disconnect_removes_it(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    op = api.update_mlflow(TAG, {"create": {"kind": "trackingServer", "size": "Small"}})
    assert op["type"] == "UPDATE_MLFLOW"
    done = finished(api, op)
    assert done["status"] == "SUCCEEDED", done

    sm = boto3.client("sagemaker", region_name=sandbox.region)
    server = sm.describe_mlflow_tracking_server(TrackingServerName=SERVER)
    assert server["TrackingServerStatus"] == "Created"
    assert server["ArtifactStoreUri"] == f"s3://{bucket(sandbox)}/mlflow/"
    assert server["RoleArn"] == role(sandbox, SERVER_ROLE)["Arn"]  # type: ignore[index]
    pod_role = role(sandbox, POD_ROLE)
    assert pod_role is not None
    iam = boto3.client("iam", region_name=sandbox.region)
    policy = iam.get_role_policy(RoleName=POD_ROLE, PolicyName="mlflow-logging")["PolicyDocument"]
    assert {"Effect": "Allow", "Action": ["sagemaker-mlflow:*"], "Resource": server["TrackingServerArn"]} in policy[
        "Statement"
    ]
    assert [a["serviceAccount"] for a in associations(sandbox)] == [SERVICE_ACCOUNT]
    assert service_account(sandbox) is not None

    shown = api.get_mlflow(TAG)
    assert shown["connected"] is True and shown["created"] is True
    assert (shown["kind"], shown["arn"], shown["status"]) == ("trackingServer", server["TrackingServerArn"], "Created")
    assert shown["environment"]["MLFLOW_TRACKING_URI"] == server["TrackingServerArn"]
    assert shown["podRoleArn"] == pod_role["Arn"]
    again = api.update_mlflow(TAG, {"create": {"kind": "trackingServer"}})
    assert again["connected"] is True and again["arn"] == server["TrackingServerArn"]  # 200: already so
    assert again["operationId"] == op["operationId"]  # the connection's operation: nothing new started
    assert api.list_cluster_operations(TAG)["operations"][0]["operationId"] == op["operationId"]

    with pytest.raises(ApiError) as no_job:
        api.list_training_job_runs(TAG, "sft")
    assert no_job.value.status == 404 and no_job.value.code == "TrainingJobNotFound"
    assert "default/sft" in no_job.value.message
    operator = finished(api, api.update_features(TAG, {"trainingOperator": {"enabled": True}}))
    assert operator["status"] == "SUCCEEDED", operator
    job = {**SFT_JOB, "name": "sft"}
    assert finished(api, api.create_training_job(TAG, job)["operation"])["status"] == "SUCCEEDED"
    assert api.list_training_job_runs(TAG, "sft")["runs"] == []  # a job that has not logged yet
    with pytest.raises(ApiError) as other_namespace:
        api.list_training_job_runs(TAG, "sft", namespace="research")
    assert other_namespace.value.status == 404 and "research/sft" in other_namespace.value.message
    hook = sandbox.aws.extension.mlflow
    run_id = hook.log_run(
        SERVER, TAG, tags={"instantstart.job": "sft"}, params={"lr": "1e-4"}, metrics={"loss": [2.0, 0.7]}
    )
    hook.log_run(SERVER, TAG, tags={"instantstart.job": "other"}, metrics={"loss": [5.0]})
    runs = api.list_training_job_runs(TAG, "sft")
    assert [r["runId"] for r in runs["runs"]] == [run_id]
    assert runs["runs"][0]["params"] == {"lr": "1e-4"} and runs["runs"][0]["metrics"] == {"loss": 0.7}
    assert (runs["experimentName"], runs["mlflowArn"]) == (TAG, server["TrackingServerArn"])

    off = finished(api, api.delete_mlflow(TAG))
    assert off["status"] == "SUCCEEDED", off
    assert server_status(sandbox, SERVER) is None
    assert role(sandbox, POD_ROLE) is None and role(sandbox, SERVER_ROLE) is None
    assert associations(sandbox) == []
    assert service_account(sandbox) is None
    assert api.get_mlflow(TAG)["connected"] is False


def test_when_a_server_created_outside_is_connected_then_disconnect_leaves_it(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    iam = boto3.client("iam", region_name=sandbox.region)
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "sagemaker.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    team_role = iam.create_role(RoleName="team-mlflow", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
    s3 = boto3.client("s3", region_name=sandbox.region)
    s3.create_bucket(Bucket="team-mlflow-artifacts", CreateBucketConfiguration={"LocationConstraint": sandbox.region})
    sm = boto3.client("sagemaker", region_name=sandbox.region)
    arn = sm.create_mlflow_tracking_server(
        TrackingServerName="team-mlflow", ArtifactStoreUri="s3://team-mlflow-artifacts/runs", RoleArn=team_role
    )["TrackingServerArn"]
    assert eventually(lambda: server_status(sandbox, "team-mlflow") == "Created")

    done = finished(api, api.update_mlflow(TAG, {"trackingServerArn": arn, "namespace": "research"}))
    assert done["status"] == "SUCCEEDED", done
    shown = api.get_mlflow(TAG)
    assert (shown["arn"], shown["created"], shown["namespace"]) == (arn, False, "research")
    assert shown["artifactStoreUri"] == "s3://team-mlflow-artifacts/runs"
    assert [a["namespace"] for a in associations(sandbox, "research")] == ["research"]
    assert service_account(sandbox, "research") is not None
    with pytest.raises(ApiError) as busy:
        api.update_mlflow(TAG, {"create": {"kind": "app"}})
    assert busy.value.status == 409 and busy.value.code == "MlflowAlreadyConnected"

    off = finished(api, api.delete_mlflow(TAG))
    assert off["status"] == "SUCCEEDED", off
    assert server_status(sandbox, "team-mlflow") == "Created"
    assert role(sandbox, POD_ROLE) is None
    assert associations(sandbox, "research") == []
    assert api.get_mlflow(TAG)["connected"] is False


def test_when_the_cluster_is_deleted_then_the_mlflow_app_created_for_it_and_its_identity_are_gone(
    cluster: Any, api: InstantStartClient, sandbox: Sandbox
) -> None:
    done = finished(api, api.update_mlflow(TAG, {"create": {"kind": "app"}}))
    assert done["status"] == "SUCCEEDED", done
    app_arn = api.get_mlflow(TAG)["arn"]
    assert ":mlflow-app/" in app_arn and api.get_mlflow(TAG)["status"] == "Created"
    sm = boto3.client("sagemaker", region_name=sandbox.region)

    op = api.delete_cluster(TAG)
    ended = finished(api, op, timeout=300)

    assert ended["status"] == "SUCCEEDED", ended
    with pytest.raises(ClientError) as gone:
        sm.describe_mlflow_app(Arn=app_arn)
    assert gone.value.response["Error"]["Code"] == "ResourceNotFound"
    assert role(sandbox, POD_ROLE) is None and role(sandbox, SERVER_ROLE) is None
    assert server_status(sandbox, "team-mlflow") == "Created"  # connected earlier, never ours: still there
