"""``instantstart features``: show and set the managed features of a cluster."""

from __future__ import annotations

import json
from typing import Annotated, Any, cast

import typer

from instantstart_client.cli.common import (
    IdempotencyOption,
    JsonOption,
    PollOption,
    TagArgument,
    WaitOption,
    WaitTimeoutOption,
    _echo_json,
    _report_operation,
    _state,
    handle_errors,
)
from instantstart_client.progress import DEFAULT_POLL_INTERVAL
from instantstart_client.shapes import Operation

features_app = typer.Typer(
    help="Managed features (training/inference operators, observability, task governance, tiered checkpointing, "
    "FSx for Lustre, KubeRay).",
    no_args_is_help=True,
)

FEATURE_KEYS = (
    "trainingOperator",
    "inferenceOperator",
    "observability",
    "taskGovernance",
    "tieredCheckpointing",
    "fsx",
    "kubeRay",
)


def _feature_body(
    enable: list[str],
    disable: list[str],
    version: list[str],
    memory_percentage: int | None,
    options: list[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """The PATCH body from --enable/--disable/--version KEY=VERSION/--memory-percentage/--option KEY.FIELD=JSON.

    An ``--option`` value is parsed as JSON when it is JSON (``true``, ``1200``, ``{"storageCapacity": 1200}``),
    else kept as a string; the API validates keys, fields and values.

    Raises:
        typer.BadParameter: an ``--option`` without ``KEY.FIELD=VALUE``.
    """
    body: dict[str, dict[str, Any]] = {}
    for key in enable:
        body[key] = {"enabled": True}
    for key in disable:
        body[key] = {"enabled": False}
    for pin in version:
        key, _, value = pin.partition("=")
        body.setdefault(key, {"enabled": True})["version"] = value
    if memory_percentage is not None:
        body.setdefault("tieredCheckpointing", {"enabled": True})["instanceMemoryAllocationPercentage"] = (
            memory_percentage
        )
    for option in options or []:
        path, sep, raw = option.partition("=")
        key, dot, field = path.partition(".")
        if not sep or not dot or not key or not field:
            raise typer.BadParameter(f"expected KEY.FIELD=VALUE, got {option!r}", param_hint="--option")
        try:
            parsed: Any = json.loads(raw)
        except ValueError:
            parsed = raw
        body.setdefault(key, {"enabled": True})[field] = parsed
    return body


@features_app.command("get")
@handle_errors
def features_get(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """Each managed feature: observed now, what was last applied, version and what it installed."""
    state = _state(ctx)
    listing = state.client().get_features(tag)
    if state.wants_json(as_json):
        _echo_json(listing)
        return
    from rich.table import Table

    table = Table(title=f"Features of {tag} (Kubernetes {listing.get('kubernetesVersion') or '-'})")
    for column in ("Feature", "Enabled", "Status", "Version", "Add-ons (needed by)", "Roles"):
        table.add_column(column)
    for key, f in listing["features"].items():
        addons = ", ".join(
            f"{a['addonName']} {a['status']} ({' '.join(a.get('neededBy') or []) or '-'})" for a in f.get("addons", [])
        )
        table.add_row(
            key,
            "yes" if f["enabled"] else "no",
            str(f.get("status") or "-"),
            str(f.get("version") or "-"),
            addons or "-",
            str(len(f.get("roles") or [])),
        )
    state.console.print(table)


@features_app.command("set")
@handle_errors
def features_set(
    ctx: typer.Context,
    tag: TagArgument,
    enable: Annotated[list[str], typer.Option("--enable", help=f"Turn a feature on: {', '.join(FEATURE_KEYS)}.")] = [],  # noqa: B006
    disable: Annotated[
        list[str], typer.Option("--disable", help="Turn a feature off (removes what it installed).")
    ] = [],  # noqa: B006
    version: Annotated[
        list[str], typer.Option("--version", help="Pin an add-on version: KEY=VERSION (e.g. trainingOperator=v1.1.0).")
    ] = [],  # noqa: B006
    memory_percentage: Annotated[
        int | None,
        typer.Option("--memory-percentage", help="tieredCheckpointing InstanceMemoryAllocationPercentage (0-100)."),
    ] = None,
    option: Annotated[
        list[str],
        typer.Option(
            "--option",
            help="A feature setting KEY.FIELD=VALUE (VALUE as JSON when it parses), e.g. observability.cloudWatch=true "
            "or fsx.fileSystem='{\"storageCapacity\": 1200}'.",
        ),
    ] = [],  # noqa: B006
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn features on or off (only those named act). Prints 'unchanged' when AWS already matches."""
    state = _state(ctx)
    body = _feature_body(enable, disable, version, memory_percentage, option)
    result = state.client().update_features(tag, body, idempotency_key=idempotency_key)
    if "operationId" not in result:
        if state.wants_json(as_json):
            _echo_json(result)
            return
        for key, outcome in result["features"].items():
            state.console.print(f"{key}: {outcome['result']}")
        if not result["features"]:
            state.console.print("nothing to change")
        return
    _report_operation(
        state,
        cast(Operation, result),
        as_json,
        wait=wait,
        poll_interval=poll_interval,
        wait_timeout=wait_timeout,
    )
