"""``clusters/drift.py::record_drift`` on the cluster record (moto's DynamoDB): ``since`` kept, cleared items gone,
one event per new drift, a concurrent check merged rather than overwritten, and the view reads the record."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart.clusters import drift, events, views
from instantstart.models.drift import DriftItem
from instantstart.runtime import Runtime

T0, T1, T2 = "2026-12-01T10:00:00Z", "2026-12-01T10:10:00Z", "2026-12-01T10:20:00Z"


def _item(name: str, since: str, observed: str | None = None) -> DriftItem:
    return DriftItem(
        resource_type="Addon",
        name=name,
        field="exists",
        expected="ACTIVE",
        observed=observed,
        since=since,
        owned=True,
        repairable=True,
        message=f"add-on {name} was deleted",
    )


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    sent: list[Any] = []
    monkeypatch.setattr(events, "publish", lambda rt, detail: sent.append(detail))
    return sent


def _cluster(rt: Runtime) -> Any:
    found = rt.store.get_cluster("demo")
    assert found is not None
    return found


def test_given_a_new_item_then_stored_and_one_event_then_the_same_item_keeps_its_since_and_sends_none(
    demo: Runtime, published: list[Any]
) -> None:
    updated_at = _cluster(demo).updated_at
    new = drift.record_drift(demo, _cluster(demo), [_item("metrics-server", T0)], now=T0)

    assert [i.name for i in new] == ["metrics-server"]
    assert len(published) == 1 and published[0].new_items[0]["name"] == "metrics-server"
    assert published[0].drift_count == 1 and published[0].repairable is True
    stored = _cluster(demo)
    assert (stored.drift_checked_at, [i.since for i in stored.drift]) == (T0, [T0])
    assert stored.updated_at == updated_at, "a check observes; it does not change the cluster"

    again = drift.record_drift(demo, _cluster(demo), [_item("metrics-server", T1), _item("cert-manager", T1)], now=T1)

    assert [i.name for i in again] == ["cert-manager"]
    assert {i.name: i.since for i in _cluster(demo).drift} == {"metrics-server": T0, "cert-manager": T1}
    assert len(published) == 2 and [i["name"] for i in published[1].new_items] == ["cert-manager"]

    assert drift.record_drift(demo, _cluster(demo), [], now=T2) == []
    cleared = _cluster(demo)
    assert cleared.drift == [] and cleared.drift_checked_at == T2 and len(published) == 2


def test_given_two_checks_from_the_same_read_then_the_later_merges_and_the_item_is_new_once(
    demo: Runtime, published: list[Any]
) -> None:
    read = _cluster(demo)  # both checks read the record before either stored
    drift.record_drift(demo, read, [_item("metrics-server", T0)], now=T0)
    second = drift.record_drift(demo, read, [_item("metrics-server", T1)], now=T1)

    assert second == [] and len(published) == 1
    assert [(i.name, i.since) for i in _cluster(demo).drift] == [("metrics-server", T0)]


def test_the_cluster_view_shows_the_recorded_drift_and_never_checked_before(demo: Runtime) -> None:
    assert views.cluster_view(_cluster(demo), []).drift.model_dump(by_alias=True) == {
        "checkedAt": None,
        "items": [],
        "moreItems": 0,
    }
    drift.record_drift(demo, _cluster(demo), [_item("metrics-server", T0)], now=T0)
    view = views.cluster_view(_cluster(demo), []).drift
    assert view.checked_at == T0 and [i.name for i in view.items] == ["metrics-server"]


def test_given_a_cluster_being_created_then_observe_drift_checks_nothing(demo: Runtime, published: list[Any]) -> None:
    assert drift.observe_drift(demo, _cluster(demo), now=T0) == []
    assert _cluster(demo).drift_checked_at is None and published == []


def test_given_a_later_check_stored_meanwhile_then_an_older_check_is_dropped(
    demo: Runtime, published: list[Any]
) -> None:
    read = _cluster(demo)
    drift.record_drift(demo, read, [], now=T1)  # e.g. a repair that saw the add-on back, after the read below
    stale = drift.record_drift(demo, read, [_item("metrics-server", T0)], now=T0)

    assert stale == [] and published == []
    assert _cluster(demo).drift == [] and _cluster(demo).drift_checked_at == T1
