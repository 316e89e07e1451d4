"""Refusing a repeated single-value option in every command (click alone keeps the last value silently).

The root app's group class (:class:`RefuseRepeatsGroup`) reads the raw arguments once, before click parses them,
walking the command path (root, command group, command) with each level's own options; a value-taking option that
is not ``multiple`` and given twice (under any of its names, ``--opt v`` or ``--opt=v``) is a usage error (exit 2)
naming the option.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup, TyperOption


def _takes_value(option: TyperOption) -> bool:
    return not option.is_flag and not option.count and option.nargs > 0


def _names(command: Any, ctx: Any) -> dict[str, TyperOption]:
    return {
        name: param
        for param in command.get_params(ctx)
        if isinstance(param, TyperOption)
        for name in (*param.opts, *param.secondary_opts)
    }


def repeated_option(command: Any, ctx: Any, args: list[str]) -> str | None:
    """The name of the first single-value option given twice in ``args`` for ``command`` (or the command its
    arguments select when it is a group), or ``None``; stops at ``--`` and at an unknown command (click reports it).
    """
    options = _names(command, ctx)
    seen: dict[TyperOption, str] = {}
    index = 0
    while index < len(args):
        arg = args[index]
        index += 1
        if arg == "--":
            return None
        name, inline = (arg.split("=", 1)[0], True) if arg.startswith("--") and "=" in arg else (arg, False)
        option = options.get(name)
        if option is None:
            if not arg.startswith("-") and isinstance(command, TyperGroup):
                sub = command.get_command(ctx, arg)
                return None if sub is None else repeated_option(sub, ctx, args[index:])
            continue
        if not _takes_value(option):
            continue
        if not inline:
            index += option.nargs
        if not option.multiple:
            if option in seen:
                return name if name == seen[option] else f"{seen[option]}/{name}"
            seen[option] = name
    return None


class RefuseRepeatsGroup(TyperGroup):
    """The root group: a repeated single-value option anywhere on the command line is a usage error (exit 2)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Check ``args`` (the whole command line) for a repeated single-value option, then parse as click does.

        Raises:
            typer.BadParameter: (a usage error, exit 2) an option given twice, e.g. ``Invalid value for
                '--instance-type': given more than once; give it once``.
        """
        name = repeated_option(self, ctx, list(args))
        if name is not None:
            raise typer.BadParameter("given more than once; give it once.", ctx=ctx, param_hint=f"'{name}'")
        return super().parse_args(ctx, args)
