"""The scheduled reconciliation sweep: level-triggered truth over every cluster, whatever events were lost.

EventBridge Scheduler invokes ``functions/events/reconcile_sweep.py`` every ``ReconcileScheduleExpression``
(default ``rate(10 minutes)``); it calls :func:`run_sweep`, which pages through the cluster records by tag
(``Store.clusters_after``), skips DELETED ones, claims each of the others for this sweep (``Store.claim_cluster``:
a conditional write, so of two sweeps at once only one checks a cluster) and runs the per-cluster checks of
:data:`instantstart.clusters.sweep_checks.CHECKS` on it.

Paced for AWS's rate limits: at most :data:`CLUSTERS_PER_SECOND` clusters are checked per second, and a cluster
costs at most :data:`MAX_AWS_CALLS_PER_CLUSTER` AWS calls (a quiet one: one ``DescribeCluster``, or one
``DescribeExecution`` while an operation runs). At 1,000 clusters a sweep takes about 500 s and calls SageMaker and
Step Functions at most 2 times a second each, a tenth or less of their default rates (see docs/decisions.md).
The sweep stops :data:`STOP_MARGIN_SECONDS` (300 s) before the Lambda's remaining time runs out and records a cursor
(``Store.record_sweep_cursor``): the next sweep continues after the last tag this one reached, instead of starting
again at the first cluster.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from pydantic import Field

from instantstart.clusters import records
from instantstart.clusters.sweep_checks import CHECKS, Check, SweepContext
from instantstart.models.common import ApiModel, ClusterStatus, epoch_seconds, sleep
from instantstart.runtime import Runtime

logger = logging.getLogger(__name__)

CLUSTERS_PER_SECOND = 2.0
"""The sweep's pace: clusters checked per second (each check's AWS calls are bounded, see the module doc)."""

MAX_AWS_CALLS_PER_CLUSTER = 30
"""AWS calls of one cluster's checks at most, besides DynamoDB, in the rarest case: ``DescribeExecution``,
``StartExecution`` or ``PutEvents`` (an operation ended), then a recovery (``DescribeCluster``, ``ListClusterEvents``
and a ``DescribeAddon`` per add-on), then the READY check (``DescribeCluster``, ``ListClusterEvents``,
``DescribeClusterEvent``), then the drift check (EKS ``DescribeCluster`` and ``ListAddons``, a ``DescribeAddon`` per
add-on, SageMaker ``DescribeCluster``, IAM ``GetRole`` per role, S3 ``GetBucketTagging``, one Kubernetes read,
``PutEvents`` when drift is new). A quiet READY cluster costs 8 (``benchmarks/sweep_calls.py``): one SageMaker
``DescribeCluster`` shared by the READY and drift checks, and the drift check's EKS reads; one with an operation
running costs one ``DescribeExecution`` (drift is not checked while it runs)."""

CLAIM_SECONDS = 300
"""How long a sweep's claim on a cluster keeps other sweeps off it (seconds): two sweeps at once check a cluster
once; shorter than the default schedule's 10 minutes, so the next scheduled sweep checks it again."""

STOP_MARGIN_SECONDS = 300.0
"""The sweep stops when the Lambda has less than this left (seconds): more than one AWS call's worst case
(``aws.clients.WORKFLOW_BUDGET``, 241 s), so a cluster's checks are not cut short by the ``Timeout``."""

PAGE_SIZE = 50
"""Cluster records read per ``Query``."""

_CALLS: ContextVar[Counter[str] | None] = ContextVar("sweep_calls", default=None)
_COUNTED: set[int] = set()


class SweepSummary(ApiModel):
    """What one sweep did (the handler's answer and its log line)."""

    sweep_id: str
    clusters_seen: int = Field(default=0, description="Cluster records read (DELETED ones included).")
    clusters_checked: int = Field(default=0, description="Clusters this sweep claimed and checked.")
    clusters_skipped: int = Field(default=0, description="Clusters another sweep had claimed (checked by it).")
    actions: dict[str, int] = Field(default_factory=dict, description="Actions taken, by kind.")
    errors: int = Field(
        default=0, description="Clusters whose checks raised (logged; the next sweep checks them again)."
    )
    aws_calls: dict[str, int] = Field(default_factory=dict, description="AWS calls by service:Operation.")
    finished: bool = Field(
        default=False, description="True: reached the last cluster; False: stopped early, cursor kept."
    )
    after_tag: str | None = Field(default=None, description="Where the next sweep continues (None: from the first).")
    started_after: str | None = Field(default=None, description="The cursor this sweep started from.")
    seconds: float = Field(default=0.0, description="Duration on the records' clock (seconds).")


def _count_call(model: Any, **_: Any) -> None:
    calls = _CALLS.get()
    if calls is not None:
        calls[f"{model.service_model.service_name}:{model.name}"] += 1


def counted(client: Any) -> Any:
    """``client`` with its calls counted into the current sweep's :class:`Counter` (botocore ``before-call``)."""
    if id(client) not in _COUNTED:
        client.meta.events.register("before-call.*.*", _count_call)
        _COUNTED.add(id(client))
    return client


@contextmanager
def counting_calls(rt: Runtime) -> Iterator[Counter[str]]:
    """Count the AWS calls the runtime's clients make inside the block (DynamoDB's included)."""
    for service in ("dynamodb", "stepfunctions", "sagemaker", "eks", "events"):
        counted(rt.client(service))
    calls: Counter[str] = Counter()
    token = _CALLS.set(calls)
    try:
        yield calls
    finally:
        _CALLS.reset(token)


class Pacer:
    """Spaces the starts of the clusters' checks ``1 / per_second`` apart on the records' clock."""

    def __init__(
        self,
        per_second: float,
        clock: Callable[[], float] = epoch_seconds,
        wait: Callable[[float], None] = sleep,
    ) -> None:
        self.interval = 1.0 / per_second
        self.clock, self.wait = clock, wait
        self._next: float | None = None

    def pace(self) -> None:
        """Wait until the next slot (none for the first call)."""
        now = self.clock()
        if self._next is not None and now < self._next:
            self.wait(self._next - now)
            now = self._next
        self._next = now + self.interval


def run_sweep(
    rt: Runtime,
    *,
    remaining_seconds: Callable[[], float],
    checks: tuple[Check, ...] = CHECKS,
    pacer: Pacer | None = None,
    sweep_id: str | None = None,
    page_size: int = PAGE_SIZE,
) -> SweepSummary:
    """Check every cluster that is not DELETED once, from the stored cursor on, until the last one or the time left
    (``remaining_seconds()``, the Lambda's, in seconds) falls under :data:`STOP_MARGIN_SECONDS`.

    A cluster whose checks raise is logged and counted in ``errors``; the sweep goes on (the next sweep checks it
    again). Calls DynamoDB ``Query``/``GetItem``/``UpdateItem``/``PutItem``/``DeleteItem`` and what the checks call.
    """
    pacer = pacer or Pacer(CLUSTERS_PER_SECOND)
    started = epoch_seconds()
    summary = SweepSummary(sweep_id=sweep_id or f"sweep-{uuid.uuid4().hex[:12]}")
    actions: Counter[str] = Counter()
    with counting_calls(rt) as calls:
        after = summary.started_after = rt.store.sweep_cursor()
        finished = False
        while remaining_seconds() >= STOP_MARGIN_SECONDS:
            page, more = rt.store.clusters_after(after, page_size)
            stopped = False
            for cluster in page:
                if remaining_seconds() < STOP_MARGIN_SECONDS:
                    stopped = True
                    break
                summary.clusters_seen += 1
                if cluster.status is not ClusterStatus.DELETED:
                    pacer.pace()
                    _sweep_cluster(rt, cluster, checks, summary, actions, calls)
                after = cluster.cluster_tag
            if stopped:
                break
            if not more:
                finished = True
                break
        summary.finished = finished
        summary.after_tag = None if finished else after
        rt.store.record_sweep_cursor(summary.after_tag, now=records.now())
    summary.actions = dict(actions)
    summary.aws_calls = dict(sorted(calls.items()))
    summary.seconds = round(epoch_seconds() - started, 3)
    return summary


def _sweep_cluster(
    rt: Runtime,
    cluster: Any,
    checks: tuple[Check, ...],
    summary: SweepSummary,
    actions: Counter[str],
    calls: Counter[str],
) -> None:
    """Claim ``cluster`` and run ``checks`` on it (the record read again after a check that acted)."""
    claim = rt.store.claim_cluster(
        cluster.cluster_tag, sweep_id=summary.sweep_id, now=int(epoch_seconds()), hold_seconds=CLAIM_SECONDS
    )
    if claim is None:
        summary.clusters_skipped += 1
        return
    summary.clusters_checked += 1
    ctx = SweepContext(rt=rt, claim=claim, now=records.now(), calls=calls)
    try:
        for check in checks:
            action = check(ctx, cluster)
            if action is None:
                continue
            actions[action] += 1
            ctx.forget_operations()
            fresh = rt.store.get_cluster(cluster.cluster_tag)
            if fresh is None or fresh.status is ClusterStatus.DELETED:
                return
            cluster = fresh
    except Exception:
        summary.errors += 1
        logger.exception("sweep %s: checks of cluster %s failed", summary.sweep_id, cluster.cluster_tag)
