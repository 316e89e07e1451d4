"""Helpers of the slow-sandbox suites: HyperPod instance groups and clusters through boto3, their nodes and events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from tests.sandbox.conftest_aws import unique
except ImportError:  # rootdir not on sys.path
    from conftest_aws import unique  # type: ignore[no-redef]

Client = Callable[[str], Any]
"""``sb("sagemaker")``: a boto3 client of the slow sandbox by service name."""

TIMEOUT = 30.0  # wall seconds


def _group(name: str, count: int, role: str, lifecycle: dict[str, str], instance_type: str = "ml.g6.4xlarge") -> dict:
    return {
        "InstanceGroupName": name,
        "InstanceType": instance_type,
        "InstanceCount": count,
        "ExecutionRole": role,
        "LifeCycleConfig": dict(lifecycle),
    }


def _create(sb: Client, eks: dict[str, Any], network: dict[str, Any], groups: list[dict], **extra: Any) -> str:
    name = unique("hp-cluster")
    sb("sagemaker").create_cluster(
        ClusterName=name,
        InstanceGroups=groups,
        Orchestrator={"Eks": {"ClusterArn": eks["arn"]}},
        VpcConfig={"Subnets": [network["subnets"][0]], "SecurityGroupIds": [network["sg"]]},
        NodeRecovery="Automatic",
        NodeProvisioningMode="Continuous",
        **extra,
    )
    return name


def _ready_nodes(core: Any, hp_name: str) -> list[Any]:
    nodes = core.list_node(label_selector=f"sagemaker.amazonaws.com/cluster-name={hp_name}").items
    return [n for n in nodes if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])]


def _all_events(sm: Any, name: str, **filters: Any) -> list[dict[str, Any]]:
    """Every event of ``name`` matching ``filters``, following NextToken."""
    events: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = sm.list_cluster_events(ClusterName=name, **filters, **({"NextToken": token} if token else {}))
        events.extend(page["Events"])
        token = page.get("NextToken")
        if not token:
            return events
