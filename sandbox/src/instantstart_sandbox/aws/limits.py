"""AWS hard limits the sandbox enforces where moto does not, answered with each service's own error.

:func:`install` (called by :class:`instantstart_sandbox.aws.server.AwsSandboxServer` at start) patches moto:
Lambda (:mod:`instantstart_sandbox.aws.lambda_limits`), Step Functions (:mod:`instantstart_sandbox.aws.sfn_limits`),
and here:

* EventBridge PutEvents: the entries' total size, counted as EventBridge documents it (``Time`` 14 bytes when given,
  ``Source``, ``DetailType``, ``Detail`` and each of ``Resources`` by their UTF-8 bytes), over 256 KB (262,144
  bytes) is ``ValidationException`` "Total size of the entries in the request is over the limit." for the whole
  request (EventBridge raised the quota to 1 MB in most Regions in January 2026; the sandbox keeps the 256 KB that
  other Regions still have). More than 10 entries is moto's own ``ValidationException``;
* DynamoDB TransactWriteItems: the items' aggregate size (a Put's item, an Update's, Delete's or ConditionCheck's key,
  and every action's expression attribute values, by DynamoDB's item size rules) over 4 MB is ``ValidationException``
  "Transaction request cannot be larger than 4 MB". moto checks the 100 actions and each item's 400 KB itself;
* DynamoDB's writes are atomic (:mod:`instantstart_sandbox.aws.dynamodb_atomic`: moto's check-then-write is
  serialized);
* the HTTP API's integration timeout (:func:`call_integration`): API Gateway answers 503 after 30 seconds while the
  function keeps running.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from instantstart_sandbox.aws import dynamodb_atomic, lambda_limits, sfn_limits
from instantstart_sandbox.clock import SimClock

T = TypeVar("T")

MAX_EVENT_ENTRIES_BYTES = 262_144
"""EventBridge's PutEvents quota on the entries of one request (256 KB)."""

MAX_TRANSACTION_BYTES = 4 * 1024 * 1024
"""DynamoDB's quota on the aggregate size of a transaction's items (4 MB)."""

INTEGRATION_TIMEOUT_SECONDS = 30.0
"""API Gateway HTTP APIs' integration timeout (30 s, the maximum)."""

_clock: SimClock | None = None
_install_lock = threading.Lock()


def install(clock: SimClock | None = None) -> None:
    """Patch moto with every limit check (idempotent); ``clock`` is the sandbox's simulated clock the integration
    timeout also waits on (the last one given is kept)."""
    global _clock
    with _install_lock:
        if clock is not None:
            _clock = clock
        lambda_limits.install()
        sfn_limits.install()
        _put_events_is_limited()
        _transactions_are_limited()
        dynamodb_atomic.install()


class IntegrationTimeout(Exception):
    """The integration ran past API Gateway's timeout (the caller answers 503; the integration keeps running)."""


def call_integration(invoke: Callable[[], T], timeout: float | None = None) -> T:
    """``invoke()`` (the Lambda ``Invoke`` of an HTTP API route) as API Gateway runs an integration: its result, or
    :class:`IntegrationTimeout` once it ran past ``timeout`` (:data:`INTEGRATION_TIMEOUT_SECONDS` by default) in wall
    time and in the sandbox's simulated time both, so that neither a loaded machine (wall) nor the clock's scale
    (simulated) alone times a request out. The invocation goes on in its own thread after a timeout.

    Raises:
        IntegrationTimeout: ``invoke`` did not return in time.
        Exception: what ``invoke`` raised.
    """
    limit = INTEGRATION_TIMEOUT_SECONDS if timeout is None else timeout
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["result"] = invoke()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            outcome["error"] = exc
        finally:
            done.set()

    clock = _clock
    wall0 = time.monotonic()
    sim0 = clock.now() if clock is not None else wall0
    worker = threading.Thread(target=contextvars.copy_context().run, args=(run,), name="http-api-integration")
    worker.daemon = True
    worker.start()
    while not done.wait(0.05):
        wall = time.monotonic() - wall0
        sim = (clock.now() - sim0) if clock is not None else wall
        if wall >= limit and sim >= limit:
            raise IntegrationTimeout(f"integration ran past {limit:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]  # type: ignore[no-any-return]


def event_entry_bytes(entry: dict[str, Any]) -> int:
    """The size EventBridge counts for one PutEvents entry (bytes)."""
    size = 14 if entry.get("Time") is not None else 0
    for member in ("Source", "DetailType", "Detail"):
        if entry.get(member) is not None:
            size += len(str(entry[member]).encode("utf-8"))
    for resource in entry.get("Resources") or []:
        if resource is not None:
            size += len(str(resource).encode("utf-8"))
    return size


def _put_events_is_limited() -> None:
    from moto.events.exceptions import ValidationException
    from moto.events.responses import EventsHandler

    handler: Any = EventsHandler
    if getattr(handler, "_instantstart_limits", False):
        return
    original = handler.put_events

    def put_events(self: Any) -> Any:
        entries = self._get_param("Entries") or []
        if len(entries) <= 10 and sum(event_entry_bytes(e) for e in entries) > MAX_EVENT_ENTRIES_BYTES:
            raise ValidationException("Total size of the entries in the request is over the limit.")
        return original(self)

    handler.put_events = put_events
    handler._instantstart_limits = True


def _attributes_bytes(attributes: Any) -> int:
    """DynamoDB's size of a map of attribute names to values (``{"name": {"S": "..."}}``), as moto counts it."""
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.utilities import bytesize

    if not isinstance(attributes, dict):
        return 0
    return sum(bytesize(name) + DynamoType(value).size() for name, value in attributes.items())


def transaction_bytes(transact_items: list[dict[str, Any]]) -> int:
    """The aggregate size the sandbox counts for a TransactWriteItems request (bytes): each Put's item, each other
    action's key, and every action's expression attribute values."""
    total = 0
    for entry in transact_items:
        for action, op in entry.items():
            if not isinstance(op, dict):
                continue
            if action == "Put":
                total += _attributes_bytes(op.get("Item"))
            else:
                total += _attributes_bytes(op.get("Key"))
            total += _attributes_bytes(op.get("ExpressionAttributeValues"))
    return total


def _transactions_are_limited() -> None:
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.responses import DynamoHandler

    handler: Any = DynamoHandler
    if getattr(handler, "_instantstart_limits", False):
        return
    original = handler.transact_write_items

    def transact_write_items(self: Any) -> Any:
        items = self.body.get("TransactItems") or []
        if len(items) <= 100 and transaction_bytes(items) > MAX_TRANSACTION_BYTES:
            raise MockValidationException("Transaction request cannot be larger than 4 MB")
        return original(self)

    handler.transact_write_items = transact_write_items
    handler._instantstart_limits = True
