"""The composite tools: the few that are not one API call, written by hand.

- ``wait_seconds``: waits between status polls, reporting progress (no API call).
- ``cluster_list_all``: every page of ``ListClusters``; its name, title, hints and guidance are the operation's
  (``x-instantstart.mcp`` with ``handWritten``), its result the pages' clusters and their count.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import Field

from instantstart_client.api import InstantStartClient
from mcp_proxy.tools import InstantStartTools, definition, ok

WAIT_MIN_SECONDS = 1
"""Shortest ``wait_seconds`` wait."""
WAIT_MAX_SECONDS = 300
"""Longest ``wait_seconds`` request (inclusive); one call waits at most :data:`WAIT_PER_CALL_MAX_SECONDS` of it."""
WAIT_PER_CALL_MAX_SECONDS = 50
"""Longest wait of one ``wait_seconds`` call: MCP clients commonly time a tool call out at 60 s (progress
notifications do not extend that unless the client opts in), so a call returns after this long at most and
says how much of the requested wait is left."""
WAIT_RECOMMENDED = "30-50"
"""The poll interval the tools and skills recommend, in seconds: one call each."""
PROGRESS_INTERVAL_SECONDS = 10.0
"""``wait_seconds`` reports progress this often (keeps clients with idle timeouts informed)."""

Sleep = Callable[[float], Awaitable[None]]

WaitSecondsParam = Annotated[
    int,
    Field(
        description=f"Seconds to wait (required, no default), {WAIT_MIN_SECONDS}-{WAIT_MAX_SECONDS} inclusive; one "
        f"call waits at most {WAIT_PER_CALL_MAX_SECONDS} s and reports what is left. Use {WAIT_RECOMMENDED} between "
        "status polls of a long-running operation.",
        json_schema_extra={"minimum": WAIT_MIN_SECONDS, "maximum": WAIT_MAX_SECONDS},
    ),
]

WAIT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "waitedSeconds": {"type": "number", "description": "Seconds waited by this call."},
        "requestedSeconds": {"type": "integer", "description": "Seconds requested."},
        "remainingSeconds": {"type": "number", "description": "Seconds of the request left: call again for them."},
        "message": {"type": "string", "description": "What to do next."},
    },
    "required": ["waitedSeconds", "requestedSeconds", "remainingSeconds", "message"],
}
LIST_ALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "clusters": {"type": "array", "description": "Every cluster of the control plane (all pages)."},
        "count": {"type": "integer", "description": "How many clusters."},
    },
    "required": ["clusters", "count"],
}


class CompositeTools:
    """``wait_seconds`` and ``cluster_list_all``, sharing the generated tools' client and call budget.

    Args:
        tools: the generated tools (their client, budget and error mapping).
        sleep: the awaitable sleep of ``wait_seconds`` (default ``anyio.sleep``: real seconds).
        progress_interval: seconds between progress notifications of ``wait_seconds``.
    """

    def __init__(
        self,
        tools: InstantStartTools,
        *,
        sleep: Sleep | None = None,
        progress_interval: float = PROGRESS_INTERVAL_SECONDS,
    ) -> None:
        self._tools = tools
        self._sleep: Sleep = sleep or anyio.sleep
        self._progress_interval = progress_interval

    def cluster_list_all(self) -> CallToolResult:
        """Every cluster of every page of ``GET /clusters``, and their count."""

        def request(client: InstantStartClient) -> dict[str, Any]:
            clusters = list(client.iter_clusters())
            return {"clusters": clusters, "count": len(clusters)}

        return self._tools.call(request)

    async def wait_seconds(self, seconds: WaitSecondsParam, ctx: Context) -> CallToolResult:
        """Wait between status polls, reporting progress; then check the operation again.

        One call waits at most 50 s, so it ends before the usual 60 s MCP tool-call timeout: use 30-50
        between status polls of a long-running operation (wait_seconds, then operation_get or
        cluster_get_stages, and repeat until a terminal state). A larger request (it accepts 1-300) returns
        early with waitedSeconds and remainingSeconds: call it again for the rest. Outside the accepted
        range the call is a tool error. Read-only.
        """
        if not WAIT_MIN_SECONDS <= seconds <= WAIT_MAX_SECONDS:
            raise ToolError(
                f"seconds must be between {WAIT_MIN_SECONDS} and {WAIT_MAX_SECONDS} inclusive, got {seconds}; one "
                f"call waits at most {WAIT_PER_CALL_MAX_SECONDS} s, so use {WAIT_RECOMMENDED} and check the status "
                "between calls."
            )
        target = min(seconds, WAIT_PER_CALL_MAX_SECONDS)
        waited = 0.0
        while waited < target:
            step = min(self._progress_interval, target - waited)
            await self._sleep(step)
            waited += step
            await ctx.report_progress(waited, target, f"waited {waited:g} of {target} s")
        remaining = seconds - target
        if remaining:
            message = (
                f"Waited {target} of {seconds} s and returned early: one call waits at most "
                f"{WAIT_PER_CALL_MAX_SECONDS} s so it ends before MCP clients time the call out. Check the status "
                f"now, or call wait_seconds again with seconds={remaining} to wait the rest."
            )
        else:
            message = f"Waited {target} s; check the status now (operation_get or cluster_get_stages)."
        return ok(
            {"waitedSeconds": target, "requestedSeconds": seconds, "remainingSeconds": remaining, "message": message}
        )

    def tools(self) -> list[Tool]:
        """The SDK tools of ``cluster_list_all`` (as ``ListClusters`` declares it) and ``wait_seconds``."""
        listing = definition("cluster_list_all")
        list_all = Tool.from_function(
            self.cluster_list_all,
            name=listing.name,
            title=listing.title,
            description=listing.description,
            annotations=listing.annotations,
            meta={"instantstart/toolset": listing.toolset, "instantstart/operation": listing.operation_id},
        )
        list_all.fn_metadata.output_schema = LIST_ALL_SCHEMA
        title = "Wait between status polls"
        wait = Tool.from_function(
            self.wait_seconds,
            name="wait_seconds",
            title=title,
            description=(type(self).wait_seconds.__doc__ or "").replace("\n        ", "\n").strip(),
            annotations=ToolAnnotations(title=title, read_only_hint=True, open_world_hint=False),
        )
        # The results are CallToolResults: the schemas are published for clients, not re-validated here.
        wait.fn_metadata.output_schema = WAIT_SCHEMA
        return [list_all, wait]
