"""Stage ``verify``: every requested HyperPod node Ready and schedulable, and ``s3-claim`` Bound.

Create step: poll ``verify_cluster``. It creates nothing, so it has no teardown step.
"""

from __future__ import annotations

from typing import Any

from instantstart.clusters import records
from instantstart.clusters.stages.common import Step
from instantstart.clusters.stages.storage import pvc_phase
from instantstart.models.cluster import NodeView
from instantstart.models.common import StageName
from instantstart.models.resources import VerifyResources
from instantstart.models.workflow import PollResult, StepPayload
from instantstart.naming import eks_cluster_name
from instantstart.runtime import Runtime

STAGE = StageName.VERIFY
HYPERPOD_NODES = "sagemaker.amazonaws.com/compute-type=hyperpod"
HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"


def node_view(node: dict[str, Any]) -> NodeView:
    """The API view of a Kubernetes Node object of a HyperPod instance group."""
    labels = node.get("metadata", {}).get("labels", {}) or {}
    conditions = node.get("status", {}).get("conditions", []) or []
    name = str(node["metadata"]["name"])
    return NodeView(
        node_name=name,
        # HyperPod names its Kubernetes nodes hyperpod-<EC2 instance id>
        instance_id=name.removeprefix("hyperpod-") if name.startswith("hyperpod-i-") else None,
        instance_type=labels.get("node.kubernetes.io/instance-type"),
        instance_group_name=labels.get("sagemaker.amazonaws.com/instance-group-name"),
        ready=any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
        health_status=labels.get(HEALTH_LABEL),
    )


def verify_cluster(rt: Runtime, p: StepPayload) -> PollResult:
    """Done when every requested HyperPod node is Ready and ``Schedulable`` and ``s3-claim`` is Bound.

    Lists nodes labelled ``sagemaker.amazonaws.com/compute-type=hyperpod`` and records them.
    """
    from instantstart.kube.client import connect, list_objects

    cluster = records.cluster_record(rt, p.cluster_tag)
    expected = sum(g.instance_count for g in cluster.request.instance_groups)
    dyn = connect(eks_cluster_name(p.cluster_tag), rt.region)
    nodes = [node_view(n) for n in list_objects(dyn, "v1", "Node", label_selector=HYPERPOD_NODES)]
    phase = pvc_phase(dyn)
    healthy = [n for n in nodes if n.ready and n.health_status == "Schedulable"]
    rt.store.record_observations(p.cluster_tag, now=records.now(), nodes=nodes)
    observed = f"{len(healthy)}/{expected} nodes Ready and Schedulable, PVC {phase}"
    records.update_stage_resources(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=STAGE,
        resources=VerifyResources(ready_nodes=len(healthy), expected_nodes=expected, pvc_phase=phase),
        observed_status=observed,
    )
    return PollResult(done=len(healthy) >= expected and phase == "Bound", status=observed)


CREATE_STEPS: dict[str, Step] = {"verify_cluster": verify_cluster}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {}
"""Nothing to tear down: the stage only checks."""
