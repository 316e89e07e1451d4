"""Crash anywhere (``make crash``; not part of ``make test``, whose integration suite keeps a representative set in
``tests/integration/test_crash_recovery.py``).

Every step action of the create and delete workflows, taken from a recorded clean run with the most AWS calls one
invocation of it made, is killed after each of those calls (``n = 1..calls``) and, once, timed out (after its first
AWS call: a point every invocation that calls AWS reaches). The lifecycles (create, then delete) run concurrently in
one sandbox, each with its own cluster tag; each must end READY then DELETED with the records and the AWS resources
of a clean run (normalised: tags, ids, timestamps) and no resource beyond the clean run's count.
The figures print at the end.

``INSTANTSTART_CRASH_WORKERS`` lifecycles run at a time (default 10) and the steps function gets
``INSTANTSTART_CRASH_ENVIRONMENTS`` execution environments (default 4, as Lambda scales out: a step retried after a
crash inside the VPC's subnet lock waits out the lock's 60-second lease without holding up every other cluster);
``INSTANTSTART_CRASH_MAX_CALLS`` caps ``n`` for a quicker partial sweep (default: none).
"""

from __future__ import annotations

import os
import time

from instantstart_client.api import InstantStartClient
from instantstart_sandbox import lambdas
from instantstart_sandbox.runner import Sandbox
from tests.crash.sweep import (
    CRASH_ERRORS,
    STEPS_FUNCTION,
    Aws,
    Lifecycle,
    StepAction,
    fired,
    judge,
    recorded_steps,
    run_all,
    store_of,
)

WORKERS = int(os.environ.get("INSTANTSTART_CRASH_WORKERS", "10"))
ENVIRONMENTS = int(os.environ.get("INSTANTSTART_CRASH_ENVIRONMENTS", "4"))
MAX_CALLS = int(os.environ.get("INSTANTSTART_CRASH_MAX_CALLS", "0")) or None


def test_every_step_killed_after_each_of_its_aws_calls_converges_to_a_clean_runs_records_and_resources(
    sandbox: Sandbox, api: InstantStartClient
) -> None:
    started = time.monotonic()
    lambdas.set_environments(ENVIRONMENTS, sandbox.function_name(STEPS_FUNCTION))
    aws, store = Aws(sandbox), store_of(sandbox)
    clean, twin = run_all(sandbox, api, store, aws, {"crash-clean": [], "crash-twin": []}, workers=2)
    assert clean.create == clean.delete == "SUCCEEDED", clean
    # two clean runs compare equal: what the comparison reports is what a crash changed, not noise
    assert not judge(twin, clean).problems, judge(twin, clean).problems

    steps = recorded_steps(sandbox, "crash-clean")
    assert {s.workflow for s in steps} == {"create", "delete"}
    deepest = max(s.calls for s in steps) if MAX_CALLS is None else min(MAX_CALLS, max(s.calls for s in steps))
    plans: dict[str, list[tuple[StepAction, int, str]]] = {
        f"crash{k}": [(s, k, CRASH_ERRORS[k % 2]) for s in steps if s.calls >= k] for k in range(1, deepest + 1)
    }
    # a timeout after the step's first AWS call (before the handler for a step that made none): the crash plans cover
    # every later call; a later point is not reached by every invocation (how many calls a round makes depends on
    # timing and on what a warm environment kept), so a timeout armed at the clean run's fewest calls could miss
    plans["crash-timeout"] = [(s, min(1, s.fewest), "timeout") for s in steps]

    def progress(life: Lifecycle) -> None:
        print(f"  {life.tag}: create {life.create}, delete {life.delete} ({life.seconds:.0f} s)", flush=True)

    lifecycles = run_all(sandbox, api, store, aws, plans, workers=WORKERS, progress=progress)
    verdicts = [judge(life, clean) for life in lifecycles]
    killed = fired(sandbox)

    planned = {(life.tag, step.name) for life in lifecycles for step, _, kind in life.planned if kind != "timeout"}
    crash_points = sum(min(s.calls, deepest) for s in steps)
    reached = sum(1 for key in planned if killed.get(key))
    timeouts = sum(1 for step in steps if killed.get(("crash-timeout", step.name)))
    extra = sum(n for v in verdicts for n in v.extra.values())
    converged = sum(1 for v in verdicts if v.converged)
    width = max(len(s.name) for s in steps)
    print(
        f"\nCrash anywhere: {len(steps)} step actions ({sum(s.workflow == 'create' for s in steps)} create, "
        f"{sum(s.workflow == 'delete' for s in steps)} delete), from the recorded run of crash-clean"
    )
    print(f"{'step':<{width}}  calls  killed  timed out")
    for step in steps:
        kills = sum(killed.get((f"crash{k}", step.name), 0) for k in range(1, min(step.calls, deepest) + 1))
        print(f"{step.name:<{width}}  {step.calls:>5}  {kills:>6}  {killed.get(('crash-timeout', step.name), 0):>9}")
    print(
        f"crash points: {crash_points} (killed: {reached}; the rest ended before that call in their lifecycle), "
        f"timeouts: {timeouts}/{len(steps)}, lifecycles: {len(lifecycles)} (+2 clean), converged: {converged}, "
        f"duplicates: {extra}, wall time: {time.monotonic() - started:.0f} s"
    )
    failures = [v for v in verdicts if not v.converged]
    for verdict in failures[:10]:
        life = verdict.lifecycle
        print(f"NOT CONVERGED {life.tag} (killed: {sorted(n for (t, n) in killed if t == life.tag)})")
        for problem in verdict.problems[:15]:
            print(f"    {problem}")
    assert not failures, f"{len(failures)} lifecycles did not converge: {[v.lifecycle.tag for v in failures]}"
    assert extra == 0
    assert timeouts == len(steps), "every step timed out once"
    assert reached >= 0.9 * crash_points, "most crash points were reached"
