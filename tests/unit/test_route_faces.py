"""What a route declares for the other faces (``api_routes.common.faces``) and how the MCP proxy reads it."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest

from mcp_proxy.document import tool_definitions

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _route_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API function's modules importable, as in the Lambda package."""
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "api"))


def faces(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return dict(importlib.import_module("api_routes.common").faces(*args, **kwargs))


def faces_without_tool(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return dict(importlib.import_module("api_routes.common").faces_without_tool(*args, **kwargs))


def test_a_destructive_write_with_a_confirmation_declares_its_tool_and_command() -> None:
    declared = faces(
        "thing_delete",
        "Delete a thing",
        "Deletes it.",
        toolset="things",
        cli="things delete",
        destructive=True,
        idempotent=True,
        confirm=True,
    )["x-instantstart"]
    assert declared["cli"] == {"commands": ["things delete"]}
    assert declared["mcp"] == {
        "tool": "thing_delete",
        "title": "Delete a thing",
        "toolset": "things",
        "guidance": "Deletes it.",
        "readOnly": False,
        "openWorld": True,
        "destructive": True,
        "idempotent": True,
        "confirmClusterTag": True,
    }


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"cli": "things get", "no_cli": "why"}, {"cli": "things get", "read_only": True, "destructive": True}],
)
def test_a_route_names_its_command_or_why_it_has_none_and_a_read_is_never_destructive(kwargs: Any) -> None:
    with pytest.raises(ValueError):
        faces("thing_get", "Get a thing", "Gets it.", toolset="things", **kwargs)


def test_an_operation_without_a_tool_says_why_and_the_proxy_builds_none_for_it() -> None:
    with pytest.raises(ValueError):
        faces_without_tool(" ", cli="things get")
    document = {
        "paths": {
            "/things": {
                "get": {
                    "operationId": "ListThings",
                    "responses": {},
                    **faces_without_tool("internal", no_cli="internal"),
                },
                "post": {
                    "operationId": "CreateThing",
                    "responses": {},
                    **faces("thing_create", "Create a thing", "Creates it.", toolset="things", cli="things create"),
                },
            }
        }
    }
    assert [d.name for d in tool_definitions(document)] == ["thing_create"]
