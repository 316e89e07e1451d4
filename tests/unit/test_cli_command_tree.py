"""The ``instantstart`` command tree is the one recorded in ``cli_commands_before.json``.

The CLI was split from one module into the package ``instantstart_client.cli`` (one Typer sub-app per area); this
test holds every command path, option, default, help text and their order to what they were before the split.
A deliberate change of the CLI regenerates the file: ``.venv/bin/python tests/unit/test_cli_command_tree.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from instantstart_client.cli import app

RECORDED = Path(__file__).with_name("cli_commands_before.json")


def _param(param: Any) -> dict[str, Any]:
    """Every public attribute of a Typer option or argument (its callback only as present or not)."""
    info = {name: value for name, value in sorted(vars(param).items()) if not name.startswith("_")}
    info["callback"] = param.callback is not None
    info["type_descriptor"] = repr(param.type_descriptor.annotation)
    info["kind"] = type(param).__name__
    return info


def _command(path: str, command: Any, tree: dict[str, Any]) -> None:
    is_group = hasattr(command, "list_commands")
    tree[path] = {
        "kind": "group" if is_group else "command",
        "help": command.help,
        "short_help": command.short_help,
        "epilog": command.epilog,
        "hidden": command.hidden,
        "deprecated": command.deprecated,
        "no_args_is_help": command.no_args_is_help,
        "options_metavar": command.options_metavar,
        "params": [_param(param) for param in command.params],
    }
    if is_group:
        ctx = command.context_class(command, info_name=path.rsplit(" ", 1)[-1])
        names = command.list_commands(ctx)
        tree[path]["commands"] = names
        for name in names:
            sub = command.get_command(ctx, name)
            assert sub is not None
            _command(f"{path} {name}", sub, tree)


def command_tree() -> dict[str, Any]:
    """Every command path of ``instantstart`` (groups included) with its params, in the order ``--help`` lists."""
    tree: dict[str, Any] = {}
    _command("instantstart", typer.main.get_command(app), tree)
    # JSON round trip: defaults and other values that are not JSON become their repr, as in the recorded file.
    return json.loads(json.dumps(tree, default=repr))


def test_the_command_tree_is_the_recorded_one() -> None:
    recorded = json.loads(RECORDED.read_text())
    current = command_tree()
    assert list(current) == list(recorded), "command paths (or their order) changed"
    for path, command in recorded.items():
        assert current[path] == command, f"{path} changed"


if __name__ == "__main__":
    RECORDED.write_text(json.dumps(command_tree(), indent=1) + "\n")
