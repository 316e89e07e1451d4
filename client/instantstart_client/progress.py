"""Follow one operation to a terminal status, showing each stage of its cluster as it progresses.

The one implementation of the live progress display, used by ``instantstart clusters create|retry|
delete --wait`` and by the demo. It polls ``GET /operations/{id}`` (is it terminal?) and
``GET /clusters/{tag}`` (what are the stages doing?) every ``poll_interval`` seconds; on a terminal
console it redraws a :class:`rich.live.Live` stage table (spinner on the RUNNING stage), elsewhere
(CI logs, pipes) it prints one line per stage change and the final table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from rich.console import Console, RenderableType
from rich.live import Live

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_client.render import StageBoard, failed_stage, format_time, stages_table, styled_status
from instantstart_client.shapes import TERMINAL_OPERATION_STATUSES, Cluster, Operation, Stage

DEFAULT_POLL_INTERVAL = 2.0
"""Seconds between polls: the API reads DynamoDB, not AWS, so this is cheap but not free."""


STAGE_OPERATIONS = ("CREATE_CLUSTER", "IMPORT_CLUSTER", "RETRY_STAGE")
"""The operation types whose failure is a stage's (the create workflow's)."""


@dataclass
class WatchResult:
    """Where a watched operation ended.

    Attributes:
        operation: the last ``GET /operations/{id}`` answer.
        cluster: the last ``GET /clusters/{tag}`` answer; None when the cluster is gone (404).
        timed_out: True when ``timeout`` passed before the operation became terminal.
    """

    operation: Operation
    cluster: Cluster | None
    timed_out: bool = False

    @property
    def succeeded(self) -> bool:
        """True when the operation ended SUCCEEDED."""
        return not self.timed_out and self.operation.get("status") == "SUCCEEDED"

    @property
    def failed_stage(self) -> Stage | None:
        """The first FAILED stage of the cluster, if any, when the operation runs stages (a create, import or retry);
        None for any other operation: a day-2 change or a model download did not fail a stage, and its own error is
        the one to show (the cluster may keep a FAILED ``verify`` from its create, a DEGRADED one does)."""
        if self.operation.get("type") not in STAGE_OPERATIONS:
            return None
        return failed_stage(self.cluster)


def stages_as_shown(operation: Operation, cluster: Cluster | None) -> Cluster | None:
    """The cluster as the progress display shows it for ``operation``.

    A delete runs the stages' teardown in reverse order: its stages are shown with their
    ``teardownStatus`` (PENDING until their teardown starts) and in teardown order; the create
    results they carried are not shown again.
    """
    if cluster is None or operation.get("type") != "DELETE_CLUSTER":
        return cluster
    stages = cluster.get("stages", [])
    count = len(stages)
    teardown: list[Stage] = [
        cast(
            Stage,
            {
                **stage,
                "status": stage.get("teardownStatus") or "PENDING",
                "order": count + 1 - int(stage.get("order", 0)),
                "attempts": 1 if stage.get("teardownStatus") else 0,
                "error": None,
                "observedStatus": "teardown",
                "startedAt": None,
                "endedAt": None,
            },
        )
        for stage in stages
    ]
    return cast(Cluster, {**cluster, "stages": sorted(teardown, key=lambda s: s.get("order", 0))})


class _TransitionPrinter:
    """Prints a line whenever the operation or a stage changes status or attempt count."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._seen: dict[str, tuple[str, int]] = {}
        self._operation_status: str | None = None

    def __call__(self, operation: Operation, cluster: Cluster | None) -> None:
        terminal = operation.get("status") in TERMINAL_OPERATION_STATUSES
        if not terminal:
            self._print_operation(operation)
        stages: list[Stage] = cluster.get("stages", []) if cluster else []
        for stage in sorted(stages, key=lambda s: s.get("order", 0)):
            self._print_stage(stage)
        if terminal:  # after the stages, so the log ends with the outcome
            self._print_operation(operation)

    def _print_operation(self, operation: Operation) -> None:
        status = operation.get("status", "")
        if status == self._operation_status:
            return
        self._operation_status = status
        line = styled_status(status)
        line.stylize("bold")
        self._console.print(
            f"{format_time(operation.get('updatedAt'))}  operation {operation.get('operationId')} ",
            line,
            sep="",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def _print_stage(self, stage: Stage) -> None:
        key = (stage.get("status", ""), stage.get("attempts", 0))
        if self._seen.get(stage["name"]) == key:
            return
        self._seen[stage["name"]] = key
        if key[0] == "PENDING":
            return  # not started (or reset for a retry): its RUNNING line follows
        detail = ""
        if stage.get("error"):
            error = stage["error"] or {"code": "", "message": ""}
            detail = f" {error.get('code')}: {error.get('message')}"
        elif stage.get("observedStatus"):
            detail = f" ({stage.get('observedStatus')})"
        stamp = stage.get("endedAt") or stage.get("startedAt")
        self._console.print(
            f"{format_time(stamp)}  stage {stage.get('order')} {stage['name']} ",
            styled_status(key[0]),
            f" attempt {key[1]}{detail}",
            sep="",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def watch_operation(
    client: InstantStartClient,
    console: Console,
    operation: Operation,
    *,
    poll_interval: float = DEFAULT_POLL_INTERVAL,
    timeout: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> WatchResult:
    """Poll ``operation`` until it is SUCCEEDED, FAILED or CANCELLED, displaying its cluster's stages.

    Args:
        client: the API client.
        console: where the progress goes (a live table on a terminal, change lines otherwise).
        operation: the Operation answered by the 202 (its ``operationId`` and ``clusterTag`` are used).
        poll_interval: seconds between polls.
        timeout: give up watching after this many seconds (the operation keeps running); None waits
            for as long as the operation runs (Step Functions bounds every workflow).
        sleep: waits between polls (tests pass a fake).
        monotonic: clock for ``timeout``.

    Returns:
        The :class:`WatchResult`; the final stage table has been printed.

    Raises:
        ApiError: an answer other than a 404 of the cluster (which means it has been deleted).
        ApiConnectionError: the API became unreachable (after the client's retries).
    """
    operation_id = operation["operationId"]
    cluster_tag = operation["clusterTag"]
    board = StageBoard(cluster_tag)
    deadline = None if timeout is None else monotonic() + timeout
    interactive = console.is_terminal and not console.is_dumb_terminal
    printer = None if interactive else _TransitionPrinter(console)
    last_operation: Operation = operation
    last_cluster: Cluster | None = None
    timed_out = False

    def poll() -> bool:
        """One poll; True when the operation is terminal."""
        nonlocal last_operation, last_cluster
        # Operation first, cluster second: the cluster we show is at least as new as the status we act on.
        last_operation = client.get_operation(operation_id)
        try:
            last_cluster = client.get_cluster(cluster_tag)
        except ApiError as exc:
            if exc.status != 404:
                raise
            last_cluster = None
        shown = stages_as_shown(last_operation, last_cluster)
        board.update(last_operation, shown)
        if printer is not None:
            printer(last_operation, shown)
        return last_operation.get("status") in TERMINAL_OPERATION_STATUSES

    if interactive:
        with Live(board, console=console, refresh_per_second=8, transient=True) as live:
            while not poll():
                if deadline is not None and monotonic() + poll_interval > deadline:
                    timed_out = True
                    break
                live.refresh()
                sleep(poll_interval)
    else:
        while not poll():
            if deadline is not None and monotonic() + poll_interval > deadline:
                timed_out = True
                break
            sleep(poll_interval)

    # The final state stays on screen as a plain table (the live one was transient).
    console.print(board.render() if interactive else _final_table(last_cluster))
    return WatchResult(operation=last_operation, cluster=last_cluster, timed_out=timed_out)


def _final_table(cluster: Cluster | None) -> RenderableType:
    stages: list[Stage] = cluster.get("stages", []) if cluster else []
    return stages_table(stages) if stages else ""
