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

This is not :mod:`instantstart.clusters.events`, which publishes the control plane's own events.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.aws.clients import error_code, error_message
from instantstart.errors import InvalidRequest, NotFound, UpstreamUnavailable
from instantstart.models.cluster_events import (
    EVENTS_MAX_PAGE_SIZE,
    ClusterEventLevel,
    ClusterEventList,
    ClusterEventView,
)
from instantstart.models.common import ClusterStatus, iso
from instantstart.models.records import ClusterRecord
from instantstart.naming import hyperpod_cluster_name
from instantstart.runtime import Runtime

MAX_SAGEMAKER_CALLS = 5
"""``ListClusterEvents`` calls one API request may make while filling a filtered page (at most 500 events
scanned); past that the page is returned short, with a ``nextToken`` that continues the scan."""

TOKEN_VERSION = 1
_CHECKSUM_BYTES = 12
_NOT_OUR_TOKEN = "nextToken is not a token returned by this API for this listing"


@dataclass(frozen=True)
class _Cursor:
    """Where the next page starts; serialised into the API's ``nextToken``.

    Attributes:
        tag: cluster tag of the listing.
        generation: cluster generation of the listing (a re-created tag starts a new listing).
        level: level filter of the listing (None: every level).
        group: instance-group filter of the listing (None: every group).
        sagemaker_token: SageMaker's ``NextToken`` of the page to read (None: the first page).
        page_size: ``MaxResults`` that page is read with (the page is re-read identically).
        consumed: events of that page already read.
        last_event_id: id of the last event read from that page (finds the place if the page shifted).
    """

    tag: str
    generation: int
    level: str | None
    group: str | None
    sagemaker_token: str | None
    page_size: int
    consumed: int
    last_event_id: str | None


def _checksum(raw: bytes) -> bytes:
    return hashlib.sha256(b"instantstart-cluster-events:" + raw).digest()[:_CHECKSUM_BYTES]


def encode_cursor(cursor: _Cursor) -> str:
    """The API's opaque ``nextToken`` of ``cursor``: URL-safe base64 of ``v1`` JSON plus a checksum."""
    raw = json.dumps({"v": TOKEN_VERSION, **asdict(cursor)}, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw + _checksum(raw)).decode().rstrip("=")


def decode_cursor(token: str) -> _Cursor:
    """The cursor of a token from :func:`encode_cursor`.

    Raises:
        InvalidRequest: the token was edited, truncated or not issued by this API (names ``nextToken``).
    """
    try:
        blob = base64.urlsafe_b64decode((token + "=" * (-len(token) % 4)).encode())
        raw, checksum = blob[:-_CHECKSUM_BYTES], blob[-_CHECKSUM_BYTES:]
        if len(blob) <= _CHECKSUM_BYTES or _checksum(raw) != checksum:
            raise ValueError("checksum")
        data = json.loads(raw)
        if not isinstance(data, dict) or data.pop("v", None) != TOKEN_VERSION:
            raise ValueError("version")
        cursor = _Cursor(**data)
        if not (
            isinstance(cursor.tag, str)
            and isinstance(cursor.generation, int)
            and isinstance(cursor.page_size, int)
            and 1 <= cursor.page_size <= EVENTS_MAX_PAGE_SIZE
            and isinstance(cursor.consumed, int)
            and cursor.consumed >= 0
        ):
            raise ValueError("fields")
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise InvalidRequest(_NOT_OUR_TOKEN, details=[{"field": "nextToken"}]) from exc
    return cursor


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


def _live_cluster(rt: Runtime, tag: str) -> ClusterRecord:
    record = rt.store.get_cluster(tag)
    if record is None or record.status is ClusterStatus.DELETED:
        raise NotFound(f"cluster '{tag}' does not exist", code="ClusterNotFound", details=[{"field": "clusterTag"}])
    return record


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
        did not find ``max_results`` matching events.

    Raises:
        NotFound: ``ClusterNotFound``, no live cluster with this tag.
        InvalidRequest: ``next_token`` was edited, not issued by this API, or issued for another listing.
        UpstreamUnavailable: SageMaker failed (throttling after retries, access denied, ...).
    """
    cluster = _live_cluster(rt, tag)
    name = hyperpod_cluster_name(tag)
    wanted = level.value if level else None
    fresh_size = EVENTS_MAX_PAGE_SIZE if wanted else max_results
    if next_token:
        cursor = decode_cursor(next_token)
        if (cursor.tag, cursor.generation, cursor.level, cursor.group) != (
            tag,
            cluster.generation,
            wanted,
            instance_group_name,
        ):
            raise InvalidRequest(
                "nextToken belongs to another listing (another clusterTag, level or instanceGroupName, or a "
                "cluster since re-created); pass the same filters as for the first page, or omit nextToken",
                details=[{"field": "nextToken"}],
            )
    else:
        cursor = _Cursor(tag, cluster.generation, wanted, instance_group_name, None, fresh_size, 0, None)

    def at(token: str | None, size: int, consumed: int = 0, last_id: str | None = None) -> _Cursor:
        return replace(cursor, sagemaker_token=token, page_size=size, consumed=consumed, last_event_id=last_id)

    def page(events: list[ClusterEventView], following: _Cursor | None) -> ClusterEventList:
        return ClusterEventList(
            cluster_tag=tag,
            hyper_pod_cluster_name=name,
            events=events,
            next_token=encode_cursor(following) if following else None,
        )

    found: list[ClusterEventView] = []
    token, size, skip, last_id = cursor.sagemaker_token, cursor.page_size, cursor.consumed, cursor.last_event_id
    for _ in range(MAX_SAGEMAKER_CALLS):
        try:
            raw, following_token = _list_page(rt, name, instance_group_name, token, size)
        except _NoHyperPodCluster:
            return page([], None)
        ids = [str(e.get("EventId")) for e in raw]
        start = ids.index(last_id) + 1 if last_id in ids else min(skip, len(raw))
        for index in range(start, len(raw)):
            event = raw[index]
            if wanted is None or event.get("EventLevel") == wanted:
                found.append(event_view(event))
            if len(found) == max_results:
                if index + 1 < len(raw):
                    return page(found, at(token, size, index + 1, ids[index]))
                return page(found, at(following_token, fresh_size) if following_token else None)
        if not following_token:
            return page(found, None)
        token, size, skip, last_id = following_token, fresh_size, 0, None
    return page(found, at(token, size))
