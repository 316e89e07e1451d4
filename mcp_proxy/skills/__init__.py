"""Agent skills of the InstantStart MCP server: markdown workflow rules shipped as package data.

Each ``*.md`` file here is one skill with a YAML front matter (``name``, ``description``) and a
markdown body. The server publishes them as MCP prompts and resources; agents that load files can
read them directly (``importlib.resources.files("mcp_proxy.skills")``).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files


@dataclass(frozen=True)
class Skill:
    """One skill file.

    Attributes:
        file: the file name, e.g. ``create-cluster.md``.
        name: ``name`` of the front matter.
        description: ``description`` of the front matter.
        body: the markdown after the front matter.
    """

    file: str
    name: str
    description: str
    body: str


SKILL_FILES = (
    "workflow-rules.md",
    "create-cluster.md",
    "capacity-types.md",
    "retry-failed-stage.md",
    "delete-cluster.md",
    "scale-instance-groups.md",
    "node-troubleshooting.md",
    "managed-features.md",
    "training-jobs.md",
    "mlflow.md",
    "inference.md",
)
"""The skills, rules first."""


def parse_skill(file: str, text: str) -> Skill:
    """Split a skill file into its front matter fields and body.

    Raises:
        ValueError: the file has no ``---`` front matter with ``name`` and ``description``.
    """
    if not text.startswith("---\n"):
        raise ValueError(f"{file}: missing front matter")
    header, sep, body = text[4:].partition("\n---\n")
    if not sep:
        raise ValueError(f"{file}: unterminated front matter")
    fields: dict[str, str] = {}
    for line in header.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields[key.strip()] = value.strip()
    if not fields.get("name") or not fields.get("description"):
        raise ValueError(f"{file}: front matter needs name and description")
    return Skill(file=file, name=fields["name"], description=fields["description"], body=body.strip() + "\n")


def load_skill(file: str) -> Skill:
    """Read one packaged skill file."""
    return parse_skill(file, files(__name__).joinpath(file).read_text(encoding="utf-8"))


def load_skills() -> list[Skill]:
    """Every packaged skill, in :data:`SKILL_FILES` order."""
    return [load_skill(file) for file in SKILL_FILES]
