"""The README is a short front door and the documentation's links hold.

``README.md`` stays at most :data:`README_MAX_LINES` lines and links every page of ``docs/``; every relative
Markdown link in the README and in ``docs/*.md`` names a file that exists and, when it has a ``#anchor`` into a
Markdown file, a heading of that file, by GitHub's slug rules (:func:`github_slug`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
README_MAX_LINES = 250

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def links(text: str) -> list[str]:
    """Every link target of the Markdown text, outside code blocks and code spans."""
    found: list[str] = []
    for line in prose_lines(text):
        if definition := REFERENCE_DEFINITION.match(line):
            found.append(definition.group(1))
            continue
        found += INLINE_LINK.findall(CODE_SPAN.sub("code", line))
    return found


def github_slug(heading: str) -> str:
    """GitHub's anchor of a heading: its text lowercased, punctuation but ``-`` and ``_`` dropped, spaces to ``-``."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading anchors on its text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file (a repeated slug gets ``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(path.read_text()):
        if match := HEADING.match(line):
            slug = github_slug(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(path: Path) -> list[tuple[str, Path, str]]:
    """(link as written, target file, anchor) of each relative link of a Markdown file."""
    result: list[tuple[str, Path, str]] = []
    for target in links(path.read_text()):
        if SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        result.append((target, resolved, anchor))
    return result


def test_the_slug_and_link_rules_follow_github() -> None:
    """The helpers themselves, on the shapes the documentation uses."""
    assert github_slug("Agents: the MCP server (`instantstart-mcp`)") == "agents-the-mcp-server-instantstart-mcp"
    assert github_slug("Where the sandbox is as harsh as AWS") == "where-the-sandbox-is-as-harsh-as-aws"
    assert github_slug("One request, end to end: `POST /clusters`") == "one-request-end-to-end-post-clusters"
    assert github_slug("A training job's `cleanPodPolicy` is `All`") == "a-training-jobs-cleanpodpolicy-is-all"
    assert github_slug("make_test runs 480x") == "make_test-runs-480x"
    text = "[a](x.md#b) `[no](code.md)` [`c`](../y/z.md) [web](https://example.com)\n```\n[no](fenced.md)\n```\n"
    assert links(text) == ["x.md#b", "../y/z.md", "https://example.com"]


def test_the_readme_is_a_short_front_door() -> None:
    lines = README.read_text().splitlines()

    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines; move detail into docs/"


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_names_an_existing_file_and_heading(path: Path) -> None:
    broken = []
    for target, resolved, anchor in relative_links(path):
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no heading with anchor #{anchor} in {resolved.relative_to(ROOT)}")

    assert broken == []


def test_the_readme_links_every_page_of_docs() -> None:
    linked = {resolved for _, resolved, _ in relative_links(README)}

    assert DOCS and [str(p.relative_to(ROOT)) for p in DOCS if p.resolve() not in linked] == []
