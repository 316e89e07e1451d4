"""Fixtures of the MCP suite: in-process MCP clients of ``instantstart-mcp`` with the sandbox API behind it.

The sandbox and its API client come from ``tests/conftest.py`` (one sandbox per test process).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import CallToolResult, TextContent

from instantstart_client.api import InstantStartClient
from mcp_proxy.server import build_server
from tests import secret_scan

BIN = Path(sys.executable).parent
GROUP = {"instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}
TERMINAL = frozenset({"SUCCEEDED", "FAILED", "CANCELLED"})


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio."""
    return "asyncio"


class ScaledSleep:
    """``wait_seconds``'s sleep at the sandbox's time scale: ``seconds`` of simulated time, recorded."""

    def __init__(self, time_scale: float) -> None:
        self.time_scale = time_scale
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await anyio.sleep(seconds / self.time_scale)

    @property
    def total(self) -> float:
        """Simulated seconds slept so far."""
        return sum(self.calls)


@pytest.fixture
def scaled_sleep(sandbox: Any) -> ScaledSleep:
    """A ``wait_seconds`` sleep running at the sandbox clock's speed (at 240x, 240 s of waiting is 1 s of wall time)."""
    return ScaledSleep(sandbox.time_scale)


McpConnect = Callable[..., Any]


@pytest.fixture
def mcp_client(api: InstantStartClient, scaled_sleep: ScaledSleep) -> McpConnect:
    """``async with mcp_client(allow_write=...) as client``: an in-process MCP client of a fresh server."""

    @asynccontextmanager
    async def connect(*, allow_write: bool) -> AsyncIterator[Client]:
        server = build_server(client=api, allow_write=allow_write, sleep=scaled_sleep)
        async with Client(server) as client:
            yield client

    return connect


def text_of(result: CallToolResult) -> str:
    """The single text block of a tool result."""
    assert len(result.content) == 1 and isinstance(result.content[0], TextContent), result.content
    secret_scan.scan(result.content[0].text, "an MCP tool result")
    return result.content[0].text


def structured(result: CallToolResult) -> dict[str, Any]:
    """The structured result of a successful call, checked against its JSON text."""
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    assert json.loads(text_of(result)) == result.structured_content
    return result.structured_content


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result."""
    return structured(await client.call_tool(tool, arguments))


async def poll_operation(
    client: Client, operation_id: str, *, every: int = 45, limit: int = 320, on_poll: Callable[..., Awaitable[None]]
) -> dict[str, Any]:
    """The transcript's loop: ``wait_seconds`` then ``operation_get`` until a terminal status (bounded)."""
    for _ in range(limit):
        assert (await call(client, "wait_seconds", seconds=every))["waitedSeconds"] == every
        operation = await call(client, "operation_get", operationId=operation_id)
        await on_poll(operation)
        if operation["status"] in TERMINAL:
            return operation
    raise AssertionError(f"operation {operation_id} did not end after {limit} polls")


def client_process_env(sandbox: Any, tmp_path: Path, **extra: str) -> dict[str, str]:
    """Environment of a client subprocess: no ambient AWS settings, the sandbox's URL/region/credentials."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_", "INSTANTSTART_")) and key != "COLUMNS"
    }
    env.update(sandbox.client_environment())
    env.update(
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
        COLUMNS="160",
    )
    env.update(extra)
    return env


@pytest.fixture
def no_faults(sandbox: Any) -> Iterator[None]:
    """Clear injected AWS faults after the test."""
    yield
    sandbox.aws.extension.faults.clear()
