"""``instantstart governance``: task governance of a cluster (scheduler config and team compute quotas)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.table import Table

from instantstart_client.cli.common import (
    EXIT_OPERATION_FAILED,
    EXIT_WAIT_TIMEOUT,
    CliState,
    IdempotencyOption,
    JsonOption,
    PollOption,
    TagArgument,
    WaitTimeoutOption,
    _echo_json,
    _pairs,
    _state,
    handle_errors,
)
from instantstart_client.progress import DEFAULT_POLL_INTERVAL

governance_app = typer.Typer(
    help="Task governance of a cluster: the scheduler config (priority classes, fair share) and team compute quotas.",
    no_args_is_help=True,
)

GOVERNANCE_SETTLED = ("Created", "Updated")
"""SageMaker statuses of a task governance resource that settled."""

GovernanceWaitOption = Annotated[
    bool,
    typer.Option("--wait", help="Poll until SageMaker reports it Created/Updated (or gone); exit 1 if it failed."),
]


def _governance_wait(
    state: CliState,
    read: Callable[[], dict[str, Any] | None],
    *,
    gone: bool,
    poll_interval: float,
    wait_timeout: float | None,
) -> dict[str, Any] | None:
    """Poll ``read`` until the resource settled (or is gone when ``gone``); a ``*Failed`` status exits 1 with
    SageMaker's FailureReason verbatim, running out of ``wait_timeout`` exits 4."""
    import time

    deadline = time.monotonic() + wait_timeout if wait_timeout else None
    while True:
        current = read()
        if current is None and gone:
            return None
        if current is not None:
            status = str(current.get("status"))
            if status.endswith("Failed"):
                state.err_console.print(
                    f"{current.get('name')} {status}: {current.get('failureReason') or ''}",
                    markup=False,
                    soft_wrap=True,
                )
                raise typer.Exit(EXIT_OPERATION_FAILED)
            if not gone and status in GOVERNANCE_SETTLED:
                return current
        if deadline is not None and time.monotonic() >= deadline:
            state.err_console.print("Stopped waiting; SageMaker keeps working (check again with the list command).")
            raise typer.Exit(EXIT_WAIT_TIMEOUT)
        time.sleep(poll_interval)


def _print_governance(state: CliState, answer: dict[str, Any] | None, as_json: bool, what: str) -> None:
    if state.wants_json(as_json):
        _echo_json(answer)
    elif answer is None:
        state.console.print(f"{what}: gone")
    else:
        version = answer.get("clusterSchedulerConfigVersion") or answer.get("computeQuotaVersion")
        state.console.print(f"{what} {answer.get('name')}: {answer.get('status')} (version {version})")


def _resources(values: list[str] | None) -> list[dict[str, Any]] | None:
    if values is None:
        return None
    out = []
    for instance_type, count in _pairs(values, "--resource"):
        if not count.isdigit():
            raise typer.BadParameter(f"--resource takes INSTANCE_TYPE=COUNT, got {instance_type}={count!r}")
        out.append({"instanceType": instance_type, "count": int(count)})
    return out


@governance_app.command("policy")
@handle_errors
def governance_policy(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's scheduler config (priority classes, fair share) as SageMaker describes it now."""
    state = _state(ctx)
    config = state.client().get_scheduler_config(tag)
    if state.wants_json(as_json):
        _echo_json(config)
        return
    body = config.get("schedulerConfig") or {}
    classes = ", ".join(f"{pc['name']}={pc['weight']}" for pc in body.get("priorityClasses") or []) or "-"
    state.console.print(
        f"{config['name']}: {config['status']} (version {config['clusterSchedulerConfigVersion']}), fair share "
        f"{body.get('fairShare') or '-'}, priority classes {classes}"
    )
    if config.get("failureReason"):
        state.console.print(f"failure: {config['failureReason']}")


@governance_app.command("set-policy")
@handle_errors
def governance_set_policy(
    ctx: typer.Context,
    tag: TagArgument,
    priority_class: Annotated[
        list[str] | None, typer.Option("--priority-class", help="NAME=WEIGHT (0-100), repeatable.")
    ] = None,
    fair_share: Annotated[str | None, typer.Option("--fair-share", help="Enabled or Disabled.")] = None,
    target_version: Annotated[
        int | None, typer.Option("--target-version", help="The version you read: refused (409) if it changed.")
    ] = None,
    wait: GovernanceWaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create or replace the cluster's scheduler config (needs the taskGovernance feature)."""
    state = _state(ctx)
    config: dict[str, Any] = {}
    if priority_class is not None:
        classes = []
        for name, weight in _pairs(priority_class, "--priority-class"):
            if not weight.isdigit():
                raise typer.BadParameter(f"--priority-class takes NAME=WEIGHT, got {name}={weight!r}")
            classes.append({"name": name, "weight": int(weight)})
        config["priorityClasses"] = classes
    if fair_share is not None:
        config["fairShare"] = fair_share
    body: dict[str, Any] = {"schedulerConfig": config}
    if target_version is not None:
        body["targetVersion"] = target_version
    answer: dict[str, Any] | None = state.client().put_scheduler_config(tag, body)
    if wait:
        answer = _governance_wait(
            state,
            lambda: state.client().get_scheduler_config(tag),
            gone=False,
            poll_interval=poll_interval,
            wait_timeout=wait_timeout,
        )
    _print_governance(state, answer, as_json, "scheduler config")


@governance_app.command("quotas")
@handle_errors
def governance_quotas(ctx: typer.Context, tag: TagArgument, as_json: JsonOption = False) -> None:
    """The cluster's compute quotas (one per team)."""
    state = _state(ctx)
    listing = state.client().list_compute_quotas(tag)
    if state.wants_json(as_json):
        _echo_json(listing)
        return
    table = Table(title=f"compute quotas of {tag}")
    for column in ("Name", "Team", "Resources", "Sharing", "Status", "Version"):
        table.add_column(column)
    for q in listing["computeQuotas"]:
        config = q.get("computeQuotaConfig") or {}
        resources = ", ".join(
            f"{r['instanceType']}x{r.get('count')}" for r in config.get("computeQuotaResources") or []
        )
        table.add_row(
            q["name"],
            str((q.get("computeQuotaTarget") or {}).get("teamName") or "-"),
            resources or "-",
            str((config.get("resourceSharingConfig") or {}).get("strategy") or "-"),
            str(q["status"]),
            str(q.get("computeQuotaVersion")),
        )
    state.console.print(table)


def _quota_reader(state: CliState, tag: str, name: str) -> Callable[[], dict[str, Any] | None]:
    def read() -> dict[str, Any] | None:
        quotas = state.client().list_compute_quotas(tag)["computeQuotas"]
        return next((q for q in quotas if q["name"] == name), None)

    return read


@governance_app.command("create-quota")
@handle_errors
def governance_create_quota(
    ctx: typer.Context,
    tag: TagArgument,
    team: Annotated[str, typer.Option("--team", help="Team name (its namespace is hyperpod-ns-<team>).")],
    resource: Annotated[
        list[str] | None, typer.Option("--resource", help="INSTANCE_TYPE=COUNT the team is guaranteed, repeatable.")
    ] = None,
    fair_share_weight: Annotated[int | None, typer.Option("--fair-share-weight", help="0-100.")] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", help="Lend, DontLend or LendAndBorrow.")] = None,
    borrow_limit: Annotated[int | None, typer.Option("--borrow-limit", help="Percent of the quota, 0-10000.")] = None,
    preempt_team_tasks: Annotated[
        str | None, typer.Option("--preempt-team-tasks", help="Never or LowerPriority.")
    ] = None,
    idempotency_key: IdempotencyOption = None,
    wait: GovernanceWaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a team's compute quota (named <tag>-<team>; needs the taskGovernance feature)."""
    state = _state(ctx)
    config: dict[str, Any] = {"computeQuotaResources": _resources(resource) or []}
    if strategy is not None:
        config["resourceSharingConfig"] = {"strategy": strategy}
        if borrow_limit is not None:
            config["resourceSharingConfig"]["borrowLimit"] = borrow_limit
    if preempt_team_tasks is not None:
        config["preemptTeamTasks"] = preempt_team_tasks
    target: dict[str, Any] = {"teamName": team}
    if fair_share_weight is not None:
        target["fairShareWeight"] = fair_share_weight
    body = {"computeQuotaConfig": config, "computeQuotaTarget": target}
    answer: dict[str, Any] | None = state.client().create_compute_quota(tag, body, idempotency_key=idempotency_key)
    if wait and answer is not None:
        answer = _governance_wait(
            state,
            _quota_reader(state, tag, str(answer["name"])),
            gone=False,
            poll_interval=poll_interval,
            wait_timeout=wait_timeout,
        )
    _print_governance(state, answer, as_json, "compute quota")


@governance_app.command("update-quota")
@handle_errors
def governance_update_quota(
    ctx: typer.Context,
    tag: TagArgument,
    name: Annotated[str, typer.Argument(help="Compute quota name, e.g. demo-research.", show_default=False)],
    resource: Annotated[
        list[str] | None, typer.Option("--resource", help="INSTANCE_TYPE=COUNT, repeatable (replaces the list).")
    ] = None,
    fair_share_weight: Annotated[int | None, typer.Option("--fair-share-weight", help="0-100.")] = None,
    activation_state: Annotated[str | None, typer.Option("--activation-state", help="Enabled or Disabled.")] = None,
    target_version: Annotated[
        int | None, typer.Option("--target-version", help="The version you read: refused (409) if it changed.")
    ] = None,
    wait: GovernanceWaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change a team's compute quota (only what you give changes)."""
    state = _state(ctx)
    body: dict[str, Any] = {}
    if resource is not None:
        body["computeQuotaConfig"] = {"computeQuotaResources": _resources(resource)}
    if fair_share_weight is not None:
        current = _quota_reader(state, tag, name)()
        team = ((current or {}).get("computeQuotaTarget") or {}).get("teamName")
        if not team:
            raise typer.BadParameter(f"compute quota {name!r} not found on {tag!r}")
        body["computeQuotaTarget"] = {"teamName": team, "fairShareWeight": fair_share_weight}
    if activation_state is not None:
        body["activationState"] = activation_state
    if target_version is not None:
        body["targetVersion"] = target_version
    answer: dict[str, Any] | None = state.client().update_compute_quota(tag, name, body)
    if wait:
        answer = _governance_wait(
            state, _quota_reader(state, tag, name), gone=False, poll_interval=poll_interval, wait_timeout=wait_timeout
        )
    _print_governance(state, answer, as_json, "compute quota")


@governance_app.command("delete-quota")
@handle_errors
def governance_delete_quota(
    ctx: typer.Context,
    tag: TagArgument,
    name: Annotated[str, typer.Argument(help="Compute quota name, e.g. demo-research.", show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    idempotency_key: IdempotencyOption = None,
    wait: GovernanceWaitOption = False,
    poll_interval: PollOption = DEFAULT_POLL_INTERVAL,
    wait_timeout: WaitTimeoutOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a team's compute quota (asks you to type its name)."""
    state = _state(ctx)
    if not yes:
        typed = typer.prompt(f"This removes compute quota '{name}' of '{tag}' and its team queues. Type the quota name")
        if typed.strip() != name:
            state.err_console.print("Aborted: the name you typed does not match; nothing was removed.")
            raise typer.Exit(EXIT_OPERATION_FAILED)
    answer: dict[str, Any] | None = state.client().delete_compute_quota(tag, name, idempotency_key=idempotency_key)
    if wait:
        answer = _governance_wait(
            state, _quota_reader(state, tag, name), gone=True, poll_interval=poll_interval, wait_timeout=wait_timeout
        )
    _print_governance(state, answer, as_json, "compute quota")
