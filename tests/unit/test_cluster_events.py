"""``GET /clusters/{clusterTag}/events`` through the real API handler in process, SageMaker stubbed.

moto has no ``ListClusterEvents``: SageMaker's answers are queued with botocore's ``Stubber`` on the
client the core uses (:mod:`sagemaker_events`), the cluster records are moto's DynamoDB.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from inprocess_api import InProcessApi
from sagemaker_events import HyperPodEvents, make_event, stubbed_sagemaker

EVENTS_PATH = "/clusters/demo/events"


@pytest.fixture
def sagemaker(inprocess_api: InProcessApi) -> Iterator[Any]:
    """The stubbed SageMaker client of the API function (every queued answer must be consumed)."""
    with stubbed_sagemaker(inprocess_api.driver.runtime) as stub:
        yield stub


def hyperpod_events(stub: Any, count: int, **kwargs: Any) -> HyperPodEvents:
    """``count`` events, newest first."""
    return HyperPodEvents(stub, [make_event(i, **kwargs) for i in reversed(range(count))])


def get_events(api: InProcessApi, tag: str = "demo", **query: Any) -> tuple[int, dict[str, Any]]:
    path = f"/clusters/{tag}/events"
    if query:
        path += "?" + urlencode({k: v for k, v in query.items() if v is not None})
    return api.call("GET", path)


def test_given_an_unknown_tag_when_listing_events_then_404_cluster_not_found(
    inprocess_api: InProcessApi, sagemaker: Any
) -> None:
    status, body = get_events(inprocess_api, "nosuch")

    assert status == 404
    assert body["error"]["code"] == "ClusterNotFound" and "nosuch" in body["error"]["message"]


def test_given_a_cluster_whose_hyperpod_cluster_does_not_exist_yet_then_an_empty_list(
    inprocess_api: InProcessApi, sagemaker: Any
) -> None:
    inprocess_api.create_cluster("demo")
    HyperPodEvents(sagemaker, []).expect_error("ResourceNotFound", "Cluster hp-cluster-demo not found.")

    status, body = get_events(inprocess_api)

    assert status == 200
    assert body == {"clusterTag": "demo", "hyperPodClusterName": "hp-cluster-demo", "events": [], "nextToken": None}


def test_given_five_events_when_listing_two_per_page_then_newest_first_in_camel_case_across_three_pages(
    inprocess_api: InProcessApi, sagemaker: Any
) -> None:
    inprocess_api.create_cluster("demo")
    feed = hyperpod_events(sagemaker, 5)
    feed.expect_page(0, 2)
    feed.expect_reasons(feed.errors(4))  # the first page's Error event: the reason behind it
    feed.expect_page(2, 2)
    feed.expect_page(4, 2)

    pages, token = [], None
    for _ in range(3):
        status, body = get_events(inprocess_api, maxResults=2, nextToken=token)
        assert status == 200, body
        pages.append(body["events"])
        token = body["nextToken"]
        if token:
            decoded = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            assert not token.startswith("sm-") and b"SAGEMAKER-OPAQUE" in decoded  # wrapped, never raw
    assert token is None
    assert [len(p) for p in pages] == [2, 2, 1]
    events = [e for p in pages for e in p]
    assert [e["eventId"] for e in events] == [make_event(i)["EventId"] for i in (4, 3, 2, 1, 0)]
    newest = events[0]
    assert newest == {
        "eventId": "00000004-0000-4000-8000-000000000000",
        "eventTime": "2026-11-29T17:04:00Z",
        "eventLevel": "Error",
        "description": "Instance i-00000000000000004: event 4 \u2018verbatim\u2019 <b>text</b>",
        "instanceGroupName": "accel",
        "instanceId": "i-00000000000000004",
        "resourceType": "Instance",
        "operationId": None,
        "failureMessage": "InsufficientInstanceCapacity: no ml.g6.4xlarge capacity for i-00000000000000004 in "
        "us-west-2c",
        "failureMessageNote": None,
    }
    assert all(e["failureMessage"] is None and e["failureMessageNote"] is None for e in events[1:]), "not Errors"


def test_given_a_level_filter_then_pages_hold_only_that_level_with_none_skipped_or_repeated(
    inprocess_api: InProcessApi, sagemaker: Any
) -> None:
    """250 events, one in five an Error (50): pages of 30 read SageMaker 100 at a time, resuming mid-page."""
    inprocess_api.create_cluster("demo")
    feed = hyperpod_events(sagemaker, 250)
    error_events = [e for e in feed.events if e["EventLevel"] == "Error"]
    errors = [e["EventId"] for e in error_events]
    # page 1: 30 errors are found in the first 150 events (SageMaker pages at 0 and 100), the reasons of the
    # first 20 are read (MAX_DESCRIBE_CALLS); page 2: re-reads the page at 100 from where page 1 stopped, then
    # the page at 200 (the last), and the reasons of its 20.
    feed.expect_page(0, 100)
    feed.expect_page(100, 100)
    feed.expect_reasons(error_events[:20])
    feed.expect_page(100, 100)
    feed.expect_page(200, 100)
    feed.expect_reasons(error_events[30:50])

    first_status, first = get_events(inprocess_api, maxResults=30, level="Error")
    second_status, second = get_events(inprocess_api, maxResults=30, level="Error", nextToken=first["nextToken"])

    assert (first_status, second_status) == (200, 200)
    assert {e["eventLevel"] for e in first["events"] + second["events"]} == {"Error"}
    assert [e["eventId"] for e in first["events"] + second["events"]] == errors
    assert (len(first["events"]), len(second["events"]), second["nextToken"]) == (30, 20, None)
    read = first["events"][:20] + second["events"]
    assert [e["failureMessage"] for e in read] == [
        feed.failure_message(e) for e in error_events[:20] + error_events[30:50]
    ]
    assert all(e["failureMessageNote"] is None for e in read)
    beyond = first["events"][20:]
    assert all(e["failureMessage"] is None for e in beyond)
    assert {e["failureMessageNote"] for e in beyond} == {
        "not read: a page reads the reasons of at most 20 Error events (DescribeClusterEvent); ask for fewer "
        "events (maxResults) to see it"
    }


def test_given_new_events_between_pages_then_the_next_page_continues_after_the_last_event_shown(
    inprocess_api: InProcessApi, sagemaker: Any
) -> None:
    """Newest first, so new events land in front of the first SageMaker page while it is being read."""
    inprocess_api.create_cluster("demo")
    feed = hyperpod_events(sagemaker, 10, level="Error")
    feed.expect_page(0, 100)
    feed.expect_reasons(feed.errors(9, 8, 7, 6))
    status, first = get_events(inprocess_api, maxResults=4, level="Error")
    feed.events[:0] = [make_event(i, level="Error") for i in (11, 10)]
    feed.expect_page(0, 100)
    feed.expect_reasons(feed.errors(5, 4, 3, 2))

    status, second = get_events(inprocess_api, maxResults=4, level="Error", nextToken=first["nextToken"])

    assert status == 200
    assert [e["eventId"] for e in first["events"]] == [make_event(i)["EventId"] for i in (9, 8, 7, 6)]
    assert [e["eventId"] for e in second["events"]] == [make_event(i)["EventId"] for i in (5, 4, 3, 2)]


def test_given_an_instance_group_then_sagemaker_filters_by_it(inprocess_api: InProcessApi, sagemaker: Any) -> None:
    inprocess_api.create_cluster("demo")
    feed = hyperpod_events(sagemaker, 3, group="workers-1")
    feed.expect_page(0, 20, group="workers-1")

    status, body = get_events(inprocess_api, instanceGroupName="workers-1")

    assert status == 200
    assert {e["instanceGroupName"] for e in body["events"]} == {"workers-1"} and len(body["events"]) == 3


def _edited(token: str) -> str:
    raw = bytearray(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    raw[10] ^= 0x01
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


@pytest.mark.parametrize(
    "make_token",
    [_edited, lambda t: t[:-6], lambda t: "sm-0002-SAGEMAKER-OPAQUE", lambda t: "not a token"],
    ids=["edited", "truncated", "sagemaker-raw", "garbage"],
)
def test_given_a_next_token_this_api_did_not_issue_then_400_naming_next_token(
    inprocess_api: InProcessApi, sagemaker: Any, make_token: Any
) -> None:
    inprocess_api.create_cluster("demo")
    feed = hyperpod_events(sagemaker, 5)
    feed.expect_page(0, 2)
    feed.expect_reasons(feed.errors(4))
    _, first = get_events(inprocess_api, maxResults=2)

    status, body = get_events(inprocess_api, maxResults=2, nextToken=make_token(first["nextToken"]))

    assert status == 400
    assert body["error"]["code"] == "BadRequest" and "nextToken" in body["error"]["message"]
    assert [d["field"] for d in body["error"]["details"]] == ["nextToken"]


def test_given_a_token_of_another_listing_then_400_naming_next_token(
    inprocess_api: InProcessApi, sagemaker: Any
) -> None:
    inprocess_api.create_cluster("demo")
    feed = hyperpod_events(sagemaker, 5)
    feed.expect_page(0, 2)
    feed.expect_reasons(feed.errors(4))
    _, first = get_events(inprocess_api, maxResults=2)

    status, body = get_events(inprocess_api, maxResults=2, level="Error", nextToken=first["nextToken"])

    assert status == 400 and [d["field"] for d in body["error"]["details"]] == ["nextToken"]
    assert "another listing" in body["error"]["message"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"level": "Fatal"}, "level"),
        ({"maxResults": "101"}, "maxResults"),
        ({"maxResults": "0"}, "maxResults"),
        ({"instanceGroupName": "-bad-"}, "instanceGroupName"),
    ],
)
def test_given_a_bad_query_parameter_then_422_naming_it(
    inprocess_api: InProcessApi, sagemaker: Any, query: dict[str, str], field: str
) -> None:
    inprocess_api.create_cluster("demo")

    status, body = get_events(inprocess_api, **query)

    assert status == 422 and [d["field"] for d in body["error"]["details"]] == [field]


def test_given_sagemaker_throttling_then_503_with_its_code(inprocess_api: InProcessApi, sagemaker: Any) -> None:
    inprocess_api.create_cluster("demo")
    HyperPodEvents(sagemaker, []).expect_error("ThrottlingException", "Rate exceeded", status=400)

    status, body = get_events(inprocess_api)

    assert status == 503
    assert "ThrottlingException" in body["error"]["message"] and "Rate exceeded" in body["error"]["message"]


def test_given_describe_cluster_event_fails_then_the_event_is_listed_with_a_note_and_the_next_reason_is_read(
    inprocess_api: InProcessApi, sagemaker: Any
) -> None:
    """An event gone from DescribeClusterEvent (ResourceNotFound) loses only its own reason, never the page."""
    inprocess_api.create_cluster("demo")
    feed = hyperpod_events(sagemaker, 3, level="Error")
    feed.expect_page(0, 20)
    feed.expect_reason_error("ResourceNotFound", "Event 00000002 not found.")
    feed.expect_reasons(feed.errors(1, 0))

    status, body = get_events(inprocess_api)

    assert status == 200, body
    gone, *read = body["events"]
    assert gone["eventId"] == make_event(2)["EventId"] and gone["failureMessage"] is None
    assert (
        gone["failureMessageNote"]
        == "not read: DescribeClusterEvent failed (ResourceNotFound: Event 00000002 not found.)"
    )
    assert [e["failureMessage"] for e in read] == [feed.failure_message(e) for e in feed.errors(1, 0)]


def test_given_describe_cluster_event_throttles_then_the_page_is_listed_with_notes_and_no_more_describes(
    inprocess_api: InProcessApi, sagemaker: Any
) -> None:
    """After a throttled DescribeClusterEvent (botocore already retried it) the page makes no more such calls:
    every Error event is still listed, with a note instead of its reason; the stub has no further answer queued."""
    inprocess_api.create_cluster("demo")
    feed = hyperpod_events(sagemaker, 3, level="Error")
    feed.expect_page(0, 20)
    feed.expect_reasons(feed.errors(2))
    feed.expect_reason_error("ThrottlingException", "Rate exceeded")  # a Stubber answer is not retried

    status, body = get_events(inprocess_api)

    assert status == 200, body
    first, throttled, skipped = body["events"]
    assert first["failureMessage"] == feed.failure_message(feed.errors(2)[0])
    assert throttled["failureMessage"] is None and skipped["failureMessage"] is None
    assert (
        throttled["failureMessageNote"] == "not read: DescribeClusterEvent failed (ThrottlingException: Rate exceeded)"
    )
    assert skipped["failureMessageNote"] == (
        "not read: DescribeClusterEvent was throttled (ThrottlingException) earlier on this page; list again later"
    )
