"""Calls by operation id: the OpenAPI document the client ships, ``instantstart_client.operations`` and
``InstantStartClient.call_operation`` (routing of path, query, body and ``Idempotency-Key``; refusals; errors).

The requests go to a recording transport: what is checked is what would go on the wire.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.session
import httpx2
import pytest

from instantstart_client.api import (
    ApiError,
    InstantStartClient,
    UnknownOperationError,
    clusters,
    governance,
    groups,
    inference,
    nodes,
    operation,
    operations,
    training,
)
from instantstart_client.operations import document, quote_segment

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "api_schema" / "openapi.json"
SHIPPED = ROOT / "client" / "instantstart_client" / "openapi.json"


class Recorder(httpx2.BaseTransport):
    """Answers every request with the next scripted answer (default ``200 {"ok": true}``) and records it."""

    def __init__(self, *answers: httpx2.Response) -> None:
        self.answers = list(answers)
        self.seen: list[httpx2.Request] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.read()
        self.seen.append(request)
        return self.answers.pop(0) if self.answers else httpx2.Response(200, json={"ok": True})

    @property
    def last(self) -> httpx2.Request:
        assert self.seen, "no request was sent"
        return self.seen[-1]


@pytest.fixture
def wire(aws_env: None, no_network: None) -> Iterator[tuple[InstantStartClient, Recorder]]:
    session = botocore.session.Session()
    session.set_credentials("AKIDEXAMPLE", "secret")
    recorder = Recorder()
    with InstantStartClient(
        "https://abc123.execute-api.us-west-2.amazonaws.com",
        session=session,
        transport=recorder,
        sleep=lambda seconds: None,
    ) as client:
        yield client, recorder


def sent_path(request: httpx2.Request) -> str:
    return request.url.raw_path.decode()


# -- the shipped document ---------------------------------------------------------------------------------------


def test_the_client_package_ships_the_published_document_unchanged() -> None:
    assert SHIPPED.read_text() == PUBLISHED.read_text(), "the copies drifted: run make openapi"
    assert dict(document()) == json.loads(PUBLISHED.read_text())


def test_every_operation_of_the_document_is_known_by_id_with_its_method_and_path() -> None:
    published = json.loads(PUBLISHED.read_text())
    expected = {
        op["operationId"]: (method.upper(), path)
        for path, item in published["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }

    assert {op_id: (op.method, op.path) for op_id, op in operations().items()} == expected


def test_an_operation_describes_its_parameters_body_and_idempotency_key() -> None:
    events = operation("ListClusterEvents")
    create = operation("CreateCluster")
    scheduler = operation("PutSchedulerConfig")
    job = operation("GetTrainingJob")

    assert events.path_parameters == ("clusterTag",)
    assert {q.name: (q.required, q.default) for q in events.query_parameters} == {
        "maxResults": (False, 20),
        "nextToken": (False, None),
        "level": (False, None),
        "instanceGroupName": (False, None),
    }
    assert (events.takes_body, events.accepts_idempotency_key) == (False, False)
    assert (create.takes_body, create.accepts_idempotency_key, create.path_parameters) == (True, True, ())
    assert (scheduler.takes_body, scheduler.accepts_idempotency_key) == (True, False)
    assert job.path_parameters == ("clusterTag", "name")
    assert [(q.name, q.default) for q in job.query_parameters] == [("namespace", "default")]
    assert job.raw["operationId"] == "GetTrainingJob"
    assert operation("GetOperation").extension["mcp"]["tool"] == "operation_get"


def test_an_unknown_operation_id_is_a_key_error_listing_the_known_ones() -> None:
    with pytest.raises(KeyError) as caught:
        operation("GetClusterz")

    assert isinstance(caught.value, UnknownOperationError)
    assert "unknown operation 'GetClusterz'" in str(caught.value)
    assert "GetCluster," in str(caught.value)


@pytest.mark.parametrize(
    ("value", "segment"),
    [("demo", "demo"), ("a/b", "a%2Fb"), ("..", "%2E%2E"), (".", "%2E"), ("a..b", "a..b"), ("x?y#z", "x%3Fy%23z")],
)
def test_a_path_value_is_quoted_as_exactly_one_segment(value: str, segment: str) -> None:
    assert quote_segment(value) == segment


# -- call_operation on the wire ----------------------------------------------------------------------------------


def test_path_and_query_arguments_route_by_their_openapi_names(wire: tuple[InstantStartClient, Recorder]) -> None:
    client, recorder = wire

    answer = client.call_operation(
        "ListClusterEvents", {"clusterTag": "demo", "maxResults": 20, "level": "Error", "nextToken": None}
    )

    assert answer == {"ok": True}
    assert recorder.last.method == "GET"
    assert sent_path(recorder.last) == "/clusters/demo/events?level=Error&maxResults=20"
    assert "idempotency-key" not in recorder.last.headers
    assert recorder.last.content == b""


@pytest.mark.parametrize(
    ("tag", "path"),
    [("../operations/x", "/clusters/..%2Foperations%2Fx/stages"), ("..", "/clusters/%2E%2E/stages")],
)
def test_a_path_value_with_slashes_or_dots_cannot_change_the_route(
    wire: tuple[InstantStartClient, Recorder], tag: str, path: str
) -> None:
    client, recorder = wire

    client.call_operation("ListStages", {"clusterTag": tag})

    assert sent_path(recorder.last) == path


def test_the_body_is_sent_as_json_as_given_with_the_callers_idempotency_key(
    wire: tuple[InstantStartClient, Recorder],
) -> None:
    client, recorder = wire
    body = {"instanceCount": 0, "labels": None}

    client.call_operation(
        "UpdateInstanceGroup", {"clusterTag": "demo", "instanceGroupName": "accel"}, body=body, idempotency_key="k-1"
    )

    assert (recorder.last.method, sent_path(recorder.last)) == ("PATCH", "/clusters/demo/instance-groups/accel")
    assert json.loads(recorder.last.content) == {"instanceCount": 0, "labels": None}
    assert recorder.last.headers["content-type"] == "application/json"
    assert recorder.last.headers["idempotency-key"] == "k-1"


def test_an_operation_that_declares_the_key_gets_one_per_call_when_none_is_given(
    wire: tuple[InstantStartClient, Recorder],
) -> None:
    client, recorder = wire

    client.call_operation("DeleteCluster", {"clusterTag": "demo"})
    client.call_operation("DeleteCluster", {"clusterTag": "demo"})

    first, second = (r.headers["idempotency-key"] for r in recorder.seen)
    assert first and second and first != second


def test_an_operation_that_does_not_declare_the_key_never_sends_it(wire: tuple[InstantStartClient, Recorder]) -> None:
    client, recorder = wire

    client.call_operation(
        "PutSchedulerConfig", {"clusterTag": "demo"}, body={"schedulerConfig": {}}, idempotency_key="k"
    )

    assert (recorder.last.method, sent_path(recorder.last)) == ("PUT", "/clusters/demo/scheduler-config")
    assert "idempotency-key" not in recorder.last.headers


def test_an_undeclared_argument_is_refused_naming_it_and_the_allowed_names(
    wire: tuple[InstantStartClient, Recorder],
) -> None:
    client, recorder = wire

    with pytest.raises(ValueError, match="'maxResult'") as caught:
        client.call_operation("ListClusters", {"maxResult": 5})

    assert "maxResults, nextToken" in str(caught.value)
    assert recorder.seen == []


@pytest.mark.parametrize("arguments", [None, {"clusterTag": None}, {"clusterTag": ""}])
def test_a_missing_or_empty_path_parameter_is_refused(
    wire: tuple[InstantStartClient, Recorder], arguments: dict[str, Any] | None
) -> None:
    client, recorder = wire

    with pytest.raises(ValueError, match="GetCluster"):
        client.call_operation("GetCluster", arguments)

    assert recorder.seen == []


def test_a_body_for_an_operation_without_one_is_refused(wire: tuple[InstantStartClient, Recorder]) -> None:
    client, recorder = wire

    with pytest.raises(ValueError, match="takes no request body"):
        client.call_operation("GetCluster", {"clusterTag": "demo"}, body={"x": 1})

    assert recorder.seen == []


def test_an_unknown_operation_sends_nothing(wire: tuple[InstantStartClient, Recorder]) -> None:
    client, recorder = wire

    with pytest.raises(KeyError, match="NoSuchOperation"):
        client.call_operation("NoSuchOperation")

    assert recorder.seen == []


def test_errors_and_retries_are_the_transports(wire: tuple[InstantStartClient, Recorder]) -> None:
    client, recorder = wire
    busy = httpx2.Response(503, json={"error": {"code": "ServiceUnavailable", "message": "busy", "details": []}})
    missing = httpx2.Response(404, json={"error": {"code": "NotFound", "message": "no cluster demo", "details": []}})
    recorder.answers = [busy, missing]

    with pytest.raises(ApiError) as caught:
        client.call_operation("CancelOperation", {"operationId": "op-1"})

    assert (caught.value.status, caught.value.code) == (404, "NotFound")
    assert len(recorder.seen) == 2  # the 503 was retried
    first, second = (r.headers["idempotency-key"] for r in recorder.seen)
    assert first == second  # one key for every attempt of the call


# -- every route method is a call by operation id ----------------------------------------------------------------

NOT_ROUTES = {"call_operation", "request", "time_bound", "close", "iter_clusters", "api_url", "region"}
DOC_ROUTE = re.compile(r"^``(GET|PUT|POST|PATCH|DELETE) (\S+?)``")


def _dummy(annotation: str) -> Any:
    """A value of the parameter's annotation that the route accepts on the wire (the recorder answers anything)."""
    if "list[" in annotation or "Sequence[" in annotation:
        return []
    if "Mapping[" in annotation or "dict[" in annotation or "InstanceGroupSpec" in annotation:
        return {}
    if annotation.startswith("int"):
        return 1
    if annotation.startswith("bool"):
        return True
    return "v"


def route_methods() -> list[str]:
    return sorted(
        name
        for name in dir(InstantStartClient)
        if not name.startswith("_") and name not in NOT_ROUTES and callable(getattr(InstantStartClient, name))
    )


@pytest.mark.parametrize("name", route_methods())
def test_each_route_method_sends_by_operation_id_to_the_route_its_docstring_names(
    wire: tuple[InstantStartClient, Recorder], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    client, recorder = wire
    called: list[str] = []
    real = client.call_operation

    def spy(operation_id: str, *args: Any, **kwargs: Any) -> Any:
        called.append(operation_id)
        return real(operation_id, *args, **kwargs)

    monkeypatch.setattr(client, "call_operation", spy)
    method = getattr(client, name)
    required = {
        p.name: _dummy(str(p.annotation))
        for p in inspect.signature(method).parameters.values()
        if p.default is inspect.Parameter.empty
    }

    method(**required)

    assert len(called) == 1 and len(recorder.seen) == 1, f"{name} must make exactly one call by operation id"
    op = operation(called[0])
    documented = DOC_ROUTE.match(inspect.getdoc(method) or "")
    assert documented, f"{name}'s docstring names no route"
    doc_method, doc_path = documented.groups()
    # the docstring may abbreviate the path (``.../logs``), add the query or name a parameter its own way
    doc_route = re.sub(r"\{[^}]*\}", "{}", doc_path.split("?")[0].removeprefix("..."))
    assert op.method == doc_method, name
    assert re.sub(r"\{[^}]*\}", "{}", op.path).endswith(doc_route), (name, op.path)
    assert recorder.last.method == op.method
    expected_path = op.path
    for parameter in op.path_parameters:
        expected_path = expected_path.replace("{" + parameter + "}", "v")
    assert sent_path(recorder.last).split("?")[0] == expected_path


def test_every_operation_a_typed_method_names_is_an_operation_of_the_document() -> None:
    """The typed methods are conveniences (the CLI and the demo use them); a new operation needs none, since
    ``call_operation`` reaches every operation by id: what must not happen is a method naming an id that is gone."""
    source = "\n".join(
        inspect.getsource(module) for module in (clusters, groups, nodes, training, inference, governance)
    )

    named = {name for name in re.findall(r'call_operation\(\s*"([A-Za-z]+)"', source)}

    assert named, "the typed methods call operations by id"
    assert named <= set(operations()), f"unknown operation ids: {sorted(named - set(operations()))}"
