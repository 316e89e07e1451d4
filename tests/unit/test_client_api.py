"""The SigV4 HTTP client: signing, bodies and headers, error mapping, retries, pagination, settings.

Every test talks HTTP to :class:`instantstart_client.testing.FakeInstantStartApi` on 127.0.0.1 with dummy
credentials from the environment.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from instantstart_client.api import ApiConnectionError, ApiError, ConfigurationError, InstantStartClient
from instantstart_client.shapes import InstanceGroupSpec
from instantstart_client.testing import (
    CannedResponse,
    FakeInstantStartApi,
    SignatureMismatch,
    error_body,
    verify_sigv4,
)

ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
REGION = "us-west-2"
GROUP: InstanceGroupSpec = {
    "instanceGroupName": "accel",
    "instanceType": "ml.g6.4xlarge",
    "instanceCount": 1,
    "capacityType": "OnDemand",
}


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy static credentials and region; no profile, config file or metadata service is consulted."""
    for var in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_SECURITY_TOKEN",
        "AWS_DEFAULT_REGION",
        "INSTANTSTART_API_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def fake() -> Iterator[FakeInstantStartApi]:
    """The fake API; it answers 403 to any request whose signature is wrong."""
    with FakeInstantStartApi(credentials=(ACCESS_KEY, SECRET_KEY, None)) as api:
        yield api


class SleepRecorder:
    """Stands in for time.sleep between retry attempts."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(url: str, **kwargs: object) -> tuple[InstantStartClient, SleepRecorder]:
    sleep = SleepRecorder()
    return InstantStartClient(url, sleep=sleep, **kwargs), sleep  # type: ignore[arg-type]


@pytest.fixture
def refusing_url() -> Iterator[str]:
    """A 127.0.0.1 URL that refuses connections: the port is bound (so no other test can take it)
    but not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


# -- signing ------------------------------------------------------------------------------------------


def test_every_route_is_called_with_a_valid_sigv4_signature_for_execute_api() -> None:
    """Given the fake API without its own signature check,
    when the client calls every route,
    then each recorded request carries a SigV4 Authorization for execute-api in us-west-2 whose
    signature, recomputed with botocore from what the server received, matches."""
    with FakeInstantStartApi() as fake:
        client, _ = make_client(fake.url)
        op = client.create_cluster("demo", "us-west-2c", [GROUP])
        client.list_clusters(max_results=10)
        client.get_cluster("demo")
        client.get_stages("demo")
        client.get_operation(op["operationId"])
        client.list_availability_zones()
        client.list_instance_types("us-west-2c")
        with pytest.raises(ApiError):
            client.retry_stage("demo", "network")  # 409: the stage is not FAILED
        with pytest.raises(ApiError):
            client.delete_cluster("demo")  # 409: still CREATING

    assert len(fake.requests) == 9
    for request in fake.requests:
        assert f"/{REGION}/execute-api/aws4_request" in (request.header("Authorization") or "")
        verify_sigv4(request, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)


def test_signature_check_fails_for_a_tampered_body_or_another_secret(fake: FakeInstantStartApi) -> None:
    """Given a signed POST as received,
    when its body is altered or the signature is checked with a different secret,
    then the verification fails (the check used by these tests can fail)."""
    client, _ = make_client(fake.url)
    client.create_cluster("demo", "us-west-2c", [GROUP])
    request = fake.requests_to("POST", "/clusters")[0]
    verify_sigv4(request, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)

    request.body = request.body.replace(b'"instanceCount":1', b'"instanceCount":9')
    with pytest.raises(SignatureMismatch, match="signature mismatch"):
        verify_sigv4(request, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    with pytest.raises(SignatureMismatch):
        verify_sigv4(fake.requests[0], access_key=ACCESS_KEY, secret_key="not-the-secret", region=REGION)


def test_a_session_token_is_sent_and_signed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Given temporary credentials (AWS_SESSION_TOKEN) in the environment,
    when a request is sent,
    then X-Amz-Security-Token carries the token and is one of the signed headers."""
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzEXAMPLETOKEN")
    with FakeInstantStartApi(credentials=(ACCESS_KEY, SECRET_KEY, "FQoGZXIvYXdzEXAMPLETOKEN")) as fake:
        client, _ = make_client(fake.url)
        client.list_availability_zones()
    request = fake.requests[0]
    assert request.header("X-Amz-Security-Token") == "FQoGZXIvYXdzEXAMPLETOKEN"
    assert "x-amz-security-token" in (request.header("Authorization") or "")


def test_a_signature_api_gateway_rejects_is_a_403_api_error_and_not_retried() -> None:
    """Given an API that knows a different secret for our access key,
    when the client calls it,
    then it raises ApiError 403 Forbidden with API Gateway's message, after a single attempt."""
    with FakeInstantStartApi(credentials=(ACCESS_KEY, "another-secret", None)) as fake:
        client, sleep = make_client(fake.url)
        with pytest.raises(ApiError) as caught:
            client.list_clusters()
    assert caught.value.status == 403
    assert caught.value.code == "Forbidden"
    assert "signature mismatch" in caught.value.message
    assert len(fake.requests) == 1 and sleep.waits == []


def test_a_stage_path_in_the_api_url_is_part_of_the_signed_path(fake: FakeInstantStartApi) -> None:
    """Given an API URL with a stage path (https://.../prod),
    when a route is called,
    then the request goes to /prod/<route> and the signature covers that path."""
    fake.inject("GET", "/prod/clusters", CannedResponse(200, {"clusters": [], "nextToken": None}))
    client, _ = make_client(fake.url + "/prod/")
    assert client.list_clusters() == {"clusters": [], "nextToken": None}
    assert fake.requests[0].target == "/prod/clusters"


# -- bodies and headers -------------------------------------------------------------------------------


def test_create_cluster_posts_the_contract_body_with_the_idempotency_key(fake: FakeInstantStartApi) -> None:
    """Given an idempotency key,
    when a cluster is created,
    then POST /clusters carries the camelCase JSON body and the Idempotency-Key header, and the 202
    Operation is returned; the same key and body again returns the same operation."""
    client, _ = make_client(fake.url)
    op = client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="create-demo-1")
    again = client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="create-demo-1")

    first, second = fake.requests_to("POST", "/clusters")
    assert first.json() == {"clusterTag": "demo", "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]}
    assert first.header("Content-Type") == "application/json"
    assert first.header("Idempotency-Key") == second.header("Idempotency-Key") == "create-demo-1"
    assert op["type"] == "CREATE_CLUSTER" and op["status"] == "PENDING" and op["clusterTag"] == "demo"
    assert op["statusUrl"] == f"/operations/{op['operationId']}"
    assert again["operationId"] == op["operationId"]


def test_posts_and_deletes_without_a_key_get_a_fresh_key_per_call_and_gets_none(
    fake: FakeInstantStartApi,
) -> None:
    """Given no idempotency key from the caller,
    when clusters are created, a stage retried and a cluster deleted,
    then each POST/DELETE carries its own generated Idempotency-Key and GETs carry none."""
    client, _ = make_client(fake.url)
    fake.add_cluster("old", status="FAILED", failed_stage="hyperpod")
    fake.add_cluster("gone")
    client.create_cluster("demo", "us-west-2c", [GROUP])
    client.create_cluster("demo2", "us-west-2c", [GROUP])
    client.retry_stage("old", "hyperpod")
    client.delete_cluster("gone")
    client.get_cluster("demo")

    keys = [r.header("Idempotency-Key") for r in fake.requests if r.method in ("POST", "DELETE")]
    assert len(keys) == 4 and all(keys) and len(set(keys)) == 4
    assert fake.requests[-1].header("Idempotency-Key") is None
    assert fake.requests_to("POST", "/clusters/old/stages/hyperpod/retry")[0].body == b""


def test_a_reused_key_with_a_different_body_is_a_409_api_error(fake: FakeInstantStartApi) -> None:
    """Given a key already used to create cluster demo,
    when it is sent with a different body,
    then the client raises ApiError 409 with the server's code."""
    client, _ = make_client(fake.url)
    client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="k1")
    with pytest.raises(ApiError) as caught:
        client.create_cluster("demo", "us-west-2a", [GROUP], idempotency_key="k1")
    assert (caught.value.status, caught.value.code) == (409, "IdempotencyKeyReused")


# -- errors -------------------------------------------------------------------------------------------


def test_a_422_becomes_an_api_error_with_code_message_field_details_and_body(
    fake: FakeInstantStartApi,
) -> None:
    """Given an instance type the API does not offer,
    when the cluster is created,
    then ApiError carries status 422, the code, message, field-level details and the parsed body."""
    client, sleep = make_client(fake.url)
    bad = dict(GROUP, instanceType="ml.nope.xlarge")
    with pytest.raises(ApiError) as caught:
        client.create_cluster("demo", "us-west-2c", [bad])  # type: ignore[list-item]
    error = caught.value
    assert (error.status, error.code) == (422, "ValidationError")
    assert error.message == "the request has invalid fields"
    assert error.details[0]["field"] == "instanceGroups[0].instanceType"
    assert "ml.g6.4xlarge" in error.details[0]["message"]
    assert error.body["error"]["code"] == "ValidationError"
    assert sleep.waits == [] and len(fake.requests) == 1


def test_unknown_resources_are_404_and_state_conflicts_are_409(fake: FakeInstantStartApi) -> None:
    """Given a READY cluster,
    when an unknown cluster is read or a SUCCEEDED stage retried,
    then ApiError 404 NotFound and 409 Conflict (naming the stage status) are raised."""
    fake.add_cluster("demo")
    client, _ = make_client(fake.url)
    with pytest.raises(ApiError) as missing:
        client.get_cluster("nope")
    with pytest.raises(ApiError) as conflict:
        client.retry_stage("demo", "storage")
    assert (missing.value.status, missing.value.code) == (404, "NotFound")
    assert (conflict.value.status, conflict.value.code) == (409, "Conflict")
    assert "SUCCEEDED" in conflict.value.message


def test_a_non_json_error_body_still_becomes_an_api_error(fake: FakeInstantStartApi) -> None:
    """Given a gateway answering 502 with HTML,
    when a route is called,
    then ApiError has status 502, the reason phrase as code, the text as message, and no retry."""
    fake.inject("GET", "/clusters", CannedResponse(502, raw=b"<html>Bad Gateway</html>"))
    client, sleep = make_client(fake.url)
    with pytest.raises(ApiError) as caught:
        client.list_clusters()
    assert (caught.value.status, caught.value.code) == (502, "BadGateway")
    assert caught.value.body == "<html>Bad Gateway</html>"
    assert sleep.waits == []


# -- retries ------------------------------------------------------------------------------------------


def test_503_is_retried_with_backoff_and_the_same_idempotency_key_signed_afresh(
    fake: FakeInstantStartApi,
) -> None:
    """Given POST /clusters answering 503 twice,
    when a cluster is created,
    then the client retries after jittered backoff waits and succeeds on the third attempt; every
    attempt carries the same Idempotency-Key and a valid signature."""
    unavailable = CannedResponse(503, error_body("ServiceUnavailable", "SageMaker is throttling"))
    fake.inject("POST", "/clusters", unavailable, unavailable)
    client, sleep = make_client(fake.url, backoff_initial=0.5, backoff_max=8)

    op = client.create_cluster("demo", "us-west-2c", [GROUP])

    attempts = fake.requests_to("POST", "/clusters")
    assert len(attempts) == 3
    assert len({a.header("Idempotency-Key") for a in attempts}) == 1
    for attempt in attempts:
        verify_sigv4(attempt, access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION)
    assert len(sleep.waits) == 2
    assert 0 <= sleep.waits[0] <= 0.5 and 0 <= sleep.waits[1] <= 1.0
    assert op["status"] == "PENDING"


def test_retries_stop_after_max_attempts_and_raise_the_last_503(fake: FakeInstantStartApi) -> None:
    """Given an API that keeps answering 503,
    when a route is called with max_attempts=3,
    then exactly three requests are sent and ApiError 503 is raised."""
    unavailable = CannedResponse(503, error_body("ServiceUnavailable", "try later"))
    fake.inject("GET", "/clusters", *[unavailable] * 5)
    client, sleep = make_client(fake.url, max_attempts=3)
    with pytest.raises(ApiError) as caught:
        client.list_clusters()
    assert (caught.value.status, caught.value.message) == (503, "try later")
    assert len(fake.requests) == 3 and len(sleep.waits) == 2


def test_a_429_waits_at_least_the_retry_after_seconds(fake: FakeInstantStartApi) -> None:
    """Given a 429 with Retry-After: 3,
    when a route is called,
    then the client waits at least 3 s (capped by backoff_max) before the successful retry."""
    fake.inject(
        "GET",
        "/catalog/availability-zones",
        CannedResponse(429, error_body("Throttled", "slow down"), {"Retry-After": "3"}),
    )
    client, sleep = make_client(fake.url, backoff_max=10)
    zones = client.list_availability_zones()
    assert [z["zoneName"] for z in zones] == ["us-west-2a", "us-west-2b", "us-west-2c"]
    assert len(sleep.waits) == 1 and 3 <= sleep.waits[0] <= 10


def test_a_409_saying_the_same_key_is_still_in_progress_is_retried(fake: FakeInstantStartApi) -> None:
    """Given a retried create whose first attempt is still being processed (409 IdempotencyKeyInProgress),
    when the client gets that answer,
    then it waits and retries with the same key, receiving the operation; other 409s are not retried."""
    in_progress = CannedResponse(
        409,
        error_body("IdempotencyKeyInProgress", "a request with this Idempotency-Key is still in progress"),
    )
    fake.inject("POST", "/clusters", in_progress)
    client, sleep = make_client(fake.url)
    op = client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="k-1")
    assert op["type"] == "CREATE_CLUSTER" and len(sleep.waits) == 1
    assert [r.header("Idempotency-Key") for r in fake.requests_to("POST", "/clusters")] == ["k-1", "k-1"]


def test_connection_errors_are_retried_then_raise_api_connection_error(refusing_url: str) -> None:
    """Given nothing listening on the API's port,
    when a route is called with max_attempts=4,
    then the client waits three times and raises ApiConnectionError naming the URL."""
    url = refusing_url
    client, sleep = make_client(url, max_attempts=4)
    with pytest.raises(ApiConnectionError) as caught:
        client.get_cluster("demo")
    assert caught.value.url == f"{url}/clusters/demo"
    assert len(sleep.waits) == 3


# -- pagination ---------------------------------------------------------------------------------------


def test_iter_clusters_follows_next_token_through_every_page(fake: FakeInstantStartApi) -> None:
    """Given five clusters and pages of two,
    when iterating clusters,
    then all five come back in order over three signed requests, each passing the previous page's
    token (which holds '+', '/' or '=' and so must be percent-encoded to match the signature)."""
    for tag in ("alpha", "bravo", "charlie", "delta", "echo"):
        fake.add_cluster(tag)
    client, _ = make_client(fake.url)

    tags = [c["clusterTag"] for c in client.iter_clusters(page_size=2)]

    assert tags == ["alpha", "bravo", "charlie", "delta", "echo"]
    pages = fake.requests_to("GET", "/clusters")
    assert len(pages) == 3
    assert "nextToken" not in pages[0].query
    assert pages[1].query["nextToken"].startswith("v1+")
    assert "%2B" in pages[1].target  # '+' sent encoded, not as a space
    assert all(p.query["maxResults"] == "2" for p in pages)


def test_list_clusters_returns_one_page_and_its_token(fake: FakeInstantStartApi) -> None:
    """Given three clusters,
    when one page of two is listed,
    then the page has two summaries in the contract shape and a nextToken."""
    for tag in ("alpha", "bravo", "charlie"):
        fake.add_cluster(tag)
    client, _ = make_client(fake.url)
    page = client.list_clusters(max_results=2)
    assert [c["clusterTag"] for c in page["clusters"]] == ["alpha", "bravo"]
    assert page["nextToken"]
    assert set(page["clusters"][0]) == {
        "clusterTag",
        "status",
        "availabilityZone",
        "createdAt",
        "updatedAt",
        "eksClusterName",
        "hyperPodClusterName",
    }
    last = client.list_clusters(max_results=2, next_token=page["nextToken"])
    assert [c["clusterTag"] for c in last["clusters"]] == ["charlie"] and last["nextToken"] is None


# -- settings -----------------------------------------------------------------------------------------


def test_the_api_url_and_region_come_from_the_environment(
    fake: FakeInstantStartApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given INSTANTSTART_API_URL and AWS_REGION,
    when a client is built without arguments,
    then it uses them, and explicit arguments win over them."""
    monkeypatch.setenv("INSTANTSTART_API_URL", fake.url)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    client = InstantStartClient()
    assert (client.api_url, client.region) == (fake.url, "eu-west-1")
    assert InstantStartClient("https://other.example", region="ap-south-1").region == "ap-south-1"


def test_the_region_is_taken_from_an_execute_api_host_when_aws_region_is_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Given no AWS_REGION,
    when the API URL is an execute-api host,
    then the region in the host name is the signing region."""
    monkeypatch.delenv("AWS_REGION")
    client = InstantStartClient("https://a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com")
    assert client.region == "eu-central-1"


def test_missing_url_or_region_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Given no API URL, or no region anywhere,
    when a client is built,
    then ConfigurationError names what is missing."""
    with pytest.raises(ConfigurationError, match="INSTANTSTART_API_URL"):
        InstantStartClient()
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(ConfigurationError, match="region"):
        InstantStartClient("http://127.0.0.1:1")


def test_missing_credentials_fail_before_anything_is_sent(
    fake: FakeInstantStartApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given no credentials in the chain,
    when a route is called,
    then ConfigurationError is raised and no request reaches the API."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    client, _ = make_client(fake.url)
    with pytest.raises(ConfigurationError, match="credentials"):
        client.list_clusters()
    assert fake.requests == []


def test_an_empty_2xx_body_is_none_and_a_non_json_one_is_an_error(fake: FakeInstantStartApi) -> None:
    """Given a 204 and a 200 with text,
    when requested,
    then the first returns None and the second raises ApiError InvalidResponse."""
    fake.inject("GET", "/x", CannedResponse(204), CannedResponse(200, raw=b"hello"))
    client, _ = make_client(fake.url)
    assert client.request("GET", "/x") is None
    with pytest.raises(ApiError) as caught:
        client.request("GET", "/x")
    assert caught.value.code == "InvalidResponse"
    assert json.dumps(caught.value.body) == '"hello"'
