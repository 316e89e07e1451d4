"""Parts of the MCP server that need no sandbox: configuration, error mapping, write policy, skills."""

from __future__ import annotations

import json
import socket

import pytest
from mcp import Client

from instantstart_client.api import ApiError, InstantStartClient
from mcp_proxy.server import build_server
from mcp_proxy.skills import SKILL_FILES, load_skills, parse_skill
from mcp_proxy.tools import api_error_result, env_allows_write
from tests.mcp.conftest import text_of

pytestmark = pytest.mark.anyio


def test_an_answer_without_the_api_error_shape_is_given_that_shape() -> None:
    """API Gateway's own 403 body ``{"message": "Forbidden"}`` still reads as ``{"error": ...}``."""
    exc = ApiError(403, "Forbidden", "Forbidden", body={"message": "Forbidden"})
    result = api_error_result(exc)
    assert result.is_error
    assert json.loads(text_of(result)) == {"error": {"code": "Forbidden", "message": "Forbidden", "details": []}}


def test_an_api_error_body_is_passed_verbatim() -> None:
    body = {"error": {"code": "ValidationError", "message": "bad", "details": [{"field": "clusterTag"}]}}
    assert json.loads(text_of(api_error_result(ApiError(422, "ValidationError", "bad", body=body)))) == body


@pytest.mark.parametrize(
    ("value", "allowed"), [("true", True), ("TRUE", True), ("1", True), ("false", False), ("", False)]
)
def test_instantstart_allow_write_values(value: str, allowed: bool) -> None:
    assert env_allows_write({"INSTANTSTART_ALLOW_WRITE": value}) is allowed


async def test_allow_write_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No flag: INSTANTSTART_ALLOW_WRITE=true enables writes (the confirmation check then runs)."""
    monkeypatch.setenv("INSTANTSTART_ALLOW_WRITE", "true")
    async with Client(build_server(api_url="http://127.0.0.1:9", region="us-west-2")) as client:
        result = await client.call_tool("cluster_delete", {"clusterTag": "abc", "confirmClusterTag": "abd"})
    assert result.is_error and "does not equal clusterTag" in text_of(result)


async def test_node_delete_with_another_tag_typed_is_refused_before_any_request() -> None:
    """node_delete needs the user's typed tag, like cluster_delete; the API URL is unreachable, so a request would
    be a connection error, not this refusal."""
    async with Client(build_server(api_url="http://127.0.0.1:9", region="us-west-2", allow_write=True)) as client:
        result = await client.call_tool(
            "node_delete", {"clusterTag": "abc", "nodeIds": ["i-0123456789abcdef0"], "confirmClusterTag": "abd"}
        )
    assert (
        result.is_error and "nothing was deleted" in text_of(result) and "does not equal clusterTag" in text_of(result)
    )


async def test_a_missing_api_url_is_a_tool_error_naming_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server starts without a URL; tools then say which setting is missing."""
    monkeypatch.delenv("INSTANTSTART_API_URL", raising=False)
    async with Client(build_server(region="us-west-2")) as client:
        result = await client.call_tool("cluster_list_all", {})
    assert result.is_error and "INSTANTSTART_API_URL" in text_of(result)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_api_is_a_tool_error_naming_the_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    url = f"http://127.0.0.1:{_closed_port()}"
    client = InstantStartClient(url, region="us-west-2", max_attempts=1, timeout=2)
    async with Client(build_server(client=client)) as mcp:
        result = await mcp.call_tool("catalog_list_availability_zones", {})
    assert result.is_error and "could not be reached" in text_of(result) and url in text_of(result)


def test_every_skill_file_ships_with_front_matter() -> None:
    skills = load_skills()
    assert [skill.file for skill in skills] == list(SKILL_FILES)
    for skill in skills:
        assert skill.name.startswith("instantstart-") and skill.description and skill.body.startswith("# ")
    with pytest.raises(ValueError):
        parse_skill("x.md", "# no front matter\n")
