"""The HTTP API answers bad input with clear 4xx errors, honours Idempotency-Key and starts one operation per tag."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import botocore.session
import httpx2
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from instantstart_client.api import ApiError, InstantStartClient
from tests.integration.conftest import GROUP, cancel_if_running


@pytest.fixture
def stop_after(api: InstantStartClient) -> Iterator[Callable[[str], None]]:
    """Collects operation ids; after the test, each still running is cancelled (these tests only need the create
    to start: its workflow would otherwise run to READY in the background of the tests after it)."""
    started: list[str] = []
    yield started.append
    for operation_id in started:
        cancel_if_running(api, operation_id)


def _signed(sandbox: Any, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
    """Send a SigV4-signed raw request (to send bodies the typed client would refuse to build)."""
    data = body if isinstance(body, bytes | None) else json.dumps(body).encode()
    url = sandbox.api_url + path
    request = AWSRequest(
        method=method, url=url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    credentials = botocore.session.get_session().get_credentials()
    SigV4Auth(credentials, "execute-api", sandbox.region).add_auth(request)
    return httpx2.request(method, url, content=data, headers=dict(request.headers.items()), timeout=30)


def test_when_the_request_is_not_signed_then_403(sandbox: Any) -> None:
    response = httpx2.get(sandbox.api_url + "/clusters", timeout=30)
    assert response.status_code == 403


def test_when_the_signature_is_wrong_then_403(sandbox: Any) -> None:
    request = AWSRequest(method="GET", url=sandbox.api_url + "/clusters")
    SigV4Auth(
        botocore.credentials.Credentials("AKIASANDBOXEXAMPLE00", "wrong"), "execute-api", sandbox.region
    ).add_auth(request)
    response = httpx2.get(sandbox.api_url + "/clusters", headers=dict(request.headers.items()), timeout=30)
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        (b"{not json", 400, None),
        (b"", 400, None),
        ({"clusterTag": "Bad_Tag", "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]}, 422, "clusterTag"),
        ({"clusterTag": "ab", "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]}, 422, "clusterTag"),
        (
            {
                "clusterTag": "okay",
                "availabilityZone": "us-west-2c",
                "instanceGroups": [{**GROUP, "instanceCount": -1}],
            },
            422,
            "instanceGroups[0].instanceCount",
        ),
        (
            # 0 is a valid count (a group for Karpenter), but a cluster whose every group is empty is refused
            {"clusterTag": "okay", "availabilityZone": "us-west-2c", "instanceGroups": [{**GROUP, "instanceCount": 0}]},
            422,
            "instanceGroups",
        ),
        (
            {
                "clusterTag": "okay",
                "availabilityZone": "us-west-2c",
                "instanceGroups": [{**GROUP, "instanceCount": 6759}],
            },
            422,
            "instanceGroups[0].instanceCount",
        ),
        (
            {
                "clusterTag": "okay",
                "availabilityZone": "us-west-2c",
                "instanceGroups": [{**GROUP, "instanceType": "g6.4xl"}],
            },
            422,
            "instanceGroups[0].instanceType",
        ),
        (
            {
                "clusterTag": "okay",
                "availabilityZone": "us-west-2c",
                "instanceGroups": [{**GROUP, "capacityType": "Reserved"}],
            },
            422,
            "instanceGroups[0].capacityType",
        ),
        ({"clusterTag": "okay", "availabilityZone": "eu-west-1a", "instanceGroups": [GROUP]}, 422, "availabilityZone"),
        ({"clusterTag": "okay", "availabilityZone": "us-west-2c", "instanceGroups": []}, 422, "instanceGroups"),
    ],
)
def test_when_creating_with_bad_input_then_a_4xx_names_the_field(
    sandbox: Any, body: Any, status: int, field: str | None
) -> None:
    response = _signed(sandbox, "POST", "/clusters", body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] and error["message"]
    if field:
        assert field in [d["field"] for d in error["details"]], error
    assert "okay" not in [c["clusterTag"] for c in InstantStartClient(sandbox.api_url).iter_clusters()]


def test_when_the_capacity_type_is_unknown_then_the_message_lists_the_allowed_values(sandbox: Any) -> None:
    body = {
        "clusterTag": "okay",
        "availabilityZone": "us-west-2c",
        "instanceGroups": [{**GROUP, "capacityType": "Reserved"}],
    }
    message = _signed(sandbox, "POST", "/clusters", body).json()["error"]["message"]
    assert "OnDemand, Spot, TrainingPlan" in message


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/clusters/nosuch", 404, "ClusterNotFound"),
        ("GET", "/clusters/nosuch/stages", 404, "ClusterNotFound"),
        ("POST", "/clusters/nosuch/stages/hyperpod/retry", 404, "ClusterNotFound"),
        ("GET", "/operations/op-00000000000000000000000000000000", 404, "OperationNotFound"),
        ("GET", "/catalog/instance-types?availabilityZone=eu-west-1a", 422, "ValidationError"),
        ("GET", "/catalog/instance-types", 422, "ValidationError"),
        ("GET", "/clusters?maxResults=0", 422, "ValidationError"),
        ("GET", "/clusters?nextToken=garbage", 400, "BadRequest"),
    ],
)
def test_when_asking_for_what_does_not_exist_or_is_invalid_then_a_clear_4xx(
    sandbox: Any, method: str, path: str, status: int, code: str
) -> None:
    response = _signed(sandbox, method, path)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code


def test_given_an_idempotency_key_when_the_same_create_is_sent_twice_then_one_operation(
    api: InstantStartClient, stop_after: Callable[[str], None]
) -> None:
    first = api.create_cluster("idem", "us-west-2c", [GROUP], idempotency_key="key-idem-1")
    stop_after(first["operationId"])
    second = api.create_cluster("idem", "us-west-2c", [GROUP], idempotency_key="key-idem-1")
    assert second["operationId"] == first["operationId"]
    with pytest.raises(ApiError) as err:
        api.create_cluster("idem", "us-west-2c", [{**GROUP, "instanceCount": 2}], idempotency_key="key-idem-1")
    assert err.value.status == 409 and err.value.code == "IdempotencyKeyReused"


def test_when_the_same_tag_is_created_concurrently_then_exactly_one_operation_starts(
    sandbox: Any, stop_after: Callable[[str], None]
) -> None:
    body = {"clusterTag": "race", "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]}

    def post(i: int) -> Any:
        headers = {"Idempotency-Key": f"race-{i}"} if i % 2 else {}
        return _signed(sandbox, "POST", "/clusters", body, headers)

    with ThreadPoolExecutor(max_workers=6) as pool:
        responses = list(pool.map(post, range(6)))
    statuses = sorted(r.status_code for r in responses)
    assert statuses.count(202) == 1, [r.text for r in responses]
    assert all(s == 409 for s in statuses if s != 202)
    accepted = next(r for r in responses if r.status_code == 202)
    stop_after(accepted.json()["operationId"])
    assert accepted.headers["Location"] == f"/operations/{accepted.json()['operationId']}"


def test_when_listing_with_a_small_page_then_next_token_walks_every_cluster(
    api: InstantStartClient, stop_after: Callable[[str], None]
) -> None:
    stop_after(api.create_cluster("page-a", "us-west-2c", [GROUP])["operationId"])
    stop_after(api.create_cluster("page-b", "us-west-2c", [GROUP])["operationId"])
    first = api.list_clusters(max_results=1)
    assert len(first["clusters"]) == 1 and first["nextToken"]
    tags = [c["clusterTag"] for c in api.iter_clusters(page_size=1)]
    assert {"page-a", "page-b"} <= set(tags)
    assert len(tags) == len(set(tags))


def test_when_listing_zones_and_instance_types_then_only_offered_values(api: InstantStartClient) -> None:
    zones = api.list_availability_zones()
    assert {"zoneName": "us-west-2c", "zoneId": "usw2-az3"} in zones
    types = api.list_instance_types("us-west-2c")
    assert "ml.g6.4xlarge" in types
    assert all(t.startswith("ml.") for t in types)


def test_when_different_requests_arrive_at_once_then_each_gets_its_own_answer(sandbox: Any) -> None:
    """Concurrent invocations must not see each other's event (one execution environment per invocation)."""
    bad = {"clusterTag": "okay", "availabilityZone": "us-west-2c", "instanceGroups": [{**GROUP, "instanceCount": -1}]}

    def call(i: int) -> tuple[int, Any]:
        if i % 3 == 0:
            response = _signed(sandbox, "GET", "/catalog/availability-zones")
        elif i % 3 == 1:
            response = _signed(sandbox, "POST", "/clusters", bad)
        else:
            response = _signed(sandbox, "GET", "/clusters/nosuch")
        return i, response

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(call, range(60)))
    for i, response in results:
        if i % 3 == 0:
            assert response.status_code == 200 and response.json()["availabilityZones"], response.text
        elif i % 3 == 1:
            assert response.status_code == 422, response.text
            assert [d["field"] for d in response.json()["error"]["details"]] == ["instanceGroups[0].instanceCount"]
        else:
            assert response.status_code == 404 and response.json()["error"]["code"] == "ClusterNotFound"


def test_given_an_idempotency_key_used_for_a_create_when_reused_for_a_delete_then_409(
    api: InstantStartClient, stop_after: Callable[[str], None]
) -> None:
    stop_after(api.create_cluster("idem-other", "us-west-2c", [GROUP], idempotency_key="key-idem-route")["operationId"])
    with pytest.raises(ApiError) as err:
        api.delete_cluster("idem-other", idempotency_key="key-idem-route")
    assert err.value.status == 409 and err.value.code == "IdempotencyKeyReused"


def test_when_the_body_is_not_json_then_415_or_400_in_the_api_error_shape(sandbox: Any) -> None:
    text = _signed(sandbox, "POST", "/clusters", b"clusterTag=x", {"Content-Type": "application/x-www-form-urlencoded"})
    assert text.status_code == 415 and text.json()["error"]["code"] == "UnsupportedMediaType"
    undecodable = _signed(sandbox, "POST", "/clusters", b'{"clusterTag": "\xff\xfe"}')
    assert undecodable.status_code == 400 and undecodable.json()["error"]["code"] == "BadRequest"
    nested = _signed(sandbox, "POST", "/clusters", b"[" * 100000 + b"]" * 100000)
    assert nested.status_code == 400 and nested.json()["error"]["code"] == "BadRequest"


@pytest.mark.parametrize("count", ["2", 2.0, True])
def test_when_instance_count_is_not_a_json_integer_then_422(sandbox: Any, count: Any) -> None:
    body = {
        "clusterTag": "notint",
        "availabilityZone": "us-west-2c",
        "instanceGroups": [{**GROUP, "instanceCount": count}],
    }
    response = _signed(sandbox, "POST", "/clusters", body)
    assert response.status_code == 422, response.text
    assert [d["field"] for d in response.json()["error"]["details"]] == ["instanceGroups[0].instanceCount"]
