"""What the sandbox's two Lambda runtimes cost, measured in one run: ``thread`` (the suites' default) and ``process``
(``make demo``: each execution environment an awslambdaric process on the built artifacts).

For each runtime, in a fresh interpreter of its own (moto's state is process-global): the sandbox's start, the first
``GET /clusters`` through the HTTP API (a cold start of the API function), the median of warm ones, and one cluster
created to READY (wall seconds, and CPU seconds of the sandbox's process and every function process it started).
Prints each figure and the process/thread ratio.

Usage: ``.venv/bin/python benchmarks/lambda_runtimes.py [--warm 30] [--time-scale 480]`` (after ``make build-host``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUP = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1, "capacityType": "OnDemand"}


def measure(runtime: str, warm: int, time_scale: float) -> dict[str, float]:
    """The figures of one runtime, in this process."""
    from instantstart_client.api import InstantStartClient
    from instantstart_sandbox.runner import Sandbox

    started = time.monotonic()
    sandbox = Sandbox(time_scale=time_scale, lambda_runtime=runtime).start()  # type: ignore[arg-type]
    figures = {"start_s": time.monotonic() - started}
    try:
        os.environ.update(sandbox.client_environment())
        api = InstantStartClient(sandbox.api_url, region=sandbox.region)
        began = time.monotonic()
        api.list_clusters()
        figures["cold_get_ms"] = (time.monotonic() - began) * 1000
        samples = []
        for _ in range(warm):
            began = time.monotonic()
            api.list_clusters()
            samples.append((time.monotonic() - began) * 1000)
        figures["warm_get_ms"] = statistics.median(samples)
        cpu0 = _cpu()
        began = time.monotonic()
        api.create_cluster("bench", "us-west-2c", [GROUP])
        while api.get_cluster("bench")["status"] not in ("READY", "FAILED", "DEGRADED"):
            time.sleep(0.2)
        figures["create_wall_s"] = time.monotonic() - began
        sandbox.stop()  # the function processes end: their CPU is counted
        figures["create_cpu_s"] = _cpu() - cpu0
    finally:
        sandbox.stop()
    return figures


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    """Run both runtimes, each in a child interpreter, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=30)
    parser.add_argument("--time-scale", type=float, default=480.0)
    parser.add_argument("--child", choices=("thread", "process"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.warm, args.time_scale)))
        return 0
    results = {}
    for runtime in ("thread", "process"):
        command = [sys.executable, __file__, "--child", runtime, "--warm", str(args.warm)]
        command += ["--time-scale", str(args.time_scale)]
        out = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT).stdout
        results[runtime] = json.loads(out.strip().splitlines()[-1])
    print(f"{'figure':16} {'thread':>10} {'process':>10} {'process/thread':>15}")
    for key in results["thread"]:
        thread, process = results["thread"][key], results["process"][key]
        print(f"{key:16} {thread:10.2f} {process:10.2f} {process / thread:14.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
