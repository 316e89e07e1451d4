"""Benchmark: the critical path of one cluster creation in the sandbox, beside a sequential, poll-only baseline.

Three creations (after an unreported warm-up one), in simulated seconds (wall seconds x the sandbox's time scale):

- ``graph, events on``: the committed workflow (``statemachines/create_cluster.asl.json``) with the template's
  EventBridge rules (HyperPod events, EKS add-on health) waking its waits;
- ``graph, events off``: the same workflow with every rule that wakes a wait disabled (``aws.sagemaker`` and
  ``aws.eks``): each wait finds out at its poll interval (one stage waking another's wait, the access stage's
  success waking storage's, is the workflow's own dependency and stays);
- ``baseline``: the same steps over ``statemachines/build.py::SEQUENTIAL_GRAPH`` (every stage after the one
  before it, the previous design's order), rules disabled: sequential and poll-only, built from this commit's
  ``build.py`` and deployed over the create state machine for that run (restored afterwards), so it is
  reproducible on any commit. It is not the previous design's code: that one waited for the Deployment
  add-ons before any node existed and would fail against this sandbox's add-on health.

For each: each stage's span, the create's span against the sum of the stages (target <= 0.8x) and against
the baseline's span, the Step Functions state transitions (``*StateEntered`` history events; target <= 100),
and the detection delay of each wait: from the moment the sandbox first reports the resource ready (probed
every 20 wall ms, about 1 simulated second at 60x; a probe's own call time adds to it, so a delay near 0 can
even print slightly negative), or from the wait's first check when the resource was ready before it (then
only the check's own run counts), to the moment the workflow's check of it exits for the last time. The
sandbox compresses waiting, not the wall time a step takes: on a loaded machine a step's second is a
simulated minute at 60x, which the figures include.

Prints figures; asserts nothing. Run: ``.venv/bin/python benchmarks/critical_path.py [--time-scale 60]
[--by-state]`` (``--by-state`` also prints how often each state was entered).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STAGES = ["network", "access", "dependencies", "hyperpod", "storage", "verify"]
TITLES = {"hyperpod": "HyperPod"}
GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 2, "capacityType": "OnDemand"}
ADDONS = ("eks-pod-identity-agent", "cert-manager", "aws-mountpoint-s3-csi-driver", "metrics-server")
PROBE_SECONDS = 0.02

WAITS: list[tuple[str, str, tuple[str, ...]]] = [
    ("NAT gateway available", "Check NAT Gateway", ("nat",)),
    ("EKS ACTIVE", "Check EKS Cluster", ("eks",)),
    ("Kubernetes access (entry propagated)", "Check Kubernetes Access", ("access",)),
    ("add-ons requested, agent ACTIVE", "Check Add-ons", ("addonsCreated",)),
    ("HyperPod InService", "Check HyperPod Cluster", ("inService",)),
    ("PVC Bound", "Check Storage", ("pvcBound",)),
    ("nodes at target + add-ons ACTIVE", "Check Cluster Verification", ("nodesAtTarget", "addonsActive", "pvcBound")),
]
"""Each wait: its label, the check state of the workflow, and the readiness probes it waits for (all of them)."""


def _title(stage: str) -> str:
    return TITLES.get(stage, stage.title())


class Probe(threading.Thread):
    """Calls ``ready()`` every :data:`PROBE_SECONDS` wall seconds; records the wall time it first answered true."""

    def __init__(self, name: str, ready: Callable[[], bool]) -> None:
        super().__init__(daemon=True, name=f"probe-{name}")
        self.ready = ready
        self.at: float | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                if self.ready():
                    self.at = time.time()
                    return
            except Exception:  # noqa: BLE001 - the resource does not exist yet
                pass
            time.sleep(PROBE_SECONDS)


def probes(sandbox: Any, tag: str) -> dict[str, Probe]:
    """The readiness probes of one creation, through boto3 and the sandbox's Kubernetes API store."""
    import boto3

    session = boto3.session.Session(region_name=sandbox.region)

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=sandbox.aws_endpoint_url)

    ec2, eks, sm = client("ec2"), client("eks"), client("sagemaker")
    eks_name, hp_name = f"eks-cluster-{tag}", f"hp-cluster-{tag}"
    principal = os.environ["CONTROL_PLANE_ROLE_ARN"]

    def nat() -> bool:
        found = ec2.describe_nat_gateways(Filters=[{"Name": "tag:instantstart:cluster-tag", "Values": [tag]}])
        return any(g["State"] == "available" for g in found["NatGateways"])

    def eks_active() -> bool:
        return bool(eks.describe_cluster(name=eks_name)["cluster"]["status"] == "ACTIVE")

    def access() -> bool:
        policies = eks.list_associated_access_policies(clusterName=eks_name, principalArn=principal)
        return bool(policies["associatedAccessPolicies"]) and (
            sandbox.aws.extension.eks.kubernetes_access(eks_name, "GET", "/api") is None
        )

    def addon_statuses() -> dict[str, str]:
        return {a: eks.describe_addon(clusterName=eks_name, addonName=a)["addon"]["status"] for a in ADDONS}

    def addons_created() -> bool:
        # what the dependencies stage waits for: the agent ACTIVE; the Deployment add-ons only need to exist
        # (CREATING or DEGRADED until nodes join: verify checks them)
        return addon_statuses()["eks-pod-identity-agent"] == "ACTIVE"

    def in_service() -> bool:
        return bool(sm.describe_cluster(ClusterName=hp_name)["ClusterStatus"] == "InService")

    def pvc_bound() -> bool:
        pvc = sandbox.kube.cluster(eks_name).get("v1", "PersistentVolumeClaim", "s3-claim", "default")
        return bool(pvc and (pvc.get("status") or {}).get("phase") == "Bound")

    def nodes_at_target() -> bool:
        groups = sm.describe_cluster(ClusterName=hp_name).get("InstanceGroups", [])
        if not groups or any(g.get("CurrentCount", 0) < g.get("TargetCount", 1) for g in groups):
            return False
        nodes = sandbox.kube.cluster(eks_name).list("v1", "Node") or []
        healthy = [
            n
            for n in nodes
            if (n["metadata"].get("labels") or {}).get("sagemaker.amazonaws.com/node-health-status") == "Schedulable"
            and any(
                c["type"] == "Ready" and c["status"] == "True" for c in (n.get("status") or {}).get("conditions", [])
            )
        ]
        return len(healthy) >= sum(int(g.get("TargetCount", 0)) for g in groups)

    def addons_active() -> bool:
        return all(s == "ACTIVE" for s in addon_statuses().values())

    checks = {
        "nat": nat,
        "eks": eks_active,
        "access": access,
        "addonsCreated": addons_created,
        "inService": in_service,
        "pvcBound": pvc_bound,
        "nodesAtTarget": nodes_at_target,
        "addonsActive": addons_active,
    }
    return {name: Probe(name, fn) for name, fn in checks.items()}


def _ts(event: dict[str, Any]) -> float:
    stamp = event["timestamp"]
    return stamp.timestamp() if isinstance(stamp, datetime) else float(stamp)


def measure(sandbox: Any, api: Any, tag: str, scale: float) -> dict[str, Any]:
    """Create ``tag``, wait for it to end, and measure its execution history (simulated seconds)."""
    import boto3

    sfn = boto3.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    watching = probes(sandbox, tag)
    for probe in watching.values():
        probe.start()
    op = api.create_cluster(tag, "us-west-2c", [GROUP])
    deadline = time.monotonic() + 900
    status = "RUNNING"
    while time.monotonic() < deadline:
        status = api.get_operation(op["operationId"])["status"]
        if status in ("SUCCEEDED", "FAILED", "CANCELLED"):
            break
        time.sleep(0.2)
    for probe in watching.values():
        probe.stop.set()
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
    delays: dict[str, float | None] = {}
    for label, check, needs in WAITS:
        ready = [watching[n].at for n in needs]
        began, moved_on = entered(check), exited(check)
        delays[label] = (
            (moved_on[-1] - max(began[0], *(r for r in ready if r is not None))) * scale
            if began and moved_on and all(r is not None for r in ready)
            else None
        )
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
        "detectionDelays": delays,
    }


def set_wake_events(sandbox: Any, enabled: bool) -> list[str]:
    """Enable or disable every EventBridge rule on AWS resource events (``aws.sagemaker``, ``aws.eks``): with them
    off, every wait only finds out at its poll interval. Returns the rules' names."""
    import boto3

    events = boto3.client("events", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    names = []
    for rule in events.list_rules()["Rules"]:
        sources = json.loads(rule.get("EventPattern") or "{}").get("source", [])
        if {"aws.sagemaker", "aws.eks"} & set(sources):
            (events.enable_rule if enabled else events.disable_rule)(Name=rule["Name"])
            names.append(rule["Name"])
    return names


def _build_module() -> Any:
    spec = importlib.util.spec_from_file_location("statemachines_build", HERE.parent / "statemachines" / "build.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def deploy_create_workflow(sandbox: Any, graph: Any | None) -> None:
    """Put the create workflow over ``graph`` (None: the committed one) on the deployed create state machine."""
    import boto3

    build = _build_module()
    sfn = boto3.client("stepfunctions", endpoint_url=sandbox.aws_endpoint_url, region_name=sandbox.region)
    arn = os.environ["CREATE_CLUSTER_STATE_MACHINE_ARN"]
    deployed = json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"])
    steps_fn = next(
        s["Parameters"]["FunctionName"]
        for s in deployed["States"].values()
        if s.get("Type") == "Task" and "FunctionName" in s.get("Parameters", {})
    )
    definition = json.dumps(build.create_cluster(graph)).replace(build.STEPS_FN, steps_fn)
    sfn.update_state_machine(stateMachineArn=arn, definition=definition)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:8.0f}"


def report(runs: dict[str, dict[str, Any]], baseline: str) -> None:
    """Print the runs side by side."""
    names = list(runs)
    width = 30
    print(f"{'':40}" + "".join(f"{n:>{width}}" for n in names))

    def row(label: str, values: list[str]) -> None:
        print(f"{label:40}" + "".join(f"{v:>{width}}" for v in values))

    row("outcome", [str(runs[n].get("status")) for n in names])
    for stage in STAGES:
        row(f"  {stage} span (sim s)", [_fmt(runs[n]["stageSpans"].get(stage)) for n in names])
    row("sum of the stages (sim s)", [_fmt(runs[n]["sumOfStages"]) for n in names])
    row("create span (sim s)", [_fmt(runs[n]["span"]) for n in names])
    row(
        "span / sum of stages (<= 0.8)",
        [f"{runs[n]['span'] / runs[n]['sumOfStages']:.2f}x" if runs[n]["sumOfStages"] else "-" for n in names],
    )
    base = runs[baseline]["span"]
    row("span / baseline span", [f"{runs[n]['span'] / base:.2f}x" if base else "-" for n in names])
    row("state transitions (<= 100)", [str(runs[n]["transitions"]) for n in names])
    row("history events", [str(runs[n]["historyEvents"]) for n in names])
    print("detection delay (sim s: ready, or the wait's first check when later -> the check exits)")
    for label, _, _ in WAITS:
        row(f"  {label}", [_fmt(runs[n]["detectionDelays"].get(label)) for n in names])


def main() -> None:
    """Measure one creation per mode; print them side by side."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--time-scale", type=float, default=60.0)
    parser.add_argument("--by-state", action="store_true", help="also print how often each state was entered")
    args = parser.parse_args()
    from instantstart_client.api import InstantStartClient
    from instantstart_sandbox.runner import Sandbox

    build = _build_module()
    sandbox = Sandbox(time_scale=args.time_scale).start()
    runs: dict[str, dict[str, Any]] = {}
    baseline = "baseline: sequential, polls"
    try:
        os.environ.update(sandbox.client_environment())
        api = InstantStartClient(sandbox.api_url, region=sandbox.region)
        # Not reported: the first creation pays the in-process functions' first imports (wall seconds, so
        # simulated minutes), which would be charged to whichever mode ran first.
        measure(sandbox, api, "cp-warm-up", args.time_scale)
        runs["graph, events on"] = measure(sandbox, api, "cp-events", args.time_scale)
        rules = set_wake_events(sandbox, False)
        runs["graph, events off"] = measure(sandbox, api, "cp-polling", args.time_scale)
        deploy_create_workflow(sandbox, build.SEQUENTIAL_GRAPH)
        runs[baseline] = measure(sandbox, api, "cp-baseline", args.time_scale)
        deploy_create_workflow(sandbox, None)
        set_wake_events(sandbox, True)
    finally:
        sandbox.stop()
    print(
        f"critical path of one creation (1 group of {GROUP['instanceCount']} x {GROUP['instanceType']}), "
        f"time scale {args.time_scale:g}; events off = rules disabled: {', '.join(sorted(rules))}"
    )
    report(runs, baseline)
    if args.by_state:
        for name in runs:
            print(f"\nstates entered, {name} (most first)")
            for state, count in sorted(runs[name]["enteredByState"].items(), key=lambda kv: -kv[1]):
                print(f"  {count:4d}  {state}")


if __name__ == "__main__":
    main()
