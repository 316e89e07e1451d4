"""Fault injection for the AWS sandbox: make the next calls of an operation fail like AWS does."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from instantstart_sandbox.aws.protocol import MODELS, AwsError

DEFAULT_CAPACITY_MESSAGE = (
    "We currently do not have sufficient {instance_type} capacity in the Availability Zone you requested "
    "({zone}). Our system will be working on provisioning additional capacity. You can currently get "
    "{instance_type} capacity by not specifying an Availability Zone in your request or choosing {other_zones}."
)
"""EC2's InsufficientInstanceCapacity text; ``{instance_type}``, ``{zone}`` and ``{other_zones}`` are filled in."""


@dataclass
class _Fault:
    code: str
    message: str
    status: int
    remaining: int


@dataclass
class _CapacityFault:
    message: str  # empty: EC2's default text
    remaining: int | None  # None: until cleared


class FaultInjector:
    """Per service/operation error injection, plus HyperPod capacity failures.

    Service names are botocore service names or SigV4 signing names (``sagemaker``, ``eks``,
    ``ec2``, ``states``/``stepfunctions``, ...); operations are model names (``CreateCluster``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[tuple[str, str], list[_Fault]] = {}
        self._capacity: dict[str, list[_CapacityFault]] = {}

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

    def fail_hyperpod_capacity(self, instance_type: str, message: str | None = None, times: int | None = None) -> None:
        """Make HyperPod instance launches of ``instance_type`` fail for insufficient capacity.

        ``times=None`` (the default): every launch fails until :meth:`clear_hyperpod_capacity`;
        ``times=n``: the next ``n`` failures only. What one failure is depends on the cluster's
        provisioning mode: with ``NodeProvisioningMode=Continuous`` one launch attempt of one instance
        group (an Error cluster event; the cluster stays InService and HyperPod retries on its own);
        without it (the older mode) one CreateCluster/UpdateCluster that ends ``Failed`` with the
        message as FailureMessage. ``message`` overrides EC2's text (default:
        :data:`DEFAULT_CAPACITY_MESSAGE` for the group's Availability Zone).

        Raises:
            ValueError: ``times`` < 1.
        """
        if times is not None and times < 1:
            raise ValueError("times must be >= 1 (None: until cleared)")
        with self._lock:
            self._capacity.setdefault(instance_type, []).append(_CapacityFault(message or "", times))

    def clear_hyperpod_capacity(self, instance_type: str | None = None) -> None:
        """End the capacity shortage of ``instance_type`` (every type when None): the next retry launches."""
        with self._lock:
            if instance_type is None:
                self._capacity.clear()
            else:
                self._capacity.pop(instance_type, None)

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

    def take_capacity_failure(self, instance_types: list[str], zone: str = "", other_zones: str = "") -> str | None:
        """Consume one capacity failure matching any of ``instance_types``; its message, or None.

        The default message is filled in with the instance type, ``zone`` and ``other_zones``.
        """
        with self._lock:
            for instance_type in instance_types:
                queue = self._capacity.get(instance_type)
                if not queue:
                    continue
                fault = queue[0]
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        queue.pop(0)
                        if not queue:
                            del self._capacity[instance_type]
                return fault.message or DEFAULT_CAPACITY_MESSAGE.format(
                    instance_type=instance_type, zone=zone or "us-west-2a", other_zones=other_zones or "another zone"
                )
        return None
