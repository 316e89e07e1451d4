"""The MLflow rules, one by one: what a PUT body may say, which ARNs can be connected, what the pod and server
identities may do, and the environment training containers get."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from instantstart.errors import Conflict, NotFound, ValidationFailed
from instantstart.mlflow import identity
from instantstart.mlflow.service import check_arn_scope, check_connectable, job_environment
from instantstart.models.mlflow import MlflowConnection, MlflowKind, UpdateMlflowRequest

SERVER_ARN = "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/team"
APP_ARN = "arn:aws:sagemaker:us-west-2:123456789012:mlflow-app/app-ABC123"
RT: Any = SimpleNamespace(region="us-west-2", account_id="123456789012")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"trackingServerArn": SERVER_ARN, "mlflowAppArn": APP_ARN},
        {"trackingServerArn": SERVER_ARN, "create": {"kind": "app"}},
        {"enabled": False, "trackingServerArn": SERVER_ARN},
        {"enabled": False, "namespace": "research"},
        {"create": {"kind": "app", "size": "Small"}},
        {"create": {"kind": "trackingServer", "size": "Huge"}},
        {"create": {"kind": "trackingServer", "mlflowVersion": "latest"}},
        {"trackingServerArn": APP_ARN},
        {"mlflowAppArn": SERVER_ARN},
        {"trackingServerArn": SERVER_ARN, "namespace": "Not_A_Namespace"},
    ],
)
def test_given_a_body_that_does_not_name_exactly_one_valid_target_then_it_is_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        UpdateMlflowRequest.model_validate(body)


@pytest.mark.parametrize(
    "body",
    [
        {"trackingServerArn": SERVER_ARN},
        {"mlflowAppArn": APP_ARN, "namespace": "research"},
        {"create": {"kind": "trackingServer", "size": "Medium", "mlflowVersion": "3.0.0"}},
        {"create": {"kind": "app"}},
        {"enabled": False},
    ],
)
def test_given_a_valid_body_then_it_is_accepted(body: dict[str, Any]) -> None:
    assert UpdateMlflowRequest.model_validate(body).to_api()


@pytest.mark.parametrize(
    ("arn", "code"),
    [
        (SERVER_ARN.replace("us-west-2", "eu-west-1"), "MlflowResourceInAnotherRegion"),
        (SERVER_ARN.replace("123456789012", "999999999999"), "MlflowResourceInAnotherAccount"),
    ],
)
def test_given_an_arn_of_another_region_or_account_then_422_names_the_field(arn: str, code: str) -> None:
    with pytest.raises(ValidationFailed) as refused:
        check_arn_scope(RT, "trackingServerArn", arn)
    assert refused.value.code == code and refused.value.details[0]["field"] == "trackingServerArn"


def test_given_an_arn_of_this_account_and_region_then_it_passes() -> None:
    check_arn_scope(RT, "mlflowAppArn", APP_ARN)


@pytest.mark.parametrize(
    ("found", "error", "code"),
    [
        (None, NotFound, "MlflowResourceNotFound"),
        ({"TrackingServerStatus": "CreateFailed"}, Conflict, "MlflowResourceFailed"),
        ({"TrackingServerStatus": "Deleting"}, Conflict, "MlflowResourceDeleting"),
    ],
)
def test_given_a_missing_failed_or_deleting_server_then_it_cannot_be_connected(
    found: dict[str, Any] | None, error: type[Exception], code: str
) -> None:
    with pytest.raises(error) as refused:
        check_connectable(MlflowKind.TRACKING_SERVER, "trackingServerArn", SERVER_ARN, found)
    assert refused.value.code == code  # type: ignore[attr-defined]
    assert refused.value.details[0]["field"] == "trackingServerArn"  # type: ignore[attr-defined]


@pytest.mark.parametrize("status", ["Created", "Creating", "Stopped", "Updated"])
def test_given_a_live_server_then_it_can_be_connected(status: str) -> None:
    check_connectable(MlflowKind.TRACKING_SERVER, "trackingServerArn", SERVER_ARN, {"TrackingServerStatus": status})


def test_given_the_pod_policy_then_it_reaches_one_server_and_only_its_artifact_prefix_without_deleting() -> None:
    policy = identity.pod_policy(SERVER_ARN, "s3://bucket-a/mlflow/")
    statements = policy["Statement"]
    assert statements[0] == {"Effect": "Allow", "Action": ["sagemaker-mlflow:*"], "Resource": SERVER_ARN}
    listing, objects = statements[1], statements[2]
    assert listing["Resource"] == "arn:aws:s3:::bucket-a"
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["mlflow/*"]}}
    assert objects["Resource"] == "arn:aws:s3:::bucket-a/mlflow/*"
    assert "s3:DeleteObject" not in objects["Action"]


def test_given_the_server_policy_then_it_may_delete_under_its_prefix_and_sagemaker_of_this_account_assumes_it() -> None:
    policy = identity.server_policy("s3://bucket-a/mlflow/")
    assert "s3:DeleteObject" in policy["Statement"][1]["Action"]
    assert policy["Statement"][1]["Resource"] == "arn:aws:s3:::bucket-a/mlflow/*"
    trust = identity.server_trust("123456789012")["Statement"][0]
    assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
    assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": "123456789012"}}


def test_given_an_artifact_store_at_the_bucket_root_then_the_pod_policy_covers_the_bucket_without_a_prefix() -> None:
    statements = identity.pod_policy(APP_ARN, "s3://bucket-b")["Statement"]
    assert "Condition" not in statements[1]
    assert statements[2]["Resource"] == "arn:aws:s3:::bucket-b/*"


def test_given_names_then_they_fit_iam_and_sagemaker_limits_for_the_longest_tag() -> None:
    tag = "a" * 24
    assert len(identity.server_role_name(tag)) <= 64 and len(identity.pod_role_name(tag)) <= 64
    assert identity.resource_name(tag) == f"instantstart-{tag}"


@pytest.mark.parametrize(
    ("kind", "arn", "key"),
    [
        (MlflowKind.TRACKING_SERVER, SERVER_ARN, "MLFLOW_TRACKING_SERVER_ARN"),
        (MlflowKind.APP, APP_ARN, "MLFLOW_APP_ARN"),
    ],
)
def test_given_a_connection_then_a_job_gets_the_arn_as_tracking_uri_the_experiment_and_its_name(
    kind: MlflowKind, arn: str, key: str
) -> None:
    conn = MlflowConnection(
        kind=kind,
        arn=arn,
        name="x",
        created=False,
        service_account_name=identity.SERVICE_ACCOUNT,
        pod_role_arn="arn:aws:iam::123456789012:role/instantstart/instantstart-demo-mlflow",
    )
    env = job_environment(conn, "demo", "llama-sft")
    assert env == {
        "MLFLOW_TRACKING_URI": arn,
        key: arn,
        "MLFLOW_EXPERIMENT_NAME": "demo",
        "INSTANTSTART_JOB_NAME": "llama-sft",
    }
