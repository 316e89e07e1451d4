"""Every operation of the OpenAPI document has its faces: an MCP tool the server lists and a CLI command the Typer
app has, or its ``x-instantstart`` extension names the absence with a reason. The document is the one list: no face
keeps a list of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import typer.main
from mcp import Client

from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app
from mcp_proxy.server import build_server

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = json.loads((ROOT / "api_schema" / "openapi.json").read_text())


def operations() -> dict[str, dict[str, Any]]:
    """``operationId`` -> the operation, for every operation of the committed document."""
    return {
        op["operationId"]: op
        for item in DOCUMENT["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }


def cli_commands() -> set[str]:
    """Every command path of the ``instantstart`` Typer app, e.g. ``"clusters create"``."""
    found: set[str] = set()

    def walk(command: Any, prefix: tuple[str, ...]) -> None:
        for name, sub in getattr(command, "commands", {}).items():
            found.add(" ".join((*prefix, name)))
            walk(sub, (*prefix, name))

    walk(typer.main.get_command(app), ())
    return found


def listed_tools() -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        server = build_server(client=InstantStartClient("http://127.0.0.1:9", region="us-west-2"), allow_write=False)
        async with Client(server) as client:
            return {tool.name: tool for tool in (await client.list_tools()).tools}

    return anyio.run(main)


def test_every_operation_has_an_mcp_tool_or_says_why_not() -> None:
    tools = listed_tools()
    missing, stale = {}, {}
    for operation_id, op in operations().items():
        mcp = op.get("x-instantstart", {}).get("mcp", {})
        if "absent" in mcp:
            assert str(mcp["absent"]).strip(), f"{operation_id}: no MCP tool and no reason"
            continue
        if mcp.get("tool") not in tools:
            missing[operation_id] = mcp.get("tool")
        elif tools[mcp["tool"]].meta["instantstart/operation"] != operation_id:
            stale[operation_id] = tools[mcp["tool"]].meta
    assert missing == {} and stale == {}, (missing, stale)
    declared = {op["x-instantstart"]["mcp"].get("tool") for op in operations().values()}
    assert set(tools) - declared == {"wait_seconds"}, "a tool no operation declares (composite ones: wait_seconds)"


def test_every_operation_has_a_cli_command_or_says_why_not() -> None:
    commands = cli_commands()
    unknown, unexplained = {}, []
    for operation_id, op in operations().items():
        cli = op.get("x-instantstart", {}).get("cli", {})
        if "absent" in cli:
            if not str(cli["absent"]).strip():
                unexplained.append(operation_id)
            continue
        named = cli.get("commands") or []
        if not named or set(named) - commands:
            unknown[operation_id] = sorted(set(named) - commands) or "no command named"
    assert unknown == {} and unexplained == []
    assert "clusters create" in commands and len(commands) > 60, "the walk reached the sub-apps"


def test_the_document_with_its_faces_is_the_one_the_client_ships() -> None:
    shipped = json.loads((ROOT / "client" / "instantstart_client" / "openapi.json").read_text())
    assert shipped == DOCUMENT
    assert all("x-instantstart" in op for op in operations().values())
