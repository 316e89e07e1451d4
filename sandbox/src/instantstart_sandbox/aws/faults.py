"""Fault injection for the AWS sandbox: make the next calls of an operation fail like AWS does."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from instantstart_sandbox.aws.protocol import MODELS, AwsError

DEFAULT_CAPACITY_MESSAGE = (
    "We currently do not have sufficient capacity to launch new {instance_type} instances. "
    "Please try again later or use a different instance type or Availability Zone. "
    "(Service: AmazonEC2; Status Code: 500; Error Code: InsufficientInstanceCapacity)"
)


@dataclass
class _Fault:
    code: str
    message: str
    status: int
    remaining: int


class FaultInjector:
    """Per service/operation error injection, plus HyperPod capacity failures.

    Service names are botocore service names or SigV4 signing names (``sagemaker``, ``eks``,
    ``ec2``, ``states``/``stepfunctions``, ...); operations are model names (``CreateCluster``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[tuple[str, str], list[_Fault]] = {}
        self._capacity: dict[str, list[_Fault]] = {}

    def inject(
        self, service: str, operation: str, code: str, message: str, *, status: int = 400, times: int = 1
    ) -> None:
        """Make the next ``times`` calls of ``service``/``operation`` answer the AWS error ``code``.

        The error is written in the service's protocol shape, so botocore raises a ClientError with
        ``Error.Code == code`` and HTTP status ``status``. Status 5xx errors are retried by botocore's
        standard retry mode, as they would be against AWS.
        """
        if times < 1:
            raise ValueError("times must be >= 1")
        key = (MODELS.service_name(service), operation)
        with self._lock:
            self._faults.setdefault(key, []).append(_Fault(code, message, status, times))

    def fail_hyperpod_capacity(self, instance_type: str, message: str | None = None, times: int = 1) -> None:
        """Make the next ``times`` SageMaker CreateCluster calls using ``instance_type`` fail later.

        The call itself is accepted; the cluster goes Creating -> Failed with a FailureMessage like
        the real insufficient-capacity failure (``message`` overrides the text).
        """
        if times < 1:
            raise ValueError("times must be >= 1")
        text = message or DEFAULT_CAPACITY_MESSAGE.format(instance_type=instance_type)
        with self._lock:
            self._capacity.setdefault(instance_type, []).append(_Fault("", text, 0, times))

    def clear(self) -> None:
        """Drop every pending fault."""
        with self._lock:
            self._faults.clear()
            self._capacity.clear()

    # -- used by the extension -----------------------------------------------------------------
    def has_faults_for(self, service: str) -> bool:
        """Whether any fault is pending for ``service`` (botocore service name)."""
        with self._lock:
            return any(key[0] == service for key in self._faults)

    def take(self, service: str, operation: str) -> AwsError | None:
        """Consume one pending fault of ``service``/``operation``; the error to answer, or None."""
        with self._lock:
            queue = self._faults.get((service, operation))
            if not queue:
                return None
            fault = queue[0]
            fault.remaining -= 1
            if fault.remaining <= 0:
                queue.pop(0)
                if not queue:
                    del self._faults[(service, operation)]
            return AwsError(fault.code, fault.message, fault.status)

    def take_capacity_failure(self, instance_types: list[str]) -> str | None:
        """Consume one capacity failure matching any of ``instance_types``; its message, or None."""
        with self._lock:
            for instance_type in instance_types:
                queue = self._capacity.get(instance_type)
                if not queue:
                    continue
                fault = queue[0]
                fault.remaining -= 1
                if fault.remaining <= 0:
                    queue.pop(0)
                    if not queue:
                        del self._capacity[instance_type]
                return fault.message
        return None
