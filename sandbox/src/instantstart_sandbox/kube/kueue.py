"""Kueue admission of the sandbox's training jobs (HyperPodPyTorchJob, RayJob), as far as the product can notice it.

Kueue acts only while its controller runs (the Deployment ``kueue-controller-manager``, installed by the task
governance add-on with the ``kueue.x-k8s.io`` CRDs). A job without the label ``kueue.x-k8s.io/queue-name`` is not
Kueue's. A labelled one gets a ``Workload`` (``kueue.x-k8s.io/v1beta1``) in its namespace, named
``<kind lowercase>-<job>-<5 hex of the uid>`` and owned by the job (deleting the job deletes it), and runs only once
the Workload is admitted. Admission here checks what Kueue checks first, with Kueue's messages
(kueue ``pkg/controller/core/workload_controller.go``):

- the LocalQueue named by the label exists in the job's namespace, else ``QuotaReserved`` False, reason
  ``Inadmissible``, message ``LocalQueue <name> doesn't exist``;
- its ``spec.clusterQueue`` exists, else the same with ``ClusterQueue <name> doesn't exist``.

Otherwise the Workload gets ``QuotaReserved`` and ``Admitted`` True (quota itself is not accounted: the harsher
faults, a queue that does not exist, are the ones a job would otherwise wait on for ever). A job never admitted is
left alone: the operator creates no pod for it, as the suspended job of a real cluster.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from instantstart_sandbox.kube.errors import KubeError

if TYPE_CHECKING:
    from instantstart_sandbox.kube.controllers import SimulatedControllers
    from instantstart_sandbox.kube.store import KubeCluster

Obj = dict[str, Any]

KUEUE = "kueue.x-k8s.io/v1beta1"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
CONTROLLER = "kueue-controller-manager"
INADMISSIBLE = "Inadmissible"


def _served(cluster: KubeCluster) -> bool:
    try:
        cluster.resource_type(KUEUE, "Workload")
        cluster.resource_type(KUEUE, "LocalQueue")
        cluster.resource_type(KUEUE, "ClusterQueue")
    except KubeError:
        return False
    return True


def kueue_running(cluster: KubeCluster) -> bool:
    """Kueue's kinds are served and its controller's Deployment exists."""
    return _served(cluster) and any(
        d["metadata"]["name"] == CONTROLLER for d in cluster.peek_list("apps/v1", "Deployment")
    )


def workload_name(job: Obj) -> str:
    """``<kind lowercase>-<job name>-<5 hex of the job's uid>`` (Kueue's ``GetWorkloadNameForOwnerWithGVK`` shape)."""
    meta = job["metadata"]
    digest = hashlib.sha256(str(meta.get("uid", "")).encode()).hexdigest()[:5]
    return f"{str(job['kind']).lower()}-{meta['name']}"[:57] + f"-{digest}"


def verdict(cluster: KubeCluster, namespace: str, queue: str) -> tuple[bool, str]:
    """``(admitted, message)`` for a job of ``namespace`` queued to LocalQueue ``queue``."""
    local = cluster.peek(KUEUE, "LocalQueue", queue, namespace)
    if local is None:
        return False, f"LocalQueue {queue} doesn't exist"
    cq = str((local.get("spec") or {}).get("clusterQueue") or "")
    if not cq or cluster.peek(KUEUE, "ClusterQueue", cq) is None:
        return False, f"ClusterQueue {cq} doesn't exist"
    return True, f"Quota reserved in ClusterQueue {cq}"


def admitted(cluster: KubeCluster, controllers: SimulatedControllers, job: Obj) -> bool:
    """Whether ``job`` may run: not Kueue's (no queue label, Kueue not running) or its Workload is admitted.

    Writes the job's Workload and its conditions when they change (events on the job: ``CreatedWorkload``, and a
    Warning ``Pending`` with the message while it is inadmissible).
    """
    meta = job["metadata"]
    queue = (meta.get("labels") or {}).get(QUEUE_LABEL)
    if not queue or not kueue_running(cluster):
        return True
    ns = meta.get("namespace", "default")
    ok, message = verdict(cluster, ns, str(queue))
    name = workload_name(job)
    workload = cluster.peek(KUEUE, "Workload", name, ns)
    if workload is None:
        workload = cluster.create(
            {
                "apiVersion": KUEUE,
                "kind": "Workload",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "labels": {"kueue.x-k8s.io/job-uid": str(meta.get("uid", ""))},
                    "ownerReferences": [
                        {
                            "apiVersion": job["apiVersion"],
                            "kind": job["kind"],
                            "name": meta["name"],
                            "uid": meta.get("uid", ""),
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {"queueName": queue, "podSets": [{"name": "main", "count": 1}]},
            },
            CONTROLLER,
        )
        controllers.event(job, "CreatedWorkload", f"Created Workload: {ns}/{name}", CONTROLLER)
    now = cluster.timestamp()
    if ok:
        wanted = [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": message},
            {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted"},
        ]
    else:
        wanted = [{"type": "QuotaReserved", "status": "False", "reason": INADMISSIBLE, "message": message}]
    old = [
        {k: c.get(k) for k in ("type", "status", "reason", "message")}
        for c in (workload.get("status") or {}).get("conditions") or []
    ]
    if old != wanted:
        status: Obj = {"conditions": [{**c, "lastTransitionTime": now} for c in wanted]}
        if ok:
            status["admission"] = {"clusterQueue": message.rsplit(" ", 1)[-1]}
        controllers.set_status(workload, status, CONTROLLER)
        if not ok:
            controllers.event(job, "Pending", message, CONTROLLER, warning=True)
    return ok
