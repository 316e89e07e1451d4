"""``Idempotency-Key`` handling: one record per key in the single table (:mod:`instantstart.store.idempotency`).

The key alone identifies the request; a hash of the route and body is validated, so the same key with another
body, or on another route or cluster, is refused (409 ``IdempotencyKeyReused``) instead of running a new request.
Without a key the call runs as is; concurrent creates of one tag are still serialised by the conditional writes in
the core library.

Before it runs, a request with a key claims the key's record (IN_PROGRESS until its invocation's end: now plus the
Lambda context's remaining time, i.e. the function's ``Timeout`` in ``template.yaml``) and reserves in it the id of
the operation it may start (:func:`instantstart.clusters.executions.reserving_operation_id`). A repeat then answers:

* the stored answer, once the first request completed;
* 409 ``IdempotencyKeyInProgress`` with ``Retry-After`` (seconds until the first invocation's end) while it runs;
* once that time passed without an answer (the invocation timed out or crashed): the first request's operation when
  it was written (202 with it, found by the reserved id), else the request runs anew under the same reserved id.

A request that fails (an error answer) drops its record: a retry runs anew. A run refused with 409 (the cluster
exists, an operation runs) whose reserved operation exists was beaten by a twin run of the same keyed request (one
that took the claim over after its time passed): it answers that operation, never the 409.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from instantstart.errors import Conflict
from instantstart.models.common import utcnow

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.typing import LambdaContext

    from instantstart.store.idempotency import IdempotencyRecord
    from instantstart.store.table import Store

KEEP_SECONDS = 24 * 3600
"""How long a key's record (and its answer) is kept: a repeat within a day replays it."""

DEFAULT_TIMEOUT_SECONDS = 28
"""The API function's ``Timeout`` (``template.yaml``, ``ApiFunction``): the in-progress time without a Lambda
context."""


class Idempotency:
    """The idempotency records of one API function (built once per container, its store on first use); :meth:`bind`
    gives it each invocation's Lambda context, whose remaining time bounds a claim."""

    def __init__(self, table_name: str) -> None:
        self.table_name = table_name
        self._context: LambdaContext | None = None

    @cached_property
    def store(self) -> Store:
        """The records' store: the single table (boto3 is imported by the first request with a key)."""
        from instantstart.aws.clients import client
        from instantstart.store.table import Store

        return Store(client("dynamodb"), self.table_name)

    def bind(self, context: LambdaContext | None) -> None:
        """Register the invocation's Lambda context (its remaining time is how long a claim lasts)."""
        if context is not None:
            self._context = context

    def seconds_left(self) -> int:
        """Whole seconds until the current invocation's ``Timeout`` (rounded up), at most the function's."""
        if self._context is None:
            return DEFAULT_TIMEOUT_SECONDS
        return max(1, math.ceil(self._context.get_remaining_time_in_millis() / 1000))


def _sha256(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def _reused() -> Conflict:
    return Conflict(
        "Idempotency-Key was already used for a different request (another body, route or cluster); use a new key",
        code="IdempotencyKeyReused",
        details=[{"field": "Idempotency-Key"}],
    )


def _in_progress(seconds: int) -> Conflict:
    error = Conflict(
        f"a request with this Idempotency-Key is still in progress; retry after {seconds} s",
        code="IdempotencyKeyInProgress",
        details=[{"field": "Idempotency-Key"}],
    )
    error.retry_after_seconds = max(1, seconds)
    return error


def run_idempotent(
    idempotency: Idempotency,
    *,
    route: str,
    key: str | None,
    body: Any,
    call: Callable[[], dict[str, Any]],
    recover: Callable[[str], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """Run ``call`` once per ``Idempotency-Key``; replay its stored answer for a repeated request.

    ``recover(operation_id)`` is the answer of the first request when its invocation died after it wrote the operation
    it reserved (None: it wrote none); without it such a request runs anew. Calls DynamoDB ``GetItem``, ``PutItem``,
    ``UpdateItem`` (the answer) and ``DeleteItem`` (a failed request's claim).

    Raises:
        Conflict: ``IdempotencyKeyReused`` (the key was used with another body, route or cluster);
            ``IdempotencyKeyInProgress`` (the first request with it is still running; ``retry_after_seconds``).
    """
    if not key:
        return call()
    from instantstart.clusters.executions import new_operation_id, reserving_operation_id
    from instantstart.store.errors import ConditionFailed

    store = idempotency.store
    key_hash, payload_hash = _sha256(key), _sha256([route, body])
    clock = utcnow().timestamp()
    now = int(clock)
    record = store.get_idempotency(key_hash)
    taking_over: IdempotencyRecord | None = None
    if record is not None and record.expiration >= now:
        if record.payload_hash != payload_hash:
            raise _reused()
        if record.response is not None:
            return record.response
        if record.in_progress_until > now:
            raise _in_progress(record.in_progress_until - now)
        # The first request's invocation ended without an answer (timed out, crashed): did it write its operation?
        recovered = recover(record.operation_id) if recover is not None else None
        if recovered is not None:
            store.complete_idempotency(key_hash, record.operation_id, recovered)
            return recovered
        taking_over = record
    operation_id = taking_over.operation_id if taking_over is not None else new_operation_id()
    seconds = idempotency.seconds_left()
    try:
        store.claim_idempotency(
            key_hash,
            payload_hash=payload_hash,
            operation_id=operation_id,
            now=now,
            in_progress_until=math.ceil(clock) + seconds,
            expiration=now + KEEP_SECONDS,
            taking_over=taking_over,
        )
    except ConditionFailed:
        raise _in_progress(seconds) from None
    try:
        with reserving_operation_id(operation_id):
            answer = call()
    except Conflict:
        # A twin run of this keyed request (one that took over a claim whose time passed while its first run went
        # on, e.g. a scaled-out retry) wrote the reserved operation first: this run's refusal is that operation.
        twin = recover(operation_id) if recover is not None else None
        if twin is None:
            store.release_idempotency(key_hash, operation_id)
            raise
        answer = twin
    except BaseException:
        store.release_idempotency(key_hash, operation_id)
        raise
    store.complete_idempotency(key_hash, operation_id, answer)
    return answer
