"""A cluster's Kubernetes API by cluster tag: :func:`read_kubernetes` as the API reads it, within the read budget,
and :func:`admin_or_none` as a teardown writes to it.

The read of every area that shows what runs on a cluster (training jobs, inference deployments and endpoints): the
API role's view entry, each request within :data:`~instantstart.kube.reads.KUBERNETES_READ_SECONDS`, all of them
within :data:`~instantstart.kube.reads.KUBERNETES_READ_BUDGET_SECONDS`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from instantstart.clusters import records
from instantstart.kube.reads import read_within_budget
from instantstart.runtime import Runtime


def read_kubernetes(rt: Runtime, tag: str, read: Callable[[Any], Any]) -> Any:
    """Run ``read(dyn)`` against the Kubernetes API of cluster ``tag`` as the API role, within the read budget.

    Calls EKS ``DescribeCluster`` and whatever ``read`` asks of Kubernetes (:func:`instantstart.kube.reads.
    read_within_budget`).

    Raises:
        NotFound: no live cluster ``tag`` (or raised by ``read``).
        UpstreamUnavailable: no connection, a refusal (401/403: the access entry) or no answer in time.
    """
    return read_within_budget(records.eks_name(rt, tag), rt.region, tag, read)


ADMIN_CONNECT_SECONDS = 10
"""How long a teardown waits for the Kubernetes API of a cluster before it counts it as unreachable."""

logger = logging.getLogger(__name__)


def admin_or_none(rt: Runtime, tag: str, purpose: str) -> Any | None:
    """A cluster-admin Kubernetes client (the steps role's access entry) for cluster ``tag``, or None when its EKS
    cluster cannot be reached (gone, never made): then there is nothing of it to remove. ``purpose`` names the
    caller in the log line.

    Calls EKS ``DescribeCluster`` (:func:`instantstart.kube.client.connect`).
    """
    from instantstart.kube import client as kube

    try:
        return kube.connect(records.eks_name(rt, tag), rt.region, timeout=ADMIN_CONNECT_SECONDS)
    except (ClientError, BotoCoreError, ValueError, OSError) as exc:
        logger.info("cluster %s: no Kubernetes API for %s (%s)", tag, purpose, exc)
        return None
