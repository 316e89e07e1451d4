"""The SigV4 HTTP client: signing, bodies and headers, error mapping, retries, pagination, settings.

The client talks to the real API function in process (:mod:`inprocess_api`: API Gateway's signature
check and routes, then ``functions/api``, with moto behind it). Answers the real API cannot give (a
gateway's HTML 502, throttling, a refused connection) come from tiny transports written in the test.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from inprocess_api import InProcessApi, RecordedRequest, SignatureMismatch, verify_sigv4

from instantstart_client.api import ApiConnectionError, ApiError, ConfigurationError, InstantStartClient
from instantstart_client.shapes import InstanceGroupSpec

REGION = "us-west-2"
GROUP: InstanceGroupSpec = {
    "instanceGroupName": "accel",
    "instanceType": "ml.g6.4xlarge",
    "instanceCount": 1,
    "capacityType": "OnDemand",
}


def env_credentials() -> tuple[str, str]:
    """The dummy keys the client signs with (moto's ``mock_aws`` puts them in the environment)."""
    return os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]


class SleepRecorder:
    """Stands in for time.sleep between retry attempts."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def make_client(api: InProcessApi, **kwargs: object) -> tuple[InstantStartClient, SleepRecorder]:
    sleep = SleepRecorder()
    return api.client(sleep=sleep, **kwargs), sleep


class Scripted(httpx2.BaseTransport):
    """Answers the first requests from a script (status, JSON or raw body, headers), then passes on to ``rest``.

    Every request it sees is recorded, so tests can count attempts and check each one's signature.
    """

    def __init__(self, rest: httpx2.BaseTransport | None, *answers: httpx2.Response) -> None:
        self.rest = rest
        self.answers = list(answers)
        self.seen: list[RecordedRequest] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(
            RecordedRequest(
                request.method,
                request.url.raw_path.decode(),
                [(k.decode(), v.decode()) for k, v in request.headers.raw],
                request.read(),
            )
        )
        if self.answers:
            return self.answers.pop(0)
        assert self.rest is not None, f"unscripted request {request.method} {request.url}"
        return self.rest.handle_request(request)


def error_json(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(status, json={"error": {"code": code, "message": message, "details": []}}, headers=headers)


@pytest.fixture
def refusing_url() -> Iterator[str]:
    """A 127.0.0.1 URL that refuses connections: the port is bound (so no other test can take it)
    but not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


# -- signing ------------------------------------------------------------------------------------------


def test_every_route_is_called_with_a_valid_sigv4_signature_for_execute_api(inprocess_api: InProcessApi) -> None:
    """Given the API with API Gateway's signature check,
    when the client calls every route,
    then each request carries a SigV4 Authorization for execute-api in us-west-2 whose signature,
    recomputed with botocore from what the API received, matches (and the API accepted it)."""
    api = inprocess_api
    client, _ = make_client(api)
    op = client.create_cluster("demo", "us-west-2c", [GROUP])
    client.list_clusters(max_results=10)
    client.get_cluster("demo")
    client.get_stages("demo")
    client.get_operation(op["operationId"])
    client.list_availability_zones()
    client.list_instance_types("us-west-2c")
    with pytest.raises(ApiError) as not_failed:
        client.retry_stage("demo", "network")
    with pytest.raises(ApiError) as busy:
        client.delete_cluster("demo")

    assert (not_failed.value.status, busy.value.status) == (409, 409)  # real answers, not API Gateway's 403
    access_key, secret_key = env_credentials()
    assert len(api.requests) == 9
    for request in api.requests:
        assert f"/{REGION}/execute-api/aws4_request" in (request.header("Authorization") or "")
        verify_sigv4(request, access_key=access_key, secret_key=secret_key, region=REGION)


def test_signature_check_fails_for_a_tampered_body_or_another_secret(inprocess_api: InProcessApi) -> None:
    """Given a signed POST as received,
    when its body is altered or the signature is checked with a different secret,
    then the verification fails (the check used by these tests can fail)."""
    client, _ = make_client(inprocess_api)
    client.create_cluster("demo", "us-west-2c", [GROUP])
    request = inprocess_api.requests_to("POST", "/clusters")[0]
    access_key, secret_key = env_credentials()
    verify_sigv4(request, access_key=access_key, secret_key=secret_key, region=REGION)

    request.body = request.body.replace(b'"instanceCount":1', b'"instanceCount":9')
    with pytest.raises(SignatureMismatch, match="signature mismatch"):
        verify_sigv4(request, access_key=access_key, secret_key=secret_key, region=REGION)
    with pytest.raises(SignatureMismatch):
        verify_sigv4(inprocess_api.requests[0], access_key=access_key, secret_key="not-the-secret", region=REGION)


def test_a_session_token_is_sent_and_signed(inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given temporary credentials (AWS_SESSION_TOKEN) in the environment,
    when a request is sent,
    then X-Amz-Security-Token carries the token, is one of the signed headers, and the API accepts it."""
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzEXAMPLETOKEN")
    access_key, secret_key = env_credentials()
    inprocess_api.credentials = (access_key, secret_key, "FQoGZXIvYXdzEXAMPLETOKEN")
    client, _ = make_client(inprocess_api)
    assert "us-west-2c" in [z["zoneName"] for z in client.list_availability_zones()]
    request = inprocess_api.requests[0]
    assert request.header("X-Amz-Security-Token") == "FQoGZXIvYXdzEXAMPLETOKEN"
    assert "x-amz-security-token" in (request.header("Authorization") or "")


def test_a_signature_api_gateway_rejects_is_a_403_api_error_and_not_retried(inprocess_api: InProcessApi) -> None:
    """Given an API that knows a different secret for our access key,
    when the client calls it,
    then it raises ApiError 403 Forbidden with API Gateway's message, after a single attempt."""
    access_key, _ = env_credentials()
    inprocess_api.credentials = (access_key, "another-secret", None)
    client, sleep = make_client(inprocess_api)
    with pytest.raises(ApiError) as caught:
        client.list_clusters()
    assert caught.value.status == 403
    assert caught.value.code == "Forbidden"
    assert "signature we calculated does not match" in caught.value.message
    assert len(inprocess_api.requests) == 1 and sleep.waits == []


def test_a_stage_path_in_the_api_url_is_part_of_the_signed_path(inprocess_api: InProcessApi) -> None:
    """Given an API deployed to a named stage (https://.../prod),
    when a route is called with the stage URL (trailing slash and all),
    then the request goes to /prod/<route>, the signature covers that path and the API answers it."""
    inprocess_api.stage = "prod"
    client, _ = make_client(inprocess_api, api_url=inprocess_api.url + "/")
    assert client.list_clusters() == {"clusters": [], "nextToken": None}
    assert inprocess_api.requests[0].target == "/prod/clusters"


# -- bodies and headers -------------------------------------------------------------------------------


def test_create_cluster_posts_the_contract_body_with_the_idempotency_key(inprocess_api: InProcessApi) -> None:
    """Given an idempotency key,
    when a cluster is created,
    then POST /clusters carries the camelCase JSON body and the Idempotency-Key header, and the 202
    Operation is returned; the same key and body again returns the same operation."""
    client, _ = make_client(inprocess_api)
    op = client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="create-demo-1")
    again = client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="create-demo-1")

    first, second = inprocess_api.requests_to("POST", "/clusters")
    assert first.json() == {"clusterTag": "demo", "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]}
    assert first.header("Content-Type") == "application/json"
    assert first.header("Idempotency-Key") == second.header("Idempotency-Key") == "create-demo-1"
    assert op["type"] == "CREATE_CLUSTER" and op["status"] == "PENDING" and op["clusterTag"] == "demo"
    assert op["statusUrl"] == f"/operations/{op['operationId']}"
    assert again["operationId"] == op["operationId"]


def test_posts_and_deletes_without_a_key_get_a_fresh_key_per_call_and_gets_none(inprocess_api: InProcessApi) -> None:
    """Given no idempotency key from the caller,
    when clusters are created, a stage retried and a cluster deleted,
    then each POST/DELETE carries its own generated Idempotency-Key and GETs carry none."""
    inprocess_api.add_cluster("old", failed_stage="hyperpod")
    inprocess_api.add_cluster("gone")
    client, _ = make_client(inprocess_api)
    client.create_cluster("demo", "us-west-2c", [GROUP])
    client.create_cluster("demo2", "us-west-2c", [GROUP])
    retry = client.retry_stage("old", "hyperpod")
    delete = client.delete_cluster("gone")
    client.get_cluster("demo")

    keys = [r.header("Idempotency-Key") for r in inprocess_api.requests if r.method in ("POST", "DELETE")]
    assert len(keys) == 4 and all(keys) and len(set(keys)) == 4
    assert inprocess_api.requests[-1].header("Idempotency-Key") is None
    assert inprocess_api.requests_to("POST", "/clusters/old/stages/hyperpod/retry")[0].body == b""
    assert (retry["type"], delete["type"]) == ("RETRY_STAGE", "DELETE_CLUSTER")


def test_a_reused_key_with_a_different_body_is_a_409_api_error(inprocess_api: InProcessApi) -> None:
    """Given a key already used to create cluster demo,
    when it is sent with a different body,
    then the client raises ApiError 409 with the server's code."""
    client, _ = make_client(inprocess_api)
    client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="k1")
    with pytest.raises(ApiError) as caught:
        client.create_cluster("demo", "us-west-2a", [GROUP], idempotency_key="k1")
    assert (caught.value.status, caught.value.code) == (409, "IdempotencyKeyReused")


# -- errors -------------------------------------------------------------------------------------------


def test_a_422_becomes_an_api_error_with_code_message_field_details_and_body(inprocess_api: InProcessApi) -> None:
    """Given an instance type the API does not offer,
    when the cluster is created,
    then ApiError carries status 422, the code, message, field-level details and the parsed body."""
    client, sleep = make_client(inprocess_api)
    bad = dict(GROUP, instanceType="ml.nope.xlarge")
    with pytest.raises(ApiError) as caught:
        client.create_cluster("demo", "us-west-2c", [bad])  # type: ignore[list-item]
    error = caught.value
    assert (error.status, error.code) == (422, "ValidationError")
    assert error.message.startswith("invalid request: instanceGroups[0].instanceType")
    assert [d["field"] for d in error.details] == ["instanceGroups[0].instanceType"]
    assert "ml.g6.4xlarge" in error.details[0]["message"]
    assert error.body["error"]["code"] == "ValidationError"
    assert sleep.waits == [] and len(inprocess_api.requests) == 1


def test_unknown_resources_are_404_and_state_conflicts_are_409(inprocess_api: InProcessApi) -> None:
    """Given a READY cluster,
    when an unknown cluster is read or a SUCCEEDED stage retried,
    then ApiError 404 ClusterNotFound and 409 StageNotFailed (naming the stage status) are raised."""
    inprocess_api.add_cluster("demo")
    client, _ = make_client(inprocess_api)
    with pytest.raises(ApiError) as missing:
        client.get_cluster("nope")
    with pytest.raises(ApiError) as conflict:
        client.retry_stage("demo", "storage")
    assert (missing.value.status, missing.value.code) == (404, "ClusterNotFound")
    assert (conflict.value.status, conflict.value.code) == (409, "StageNotFailed")
    assert "SUCCEEDED" in conflict.value.message
    assert conflict.value.details == [{"field": "stage", "status": "SUCCEEDED"}]


def test_a_non_json_error_body_still_becomes_an_api_error(inprocess_api: InProcessApi) -> None:
    """Given a gateway (a proxy in front of the API) answering 502 with HTML,
    when a route is called,
    then ApiError has status 502, the reason phrase as code, the text as message, and no retry."""
    gateway = Scripted(None, httpx2.Response(502, content=b"<html>Bad Gateway</html>"))
    client, sleep = make_client(inprocess_api, transport=gateway)
    with pytest.raises(ApiError) as caught:
        client.list_clusters()
    assert (caught.value.status, caught.value.code) == (502, "BadGateway")
    assert caught.value.body == "<html>Bad Gateway</html>"
    assert sleep.waits == [] and len(gateway.seen) == 1


# -- retries ------------------------------------------------------------------------------------------


def test_503_is_retried_with_backoff_and_the_same_idempotency_key_signed_afresh(inprocess_api: InProcessApi) -> None:
    """Given POST /clusters answering 503 twice before reaching the API,
    when a cluster is created,
    then the client retries after jittered backoff waits and succeeds on the third attempt; every
    attempt carries the same Idempotency-Key and a valid signature."""
    unavailable = error_json(503, "ServiceUnavailable", "SageMaker is throttling")
    flaky = Scripted(inprocess_api, unavailable, unavailable)
    client, sleep = make_client(inprocess_api, transport=flaky, backoff_initial=0.5, backoff_max=8)

    op = client.create_cluster("demo", "us-west-2c", [GROUP])

    assert len(flaky.seen) == 3
    assert len({a.header("Idempotency-Key") for a in flaky.seen}) == 1
    access_key, secret_key = env_credentials()
    for attempt in flaky.seen:
        verify_sigv4(attempt, access_key=access_key, secret_key=secret_key, region=REGION)
    assert len(sleep.waits) == 2
    assert 0 <= sleep.waits[0] <= 0.5 and 0 <= sleep.waits[1] <= 1.0
    assert op["status"] == "PENDING"
    assert inprocess_api.call("GET", "/clusters/demo")[1]["status"] == "CREATING"


def test_retries_stop_after_max_attempts_and_raise_the_last_503(inprocess_api: InProcessApi) -> None:
    """Given a proxy that keeps answering 503,
    when a route is called with max_attempts=3,
    then exactly three requests are sent and ApiError 503 is raised."""
    down = Scripted(None, *[error_json(503, "ServiceUnavailable", "try later") for _ in range(5)])
    client, sleep = make_client(inprocess_api, transport=down, max_attempts=3)
    with pytest.raises(ApiError) as caught:
        client.list_clusters()
    assert (caught.value.status, caught.value.message) == (503, "try later")
    assert len(down.seen) == 3 and len(sleep.waits) == 2


def test_a_429_waits_at_least_the_retry_after_seconds(inprocess_api: InProcessApi) -> None:
    """Given API Gateway throttling once with Retry-After: 3,
    when a route is called,
    then the client waits at least 3 s (capped by backoff_max) before the successful retry."""
    throttled = Scripted(inprocess_api, error_json(429, "Throttled", "slow down", {"Retry-After": "3"}))
    client, sleep = make_client(inprocess_api, transport=throttled, backoff_max=10)
    zones = client.list_availability_zones()
    assert [z["zoneName"] for z in zones] == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]
    assert len(sleep.waits) == 1 and 3 <= sleep.waits[0] <= 10


def test_a_409_saying_the_same_key_is_still_in_progress_is_retried(inprocess_api: InProcessApi) -> None:
    """Given a retried create whose first attempt is still being processed (409 IdempotencyKeyInProgress),
    when the client gets that answer,
    then it waits and retries with the same key, receiving the operation; other 409s are not retried."""
    in_progress = error_json(
        409, "IdempotencyKeyInProgress", "a request with this Idempotency-Key is still in progress"
    )
    transport = Scripted(inprocess_api, in_progress)
    client, sleep = make_client(inprocess_api, transport=transport)
    op = client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="k-1")
    assert op["type"] == "CREATE_CLUSTER" and len(sleep.waits) == 1
    assert [r.header("Idempotency-Key") for r in transport.seen] == ["k-1", "k-1"]

    with pytest.raises(ApiError) as taken:
        client.create_cluster("demo", "us-west-2c", [GROUP], idempotency_key="k-2")
    assert (taken.value.code, len(sleep.waits)) == ("ClusterAlreadyExists", 1)


def test_connection_errors_are_retried_then_raise_api_connection_error(
    refusing_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given nothing listening on the API's port,
    when a route is called with max_attempts=4,
    then the client waits three times and raises ApiConnectionError naming the URL."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", REGION)
    sleep = SleepRecorder()
    client = InstantStartClient(refusing_url, max_attempts=4, sleep=sleep)
    with pytest.raises(ApiConnectionError) as caught:
        client.get_cluster("demo")
    assert caught.value.url == f"{refusing_url}/clusters/demo"
    assert len(sleep.waits) == 3


# -- pagination ---------------------------------------------------------------------------------------


def test_iter_clusters_follows_next_token_through_every_page(inprocess_api: InProcessApi) -> None:
    """Given five clusters and pages of two,
    when iterating clusters,
    then all five come back in order over three signed requests, each passing the previous page's
    token percent-encoded exactly as it was signed."""
    for tag in ("echo", "alpha", "delta", "bravo", "charlie"):
        inprocess_api.create_cluster(tag)
    client, _ = make_client(inprocess_api)

    tags = [c["clusterTag"] for c in client.iter_clusters(page_size=2)]

    assert tags == ["alpha", "bravo", "charlie", "delta", "echo"]
    pages = inprocess_api.requests_to("GET", "/clusters")
    assert len(pages) == 3
    assert "nextToken" not in pages[0].query
    assert pages[1].query["nextToken"] and pages[2].query["nextToken"] != pages[1].query["nextToken"]
    assert all(p.query["maxResults"] == "2" for p in pages)


def test_list_clusters_returns_one_page_and_its_token(inprocess_api: InProcessApi) -> None:
    """Given three clusters,
    when one page of two is listed,
    then the page has two summaries in the contract shape and a nextToken leading to the last one."""
    for tag in ("alpha", "bravo", "charlie"):
        inprocess_api.create_cluster(tag)
    client, _ = make_client(inprocess_api)
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
        "currentOperationId",
        "stages",
        "instanceGroups",
    }
    last = client.list_clusters(max_results=2, next_token=page["nextToken"])
    assert [c["clusterTag"] for c in last["clusters"]] == ["charlie"] and last["nextToken"] is None


def test_a_page_size_the_api_refuses_is_a_422_naming_max_results(inprocess_api: InProcessApi) -> None:
    """Given maxResults 101 (the API allows 1-100), when listing, then ApiError 422 names maxResults."""
    client, _ = make_client(inprocess_api)
    with pytest.raises(ApiError) as caught:
        client.list_clusters(max_results=101)
    assert caught.value.status == 422 and [d["field"] for d in caught.value.details] == ["maxResults"]


# -- settings -----------------------------------------------------------------------------------------


@pytest.fixture
def no_aws_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy credentials and us-west-2 only from AWS_REGION: no default region, profile, or config file."""
    for var in (
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_SESSION_TOKEN",
        "AWS_DEFAULT_REGION",
        "INSTANTSTART_API_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_the_api_url_and_region_come_from_the_environment(
    no_aws_settings: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given INSTANTSTART_API_URL and AWS_REGION,
    when a client is built without arguments,
    then it uses them, and explicit arguments win over them."""
    monkeypatch.setenv("INSTANTSTART_API_URL", "https://abc.example/prod")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    client = InstantStartClient()
    assert (client.api_url, client.region) == ("https://abc.example/prod", "eu-west-1")
    assert InstantStartClient("https://other.example", region="ap-south-1").region == "ap-south-1"


def test_the_region_is_taken_from_an_execute_api_host_when_aws_region_is_unset(
    no_aws_settings: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given no AWS_REGION,
    when the API URL is an execute-api host,
    then the region in the host name is the signing region."""
    monkeypatch.delenv("AWS_REGION")
    client = InstantStartClient("https://a1b2c3d4e5.execute-api.eu-central-1.amazonaws.com")
    assert client.region == "eu-central-1"


def test_missing_url_or_region_is_a_configuration_error(no_aws_settings: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Given no API URL, or no region anywhere,
    when a client is built,
    then ConfigurationError names what is missing."""
    with pytest.raises(ConfigurationError, match="INSTANTSTART_API_URL"):
        InstantStartClient()
    monkeypatch.delenv("AWS_REGION")
    with pytest.raises(ConfigurationError, match="region"):
        InstantStartClient("http://127.0.0.1:1")


def test_missing_credentials_fail_before_anything_is_sent(
    inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given no credentials in the chain,
    when a route is called,
    then ConfigurationError is raised and no request reaches the API."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    client, _ = make_client(inprocess_api)
    with pytest.raises(ConfigurationError, match="credentials"):
        client.list_clusters()
    assert inprocess_api.requests == []


def test_an_empty_2xx_body_is_none_and_a_non_json_one_is_an_error(inprocess_api: InProcessApi) -> None:
    """Given a proxy answering 204 and then a 200 with text,
    when requested,
    then the first returns None and the second raises ApiError InvalidResponse."""
    proxy = Scripted(None, httpx2.Response(204), httpx2.Response(200, content=b"hello"))
    client, _ = make_client(inprocess_api, transport=proxy)
    assert client.request("GET", "/x") is None
    with pytest.raises(ApiError) as caught:
        client.request("GET", "/x")
    assert caught.value.code == "InvalidResponse"
    assert json.dumps(caught.value.body) == '"hello"'


def test_an_unknown_route_is_api_gateways_404(inprocess_api: InProcessApi) -> None:
    """Given a path that is not a route of the template, when requested, then ApiError 404 Not Found."""
    client, _ = make_client(inprocess_api)
    with pytest.raises(ApiError) as caught:
        client.request("GET", "/hyperpod/clusters")
    assert (caught.value.status, caught.value.code, caught.value.message) == (404, "NotFound", "Not Found")
