"""The HyperPod events of a cluster, read from SageMaker (``GET /clusters/{clusterTag}/events``).

SageMaker ``ListClusterEvents``
(https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ListClusterEvents.html) lists the events
of ``hp-cluster-<tag>`` newest first (``SortBy=EventTime``, ``SortOrder=Descending``), 1-100 per call,
filtered by instance group but not by level. This module filters by level itself and keeps pagination
exact: the API's ``nextToken`` records where the next page starts (SageMaker's token of the page being
read, how many of that page's events were already read, and the id of the last event returned), so no
event is skipped or repeated between pages. SageMaker's token is never handed out as it is: it is
wrapped in the API's own token, which is bound to the listing (cluster tag, generation, filters) and
carries a checksum, so an edited or foreign token is refused with a 400 naming ``nextToken``.

An Error-level event's summary ("Instance creation ... failed") is HyperPod's; the reason (EC2's words, e.g.
``InsufficientInstanceCapacity``) is only in SageMaker ``DescribeClusterEvent``. :func:`event_failure_message`
is the one reader of it (this listing, the ``verify`` stage, the instance-group and health-check steps). A page
reads it for at most :data:`MAX_DESCRIBE_CALLS` of its Error events within :data:`DESCRIBE_BUDGET_SECONDS`;
an event whose reason was not read is still listed, with ``failureMessage`` null and ``failureMessageNote``
saying why (a failed or throttled call never fails the page).

This is not :mod:`instantstart.clusters.events`, which publishes the control plane's own events.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import page_tokens, records
from instantstart.clusters.records import live_cluster
from instantstart.errors import InvalidRequest, UpstreamUnavailable
from instantstart.models.cluster_events import (
    EVENTS_MAX_PAGE_SIZE,
    ClusterEventLevel,
    ClusterEventList,
    ClusterEventView,
)
from instantstart.models.common import iso
from instantstart.runtime import Runtime

MAX_SAGEMAKER_CALLS = 5
"""``ListClusterEvents`` calls one API request may make while filling a filtered page (at most 500 events
scanned); past that the page is returned short, with a ``nextToken`` that continues the scan."""

MAX_DESCRIBE_CALLS = 20
"""``DescribeClusterEvent`` calls one page may make for the reasons of its Error-level events (the default page
size): the later Error events of a bigger page are listed with ``failureMessageNote`` instead."""

DESCRIBE_BUDGET_SECONDS = 8.0
"""Seconds one page may spend on ``DescribeClusterEvent`` calls (the API function has 30 s in all, and
``ListClusterEvents`` comes first); a call is not started once they are spent. A call already started keeps
botocore's retries (standard mode, up to 5 with backoff); after a throttled one the page makes no more."""

_THROTTLING = frozenset({"ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded"})
"""Error codes after which a page makes no more ``DescribeClusterEvent`` calls (botocore has already retried)."""

TOKEN_PURPOSE = "cluster-events"
"""Kind of the API's ``nextToken`` of this listing (:mod:`instantstart.clusters.page_tokens`)."""


def event_view(event: dict[str, Any]) -> ClusterEventView:
    """A SageMaker ``ClusterEventSummary`` in the API's camelCase, ``EventTime`` as ISO-8601 ``Z``."""
    when = event["EventTime"]
    return ClusterEventView(
        event_id=str(event["EventId"]),
        event_time=(iso(when) if isinstance(when, datetime) else None) or str(when),
        event_level=event.get("EventLevel"),
        description=event.get("Description"),
        instance_group_name=event.get("InstanceGroupName"),
        instance_id=event.get("InstanceId"),
        resource_type=str(event["ResourceType"]),
        operation_id=event.get("OperationId"),
    )


def event_failure_message(sm: Any, cluster_name: str, event_id: str) -> str | None:
    """The AWS failure message behind a cluster event (e.g. EC2's capacity message), verbatim, or None.

    ``ListClusterEvents`` gives HyperPod's summary; the reason is in ``DescribeClusterEvent``'s
    ``EventDetails.EventDetails.EventMetadata.<kind>.FailureMessage`` (kinds tried in order: Instance,
    InstanceGroupScaling, InstanceGroup, Cluster).
    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DescribeClusterEvent.html

    Args:
        sm: a boto3 SageMaker client.
        cluster_name: the HyperPod cluster's name (``hp-cluster-<tag>``).
        event_id: the event's ``EventId``.

    Raises:
        botocore.exceptions.ClientError: SageMaker refused the call (``ResourceNotFound``, throttling, ...).
        botocore.exceptions.BotoCoreError: the call did not reach SageMaker.
    """
    details = sm.describe_cluster_event(ClusterName=cluster_name, EventId=event_id).get("EventDetails", {})
    metadata = (details.get("EventDetails") or {}).get("EventMetadata") or {}
    for kind in ("Instance", "InstanceGroupScaling", "InstanceGroup", "Cluster"):
        message = (metadata.get(kind) or {}).get("FailureMessage")
        if message:
            return str(message)
    return None


def with_failure_messages(sm: Any, cluster_name: str, events: list[dict[str, Any]]) -> list[ClusterEventView]:
    """The views of ``events`` (``ClusterEventSummary`` dicts), each Error-level one with its ``failureMessage``.

    Calls ``DescribeClusterEvent`` (:func:`event_failure_message`) once per Error event, in page order, for at
    most :data:`MAX_DESCRIBE_CALLS` events and while :data:`DESCRIBE_BUDGET_SECONDS` are not spent; after a
    throttling error it makes no more calls. An Error event whose reason was not read has ``failureMessage``
    null and ``failureMessageNote`` saying why; an event AWS gives no reason for has both null. Raises nothing.
    """
    views: list[ClusterEventView] = []
    calls = 0
    started = time.monotonic()
    stopped: str | None = None
    for event in events:
        view = event_view(event)
        views.append(view)
        if view.event_level != "Error":
            continue
        if stopped is None and calls >= MAX_DESCRIBE_CALLS:
            stopped = (
                f"not read: a page reads the reasons of at most {MAX_DESCRIBE_CALLS} Error events "
                f"(DescribeClusterEvent); ask for fewer events (maxResults) to see it"
            )
        elif stopped is None and time.monotonic() - started >= DESCRIBE_BUDGET_SECONDS:
            stopped = (
                f"not read: this page's {DESCRIBE_BUDGET_SECONDS:g} s for DescribeClusterEvent were spent; "
                "ask for fewer events (maxResults) to see it"
            )
        if stopped is not None:
            view.failure_message_note = stopped
            continue
        calls += 1
        try:
            view.failure_message = event_failure_message(sm, cluster_name, view.event_id)
        except (ClientError, BotoCoreError) as exc:
            code = error_code(exc) or type(exc).__name__
            view.failure_message_note = f"not read: DescribeClusterEvent failed ({code}: {error_message(exc)})"
            if code in _THROTTLING:
                stopped = (
                    f"not read: DescribeClusterEvent was throttled ({code}) earlier on this page; list again later"
                )
    return views


class _NoHyperPodCluster(Exception):
    """SageMaker has no HyperPod cluster of that name (not created yet, or already deleted)."""


def _list_page(
    rt: Runtime, name: str, group: str | None, token: str | None, page_size: int
) -> tuple[list[dict[str, Any]], str | None]:
    """One ``ListClusterEvents`` page: its events and SageMaker's ``NextToken``.

    Raises:
        _NoHyperPodCluster: ``ResourceNotFound``.
        InvalidRequest: SageMaker refused the ``NextToken`` we sent (the API's token names it).
        UpstreamUnavailable: any other SageMaker error (code and message verbatim).
    """
    params: dict[str, Any] = {
        "ClusterName": name,
        "SortBy": "EventTime",
        "SortOrder": "Descending",
        "MaxResults": page_size,
    }
    if group:
        params["InstanceGroupName"] = group
    if token:
        params["NextToken"] = token
    try:
        out = rt.client("sagemaker").list_cluster_events(**params)
    except (ClientError, BotoCoreError) as exc:
        code = error_code(exc)
        if code == "ResourceNotFound":
            raise _NoHyperPodCluster(name) from exc
        if code == "ValidationException" and token:
            raise InvalidRequest(
                f"nextToken is no longer valid ({error_message(exc)}); list again without it",
                details=[{"field": "nextToken"}],
            ) from exc
        raise UpstreamUnavailable(
            f"SageMaker ListClusterEvents failed ({code or type(exc).__name__}: {error_message(exc)}); retry later"
        ) from exc
    return list(out.get("Events") or []), out.get("NextToken") or None


def list_cluster_events(
    rt: Runtime,
    tag: str,
    *,
    max_results: int,
    next_token: str | None = None,
    level: ClusterEventLevel | None = None,
    instance_group_name: str | None = None,
) -> ClusterEventList:
    """A page of the HyperPod events of cluster ``tag``, newest first.

    Args:
        rt: the runtime (SageMaker client, store).
        tag: cluster tag; the events are those of ``hp-cluster-<tag>``.
        max_results: most events on the page (1-100).
        next_token: the ``nextToken`` of the previous page of the same listing, or None.
        level: only events of this level (filtered here: SageMaker has no level filter).
        instance_group_name: only events of this instance group (SageMaker's own filter).

    Returns:
        The page; empty with no ``nextToken`` while the HyperPod cluster does not exist. With ``level``
        set a page may be short (even empty) with a ``nextToken`` when :data:`MAX_SAGEMAKER_CALLS` calls
        did not find ``max_results`` matching events. Its Error events carry the reason behind them
        (``DescribeClusterEvent``, bounded: :func:`with_failure_messages`).

    Raises:
        NotFound: ``ClusterNotFound``, no live cluster with this tag.
        InvalidRequest: ``next_token`` was edited, not issued by this API, or issued for another listing.
        UpstreamUnavailable: SageMaker failed (throttling after retries, access denied, ...).
    """
    cluster = live_cluster(rt, tag)
    name = records.hyperpod_name(rt, tag)
    wanted = level.value if level else None
    fresh_size = EVENTS_MAX_PAGE_SIZE if wanted else max_results
    listing = {"tag": tag, "generation": cluster.generation, "level": wanted, "group": instance_group_name}
    if next_token:
        start = page_tokens.open_token(TOKEN_PURPOSE, next_token, listing, max_page_size=EVENTS_MAX_PAGE_SIZE)
    else:
        start = page_tokens.Position(None, fresh_size)
    try:
        raw, following = page_tokens.scan(
            lambda token, size: _list_page(rt, name, instance_group_name, token, size),
            start,
            max_results=max_results,
            fresh_size=fresh_size,
            item_id=lambda event: str(event.get("EventId")),
            keep=lambda event: wanted is None or event.get("EventLevel") == wanted,
            max_calls=MAX_SAGEMAKER_CALLS,
        )
    except _NoHyperPodCluster:
        raw, following = [], None
    return ClusterEventList(
        cluster_tag=tag,
        hyper_pod_cluster_name=name,
        events=with_failure_messages(rt.client("sagemaker"), name, raw),
        next_token=page_tokens.seal(TOKEN_PURPOSE, listing, following) if following else None,
    )
