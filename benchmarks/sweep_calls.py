"""Benchmark: the reconciliation sweep over 1,000 clusters: AWS calls per sweep and per API, the pace, the duration.

Two parts, one run:

1. **Real clusters** (``--real``, default 3): that many clusters created through the API in the sandbox (every AWS
   resource a create makes: EKS cluster and add-ons, HyperPod cluster, roles, bucket, the storage claim), then one
   sweep fired as the template's schedule fires it. Its calls per cluster and API are what a quiet READY cluster
   costs, drift check included; multiplied by the pace (``CLUSTERS_PER_SECOND``) they are the per-second rate of
   each API a sweep of any number of such clusters keeps, and multiplied by 1,000 the calls of a 1,000-cluster sweep.
2. **1,000 seeded records** (``--clusters``, ``--running``): cluster records seeded through the store into moto's
   DynamoDB (the template's table), most READY and idle, some with a RUNNING operation whose Step Functions
   execution runs (moto's), swept once (``instantstart.clusters.sweep.run_sweep``) on a simulated clock (its pacing
   waits advance the clock, no wall time passes) with a Lambda's 900 s: the claims, the cursor, the duration and
   DynamoDB's calls at that count. These records have no AWS resources, so their drift checks find nothing to read
   (moto's SageMaker answers ``ValidationException`` for a missing cluster, counted as errors): part 1 gives the
   per-cluster AWS figures.

Asserts nothing. Run: ``.venv/bin/python benchmarks/sweep_calls.py [--real 3] [--clusters 1000] [--running 40]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOW = "2026-12-01T00:00:00Z"


def _table(ddb: object, name: str) -> None:
    import cfnlint.decode

    decoded, errors = cfnlint.decode.decode(str(ROOT / "template.yaml"))
    assert decoded is not None and not errors, errors
    props = json.loads(json.dumps(decoded["Resources"]["Table"]["Properties"], default=str))
    ddb.create_table(  # type: ignore[attr-defined]
        TableName=name,
        BillingMode=props["BillingMode"],
        AttributeDefinitions=props["AttributeDefinitions"],
        KeySchema=props["KeySchema"],
        GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
    )


def main() -> None:
    """Seed, sweep, print."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--running", type=int, default=40, help="clusters with a RUNNING operation")
    parser.add_argument("--real", type=int, default=3, help="clusters created in the sandbox for part 1 (0: skip)")
    parser.add_argument("--time-scale", type=float, default=120.0, help="the sandbox's time scale for part 1")
    parser.add_argument("--part", choices=("all", "real", "seeded"), default="all", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part == "real":
        _real(args.real, args.time_scale)
        return
    if args.real and args.part == "all":
        # part 1 in a process of its own: the sandbox's patched botocore must not serve part 2's moto
        part = [
            sys.executable,
            __file__,
            "--part",
            "real",
            "--real",
            str(args.real),
            "--time-scale",
            str(args.time_scale),
        ]
        subprocess.run(part, check=True)
    os.environ.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-west-2",
            "AWS_REGION": "us-west-2",
            "TABLE_NAME": "bench-table",
        }
    )
    os.environ.pop("AWS_ENDPOINT_URL", None)
    from moto import mock_aws

    with mock_aws():
        _run(args.clusters, args.running)


def _real(count: int, time_scale: float) -> None:
    """Part 1: ``count`` clusters created through the API in the sandbox, then one sweep as the schedule fires it."""
    from instantstart_client.api import InstantStartClient
    from instantstart_sandbox.runner import Sandbox

    saved = dict(os.environ)
    sandbox = Sandbox(time_scale=time_scale, scheduled_firing=False).start()
    from instantstart.clusters.sweep import CLAIM_SECONDS, CLUSTERS_PER_SECOND  # the built layer, once started

    try:
        os.environ.update(sandbox.client_environment())
        api = InstantStartClient(sandbox.api_url, region=sandbox.region)
        group = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1}
        tags = [f"sweep{i}" for i in range(count)]
        for tag in tags:
            api.create_cluster(tag, "us-west-2c", [group])
        for tag in tags:
            while (status := api.get_cluster(tag)["status"]) not in ("READY", "FAILED", "DEGRADED"):
                time.sleep(0.5)
            assert status == "READY", f"{tag} ended {status}"
        sandbox.clock.sleep(CLAIM_SECONDS + 1)  # any earlier sweep's claims expired
        summary = dict(sandbox.schedules.fire(sandbox.deployment.physical["ReconcileSchedule"]))  # type: ignore[union-attr]
    finally:
        sandbox.stop()
        os.environ.clear()
        os.environ.update(saved)
    checked = max(1, int(summary["clustersChecked"]))
    calls: dict[str, int] = dict(summary["awsCalls"])
    aws = {api_name: n for api_name, n in calls.items() if not api_name.startswith("dynamodb:")}
    print(f"part 1: {count} READY clusters created in the sandbox, one sweep: checked {summary['clustersChecked']}, ")
    print(f"  actions {summary['actions'] or '{}'}, errors {summary['errors']}, finished {summary['finished']}")
    print(
        f"  AWS calls per cluster: {sum(calls.values()) / checked:.2f} in all, {sum(aws.values()) / checked:.2f} "
        f"outside DynamoDB; at {CLUSTERS_PER_SECOND:g} clusters/s"
    )
    print(f"  {'API':<40} {'per cluster':>12} {'per second':>11} {'per 1,000':>10}")
    for api_name, n in sorted(calls.items()):
        per = n / checked
        print(f"  {api_name:<40} {per:>12.2f} {per * CLUSTERS_PER_SECOND:>11.2f} {per * 1000:>10.0f}")
    print()


def _run(count: int, running: int) -> None:
    from instantstart.clusters import sweep
    from instantstart.config import Settings
    from instantstart.models.cluster import CreateClusterRequest
    from instantstart.models.common import ClusterStatus, OperationStatus, OperationType, set_clock
    from instantstart.models.records import ClusterRecord, OperationRecord
    from instantstart.runtime import Runtime
    from instantstart.store.clusters import _cluster_item
    from instantstart.store.codec import serialize
    from instantstart.store.operations import _operation_item

    sfn_arn_env = "CREATE_CLUSTER_STATE_MACHINE_ARN"
    rt0 = Runtime(Settings())
    _table(rt0.client("dynamodb"), "bench-table")
    machine = rt0.client("stepfunctions").create_state_machine(
        name="create",
        definition=json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}),
        roleArn="arn:aws:iam::123456789012:role/workflows",
    )["stateMachineArn"]
    os.environ[sfn_arn_env] = machine
    rt = Runtime(Settings())
    ddb = rt.client("dynamodb")
    clock = {"now": 1_796_083_200.0}  # 2026-12-01T00:00:00Z
    set_clock(lambda: clock["now"], lambda seconds: clock.__setitem__("now", clock["now"] + seconds))
    group = {"instanceGroupName": "accel", "instanceType": "ml.g6.4xlarge", "instanceCount": 1}
    for i in range(count):
        tag = f"c{i:04d}"
        op = OperationRecord(
            operation_id=f"op-{i:032x}",
            type=OperationType.CREATE_CLUSTER,
            cluster_tag=tag,
            generation=1,
            created_at=NOW,
            updated_at=NOW,
        )
        live = i < running
        request = CreateClusterRequest.model_validate(
            {"clusterTag": tag, "availabilityZone": "us-west-2c", "instanceGroups": [group]}
        )
        cluster = ClusterRecord(
            cluster_tag=tag,
            generation=1,
            status=ClusterStatus.CREATING if live else ClusterStatus.READY,
            availability_zone="us-west-2c",
            region="us-west-2",
            request=request,
            created_at=NOW,
            updated_at=NOW,
            current_operation_id=op.operation_id,
        )
        op = op.model_copy(update={"status": OperationStatus.RUNNING if live else OperationStatus.SUCCEEDED})
        # plain puts (the store's own item shapes): moto's TransactWriteItems of a whole create takes over a second
        for item in (_cluster_item(cluster), _operation_item(op)):
            ddb.put_item(TableName="bench-table", Item=serialize(item))
        if live:
            rt.client("stepfunctions").start_execution(stateMachineArn=machine, name=op.operation_id, input="{}")

    summary = sweep.run_sweep(rt, remaining_seconds=lambda: 900 - (clock["now"] - 1_796_083_200.0))
    seconds = summary.seconds or 1.0
    total = sum(summary.aws_calls.values())
    print(f"part 2: {count} seeded cluster records ({running} with a RUNNING operation), one sweep")
    print(f"clusters seen {summary.clusters_seen}, checked {summary.clusters_checked}, finished {summary.finished}")
    print(f"pace: {sweep.CLUSTERS_PER_SECOND} clusters/s; simulated duration {summary.seconds:.0f} s")
    print(f"AWS calls per sweep: {total} ({total / max(1, summary.clusters_checked):.2f} per cluster)")
    print(f"{'API':<40} {'calls':>6} {'per cluster':>12} {'per second':>11}")
    for api, calls in sorted(summary.aws_calls.items()):
        print(f"{api:<40} {calls:>6} {calls / max(1, summary.clusters_checked):>12.2f} {calls / seconds:>11.2f}")
    print(f"actions: {summary.actions or '{}'}; errors: {summary.errors}")


if __name__ == "__main__":
    main()
