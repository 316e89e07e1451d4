"""What a read-only MCP server tells an agent: every write tool it refuses, by name."""

from __future__ import annotations

from mcp_proxy.server import _instructions
from mcp_proxy.skills import load_skill
from mcp_proxy.tools import definitions, read_only_message, write_tools


def test_the_read_only_instructions_name_every_refused_write_tool() -> None:
    rules = load_skill("workflow-rules.md")
    text = _instructions(rules, allow_write=False)
    writes = write_tools()
    assert f"its {len(writes)} write tools" in text
    assert all(name in text for name in writes)
    assert set(writes) == {d.name for d in definitions() if not d.annotations.read_only_hint}
    assert len(writes) > 4
    assert "Write tools are enabled." in _instructions(rules, allow_write=True)


def test_the_refusal_names_each_write_tool_once_and_no_read_tool() -> None:
    text = read_only_message("cluster_delete")
    named = [d.name for d in definitions() if f"{d.name}," in text or f"{d.name})" in text]
    assert sorted(named) == sorted(write_tools()), "every write tool, no read-only one"
    assert text.count("nothing was sent") == 1 and text.count("cluster_create") == 1
    assert "inference_endpoint_invoke" not in text, "invoking a model is allowed read-only"
