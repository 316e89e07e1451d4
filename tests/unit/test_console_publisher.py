"""Custom::ConsoleContent (console/publish_console.py): the console's files and config reach its bucket at deploy."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from moto import mock_aws

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "instantstart-consolebucket"
CONFIG = {
    "mode": "cognito",
    "apiUrl": "https://abc123.execute-api.us-west-2.amazonaws.com",
    "region": "us-west-2",
    "userPoolId": "us-west-2_Example",
    "userPoolClientId": "exampleclientid",
    "identityPoolId": "us-west-2:00000000-0000-0000-0000-000000000000",
}


def _publisher() -> ModuleType:
    spec = importlib.util.spec_from_file_location("publish_console", ROOT / "console" / "publish_console.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def publisher(aws_env: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModuleType, list[dict[str, Any]]]]:
    """The module with moto's S3 and CloudFront, the console bucket and a distribution; CloudFormation's answers."""
    module = _publisher()
    answers: list[dict[str, Any]] = []

    class Answer:
        def __enter__(self) -> Answer:
            return self

        def __exit__(self, *exc: object) -> None:
            return None

        def read(self) -> bytes:
            return b""

    def urlopen(request: Any, timeout: float) -> Answer:
        assert request.full_url.startswith("https://cloudformation-custom-resource-response")
        assert request.get_method() == "PUT"
        answers.append(json.loads(request.data))
        return Answer()

    monkeypatch.setattr(module.urllib.request, "urlopen", urlopen)
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
        yield module, answers


def _event(request_type: str, **props: Any) -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-custom-resource-response-uswest2.s3.amazonaws.com/signed",
        "StackId": "arn:aws:cloudformation:us-west-2:123456789012:stack/instantstart/1",
        "RequestId": f"req-{request_type}",
        "LogicalResourceId": "ConsoleContent",
        "ResourceType": "Custom::ConsoleContent",
        "ResourceProperties": {"ServiceToken": "arn", "BucketName": BUCKET, "Config": CONFIG, **props},
    }


def _objects() -> dict[str, dict[str, Any]]:
    s3 = boto3.client("s3")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])]
    return {k: s3.get_object(Bucket=BUCKET, Key=k) for k in keys}


def test_given_a_create_then_every_console_file_and_the_config_are_in_the_bucket_with_their_types(
    publisher: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    module, answers = publisher

    module.handler(_event("Create"), None)

    objects = _objects()
    assert answers[-1]["Status"] == "SUCCESS", answers
    assert {"index.html", "app.js", "api.js", "auth.js", "style.css", "rules.json", "config.json"} <= set(objects)
    assert "vendor/preact.module.js" in objects and "vendor/aws4fetch.esm.js" in objects
    assert not any(k.endswith(".py") for k in objects), "the publisher itself is not published"
    assert objects["index.html"]["ContentType"] == "text/html; charset=utf-8"
    assert objects["app.js"]["ContentType"] == "text/javascript; charset=utf-8"
    assert json.loads(objects["config.json"]["Body"].read()) == CONFIG
    assert objects["index.html"]["Body"].read() == (ROOT / "console/site/index.html").read_bytes()


def test_given_an_update_then_objects_of_the_previous_version_are_removed_and_the_cache_invalidated(
    publisher: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    module, answers = publisher
    boto3.client("s3").put_object(Bucket=BUCKET, Key="old-page.js", Body=b"//")
    distribution = boto3.client("cloudfront").create_distribution(
        DistributionConfig={
            "CallerReference": "test",
            "Comment": "",
            "Enabled": True,
            "Origins": {"Quantity": 1, "Items": [{"Id": "o", "DomainName": f"{BUCKET}.s3.amazonaws.com"}]},
            "DefaultCacheBehavior": {"TargetOriginId": "o", "ViewerProtocolPolicy": "redirect-to-https"},
        }
    )["Distribution"]

    module.handler(_event("Update", DistributionId=distribution["Id"]), None)

    assert answers[-1]["Status"] == "SUCCESS", answers
    assert "old-page.js" not in _objects()
    invalidations = boto3.client("cloudfront").list_invalidations(DistributionId=distribution["Id"])
    assert invalidations["InvalidationList"]["Quantity"] == 1
    assert answers[-1]["Data"]["InvalidationId"] == invalidations["InvalidationList"]["Items"][0]["Id"]


def test_given_a_delete_then_the_bucket_is_emptied_so_the_stack_can_delete_it(
    publisher: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    module, answers = publisher
    module.handler(_event("Create"), None)

    module.handler({**_event("Delete"), "PhysicalResourceId": "console-content-ConsoleContent"}, None)

    assert _objects() == {}
    assert answers[-1]["Status"] == "SUCCESS"
    assert answers[-1]["PhysicalResourceId"] == "console-content-ConsoleContent"


def test_given_an_aws_error_then_cloudformation_hears_failed_with_the_reason(
    publisher: tuple[ModuleType, list[dict[str, Any]]],
) -> None:
    module, answers = publisher

    module.handler(_event("Create", BucketName="no-such-console-bucket"), None)

    assert answers[-1]["Status"] == "FAILED"
    assert "NoSuchBucket" in answers[-1]["Reason"]
