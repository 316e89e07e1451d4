"""Benchmark: the critical path of one cluster creation in the sandbox, with and without HyperPod events.

For each run it prints, in simulated seconds (wall seconds x the sandbox's time scale): each stage's
span, the create's span against the sum of the stages (the overlap the dependency graph buys; target
<= 0.8x), the number of Step Functions state transitions (``*StateEntered`` history events; target
<= 100), and the detection delay of the two long waits: from the moment AWS reports the HyperPod
cluster InService (and every instance group at its target count) to the moment the workflow moves
on. "events off" disables the template's HyperPod EventBridge rule, so the waits can only poll.

It prints a recorded baseline beside the figures: the same measurements of the sequential, poll-only
workflow of the previous design (``benchmarks/critical_path_baseline.json``, recorded with this script
on that commit with ``--record``). Prints figures; asserts nothing.

Run: ``.venv/bin/python benchmarks/critical_path.py [--time-scale 60] [--by-state] [--record FILE]``
(``--by-state`` also prints how often each state was entered).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "critical_path_baseline.json"
STAGES = ["network", "access", "dependencies", "hyperpod", "storage", "verify"]
TITLES = {"hyperpod": "HyperPod"}
GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 2, "capacityType": "OnDemand"}


def _title(stage: str) -> str:
    return TITLES.get(stage, stage.title())


class Watcher(threading.Thread):
    """Polls SageMaker DescribeCluster every few wall milliseconds: when AWS first reported InService / at target."""

    def __init__(self, sm: Any, name: str) -> None:
        super().__init__(daemon=True)
        self.sm, self.name = sm, name
        self.in_service: float | None = None
        self.at_target: float | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                found = self.sm.describe_cluster(ClusterName=self.name)
            except Exception:  # noqa: BLE001 - not created yet
                time.sleep(0.02)
                continue
            now = time.time()
            if self.in_service is None and found["ClusterStatus"] == "InService":
                self.in_service = now
            groups = found.get("InstanceGroups", [])
            if (
                self.at_target is None
                and groups
                and all(g.get("CurrentCount", 0) >= g.get("TargetCount", 1) for g in groups)
            ):
                self.at_target = now
            time.sleep(0.02)


def _ts(event: dict[str, Any]) -> float:
    stamp = event["timestamp"]
    return stamp.timestamp() if isinstance(stamp, datetime) else float(stamp)


def measure(sandbox: Any, api: Any, tag: str, scale: float) -> dict[str, Any]:
    """Create ``tag``, wait for it to end, and measure its execution history (simulated seconds)."""
    import boto3

    session = boto3.session.Session(region_name=sandbox.region)
    sm = session.client("sagemaker", endpoint_url=sandbox.aws_endpoint_url)
    sfn = session.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url)
    watcher = Watcher(sm, f"hp-cluster-{tag}")
    watcher.start()
    op = api.create_cluster(tag, "us-west-2c", [GROUP])
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        status = api.get_operation(op["operationId"])["status"]
        if status in ("SUCCEEDED", "FAILED", "CANCELLED"):
            break
        time.sleep(0.2)
    watcher.stop.set()
    arn = api.get_operation(op["operationId"])["executionArn"]
    events: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"executionArn": arn, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**kwargs)
        events += page["events"]
        if not page.get("nextToken"):
            break
        kwargs["nextToken"] = page["nextToken"]
    start, end = _ts(events[0]), _ts(events[-1])

    def entered(name: str) -> list[float]:
        return [
            _ts(e)
            for e in events
            if e["type"].endswith("StateEntered") and e["stateEnteredEventDetails"]["name"] == name
        ]

    def exited(name: str) -> list[float]:
        return [
            _ts(e) for e in events if e["type"].endswith("StateExited") and e["stateExitedEventDetails"]["name"] == name
        ]

    spans: dict[str, float] = {}
    for stage in STAGES:
        began, completed = entered(f"Begin {_title(stage)} Stage"), exited(f"Complete {_title(stage)} Stage")
        if began and completed:
            spans[stage] = (completed[-1] - began[-1]) * scale
    hyperpod_done = entered("Complete HyperPod Stage")
    verify_done = entered("Complete Verify Stage")
    return {
        "status": status,
        "stageSpans": spans,
        "span": (end - start) * scale,
        "sumOfStages": sum(spans.values()),
        "transitions": sum(1 for e in events if e["type"].endswith("StateEntered")),
        "enteredByState": dict(
            Counter(e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered"))
        ),
        "historyEvents": len(events),
        "hyperPodDetectionDelay": (hyperpod_done[-1] - watcher.in_service) * scale
        if hyperpod_done and watcher.in_service
        else None,
        "nodesDetectionDelay": (verify_done[-1] - watcher.at_target) * scale
        if verify_done and watcher.at_target
        else None,
    }


def set_hyperpod_events(sandbox: Any, enabled: bool) -> None:
    """Enable or disable the template's HyperPod EventBridge rule(s): with them off, waits can only poll."""
    import boto3

    events = boto3.client("events", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    for rule in events.list_rules()["Rules"]:
        if "HyperPod" in rule["Name"]:
            (events.enable_rule if enabled else events.disable_rule)(Name=rule["Name"])


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:8.0f}"


def report(runs: dict[str, dict[str, Any]]) -> None:
    """Print the runs side by side."""
    names = list(runs)
    print(f"{'':34}" + "".join(f"{n:>22}" for n in names))

    def row(label: str, values: list[str]) -> None:
        print(f"{label:34}" + "".join(f"{v:>22}" for v in values))

    row("outcome", [str(runs[n].get("status")) for n in names])
    for stage in STAGES:
        row(f"  {stage} span (sim s)", [_fmt(runs[n]["stageSpans"].get(stage)) for n in names])
    row("sum of the stages (sim s)", [_fmt(runs[n]["sumOfStages"]) for n in names])
    row("create span (sim s)", [_fmt(runs[n]["span"]) for n in names])
    row(
        "span / sum of stages (<= 0.8)",
        [f"{runs[n]['span'] / runs[n]['sumOfStages']:.2f}x" if runs[n]["sumOfStages"] else "-" for n in names],
    )
    row("state transitions (<= 100)", [str(runs[n]["transitions"]) for n in names])
    row("history events", [str(runs[n]["historyEvents"]) for n in names])
    row("InService detection delay (s)", [_fmt(runs[n]["hyperPodDetectionDelay"]) for n in names])
    row("nodes-at-target detection (s)", [_fmt(runs[n]["nodesDetectionDelay"]) for n in names])


def main() -> None:
    """Measure one creation with HyperPod events on and one with them off; print them beside the baseline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=60.0)
    parser.add_argument("--record", type=Path, help="write this run's figures as a baseline file")
    parser.add_argument("--by-state", action="store_true", help="also print how often each state was entered")
    args = parser.parse_args()
    from instantstart_client.api import InstantStartClient
    from instantstart_sandbox.runner import Sandbox

    sandbox = Sandbox(time_scale=args.time_scale).start()
    try:
        os.environ.update(sandbox.client_environment())
        api = InstantStartClient(sandbox.api_url, region=sandbox.region)
        runs = {"events on": measure(sandbox, api, "cp-events", args.time_scale)}
        set_hyperpod_events(sandbox, False)
        runs["events off"] = measure(sandbox, api, "cp-polling", args.time_scale)
        set_hyperpod_events(sandbox, True)
    finally:
        sandbox.stop()
    if args.record:
        args.record.write_text(json.dumps(runs, indent=2) + "\n")
    shown = dict(runs)
    if BASELINE.exists() and not args.record:
        for name, figures in json.loads(BASELINE.read_text()).items():
            shown[f"baseline, {name}"] = figures
    print(
        f"critical path of one creation (1 group of {GROUP['instanceCount']} x {GROUP['instanceType']}), "
        f"time scale {args.time_scale:g}"
    )
    report(shown)
    if args.by_state:
        for name in runs:
            print(f"\nstates entered, {name} (most first)")
            for state, count in sorted(runs[name]["enteredByState"].items(), key=lambda kv: -kv[1]):
                print(f"  {count:4d}  {state}")


if __name__ == "__main__":
    main()
