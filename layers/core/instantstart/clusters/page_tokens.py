"""The API's own page tokens over SageMaker listings, and the exact page scan behind them.

SageMaker's ``NextToken`` is never handed out as it is. A listing route (HyperPod events, nodes,
operations) answers :func:`seal`'s token instead: URL-safe base64 of versioned JSON plus a checksum,
holding the listing the token belongs to (cluster tag, generation, filters) and where the next page
starts (:class:`Position`). :func:`open_token` refuses an edited, truncated or foreign token, and a
token of another listing, with a 400 naming ``nextToken``.

:func:`scan` fills one page from SageMaker pages while a filter is applied here (SageMaker's own filters
are coarser: no level for events, a substring of the group name for nodes): the position records
SageMaker's token of the page being read, how many of its items were read and the id of the last one,
so no item is skipped or repeated between pages even when the page shifted in between.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from instantstart.errors import InvalidRequest

TOKEN_VERSION = 2
_CHECKSUM_BYTES = 12
NOT_OUR_TOKEN = "nextToken is not a token returned by this API for this listing"
OTHER_LISTING = (
    "nextToken belongs to another listing (another clusterTag or filter, or a cluster since re-created); pass "
    "the same filters as for the first page, or omit nextToken"
)

Item = TypeVar("Item")


@dataclass(frozen=True)
class Position:
    """Where the next page of a SageMaker listing starts.

    Attributes:
        sagemaker_token: SageMaker's ``NextToken`` of the page to read (None: the first page).
        page_size: ``MaxResults`` that page is read with (the page is re-read identically), 1-100.
        consumed: items of that page already read.
        last_id: id of the last item read from that page (finds the place if the page shifted).
    """

    sagemaker_token: str | None
    page_size: int
    consumed: int = 0
    last_id: str | None = None


def _checksum(purpose: str, raw: bytes) -> bytes:
    return hashlib.sha256(f"instantstart-{purpose}:".encode() + raw).digest()[:_CHECKSUM_BYTES]


def seal(purpose: str, listing: Mapping[str, Any], position: Position) -> str:
    """The API's opaque ``nextToken``: ``listing`` (what the token is bound to) and ``position``, checksummed.

    Args:
        purpose: the kind of listing (``cluster-events``, ``cluster-nodes``, ...); part of the checksum, so a
            token of one kind is refused by another.
        listing: JSON-ready values the next request must repeat (tag, generation, filters).
        position: where the next page starts.
    """
    body = {"v": TOKEN_VERSION, "listing": dict(listing), "position": asdict(position)}
    raw = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw + _checksum(purpose, raw)).decode().rstrip("=")


def _unseal(purpose: str, token: str, max_page_size: int) -> tuple[dict[str, Any], Position]:
    try:
        blob = base64.urlsafe_b64decode((token + "=" * (-len(token) % 4)).encode())
        raw, checksum = blob[:-_CHECKSUM_BYTES], blob[-_CHECKSUM_BYTES:]
        if len(blob) <= _CHECKSUM_BYTES or _checksum(purpose, raw) != checksum:
            raise ValueError("checksum")
        data = json.loads(raw)
        if not isinstance(data, dict) or data.get("v") != TOKEN_VERSION or not isinstance(data.get("listing"), dict):
            raise ValueError("version")
        position = Position(**data["position"])
        if not (
            (position.sagemaker_token is None or isinstance(position.sagemaker_token, str))
            and isinstance(position.page_size, int)
            and 1 <= position.page_size <= max_page_size
            and isinstance(position.consumed, int)
            and position.consumed >= 0
        ):
            raise ValueError("fields")
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise InvalidRequest(NOT_OUR_TOKEN, details=[{"field": "nextToken"}]) from exc
    return data["listing"], position


def open_token(purpose: str, token: str, listing: Mapping[str, Any], *, max_page_size: int = 100) -> Position:
    """The position of a token from :func:`seal`, checked to belong to ``listing``.

    Raises:
        InvalidRequest: the token was edited, truncated, not issued by this API for ``purpose``, or issued for
            another listing (another tag, generation or filter); the detail names ``nextToken``.
    """
    bound, position = _unseal(purpose, token, max_page_size)
    if bound != dict(listing):
        raise InvalidRequest(OTHER_LISTING, details=[{"field": "nextToken"}])
    return position


Fetch = Callable[[str | None, int], tuple[list[Item], str | None]]
"""One SageMaker page: ``(token, size) -> (items, SageMaker's NextToken or None)``."""


def scan(
    fetch: Fetch[Item],
    start: Position,
    *,
    max_results: int,
    fresh_size: int,
    item_id: Callable[[Item], str],
    keep: Callable[[Item], bool] = lambda _: True,
    max_calls: int = 5,
) -> tuple[list[Item], Position | None]:
    """Up to ``max_results`` kept items from ``start``, and where the next page starts (None: the end).

    Reads at most ``max_calls`` SageMaker pages; past that the page is returned short with a position
    that continues the scan. Exceptions of ``fetch`` propagate.

    Args:
        fetch: reads one SageMaker page.
        start: where to start reading.
        max_results: most items to return.
        fresh_size: ``MaxResults`` of the SageMaker pages read after ``start``'s.
        item_id: an item's stable id (to find the place again in a page that shifted).
        keep: the filter applied here.
        max_calls: most SageMaker calls.
    """
    found: list[Item] = []
    token, size, skip, last_id = start.sagemaker_token, start.page_size, start.consumed, start.last_id
    for _ in range(max_calls):
        raw, following = fetch(token, size)
        ids = [item_id(item) for item in raw]
        first = ids.index(last_id) + 1 if last_id in ids else min(skip, len(raw))
        for index in range(first, len(raw)):
            if keep(raw[index]):
                found.append(raw[index])
            if len(found) == max_results:
                if index + 1 < len(raw):
                    return found, Position(token, size, index + 1, ids[index])
                return found, Position(following, fresh_size) if following else None
        if not following:
            return found, None
        token, size, skip, last_id = following, fresh_size, 0, None
    return found, Position(token, size)
