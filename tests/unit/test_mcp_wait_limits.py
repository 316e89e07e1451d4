"""Every MCP tool call returns before a client's 60 s timeout, and nothing tells an agent to wait longer.

MCP clients commonly time a tool call out at 60 s, and progress notifications do not extend that unless
the client opts in. ``wait_seconds`` therefore accepts 1-300 s but waits at most
:data:`mcp_proxy.composite.WAIT_PER_CALL_MAX_SECONDS` per call and says how much is left; the tool
descriptions, the server instructions, the skills, ``docs/agents.md`` and the README's agent section recommend
waits that fit in one call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp_types import TextContent

from mcp_proxy.composite import WAIT_MAX_SECONDS, WAIT_MIN_SECONDS, WAIT_PER_CALL_MAX_SECONDS
from mcp_proxy.server import build_server
from mcp_proxy.skills import load_skills

ROOT = Path(__file__).resolve().parents[2]
CLIENT_TIMEOUT_BUDGET = 55
"""Seconds a tool call may take: under the common 60 s client timeout, with room for the round trip."""

SECONDS = r"(?:s|sec|secs|seconds)\b"
DURATION = re.compile(rf"(\d+)(?:\s*(?:-|\u2013|to)\s*(\d+))?\s*{SECONDS}")
WAIT_CALL = re.compile(r"wait_seconds`?\s*\(?(?:seconds\s*=\s*)?(\d+)(?:\s*(?:-|\u2013|to)\s*(\d+))?")
ACCEPTED_RANGE = (WAIT_MIN_SECONDS, WAIT_MAX_SECONDS)
"""What ``wait_seconds`` accepts; stating it is not a recommendation to wait that long in one call."""
TIMEOUT_WORDS = re.compile(r"timeout|time (?:a|the) (?:tool )?call out", re.IGNORECASE)
"""Words that make a duration the clients' timeout being explained, not a wait being recommended."""


def long_waits(text: str) -> list[str]:
    """Durations in seconds above the budget that ``text`` mentions (the accepted range aside)."""
    found = []
    for pattern in (DURATION, WAIT_CALL):
        for match in pattern.finditer(text):
            numbers = tuple(int(n) for n in match.groups() if n)
            context = text[max(0, match.start() - 40) : match.end() + 40]
            if numbers == ACCEPTED_RANGE or TIMEOUT_WORDS.search(context):
                continue
            if max(numbers) > CLIENT_TIMEOUT_BUDGET:
                found.append(match.group(0))
    return found


class FakeClock:
    """``wait_seconds``'s sleep without waiting: simulated seconds, recorded."""

    def __init__(self) -> None:
        self.slept = 0.0

    async def __call__(self, seconds: float) -> None:
        self.slept += seconds


def call_wait(seconds: int) -> tuple[Any, FakeClock, list[tuple[float, float | None]]]:
    clock = FakeClock()
    progress: list[tuple[float, float | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total))

    async def go() -> Any:
        server = build_server(api_url="http://127.0.0.1:9", region="us-west-2", allow_write=False, sleep=clock)
        async with Client(server) as client:
            return await client.call_tool("wait_seconds", {"seconds": seconds}, progress_callback=on_progress)

    return anyio.run(go), clock, progress


def published_texts() -> dict[str, str]:
    """What an agent reads: instructions, tool and parameter descriptions, prompts, skill resources."""

    async def go() -> dict[str, str]:
        server = build_server(api_url="http://127.0.0.1:9", region="us-west-2", allow_write=True)
        texts: dict[str, str] = {}
        async with Client(server) as client:
            texts["instructions"] = client.instructions or ""
            for tool in (await client.list_tools()).tools:
                texts[f"tool {tool.name}"] = tool.description or ""
                for name, prop in tool.input_schema.get("properties", {}).items():
                    texts[f"tool {tool.name}.{name}"] = str(prop.get("description", ""))
            for prompt in (await client.list_prompts()).prompts:
                args = {a.name: "demo" for a in prompt.arguments or [] if a.required}
                rendered = await client.get_prompt(prompt.name, args)
                texts[f"prompt {prompt.name}"] = " ".join(getattr(m.content, "text", "") for m in rendered.messages)
        return texts

    return anyio.run(go)


def agent_docs() -> dict[str, str]:
    """The MCP server's page, ``docs/agents.md``, and the README's section that points to it."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Connect an agent")
    end = readme.index("\n## ", start + 1)
    return {"docs/agents.md": (ROOT / "docs" / "agents.md").read_text(), "README.md agent section": readme[start:end]}


def test_the_budget_fits_the_common_client_timeout() -> None:
    assert WAIT_PER_CALL_MAX_SECONDS <= CLIENT_TIMEOUT_BUDGET < 60


def test_wait_seconds_120_returns_within_55_s_saying_how_long_it_waited_and_to_call_again() -> None:
    result, clock, progress = call_wait(120)

    assert not result.is_error
    assert clock.slept <= CLIENT_TIMEOUT_BUDGET
    data = result.structured_content
    assert data["waitedSeconds"] == clock.slept == WAIT_PER_CALL_MAX_SECONDS
    assert data["requestedSeconds"] == 120 and data["remainingSeconds"] == 120 - WAIT_PER_CALL_MAX_SECONDS
    [text] = result.content
    assert isinstance(text, TextContent)
    assert f"Waited {WAIT_PER_CALL_MAX_SECONDS} of 120 s" in text.text
    assert f"call wait_seconds again with seconds={120 - WAIT_PER_CALL_MAX_SECONDS}" in text.text
    assert progress and progress[-1] == (WAIT_PER_CALL_MAX_SECONDS, WAIT_PER_CALL_MAX_SECONDS)


def test_wait_seconds_300_also_returns_within_55_s() -> None:
    result, clock, _ = call_wait(WAIT_MAX_SECONDS)

    assert clock.slept <= CLIENT_TIMEOUT_BUDGET
    assert result.structured_content["remainingSeconds"] == WAIT_MAX_SECONDS - clock.slept


def test_a_wait_that_fits_one_call_is_waited_whole_with_nothing_remaining() -> None:
    result, clock, _ = call_wait(45)

    assert clock.slept == 45
    assert result.structured_content["waitedSeconds"] == 45 and result.structured_content["remainingSeconds"] == 0
    assert "again" not in result.structured_content["message"]


def test_the_scan_finds_a_recommendation_above_the_budget() -> None:
    """The scanner itself: the texts this change replaced would fail it."""
    assert long_waits("loop: `wait_seconds` (60-120 s; at most 300 per call)") == ["60-120 s", "wait_seconds` (60-120"]
    assert long_waits("Poll: `wait_seconds` 60-120, then") == ["wait_seconds` 60-120"]
    assert long_waits("waits 30-50 s; accepts 1-300 s; 30-40 minutes; clients time a call out at 60 s") == []


@pytest.mark.parametrize(
    "source", ["skills", "published", "docs"], ids=["skill-files", "instructions-tools-prompts", "agent-docs"]
)
def test_no_text_an_agent_reads_recommends_a_wait_above_55_s(source: str) -> None:
    if source == "skills":
        texts = {skill.file: skill.body for skill in load_skills()}
    elif source == "published":
        texts = published_texts()
    else:
        texts = agent_docs()

    offending = {where: waits for where, text in texts.items() if (waits := long_waits(text))}

    assert texts and offending == {}
