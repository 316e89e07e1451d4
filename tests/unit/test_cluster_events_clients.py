"""The cluster events through the client, the ``instantstart clusters events`` command and the MCP tool
``cluster_list_events``, each against the real API function in process with SageMaker stubbed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from inprocess_api import InProcessApi
from mcp import Client
from sagemaker_events import HyperPodEvents, make_event, stubbed_sagemaker
from test_client_cli import Run, use_transport
from typer.testing import CliRunner, Result

from instantstart_client.cli import app
from mcp_proxy.server import build_server


@pytest.fixture
def run(inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run(*args)``: the CLI with ``--api-url`` of the in-process API."""
    monkeypatch.setenv("COLUMNS", "200")
    use_transport(monkeypatch, inprocess_api)

    def _run(*args: str) -> Result:
        return CliRunner().invoke(app, ["--api-url", inprocess_api.url, *args])

    return _run


@pytest.fixture
def feed(inprocess_api: InProcessApi) -> Iterator[HyperPodEvents]:
    """Cluster ``demo`` (CREATING) whose HyperPod cluster has 7 events, newest first, SageMaker stubbed."""
    inprocess_api.create_cluster("demo")
    with stubbed_sagemaker(inprocess_api.driver.runtime) as stub:
        yield HyperPodEvents(stub, [make_event(i) for i in reversed(range(7))])


def test_the_client_sends_the_filters_as_query_parameters_and_returns_the_page(
    inprocess_api: InProcessApi, feed: HyperPodEvents
) -> None:
    feed.expect_page(0, 100)
    feed.expect_reasons(feed.errors(4))
    client = inprocess_api.client()

    page = client.list_cluster_events("demo", max_results=1, level="Error", instance_group_name=None)

    [request] = inprocess_api.requests_to("GET", "/clusters/demo/events")
    assert request.query == {"maxResults": "1", "level": "Error"}
    assert [e["eventId"] for e in page["events"]] == [make_event(4)["EventId"]]
    assert page["nextToken"] and page["hyperPodClusterName"] == "hp-cluster-demo"


def test_cli_clusters_events_prints_a_table_and_how_to_get_the_next_page(
    feed: HyperPodEvents,
    run: Run,
) -> None:
    """Given 7 events, 2 of them Errors, when `clusters events demo --level Error --max-results 1` runs,
    then the newest Error is shown with its description verbatim and the command for the next page."""
    feed.expect_page(0, 100)
    feed.expect_reasons(feed.errors(4))

    result = run("clusters", "events", "demo", "--level", "Error", "--max-results", "1")

    assert result.exit_code == 0, result.output
    assert "HyperPod events of hp-cluster-demo" in result.stdout
    assert make_event(4)["Description"] in result.stdout and "Error" in result.stdout
    assert "Reason: InsufficientInstanceCapacity: no ml.g6.4xlarge capacity" in result.stdout, "the reason below it"
    assert make_event(6)["Description"] not in result.stdout  # an Info event
    assert "More events: instantstart clusters events demo --level Error --next-token " in result.stdout


def test_cli_clusters_events_json_is_the_raw_answer(feed: HyperPodEvents, run: Run) -> None:
    feed.expect_page(0, 20)
    feed.expect_reasons(feed.errors(4))

    result = run("clusters", "events", "demo", "--json")

    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)
    assert [e["eventTime"] for e in answer["events"]][:2] == ["2026-11-29T17:06:00Z", "2026-11-29T17:05:00Z"]
    assert answer["nextToken"] is None


def test_cli_clusters_events_of_an_unknown_cluster_exits_2_naming_the_error(
    inprocess_api: InProcessApi,
    run: Run,
) -> None:
    result = run("clusters", "events", "nosuch")

    assert result.exit_code == 2
    assert "ClusterNotFound" in result.output


def _call_tool(api: InProcessApi, tool: str, arguments: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with Client(build_server(client=api.client(), allow_write=False)) as client:
            return await client.call_tool(tool, arguments)

    return anyio.run(go)


def test_mcp_cluster_list_events_returns_the_api_page_and_follows_next_token(
    inprocess_api: InProcessApi, feed: HyperPodEvents
) -> None:
    feed.expect_page(0, 4)
    feed.expect_reasons(feed.errors(4))
    feed.expect_page(4, 4)

    first = _call_tool(inprocess_api, "cluster_list_events", {"clusterTag": "demo", "maxResults": 4})
    second = _call_tool(
        inprocess_api,
        "cluster_list_events",
        {"clusterTag": "demo", "maxResults": 4, "nextToken": first.structured_content["nextToken"]},
    )

    assert not first.is_error and not second.is_error
    assert json.loads(first.content[0].text) == first.structured_content
    ids = [e["eventId"] for e in first.structured_content["events"] + second.structured_content["events"]]
    assert ids == [make_event(i)["EventId"] for i in reversed(range(7))]
    assert second.structured_content["nextToken"] is None


def test_mcp_cluster_list_events_of_an_unknown_cluster_is_a_tool_error_with_the_api_json(
    inprocess_api: InProcessApi,
) -> None:
    result = _call_tool(inprocess_api, "cluster_list_events", {"clusterTag": "nosuch", "level": "Error"})

    assert result.is_error
    assert json.loads(result.content[0].text)["error"]["code"] == "ClusterNotFound"
