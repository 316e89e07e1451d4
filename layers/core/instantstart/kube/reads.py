"""How the API reads a cluster's Kubernetes API: the per-request timeout, the budget of all reads of one request, a
short reason for a failed read, and :func:`read_within_budget` (the reads of one request in a worker bounded by the
budget).

Shared by every area that reads Kubernetes on the API side (features' observation, training and inference views):
the API function's timeout is 28 s (API Gateway waits 30 s), so a Kubernetes API that does not answer is a 503
naming the reason, never a 500 or a Lambda timeout.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from instantstart.errors import NotFound, UpstreamUnavailable

KUBERNETES_READ_SECONDS = 3.0
"""Seconds one Kubernetes request of the API may take."""

KUBERNETES_READ_BUDGET_SECONDS = 8.0
"""Seconds the API's Kubernetes reads may take together (connection, discovery, every list): well within the API
function's ``Timeout`` (28 s) and API Gateway's 30 s, next to the route's AWS calls
(:data:`instantstart.aws.clients.API_BUDGET`)."""


def kubernetes_failure(exc: BaseException) -> str:
    """A short reason for a failed Kubernetes read (HTTP status and reason, or the error's type and message)."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        reason = getattr(exc, "reason", None) or ""
        hint = " (the API role's access entry does not allow it)" if status in (401, 403) else ""
        return f"Kubernetes answered {status} {reason}".rstrip() + hint
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300]


def read_within_budget(cluster_name: str, region: str, tag: str, read: Callable[[Any], Any]) -> Any:
    """Run ``read(dyn)`` against the Kubernetes API of EKS cluster ``cluster_name`` (cluster tag ``tag``, for the
    messages) as the caller's role, each request within :data:`KUBERNETES_READ_SECONDS` and all of them within
    :data:`KUBERNETES_READ_BUDGET_SECONDS`. Calls EKS ``DescribeCluster`` (through :func:`instantstart.kube.client.
    connect`), then whatever ``read`` asks of Kubernetes.

    Raises:
        NotFound, UpstreamUnavailable: raised by ``read`` itself, unchanged.
        UpstreamUnavailable: no connection, a refusal (401/403: the access entry) or no answer in time.
    """
    from instantstart.kube import client as kube

    def run() -> Any:
        dyn = kube.connect(cluster_name, region, timeout=KUBERNETES_READ_SECONDS)
        return read(dyn)

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kube-read")
    try:
        # in the caller's context: EKS DescribeCluster keeps the caller's call budget (instantstart.aws.clients)
        return pool.submit(contextvars.copy_context().run, run).result(timeout=KUBERNETES_READ_BUDGET_SECONDS)
    except FutureTimeout as exc:
        raise UpstreamUnavailable(
            f"no answer from the Kubernetes API of cluster '{tag}' within {KUBERNETES_READ_BUDGET_SECONDS:g} s"
        ) from exc
    except (NotFound, UpstreamUnavailable):
        raise
    except Exception as exc:
        raise UpstreamUnavailable(f"reading Kubernetes of cluster '{tag}' failed: {kubernetes_failure(exc)}") from exc
    finally:
        pool.shutdown(wait=False)
