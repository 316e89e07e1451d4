"""What a read-only MCP server tells an agent: every write tool it refuses, by name."""

from __future__ import annotations

from mcp_proxy.server import _instructions
from mcp_proxy.skills import load_skill
from mcp_proxy.tools import WRITE_TOOLS


def test_the_read_only_instructions_name_every_refused_write_tool() -> None:
    rules = load_skill("workflow-rules.md")
    text = _instructions(rules, allow_write=False)
    assert f"its {len(WRITE_TOOLS)} write tools" in text
    assert all(name in text for name in WRITE_TOOLS)
    assert len(WRITE_TOOLS) > 4
    assert "Write tools are enabled." in _instructions(rules, allow_write=True)
