"""A SageMaker ``ListClusterEvents`` stand-in for the unit tests: botocore's ``Stubber`` on the core's client.

moto has no ``ListClusterEvents``, so the tests queue SageMaker's answers on the very client the API
function uses (``Runtime.client("sagemaker")``). :class:`HyperPodEvents` holds a cluster's events newest
first and answers each expected call with the slice SageMaker would return, with its own opaque
``NextToken`` values (``sm-...``) that the tests look for in the API's answers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.stub import Stubber

HP_ARN = "arn:aws:sagemaker:us-west-2:123456789012:cluster/abcd1234efgh"
LEVELS = ("Info", "Info", "Warn", "Info", "Error")
START = datetime(2026, 11, 29, 17, 0, 0, tzinfo=UTC)


def make_event(index: int, *, level: str | None = None, group: str = "accel") -> dict[str, Any]:
    """Event number ``index`` (0 is the oldest), one minute apart; levels cycle Info, Info, Warn, Info, Error."""
    return {
        "EventId": f"{index:08x}-0000-4000-8000-000000000000",
        "ClusterArn": HP_ARN,
        "ClusterName": "hp-cluster-demo",
        "InstanceGroupName": group,
        "InstanceId": f"i-{index:017x}",
        "ResourceType": "Instance",
        "EventTime": START + timedelta(minutes=index, microseconds=250_000),
        "Description": f"Instance i-{index:017x}: event {index} \u2018verbatim\u2019 <b>text</b>",
        "EventLevel": level or LEVELS[index % len(LEVELS)],
    }


class HyperPodEvents:
    """The HyperPod events of one cluster and the stubbed SageMaker client that pages through them.

    Args:
        stub: an active ``Stubber`` of the core's SageMaker client.
        events: the events, newest first.
        cluster_name: the HyperPod cluster the calls must name.
    """

    def __init__(self, stub: Stubber, events: list[dict[str, Any]], cluster_name: str = "hp-cluster-demo") -> None:
        self.stub = stub
        self.events = events
        self.cluster_name = cluster_name

    @staticmethod
    def token(offset: int) -> str:
        """SageMaker's NextToken for the page starting at ``offset``."""
        return f"sm-{offset:04d}-SAGEMAKER-OPAQUE"

    def expect_page(self, offset: int, size: int, *, group: str | None = None) -> None:
        """Queue one call: the page of ``size`` events at ``offset`` (sent with the token of ``offset``)."""
        expected: dict[str, Any] = {
            "ClusterName": self.cluster_name,
            "SortBy": "EventTime",
            "SortOrder": "Descending",
            "MaxResults": size,
        }
        if group:
            expected["InstanceGroupName"] = group
        if offset:
            expected["NextToken"] = self.token(offset)
        page = self.events[offset : offset + size]
        answer: dict[str, Any] = {"Events": page}
        if offset + size < len(self.events):
            answer["NextToken"] = self.token(offset + size)
        self.stub.add_response("list_cluster_events", answer, expected)

    def expect_error(self, code: str, message: str, status: int = 400) -> None:
        """Queue one call answered with an AWS error."""
        self.stub.add_client_error("list_cluster_events", code, message, http_status_code=status)

    @staticmethod
    def failure_message(event: dict[str, Any]) -> str:
        """The EC2 reason :meth:`expect_reasons` gives an event (names its instance id)."""
        return f"InsufficientInstanceCapacity: no ml.g6.4xlarge capacity for {event['InstanceId']} in us-west-2c"

    def expect_reasons(self, events: list[dict[str, Any]]) -> None:
        """Queue one ``DescribeClusterEvent`` call per event, in order: its record with
        ``EventMetadata.Instance.FailureMessage`` (:meth:`failure_message`)."""
        for event in events:
            detail = {
                k: event[k]
                for k in ("EventId", "ClusterArn", "ClusterName", "InstanceGroupName", "InstanceId", "ResourceType")
            }
            detail |= {"EventTime": event["EventTime"], "Description": event["Description"]}
            detail["EventDetails"] = {"EventMetadata": {"Instance": {"FailureMessage": self.failure_message(event)}}}
            self.stub.add_response(
                "describe_cluster_event",
                {"EventDetails": detail},
                {"ClusterName": self.cluster_name, "EventId": event["EventId"]},
            )

    def expect_reason_error(self, code: str, message: str, status: int = 400) -> None:
        """Queue one ``DescribeClusterEvent`` call answered with an AWS error."""
        self.stub.add_client_error("describe_cluster_event", code, message, http_status_code=status)

    def errors(self, *indexes: int) -> list[dict[str, Any]]:
        """The events of these indexes (0 is the oldest) that are Error-level, in the order given."""
        by_id = {e["EventId"]: e for e in self.events}
        found = [by_id.get(make_event(i)["EventId"]) for i in indexes]
        return [e for e in found if e is not None and e["EventLevel"] == "Error"]


@contextmanager
def stubbed_sagemaker(runtime: Any) -> Iterator[Stubber]:
    """An active ``Stubber`` on ``runtime``'s SageMaker client of the API function's call budget (the client its
    requests use: ``clients.API_BUDGET``); every queued answer must be used."""
    from instantstart.aws.clients import API_BUDGET, using_budget

    with using_budget(API_BUDGET):
        sagemaker = runtime.client("sagemaker")
    with Stubber(sagemaker) as stub:
        yield stub
        stub.assert_no_pending_responses()
