"""Benchmark: the reconciliation sweep over 1,000 clusters: AWS calls per sweep and per API, the pace, the duration.

Seeds 1,000 cluster records through the store into moto's DynamoDB (the template's table): most READY and idle, some
with a RUNNING operation whose Step Functions execution runs (moto's), then runs one sweep
(``instantstart.clusters.sweep.run_sweep``) on a simulated clock (its pacing waits advance the clock, no wall time
passes) with a Lambda's 900 s. Prints the calls per API, per cluster and per second of the sweep, and its duration.
Asserts nothing. Run: ``.venv/bin/python benchmarks/sweep_calls.py [--clusters 1000] [--running 40]``.
"""

from __future__ import annotations

import argparse
import json
import os
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
    args = parser.parse_args()
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
    print(f"clusters seen {summary.clusters_seen}, checked {summary.clusters_checked}, finished {summary.finished}")
    print(f"pace: {sweep.CLUSTERS_PER_SECOND} clusters/s; simulated duration {summary.seconds:.0f} s")
    print(f"AWS calls per sweep: {total} ({total / max(1, summary.clusters_checked):.2f} per cluster)")
    print(f"{'API':<40} {'calls':>6} {'per cluster':>12} {'per second':>11}")
    for api, calls in sorted(summary.aws_calls.items()):
        print(f"{api:<40} {calls:>6} {calls / max(1, summary.clusters_checked):>12.2f} {calls / seconds:>11.2f}")
    print(f"actions: {summary.actions or '{}'}; errors: {summary.errors}")


if __name__ == "__main__":
    main()
