"""Benchmark: sandbox start-up, one full cluster creation, API latency and Lambda work.

Prints figures; asserts nothing. Run: ``.venv/bin/python benchmarks/bench_sandbox.py [--time-scale 60]``.
The issue's target is a whole ``make demo`` (after installation) under 90 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--time-scale", type=float, default=60.0)
    parser.add_argument("--requests", type=int, default=50, help="GET requests for the latency figures")
    args = parser.parse_args()

    t0 = time.monotonic()
    from instantstart_sandbox import lambdas
    from instantstart_sandbox.runner import Sandbox

    sandbox = Sandbox(time_scale=args.time_scale).start()
    started = time.monotonic() - t0
    os.environ.update(sandbox.client_environment())
    from instantstart_client.api import InstantStartClient

    api = InstantStartClient(sandbox.api_url, region=sandbox.region)
    group = {
        "instanceGroupName": "accel",
        "instanceType": "ml.g6.4xlarge",
        "instanceCount": 1,
        "capacityType": "OnDemand",
    }
    t1 = time.monotonic()
    op = api.create_cluster("bench", "us-west-2c", [group])
    stage_done: dict[str, float] = {}
    while True:
        cluster = api.get_cluster("bench")
        for stage in cluster["stages"]:
            if stage["status"] == "SUCCEEDED" and stage["name"] not in stage_done:
                stage_done[stage["name"]] = time.monotonic() - t1
        if cluster["status"] in ("READY", "FAILED"):
            break
        time.sleep(0.25)
    created = time.monotonic() - t1

    latencies = []
    for _ in range(args.requests):
        t = time.perf_counter()
        api.get_cluster("bench")
        latencies.append((time.perf_counter() - t) * 1000)
    latencies.sort()
    invocations = lambdas.invocations()
    by_function: dict[str, list[float]] = {}
    for inv in invocations:
        by_function.setdefault(inv["function"], []).append(inv["seconds"] * 1000)
    sandbox.stop()

    print(f"time scale                    {args.time_scale:g} simulated s / wall s")
    print(f"sandbox start                 {started:6.1f} s")
    print(f"create cluster -> {cluster['status']:<11} {created:6.1f} s wall (operation {op['operationId']})")
    for name, at in stage_done.items():
        print(f"  stage {name:<14} done at {at:6.1f} s")
    print(
        f"GET /clusters/{{tag}} latency  p50 {statistics.median(latencies):6.1f} ms   "
        f"p95 {latencies[int(len(latencies) * 0.95) - 1]:6.1f} ms   (n={len(latencies)})"
    )
    for name, times in sorted(by_function.items()):
        print(f"lambda {name:<38} {len(times):4d} invocations, mean {statistics.mean(times):6.1f} ms")
    print(f"peak RSS                      {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:6.0f} MiB")


if __name__ == "__main__":
    main()
