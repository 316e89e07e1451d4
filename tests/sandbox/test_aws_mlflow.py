"""SageMaker managed MLflow in the AWS sandbox, through boto3: tracking servers and MLflow apps are validated as
SageMaker validates them, move Creating -> Created and Deleting -> gone on the simulated clock, list, carry their
tags, and answer AWS's error codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

try:
    from tests.sandbox.conftest_aws import aws, client, clock, kube, role, unique, wait_for
except ImportError:  # rootdir not on sys.path
    from conftest_aws import aws, client, clock, kube, role, unique, wait_for  # type: ignore[no-redef]

from instantstart_sandbox.aws.server import AwsSandboxServer

__all__ = ["aws", "client", "clock", "kube", "role"]

Client = Callable[[str], Any]


def _code(exc: pytest.ExceptionInfo[ClientError]) -> str:
    return str(exc.value.response["Error"]["Code"])


@pytest.fixture(scope="module")
def bucket(client: Client) -> str:
    name = unique("mlflow-artifacts")
    client("s3").create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    return name


def _gone(read: Callable[[], Any]) -> bool:
    try:
        read()
    except ClientError as exc:
        return exc.response["Error"]["Code"] == "ResourceNotFound"
    return False


def test_given_a_tracking_server_request_when_invalid_then_refused_with_aws_codes(
    client: Client, role: str, bucket: str
) -> None:
    sm = client("sagemaker")
    base = {"TrackingServerName": unique("ts"), "ArtifactStoreUri": f"s3://{bucket}/mlflow/", "RoleArn": role}
    with pytest.raises(ClientError) as no_bucket:
        sm.create_mlflow_tracking_server(**{**base, "ArtifactStoreUri": "s3://no-such-bucket-here/mlflow"})
    assert _code(no_bucket) == "ValidationException"
    assert "no-such-bucket-here" in no_bucket.value.response["Error"]["Message"]
    with pytest.raises(ClientError) as no_role:
        sm.create_mlflow_tracking_server(**{**base, "RoleArn": "arn:aws:iam::123456789012:role/absent"})
    assert _code(no_role) == "ValidationException"
    with pytest.raises(ClientError) as version:
        sm.create_mlflow_tracking_server(**base, MlflowVersion="1.0.0")
    assert _code(version) == "ValidationException"
    with pytest.raises(ClientError) as missing:
        sm.describe_mlflow_tracking_server(TrackingServerName="never-created")
    assert _code(missing) == "ResourceNotFound"
    listed = {s["TrackingServerName"] for s in sm.list_mlflow_tracking_servers()["TrackingServerSummaries"]}
    assert base["TrackingServerName"] not in listed  # nothing refused was half-created


def test_given_a_tracking_server_when_created_then_it_becomes_created_lists_tags_and_deletes(
    aws: AwsSandboxServer, client: Client, role: str, bucket: str
) -> None:
    sm = client("sagemaker")
    name = unique("ts")
    arn = sm.create_mlflow_tracking_server(
        TrackingServerName=name,
        ArtifactStoreUri=f"s3://{bucket}/mlflow/",
        RoleArn=role,
        TrackingServerSize="Medium",
        MlflowVersion="2.16.2",
        Tags=[{"Key": "team", "Value": "research"}],
    )["TrackingServerArn"]
    assert arn == f"arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/{name}"
    found = sm.describe_mlflow_tracking_server(TrackingServerName=name)
    assert found["TrackingServerStatus"] == "Creating"
    assert (found["TrackingServerSize"], found["MlflowVersion"], found["RoleArn"]) == ("Medium", "2.16.2", role)
    with pytest.raises(ClientError) as duplicate:
        sm.create_mlflow_tracking_server(TrackingServerName=name, ArtifactStoreUri=f"s3://{bucket}", RoleArn=role)
    assert _code(duplicate) == "ResourceInUse"
    with pytest.raises(ClientError) as early:
        sm.delete_mlflow_tracking_server(TrackingServerName=name)
    assert _code(early) == "ValidationException"

    wait_for(
        lambda: sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"] == "Created",
        timeout=20,
    )
    found = sm.describe_mlflow_tracking_server(TrackingServerName=name)
    assert found["IsActive"] == "Active"
    assert found["TrackingServerUrl"].startswith("https://")
    assert sm.list_tags(ResourceArn=arn)["Tags"] == [{"Key": "team", "Value": "research"}]
    listed = {s["TrackingServerName"]: s for s in sm.list_mlflow_tracking_servers()["TrackingServerSummaries"]}
    assert listed[name]["TrackingServerStatus"] == "Created"
    assert sm.create_presigned_mlflow_tracking_server_url(TrackingServerName=name)["AuthorizedUrl"].startswith(
        "https://"
    )

    assert sm.delete_mlflow_tracking_server(TrackingServerName=name)["TrackingServerArn"] == arn
    assert sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"] == "Deleting"
    wait_for(lambda: _gone(lambda: sm.describe_mlflow_tracking_server(TrackingServerName=name)), timeout=20)
    assert aws.extension.mlflow.find(name) is None


def test_given_an_mlflow_app_when_created_then_it_settles_and_deletes_and_a_failed_creation_is_create_failed(
    aws: AwsSandboxServer, client: Client, role: str, bucket: str
) -> None:
    sm = client("sagemaker")
    name = unique("app")
    arn = sm.create_mlflow_app(Name=name, ArtifactStoreUri=f"s3://{bucket}/apps", RoleArn=role)["Arn"]
    assert arn.startswith("arn:aws:sagemaker:us-west-2:123456789012:mlflow-app/app-")
    assert sm.describe_mlflow_app(Arn=arn)["Status"] == "Creating"
    wait_for(lambda: sm.describe_mlflow_app(Arn=arn)["Status"] == "Created", timeout=20)
    assert name in {s["Name"] for s in sm.list_mlflow_apps()["Summaries"]}
    sm.delete_mlflow_app(Arn=arn)
    wait_for(lambda: _gone(lambda: sm.describe_mlflow_app(Arn=arn)), timeout=20)

    aws.extension.mlflow.fail_next_create()
    failed = unique("ts")
    sm.create_mlflow_tracking_server(TrackingServerName=failed, ArtifactStoreUri=f"s3://{bucket}", RoleArn=role)
    wait_for(
        lambda: sm.describe_mlflow_tracking_server(TrackingServerName=failed)["TrackingServerStatus"] == "CreateFailed",
        timeout=20,
    )


def test_given_logged_runs_when_searched_through_the_mlflow_rest_api_then_only_the_jobs_runs_come_back(
    aws: AwsSandboxServer, client: Client, role: str, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from instantstart.mlflow import runs as mlflow_runs

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    sm = client("sagemaker")
    name = unique("ts")
    arn = sm.create_mlflow_tracking_server(TrackingServerName=name, ArtifactStoreUri=f"s3://{bucket}", RoleArn=role)[
        "TrackingServerArn"
    ]
    endpoint = str(aws.endpoint_url)
    with pytest.raises(mlflow_runs.MlflowRestError) as creating:
        mlflow_runs.search_runs(endpoint, "us-west-2", arn, "demo", {"instantstart.job": "sft"})
    assert creating.value.status == 503
    wait_for(lambda: sm.describe_mlflow_tracking_server(TrackingServerName=name)["TrackingServerStatus"] == "Created")
    assert mlflow_runs.search_runs(endpoint, "us-west-2", arn, "demo", {"instantstart.job": "sft"}) == []

    mlflow = aws.extension.mlflow
    first = mlflow.log_run(
        name, "demo", tags={"instantstart.job": "sft"}, params={"lr": "1e-4"}, metrics={"loss": [2.0, 1.5]}
    )
    mlflow.log_run(name, "demo", tags={"instantstart.job": "other"}, metrics={"loss": [9.0]})
    mlflow.log_run(name, "elsewhere", tags={"instantstart.job": "sft"}, metrics={"loss": [7.0]})

    found = mlflow_runs.search_runs(endpoint, "us-west-2", arn, "demo", {"instantstart.job": "sft"})
    assert [r["info"]["run_id"] for r in found] == [first]
    view = mlflow_runs.run_view(found[0])
    assert (view.params, view.metrics, view.tags) == ({"lr": "1e-4"}, {"loss": 1.5}, {"instantstart.job": "sft"})
    with pytest.raises(mlflow_runs.MlflowRestError) as unknown:
        mlflow_runs.call(endpoint, "us-west-2", arn.replace(name, "nope"), "POST", "/api/2.0/mlflow/runs/search", {})
    assert (unknown.value.status, unknown.value.code) == (404, "RESOURCE_DOES_NOT_EXIST")
