"""The fault matrix: every AWS operation the create and delete workflows call x {throttling, 5xx, connection
timeout, the operation's documented failure} x {once, three times}. Each cell must end ``converged`` (READY /
DELETED) or ``failed-clean`` (the operation FAILED with the AWS code and message verbatim on the stage that made the
call, and a retry through the API then converges). Anything else is BAD and fails the run.

Run with ``make faults`` (figures printed; not part of ``make test``). One sandbox, clusters concurrently, each
cluster's faults scoped to its own workflow calls (the sandbox labels each invocation with its cluster tag).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from instantstart_client.api import ApiError, InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.faults import matrix, runs
from tests.faults.matrix import BAD, CONVERGED, FAILED_CLEAN, Cell, Fault, Operation
from tests.faults.runs import (
    GROUP,
    NOT_REACHED,
    OPERATION_TIMEOUT,
    WORKERS,
    ZONE,
    Case,
    Run,
    cluster_or_none,
    wait_operation,
)

BUDGET = float(os.environ.get("INSTANTSTART_FAULT_BUDGET", "1800"))
"""Wall seconds after which no new cluster starts: the clusters under way finish, the matrix is printed with the
cells judged so far, and the run fails if any is left (``make faults`` allows 35 minutes in all)."""
ONLY = [p.strip() for p in os.environ.get("INSTANTSTART_FAULT_ONLY", "").split(",") if p.strip()]
"""Run only the cells whose name (``create dynamodb:UpdateItem documented x1``) matches one of these patterns."""


def _failure_problem(
    run: Run, tag: str, case: Case, operation: Operation, fault: Fault, cluster: dict[str, Any], ended: dict[str, Any]
) -> tuple[str, str | None]:
    """``(problem or "", the stage to retry)`` of a FAILED create: the stages FAILED (other than ``StageInterrupted``)
    hold the fault verbatim, each is a stage whose step made a faulted call (three faults can hit both parallel
    branches), and the operation FAILED with the same error."""
    failed = [
        s
        for s in cluster["stages"]
        if s["status"] == "FAILED" and (s.get("error") or {}).get("code") != "StageInterrupted"
    ]
    if not failed:
        return f"no stage FAILED with the error: {[(s['name'], s['status']) for s in cluster['stages']]}", None
    for stage in failed:
        if not matrix.recorded_verbatim(stage.get("error"), fault):
            error = stage.get("error")
            return f"stage {stage['name']} recorded {error}; injected {fault.code}: {fault.message!r}", None
    if not matrix.recorded_verbatim(ended.get("error"), fault):
        return f"operation recorded {ended.get('error')}; injected {fault.code}", None
    faulted = {matrix.stage_of(t.call, run.stages[case.workflow]) for t in run.taken(tag, operation)} - {None}
    wrong = [s["name"] for s in failed if s["name"] not in faulted]
    if faulted and wrong:
        return f"error recorded on stage(s) {wrong}, but the faulted calls were made for {sorted(faulted)}", None
    return "", str(failed[0]["name"])


def _judge_create(run: Run, api: InstantStartClient, tag: str, case: Case, started: dict[str, Any]) -> Cell:
    ended = wait_operation(api, started["operationId"])
    retries = 0
    while True:
        cluster = cluster_or_none(api, tag)
        if cluster is None:
            return Cell(BAD, f"cluster gone after operation {ended['status']}")
        if ended["status"] == "SUCCEEDED" and cluster["status"] == "READY":
            return Cell(CONVERGED if retries == 0 else FAILED_CLEAN, retries=retries)
        if ended["status"] != "FAILED":
            status = cluster["status"]
            return Cell(BAD, f"operation {ended['status']} after {OPERATION_TIMEOUT:.0f} s, cluster {status}")
        stages = [(s["name"], s["status"], s.get("error")) for s in cluster["stages"] if s["status"] != "SUCCEEDED"]
        if case.group:
            return Cell(BAD, f"FAILED: {ended.get('error')} {stages}")
        operation, fault = case.faults[0]
        problem, stage = _failure_problem(run, tag, case, operation, fault, cluster, ended)
        if problem:
            return Cell(BAD, problem, retries)
        if retries >= fault.times:
            return Cell(BAD, f"still FAILED after {retries} retries: {ended.get('error')}", retries)
        retries += 1
        assert stage is not None
        ended = wait_operation(api, api.retry_stage(tag, stage)["operationId"])


def _judge_delete(run: Run, api: InstantStartClient, tag: str, case: Case, started: dict[str, Any]) -> Cell:
    ended = wait_operation(api, started["operationId"])
    retries = 0
    while True:
        cluster = cluster_or_none(api, tag)
        if ended["status"] == "SUCCEEDED":
            if cluster is not None:
                return Cell(BAD, f"delete SUCCEEDED but the cluster is {cluster['status']}")
            return Cell(CONVERGED if retries == 0 else FAILED_CLEAN, retries=retries)
        if ended["status"] != "FAILED":
            return Cell(BAD, f"delete {ended['status']} after {OPERATION_TIMEOUT:.0f} s")
        if case.group:
            return Cell(BAD, f"delete FAILED: {ended.get('error')}")
        _, fault = case.faults[0]
        if not matrix.recorded_verbatim(ended.get("error"), fault):
            return Cell(BAD, f"delete recorded {ended.get('error')}; injected {fault.code}: {fault.message!r}", retries)
        if cluster is None or cluster["status"] != "FAILED":
            return Cell(BAD, f"after a FAILED delete the cluster is {cluster and cluster['status']}", retries)
        taken = run.taken(tag, case.faults[0][0])
        expected = matrix.stage_of(taken[-1].call, run.stages["delete"]) if taken else None
        tearing = [s["name"] for s in cluster["stages"] if s.get("teardownStatus") == "RUNNING"]
        beginning = bool(taken) and "|begin_teardown|" in str(taken[-1].call.label)
        if expected and tearing != [expected] and not (beginning and tearing == []):  # a teardown that never began
            return Cell(BAD, f"teardown RUNNING on {tearing}, but the call was made for stage {expected}", retries)
        if retries >= fault.times:
            return Cell(BAD, f"still FAILED after {retries} deletes: {ended.get('error')}", retries)
        retries += 1
        ended = wait_operation(api, api.delete_cluster(tag)["operationId"])


def _run_case(run: Run, api: InstantStartClient, tag: str, case: Case) -> Cell:
    when = matrix.for_tag(tag)
    for operation, fault in case.faults:
        matrix.inject(run.faults, operation, fault, when)
    try:
        if case.workflow == "create":
            return _judge_create(run, api, tag, case, dict(api.create_cluster(tag, ZONE, [GROUP])))
        return _judge_delete(run, api, tag, case, dict(api.delete_cluster(tag)))
    finally:
        run.faults.withdraw(when)


def _lifecycle(run: Run, tag: str, create: Case | None, delete: Case | None) -> list[tuple[Case, Cell | None, str]]:
    """Create cluster ``tag`` (with ``create``'s faults), then delete it (with ``delete``'s): each case's cell."""
    api = run.client()
    out: list[tuple[Case, Cell | None, str]] = []
    try:
        return _lifecycle_steps(run, api, tag, create, delete, out)
    except Exception as exc:  # noqa: BLE001  # an API answer the client refuses (5xx...): the case under way is BAD
        judged = {id(case) for case, _, _ in out}
        pending = [c for c in (create, delete) if c is not None and id(c) not in judged]
        if pending:
            out.append((pending[0], Cell(BAD, f"{type(exc).__name__}: {exc}"), tag))
            out += [(c, None, tag) for c in pending[1:]]
        return out
    finally:
        api.close()


def _lifecycle_steps(
    run: Run,
    api: InstantStartClient,
    tag: str,
    create: Case | None,
    delete: Case | None,
    out: list[tuple[Case, Cell | None, str]],
) -> list[tuple[Case, Cell | None, str]]:
    if create is not None:
        cell = _run_case(run, api, tag, create)
        out.append((create, cell, tag))
        ready = cell.outcome != BAD
    else:
        ended = wait_operation(api, api.create_cluster(tag, ZONE, [GROUP])["operationId"])
        ready = ended["status"] == "SUCCEEDED"
    if not ready:
        if delete is not None:
            out.append((delete, None, tag))  # needs a READY cluster: another lifecycle runs it
        with contextlib.suppress(ApiError):  # free what the failed create holds, best effort
            wait_operation(api, api.delete_cluster(tag)["operationId"])
        return out
    if delete is not None:
        out.append((delete, _run_case(run, api, tag, delete), tag))
    else:
        wait_operation(api, api.delete_cluster(tag)["operationId"])
    return out


def _clean_run(run: Run, callers: set[str], tag: str = "fmclean") -> dict[str, list[Operation]]:
    """Create and delete one cluster without faults; the operations each workflow's functions called.

    The rows come from a second clean run (``fmwarm``): the functions are then warm, as they are for every cluster
    after the first, so calls made once per execution environment (STS ``GetCallerIdentity`` for the account id) are
    not rows that no cluster of the run would reach.
    """
    api = run.client()
    calls = run.sandbox.aws.extension.calls
    first = len(calls.calls())
    created = wait_operation(api, api.create_cluster(tag, ZONE, [GROUP])["operationId"])
    assert created["status"] == "SUCCEEDED", created
    middle = len(calls.calls())
    deleted = wait_operation(api, api.delete_cluster(tag)["operationId"])
    assert deleted["status"] == "SUCCEEDED", deleted
    recorded = calls.calls()
    api.close()
    return {
        "create": matrix.workflow_operations(recorded[first:middle], tag, callers),
        "delete": matrix.workflow_operations(recorded[middle:], tag, callers),
    }


def test_every_workflow_operation_under_every_fault_converges_or_fails_clean(labelled: Sandbox) -> None:
    started = time.monotonic()
    physical = labelled.deployment.physical  # type: ignore[union-attr]
    callers = {physical[lid] for lid in matrix.WORKFLOW_FUNCTIONS}
    run = Run(
        labelled,
        {
            "create": matrix.action_stages(matrix.ROOT / "statemachines" / "create_cluster.asl.json"),
            "delete": matrix.action_stages(matrix.ROOT / "statemachines" / "delete_cluster.asl.json"),
        },
    )
    _clean_run(run, callers, "fmclean")  # warms the functions: the rows are what a warm function calls
    operations = _clean_run(run, callers, "fmwarm")
    result = matrix.Matrix(rows=[(w, op) for w in ("create", "delete") for op in operations[w]])
    print(
        f"\nrecorded a clean create + delete (warm functions): {len(operations['create'])} create operations, "
        f"{len(operations['delete'])} delete operations ({time.monotonic() - started:.0f} s)"
    )

    queues = {workflow: runs.cases(workflow, ops) for workflow, ops in operations.items()}
    if ONLY:  # a few cells on their own, e.g. to check a fix: "create dynamodb:TransactWriteItems documented x1"
        runs.only(queues, result, ONLY)

    def settle(case: Case, cell: Cell | None, tag: str) -> None:
        runs.settle(run, result, queues, case, cell, tag)

    tags = (f"fm{n}" for n in itertools.count(1))
    finished = 0
    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="fault-matrix") as pool:
        running: set[Future[list[tuple[Case, Cell | None, str]]]] = set()
        while queues["create"] or queues["delete"] or running:
            out_of_time = time.monotonic() - started > BUDGET
            while not out_of_time and len(running) < WORKERS and (queues["create"] or queues["delete"]):
                create = queues["create"].popleft() if queues["create"] else None
                delete = queues["delete"].popleft() if queues["delete"] else None
                running.add(pool.submit(_lifecycle, run, next(tags), create, delete))
            if not running:  # out of time: what is queued stays unjudged
                break
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                for case, cell, tag in future.result():
                    settle(case, cell, tag)
                finished += 1
                print(
                    f"  {finished} clusters done, {len(result.cells)} cells judged, "
                    f"{sum(len(q) for q in queues.values())} cases queued ({time.monotonic() - started:.0f} s)",
                    flush=True,
                )

    print(result.render())
    print(result.summary())
    print(
        f"fault matrix wall time: {time.monotonic() - started:.0f} s ({WORKERS} clusters at once, time scale "
        f"{labelled.time_scale:g})"
    )
    unjudged = len(result.rows) * len(matrix.FAULTS) * len(matrix.TIMES) - len(result.cells)
    not_reached = [k for k, c in result.cells.items() if c.outcome == NOT_REACHED]
    assert not [k for k, c in result.cells.items() if c.outcome == BAD], result.summary()
    assert not not_reached, f"cells whose operation was not called: {not_reached}"
    if not ONLY:  # chosen cells: the others are not meant to run
        assert not unjudged, f"{unjudged} cells not judged within the budget of {BUDGET:.0f} s"
