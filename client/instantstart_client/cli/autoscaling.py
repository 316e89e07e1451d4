"""``instantstart autoscaling``: managed Karpenter of a cluster (show, turn on, turn off)."""

from __future__ import annotations

from typing import Annotated

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

autoscaling_app = typer.Typer(help="Managed Karpenter of a cluster: show, turn on, turn off.", no_args_is_help=True)


@autoscaling_app.command("get")
@handle_errors
def autoscaling_get(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """HyperPod's AutoScaling now and the NodePool / HyperpodNodeClass last applied."""
    state = _state(ctx)
    found = state.client().get_autoscaling(tag)
    if state.wants_json(as_json):
        _echo_json(found)
        return
    state.console.print(
        f"{found['hyperPodClusterName']}: Karpenter {found.get('mode') or 'never enabled'}"
        f" ({found.get('status') or '-'})"
    )
    if found.get("failureMessage"):
        state.console.print(f"  failure: {found['failureMessage']}")
    if found.get("nodePool"):
        limits = ", ".join(f"{k}={v}" for k, v in (found.get("limits") or {}).items()) or "none"
        state.console.print(
            f"  NodePool {found['nodePool']} -> HyperpodNodeClass {found.get('nodeClass')}: groups "
            f"{', '.join(found.get('instanceGroups') or [])}; limits {limits}; consolidateAfter "
            f"{found.get('consolidateAfter')}"
        )
    if found.get("clusterRoleArn"):
        state.console.print(f"  ClusterRole {found['clusterRoleArn']}")


@autoscaling_app.command("enable")
@handle_errors
def autoscaling_enable(
    ctx: typer.Context,
    tag: TagArgument,
    instance_groups: Annotated[
        list[str],
        typer.Option("--instance-group", help="A group Karpenter scales (repeatable, 1-10; each at 0 instances)."),
    ],
    limit: Annotated[
        list[str] | None,
        typer.Option("--limit", help="RESOURCE=QUANTITY NodePool limit, e.g. nvidia.com/gpu=64 (repeatable)."),
    ] = None,
    consolidate_after: Annotated[
        str | None, typer.Option("--consolidate-after", help="Karpenter duration, e.g. 30s (default 30s).")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn managed Karpenter on for --instance-group groups (NodePool with consolidation and --limit limits)."""
    state = _state(ctx)
    limits: dict[str, str | int] | None = None
    if limit is not None:
        pairs = [item.partition("=") for item in limit]
        bad = [k for k, sep, v in pairs if not sep or not k or not v]
        if bad:
            raise typer.BadParameter(f"--limit takes RESOURCE=QUANTITY, got {bad[0]!r}")
        limits = {k: v for k, _, v in pairs}
    operation = state.client().update_autoscaling(
        tag,
        enabled=True,
        instance_groups=list(instance_groups),
        limits=limits,
        consolidate_after=consolidate_after,
        idempotency_key=idempotency_key,
    )
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)


@autoscaling_app.command("disable")
@handle_errors
def autoscaling_disable(
    ctx: typer.Context,
    tag: TagArgument,
    idempotency_key: IdempotencyOption = None,
    wait: WaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Turn managed Karpenter off: its NodePool, HyperpodNodeClass and ClusterRole are removed."""
    state = _state(ctx)
    operation = state.client().update_autoscaling(tag, enabled=False, idempotency_key=idempotency_key)
    _report_operation(state, operation, as_json, wait=wait, poll_interval=poll_interval, wait_timeout=wait_timeout)
