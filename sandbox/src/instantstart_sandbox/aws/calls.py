"""A record of the AWS calls the sandbox receives, so tests can assert "no AWS write call".

Every SigV4-signed request that reaches the sandbox's AWS endpoint is recorded (service, operation,
Region, simulated time) before it is answered, whether it succeeds, fails or gets an injected fault.
A *write* is any operation whose name does not start with a read verb (:data:`READ_PREFIXES`:
Describe, List, Get, ...). Use it from tests through ``sandbox.aws.extension.calls``::

    calls = sandbox.aws.extension.calls
    calls.reset()
    api.patch_features(tag, {})
    assert calls.writes("eks", "sagemaker", "iam", "ec2", "fsx") == []

The control plane's own bookkeeping (DynamoDB, Step Functions, Lambda, EventBridge) is recorded too;
pass the services you care about (or :data:`RESOURCE_SERVICES`) to leave it out.
"""

from __future__ import annotations

import threading
from collections import Counter, deque
from dataclasses import dataclass

READ_PREFIXES = ("Describe", "List", "Get", "BatchGet", "Search", "Query", "Scan", "Head", "Lookup")
"""Operation-name prefixes of read calls; every other operation is a write."""
RESOURCE_SERVICES = ("ec2", "eks", "sagemaker", "iam", "fsx", "s3", "service-quotas")
"""The services whose writes change a customer's resources (not the control plane's own bookkeeping)."""


@dataclass(frozen=True)
class IamTarget:
    """The resource an IAM decision is made on, as the sandbox found it when the call arrived.

    Recorded for the operations whose permissions the template conditions on ownership tags (EKS, SageMaker
    HyperPod clusters), so the IAM audit can evaluate ``aws:ResourceTag``, ``aws:RequestTag`` and ``aws:TagKeys``
    the way IAM would. Of the resource's tags only those whose key starts with ``instantstart:`` are kept (the ones
    the conditions name).
    """

    arn: str
    """The ARN IAM authorises (for a create: the parent resource, or the new resource's ARN pattern)."""
    resource_tags: tuple[tuple[str, str], ...] = ()
    """The resource's ``instantstart:`` tags before the call (empty for a resource that does not exist yet)."""
    request_tags: tuple[tuple[str, str], ...] | None = None
    """Every tag the request sets (``aws:RequestTag``; ``aws:TagKeys`` are their keys, or the keys an untag call
    removes, with empty values); None when the request carries none."""


OWNERSHIP_PREFIX = "instantstart:"


def ownership_tags(tags: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """The ``instantstart:`` tags of ``tags``, sorted (the part of a tag set the template's conditions read)."""
    return tuple(sorted((k, v) for k, v in (tags or {}).items() if k.startswith(OWNERSHIP_PREFIX)))


def request_tags(tags: dict[str, str] | list[dict[str, str]] | None) -> tuple[tuple[str, str], ...] | None:
    """Every tag a request sets, sorted (a ``{key: value}`` map or a ``[{"Key", "Value"}]`` list); None for none."""
    if isinstance(tags, list):
        tags = {str(t.get("Key")): str(t.get("Value", "")) for t in tags}
    return tuple(sorted((str(k), str(v)) for k, v in tags.items())) if tags else None


@dataclass(frozen=True)
class AwsCall:
    """One recorded call: botocore service name (``eks``, ``sagemaker``...), operation, Region, time."""

    service: str
    operation: str
    region: str
    time: float
    caller: str | None = None
    """The deployed function whose handler made the call (:mod:`instantstart_sandbox.iam_audit`), if known."""
    label: str | None = None
    """The label of the invocation that made the call (:func:`instantstart_sandbox.iam_audit.label_invocations`),
    e.g. the cluster a workflow step works on; None when no labeller is set."""
    target: IamTarget | None = None
    """The resource IAM would authorise, for the operations the template conditions on ownership tags."""

    @property
    def write(self) -> bool:
        """True unless the operation name starts with a read verb."""
        return not self.operation.startswith(READ_PREFIXES)


MAX_CALLS = 200_000
"""The recorder keeps the newest calls only (a long ``serve`` run must not grow without bound)."""


class CallRecorder:
    """Thread-safe list of :class:`AwsCall` (the extension appends; tests read and reset)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: deque[AwsCall] = deque(maxlen=MAX_CALLS)
        self.by_caller: Counter[tuple[str | None, str, str]] = Counter()
        """``(caller, service, operation)`` -> calls since the recorder was made (:meth:`reset` keeps it): what the
        IAM audit judges."""
        self.by_target: Counter[tuple[str | None, str, str, IamTarget]] = Counter()
        """``(caller, service, operation, target)`` -> calls, for the calls that carry an :class:`IamTarget`: what the
        IAM audit evaluates conditions on."""

    def record(self, call: AwsCall) -> None:
        """Append ``call`` (called by the extension for each signed request)."""
        with self._lock:
            self._calls.append(call)
            self.by_caller[(call.caller, call.service, call.operation)] += 1
            if call.target is not None:
                self.by_target[(call.caller, call.service, call.operation, call.target)] += 1

    def reset(self) -> None:
        """Forget every call recorded so far."""
        with self._lock:
            self._calls.clear()

    def calls(self, *services: str) -> list[AwsCall]:
        """The calls since the last :meth:`reset`, oldest first (only ``services`` when given)."""
        with self._lock:
            return [c for c in self._calls if not services or c.service in services]

    def writes(self, *services: str) -> list[AwsCall]:
        """The write calls since the last :meth:`reset` (only ``services`` when given)."""
        return [c for c in self.calls(*services) if c.write]

    def counts(self, *services: str, writes_only: bool = False) -> Counter[tuple[str, str]]:
        """``{(service, operation): count}`` since the last :meth:`reset`."""
        found = self.writes(*services) if writes_only else self.calls(*services)
        return Counter((c.service, c.operation) for c in found)
