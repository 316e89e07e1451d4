"""What the fault matrices share: the sandbox run, a case (faults injected into one operation), waiting on an
operation, the settle-and-bisect bookkeeping of transient columns.

``test_fault_matrix.py`` runs the create and delete workflows' cells with them; each cell is judged ``converged``,
``failed-clean`` or ``BAD`` (:mod:`tests.faults.matrix`).
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests import secret_scan
from tests.faults import matrix
from tests.faults.matrix import CONVERGED, Cell, Fault, Operation

GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}
ZONE = "us-west-2c"
WORKERS = int(os.environ.get("INSTANTSTART_FAULT_WORKERS", "6"))
"""Clusters in flight at once."""
OPERATION_TIMEOUT = float(os.environ.get("INSTANTSTART_FAULT_OPERATION_TIMEOUT", "420"))
"""Wall seconds one operation may take before its cell is BAD (it never ended)."""
GROUP_SIZE = {1: 64, 3: 8}
"""Operations that get a transient fault in one cluster at once. botocore's standard retry mode stops retrying once
a client's retry quota (500 tokens; 5 per throttling retry, 14 per other retry) is spent, and the in-process
functions share one client per service, as a warm Lambda container does: three faults on every operation at once
would spend it and no longer be the cell's fault. A group that does not converge is split in halves until each cell
runs alone."""
NOT_REACHED = "not-reached"
ENDED = ("SUCCEEDED", "FAILED", "CANCELLED")


@dataclass
class Case:
    """Faults injected into one operation of a workflow: one cell, or a whole column at once (``group``)."""

    workflow: str
    column: str
    times: int
    faults: list[tuple[Operation, Fault]]

    @property
    def group(self) -> bool:
        return len(self.faults) > 1

    @property
    def name(self) -> str:
        """``"<workflow> <service>:<Operation> <column> x<times>"`` of a one-cell case."""
        (service, operation), _ = self.faults[0]
        return f"{self.workflow} {service}:{operation} {self.column} x{self.times}"


@dataclass
class Run:
    """The shared state of one matrix run."""

    sandbox: Sandbox
    stages: dict[str, dict[str, str]]

    @property
    def faults(self) -> Any:
        return self.sandbox.aws.extension.faults

    def client(self) -> InstantStartClient:
        api = InstantStartClient(self.sandbox.api_url, region=self.sandbox.region)
        api._http.event_hooks["response"].append(secret_scan.scan_response)
        return api

    def taken(self, tag: str, operation: Operation) -> list[Any]:
        return [
            t
            for t in list(self.faults.taken)
            if matrix.tag_of(t.call) == tag and (t.call.service, t.call.operation) == operation
        ]


def wait_operation(api: InstantStartClient, operation_id: str) -> dict[str, Any]:
    """Operation ``operation_id`` polled every second until it ends (or :data:`OPERATION_TIMEOUT` passes)."""
    deadline = time.monotonic() + OPERATION_TIMEOUT
    current = dict(api.get_operation(operation_id))
    while current["status"] not in ENDED and time.monotonic() < deadline:
        time.sleep(1.0)
        current = dict(api.get_operation(operation_id))
    return current


def cluster_or_none(api: InstantStartClient, tag: str) -> dict[str, Any] | None:
    """``GET /clusters/{tag}``, None when it answers 404."""
    try:
        return dict(api.get_cluster(tag))
    except ApiError as error:
        if error.status == 404:
            return None
        raise


def cases(workflow: str, operations: list[Operation]) -> deque[Case]:
    """The cases of one workflow's rows: each transient column on :data:`GROUP_SIZE` operations at once (bisected
    by :func:`settle` when a group does not converge), the documented column one operation at a time."""
    queue: deque[Case] = deque()
    for column in ("throttling", "5xx", "timeout"):
        for times in matrix.TIMES:
            faults = [(op, Fault.of(column, op[0], op[1], times)) for op in operations]
            size = GROUP_SIZE[times]
            for first in range(0, len(faults), size):
                queue.append(Case(workflow, column, times, faults[first : first + size]))
    for times in matrix.TIMES:
        for op in operations:
            queue.append(Case(workflow, "documented", times, [(op, Fault.of("documented", *op, times))]))
    return queue


def only(queues: dict[str, deque[Case]], result: matrix.Matrix, patterns: list[str]) -> None:
    """Keep only the one-cell cases whose name matches one of ``patterns`` (and their rows)."""
    for workflow, queue in queues.items():
        singles = [Case(c.workflow, c.column, c.times, [f]) for c in queue for f in c.faults]
        keep = [c for c in singles if any(fnmatch.fnmatchcase(c.name, pattern) for pattern in patterns)]
        queues[workflow] = deque(keep)
        result.rows = [(w, op) for w, op in result.rows if w != workflow or any(c.faults[0][0] == op for c in keep)]


def settle(
    run: Run, result: matrix.Matrix, queues: dict[str, deque[Case]], case: Case, cell: Cell | None, tag: str
) -> None:
    """Record ``case``'s ``cell`` (run in cluster ``tag``): a case not run (None) goes back to the front of its queue;
    a group that did not converge is split in halves, first in line; a group that converged judges each of its
    operations that was called (the others run on their own); a one-cell case that converged without its operation
    being called is ``not-reached``."""
    if cell is None:
        queues[case.workflow].appendleft(case)
        return
    if case.group and cell.outcome != CONVERGED:  # bisect: the halves run on their own
        where = f"{case.workflow} {case.column} x{case.times} on {len(case.faults)} operations"
        print(f"  {tag}: {where}: {cell.detail}")
        half = len(case.faults) // 2
        for part in (case.faults[half:], case.faults[:half]):  # first in line: a bisection is short
            queues[case.workflow].appendleft(Case(case.workflow, case.column, case.times, part))
        return
    if case.group:
        for op, fault in case.faults:
            if run.taken(tag, op):
                result.cells[(case.workflow, op, case.column, case.times)] = Cell(CONVERGED)
            else:  # not called in this run: this cell on its own
                queues[case.workflow].append(Case(case.workflow, case.column, case.times, [(op, fault)]))
        return
    op, _ = case.faults[0]
    if cell.outcome == CONVERGED and not run.taken(tag, op):
        cell = Cell(NOT_REACHED, "the operation was not called in this run")
    if cell.outcome != CONVERGED:
        print(f"  {tag}: {case.workflow} {op[0]}:{op[1]} {case.column} x{case.times}: {cell.outcome} {cell.detail}")
    result.cells[(case.workflow, op, case.column, case.times)] = cell
