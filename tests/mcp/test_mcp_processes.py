"""The installed ``instantstart-mcp`` console script as a real process, over stdio and streamable HTTP,
talking to the sandbox API with the SDK's own clients."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters

from mcp_proxy.tools import definitions
from tests.mcp.conftest import BIN, GROUP, client_process_env, structured, text_of

pytestmark = pytest.mark.anyio

SCRIPT = BIN / "instantstart-mcp"


def _script() -> str:
    assert SCRIPT.exists(), f"{SCRIPT} is missing: run .venv/bin/pip install -e . --no-deps"
    return str(SCRIPT)


async def test_stdio_server_lists_tools_and_answers_from_the_api(sandbox: Any, api: Any, tmp_path: Path) -> None:
    """Given INSTANTSTART_API_URL, AWS_REGION and credentials in its environment (read-only default),
    when an MCP client launches `instantstart-mcp` over stdio, the tools answer from the sandbox API."""
    params = StdioServerParameters(command=_script(), args=[], env=client_process_env(sandbox, tmp_path))
    async with Client(params, read_timeout_seconds=60) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {d.name for d in definitions()} | {"wait_seconds"} == names

        listing = structured(await client.call_tool("cluster_list_all", {}))
        expected = {c["clusterTag"] for c in api.iter_clusters()}
        assert {c["clusterTag"] for c in listing["clusters"]} == expected

        zones = structured(await client.call_tool("catalog_list_availability_zones", {}))
        assert zones["availabilityZones"] and all(
            z["zoneName"].startswith(sandbox.region) for z in zones["availabilityZones"]
        )

        refused = await client.call_tool(
            "cluster_create", {"clusterTag": "mcpstdio", "availabilityZone": "us-west-2c", "instanceGroups": [GROUP]}
        )
        assert refused.is_error and "--allow-write" in text_of(refused)


async def test_stdio_server_takes_api_url_from_the_flag_and_writes_from_the_environment(
    sandbox: Any, tmp_path: Path
) -> None:
    """--api-url instead of INSTANTSTART_API_URL; INSTANTSTART_ALLOW_WRITE=true lets a write reach the API
    (whose 422 comes back as its JSON)."""
    env = client_process_env(sandbox, tmp_path, INSTANTSTART_ALLOW_WRITE="true")
    del env["INSTANTSTART_API_URL"]
    params = StdioServerParameters(command=_script(), args=["--api-url", sandbox.api_url], env=env)
    async with Client(params, read_timeout_seconds=60) as client:
        invalid = await client.call_tool(
            "cluster_create",
            {
                "clusterTag": "mcpstdio",
                "availabilityZone": "us-west-2c",
                "instanceGroups": [{"instanceType": "ml.g6.4xlarge", "instanceCount": 0}],
            },
        )
        assert invalid.is_error
        error = json.loads(text_of(invalid))["error"]
        assert error["code"] == "ValidationError" and error["details"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def http_server(sandbox: Any, tmp_path: Path) -> Iterator[str]:
    """`instantstart-mcp --http --port N` running; yields its MCP endpoint URL."""
    port = _free_port()
    process = subprocess.Popen(
        [_script(), "--http", "--port", str(port)],
        env=client_process_env(sandbox, tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else "exited"
            try:
                httpx2.get(f"http://127.0.0.1:{port}/", timeout=1)
                break
            except httpx2.TransportError:
                assert time.monotonic() < deadline, "instantstart-mcp --http did not start listening"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()


async def test_streamable_http_server_answers_tools(http_server: str, api: Any) -> None:
    """`instantstart-mcp --http --port N` serves streamable HTTP at /mcp."""
    async with Client(http_server, read_timeout_seconds=60) as client:
        assert "cluster_list_all" in {tool.name for tool in (await client.list_tools()).tools}
        listing = structured(await client.call_tool("cluster_list_all", {}))
        assert listing["count"] == len(list(api.iter_clusters()))
