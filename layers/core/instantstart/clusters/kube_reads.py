"""A cluster's Kubernetes API as the API reads it: :func:`read_kubernetes`, by cluster tag, within the read budget.

The read of every area that shows what runs on a cluster (training jobs, inference deployments and endpoints): the
API role's view entry, each request within :data:`~instantstart.kube.reads.KUBERNETES_READ_SECONDS`, all of them
within :data:`~instantstart.kube.reads.KUBERNETES_READ_BUDGET_SECONDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
