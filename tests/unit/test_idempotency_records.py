"""``Idempotency-Key`` records (``api_idempotency.run_idempotent``): a retry while the first request's invocation
still has time answers 409 ``IdempotencyKeyInProgress`` with the seconds left; once that time passed without an
answer, it answers the operation the first request wrote (found by the id it reserved), or runs anew under the same
id when it wrote none. Time is the core's clock (``set_clock``), never the wall clock."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from instantstart.clusters.executions import new_operation_id
from instantstart.errors import Conflict
from instantstart.models.common import set_clock

ROOT = Path(__file__).resolve().parents[2]
T0 = 1_800_000_000.0


class _Context:
    """A Lambda context with ``millis`` left before the function's Timeout."""

    def __init__(self, millis: int) -> None:
        self.millis = millis

    def get_remaining_time_in_millis(self) -> int:
        return self.millis


@pytest.fixture
def clock() -> Iterator[list[float]]:
    now = [T0]
    set_clock(lambda: now[0])
    yield now
    set_clock(None)


@pytest.fixture
def idem(table: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "api"))
    import api_idempotency

    idempotency = api_idempotency.Idempotency(table)
    idempotency.bind(_Context(30_000))  # type: ignore[arg-type]
    return idempotency


def _run(idem: Any, call: Any, *, written: dict[str, dict[str, Any]] | None = None, body: Any = None) -> Any:
    run_idempotent = sys.modules["api_idempotency"].run_idempotent
    return run_idempotent(
        idem,
        route="POST /clusters",
        key="key-1",
        body=body or {"clusterTag": "a"},
        call=call,
        recover=(written if written is not None else {}).get,
    )


def _dies(idem: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # The invocation is killed (Timeout, crash): nothing after the kill runs, so its claim is not released.
    monkeypatch.setattr(idem.store, "release_idempotency", lambda *args: None)


def test_given_a_request_still_running_when_its_key_is_sent_again_then_409_in_progress_with_the_seconds_left(
    idem: Any, clock: list[float]
) -> None:
    refused: list[Conflict] = []

    def first() -> dict[str, Any]:
        clock[0] += 12  # the first request has run 12 s when the retry arrives
        with pytest.raises(Conflict) as retry:
            _run(idem, lambda: {"operationId": "never"})
        refused.append(retry.value)
        return {"operationId": new_operation_id()}

    answer = _run(idem, first)
    assert refused[0].code == "IdempotencyKeyInProgress"
    assert refused[0].retry_after_seconds == 18, "the first invocation's 30 s Timeout less the 12 s it ran"
    assert _run(idem, lambda: {"operationId": "other"}) == answer, "completed: the stored answer"


def test_given_the_first_invocation_died_after_writing_its_operation_when_retried_then_that_operation(
    idem: Any, clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    written: dict[str, dict[str, Any]] = {}

    def first() -> dict[str, Any]:
        operation_id = new_operation_id()  # the reserved id
        written[operation_id] = {"operationId": operation_id, "status": "PENDING"}
        raise TimeoutError("killed at the Timeout")

    _dies(idem, monkeypatch)
    with pytest.raises(TimeoutError):
        _run(idem, first, written=written)
    monkeypatch.undo()

    clock[0] += 29
    with pytest.raises(Conflict) as early:
        _run(idem, lambda: {}, written=written)
    assert (early.value.code, early.value.retry_after_seconds) == ("IdempotencyKeyInProgress", 1)

    clock[0] += 1
    answer = _run(
        idem, lambda: pytest.fail("the first request's operation exists: nothing runs again"), written=written
    )
    assert answer == next(iter(written.values()))
    assert _run(idem, lambda: {}, written={}) == answer, "stored: later repeats replay it"


def test_given_the_first_invocation_died_before_writing_when_retried_then_it_runs_under_the_reserved_id(
    idem: Any, clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    reserved: list[str] = []

    def first() -> dict[str, Any]:
        reserved.append(new_operation_id())
        raise TimeoutError("killed before any write")

    _dies(idem, monkeypatch)
    with pytest.raises(TimeoutError):
        _run(idem, first)
    monkeypatch.undo()
    clock[0] += 31
    answer = _run(idem, lambda: {"operationId": new_operation_id()})
    assert answer == {"operationId": reserved[0]}
    assert new_operation_id() != reserved[0], "only the request's first id is the reserved one"


def test_given_a_twin_run_wrote_the_reserved_operation_when_this_run_is_refused_then_it_answers_that_operation(
    idem: Any, clock: list[float], monkeypatch: pytest.MonkeyPatch
) -> None:
    written: dict[str, dict[str, Any]] = {}

    def refused_by_the_twin() -> dict[str, Any]:
        operation_id = new_operation_id()
        written[operation_id] = {"operationId": operation_id}  # the twin's write, under the same reserved id
        raise Conflict("cluster a exists", code="ClusterAlreadyExists")

    assert _run(idem, refused_by_the_twin, written=written) == next(iter(written.values()))


def test_given_a_failed_request_when_retried_then_it_runs_anew_and_another_body_is_refused(
    idem: Any, clock: list[float]
) -> None:
    def fails() -> dict[str, Any]:
        raise Conflict("cluster a exists", code="ClusterAlreadyExists")

    with pytest.raises(Conflict):
        _run(idem, fails)
    assert _run(idem, lambda: {"operationId": "op-2"}) == {"operationId": "op-2"}
    with pytest.raises(Conflict) as reused:
        _run(idem, lambda: {}, body={"clusterTag": "b"})
    assert reused.value.code == "IdempotencyKeyReused"


def test_given_the_in_progress_refusal_when_answered_then_409_in_our_shape_with_retry_after(
    idem: Any, clock: list[float]
) -> None:
    import api_errors

    answers: list[Any] = []

    def first() -> dict[str, Any]:
        clock[0] += 5
        with pytest.raises(Conflict) as retry:
            _run(idem, lambda: {})
        answers.append(api_errors.from_domain_error(retry.value))
        return {"operationId": new_operation_id()}

    _run(idem, first)
    answer = answers[0]
    assert (answer.status_code, answer.headers["Retry-After"]) == (409, "25")
    assert '"code": "IdempotencyKeyInProgress"' in answer.body
