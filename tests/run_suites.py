"""Run every check of ``make test`` as parallel processes and print each suite's wall time.

The suites run in three lanes at once: the sandbox suites (integration and MCP), split over pytest-xdist
workers (each worker starts its own sandbox: moto's backends are process-global); lint, types, then the unit
and contract tests one after another; and the web console's browser suite, then the sandbox's own suite. Each suite's
output goes to ``.test-logs/<suite>.log``; the log of a failed suite is printed. Exit status 1 when any
suite failed.

Usage: ``python tests/run_suites.py [--only SUITE ...] [--under-load [N]] [--repeat K]`` (``make test`` calls it
without options; ``make test-under-load`` runs it three times in a row beside two busy processes, the check that no
test depends on the machine being idle: issue 28, item 5).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
LOGS = ROOT / ".test-logs"
ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
"""The suites' environment: this one, but Python writes its bytecode caches (``__pycache__``, ignored by git). With
``PYTHONDONTWRITEBYTECODE`` set (as on some CI hosts), each of the run's Python processes (every xdist worker, every
CLI and MCP proxy a test starts) compiled the project's sources again, and pytest rewrote every test module's asserts
again: 4-5 CPU-seconds per pytest process."""


@dataclass
class Suite:
    """One check: its commands run in order in one lane; the first failing command fails the suite."""

    name: str
    commands: list[list[str]]
    returncode: int | None = None
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = LOGS / f"{self.name}.log"

    def run(self) -> None:
        """Run the commands, appending their output to the suite's log; wall and CPU seconds (user + system of the
        commands and the processes they waited for, e.g. pytest-xdist workers) are kept."""
        start = time.monotonic()
        with self.log.open("w") as out:
            for command in self.commands:
                out.write(f"$ {' '.join(command)}\n")
                out.flush()
                process = subprocess.Popen(command, cwd=ROOT, env=ENVIRONMENT, stdout=out, stderr=subprocess.STDOUT)
                _, status, usage = os.wait4(process.pid, 0)
                process.returncode = self.returncode = os.waitstatus_to_exitcode(status)
                self.cpu_seconds += usage.ru_utime + usage.ru_stime
                if self.returncode:
                    break
        self.seconds = time.monotonic() - start


def pytest(*args: str) -> list[str]:
    """A pytest command of this environment, without schemathesis' pytest plugin (only ``make fuzz`` uses it; importing
    it costs every pytest process, each xdist worker included, about 2.5 CPU-seconds)."""
    return [str(BIN / "pytest"), "-q", "-p", "no:cacheprovider", "-p", "no:schemathesis", *args]


def lanes(workers: int) -> list[list[Suite]]:
    """The suites of ``make test`` grouped in lanes (a lane runs its suites one after another)."""
    # pytest-xdist hands whole modules to its workers (``--dist loadfile``) in collection order, which
    # tests/conftest.py sorts slowest first; its default reorder (by number of tests per module) would undo that
    # and leave a slow module to run alone at the end.
    integration = ["tests/integration", "tests/mcp", "-n", str(workers), "--dist", "loadfile", "--no-loadscope-reorder"]
    sandbox_lane = [Suite("integration", [pytest(*integration)])]
    # The web console in headless Chromium against a sandbox of its own, then the sandbox's own suite: both wait on
    # a simulated clock more than they compute (sandbox: about 35-45 CPU-seconds in 120-160 s of wall time), so they
    # share a lane beside the CPU-bound checks, which would otherwise be the longest lane.
    # The sandbox suite waits on its simulated clocks far more than it computes (about 80 CPU-seconds in 340 s of wall
    # time in one process): three xdist workers overlap the waits (about 80 s).
    browser_lane = [
        Suite("console", [pytest("tests/console")]),
        Suite("sandbox", [pytest("tests/sandbox", "-n", "3")]),
    ]
    cpu_lane = [
        Suite(
            "lint",
            [
                [str(BIN / "ruff"), "check", "."],
                [str(BIN / "ruff"), "format", "--check", "."],
                [str(BIN / "deptry"), "."],
                [str(BIN / "deptry"), "sandbox", "--config", "sandbox/pyproject.toml"],
                [str(BIN / "lint-imports")],
            ],
        ),
        Suite("typecheck", [[str(BIN / "mypy")]]),
        # The contract tests run cfn-lint (errors and warnings), compare the OpenAPI document's copies and the
        # template's routes with the generator's and the state machines with the builder's, in-process: the same
        # checks as `make contract`'s commands, without three more interpreters loading them.
        Suite("unit", [pytest("tests/unit", "tests/contract", "-n", "2")]),
    ]
    return [sandbox_lane, cpu_lane, browser_lane]


BUSY_LOOP = "while True: pass"
"""What each load process runs: one core's worth of pure CPU, at the suites' own priority."""


def start_load(processes: int) -> list[subprocess.Popen[bytes]]:
    """Start ``processes`` busy Python processes (each keeps one CPU busy) beside the suites; stop them with
    :func:`stop_load`."""
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(processes)]


def stop_load(load: list[subprocess.Popen[bytes]]) -> None:
    """Stop the load processes :func:`start_load` started."""
    for process in load:
        process.kill()
    for process in load:
        process.wait()


def run_once(selected: list[list[Suite]], label: str) -> int:
    """Run the lanes in parallel; print each suite's status and wall time; 1 when any failed."""
    start = time.monotonic()

    def run_lane(lane: list[Suite]) -> None:
        for suite in lane:
            suite.run()
            status = "passed" if suite.returncode == 0 else "FAILED"
            print(f"  {suite.name:<12} {status:<7} {suite.seconds:6.1f} s", flush=True)

    threads = [threading.Thread(target=run_lane, args=(lane,)) for lane in selected if lane]
    print(f"make test{label}: suites in parallel lanes (logs in .test-logs/)", flush=True)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = time.monotonic() - start
    suites = [s for lane in selected for s in lane]
    failed = [s for s in suites if s.returncode != 0]
    for suite in failed:
        print(f"\n===== {suite.name} failed; its log ({suite.log.relative_to(ROOT)}) ends with:\n")
        print("\n".join(suite.log.read_text().splitlines()[-80:]))
    print(f"\nwall and CPU time per suite ({os.cpu_count()} CPUs):")
    for suite in suites:
        status = "passed" if suite.returncode == 0 else "FAILED"
        print(f"  {suite.name:<12} {status:<7} {suite.seconds:6.1f} s wall {suite.cpu_seconds:7.1f} s CPU")
    cpu = sum(suite.cpu_seconds for suite in suites)
    print(f"  {'total':<12} {'':<7} {total:6.1f} s wall {cpu:7.1f} s CPU")
    return 1 if failed else 0


def main() -> int:
    """Parse the options; run the suites (``--repeat`` times, beside ``--under-load`` busy processes); 1 when any run
    failed (the runs go on, so every summary is printed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="run only these suites")
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("INSTANTSTART_TEST_WORKERS", "4")),
        help="pytest-xdist workers of the integration suite (each runs its own sandbox)",
    )
    parser.add_argument(
        "--under-load",
        type=int,
        nargs="?",
        const=2,
        default=0,
        metavar="N",
        help="run beside N busy processes (default 2 when given without a number)",
    )
    parser.add_argument("--repeat", type=int, default=1, metavar="K", help="run every suite K times in a row")
    args = parser.parse_args()
    LOGS.mkdir(exist_ok=True)
    load = start_load(args.under_load)
    results = []
    try:
        for run in range(1, args.repeat + 1):
            selected = [[s for s in lane if not args.only or s.name in args.only] for lane in lanes(args.workers)]
            label = f" (run {run} of {args.repeat})" if args.repeat > 1 else ""
            if args.under_load:
                label += f" beside {args.under_load} busy processes"
            results.append(run_once(selected, label))
    finally:
        stop_load(load)
    if len(results) > 1:
        print(f"\nruns: {', '.join('passed' if r == 0 else 'FAILED' for r in results)}")
    return 1 if any(results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
