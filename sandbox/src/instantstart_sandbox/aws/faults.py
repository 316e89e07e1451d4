"""Fault injection for the AWS sandbox: make calls fail the way they fail in real accounts.

Besides per-operation errors (:meth:`FaultInjector.inject`, :meth:`FaultInjector.throttle`) and connection
timeouts (:meth:`FaultInjector.timeout`; :func:`instantstart_sandbox.aws.transport.install` turns them into
botocore's own exceptions in this process) it holds the real-account behaviours the sandbox models on the
simulated clock: a refused EKS zone, IAM eventual consistency, Kubernetes access propagation, lingering network
interfaces and S3 bucket-name reuse. Each window is in simulated seconds. The four time windows (IAM role propagation,
Kubernetes access propagation, lingering network interfaces, bucket-name reuse) are on by default at
realistic magnitudes (:data:`DEFAULT_ROLE_PROPAGATION_SECONDS` and the others); 0 turns one off. The
refused zone, throttling and per-operation errors are off until set.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from instantstart_sandbox.aws.calls import AwsCall
from instantstart_sandbox.aws.protocol import MODELS, AwsError

DEFAULT_CAPACITY_MESSAGE = (
    "We currently do not have sufficient {instance_type} capacity in the Availability Zone you requested "
    "({zone}). Our system will be working on provisioning additional capacity. You can currently get "
    "{instance_type} capacity by not specifying an Availability Zone in your request or choosing {other_zones}."
)
"""EC2's InsufficientInstanceCapacity text; ``{instance_type}``, ``{zone}`` and ``{other_zones}`` are filled in."""


DEFAULT_KUBE_ACCESS_SECONDS = 30.0
"""Simulated seconds a new EKS access entry takes to reach the Kubernetes API (401, then 403)."""

DEFAULT_ROLE_PROPAGATION_SECONDS = 15.0
"""Simulated seconds a new IAM role cannot be assumed by SageMaker/EKS (AWS: "seconds" after CreateRole)."""

DEFAULT_ENI_LINGER_SECONDS = 120.0
"""Simulated seconds the network interfaces of a deleted EKS/HyperPod cluster stay (AWS: up to minutes)."""

DEFAULT_BUCKET_REUSE_SECONDS = 60.0
"""Simulated seconds a deleted S3 bucket name answers OperationAborted to CreateBucket (AWS: "a while")."""

_THROTTLE_MESSAGE = "Rate exceeded"

CONNECTION_FAULT_HEADER = "X-Sandbox-Connection-Fault"
"""Response header naming a connection fault (``connect-timeout`` or ``read-timeout``) in place of an answer."""
CONNECTION_FAULTS = ("connect-timeout", "read-timeout")
"""The connection fault kinds :meth:`FaultInjector.timeout` injects."""


def throttling_error(service: str) -> AwsError:
    """The throttling error ``service`` answers, by its convention (botocore retries each of them).

    EC2 ``RequestLimitExceeded`` (503), S3 ``SlowDown`` (503), Lambda and API Gateway
    ``TooManyRequestsException`` (429), query-protocol services (IAM, STS, CloudFormation)
    ``Throttling`` (400), every JSON service ``ThrottlingException`` (400).
    """
    name = MODELS.service_name(service)
    model = MODELS.service_model(name)
    protocol = model.protocol if model is not None else "json"
    if name == "ec2":
        return AwsError("RequestLimitExceeded", "Request limit exceeded.", 503)
    if name == "s3":
        return AwsError("SlowDown", "Please reduce your request rate.", 503)
    if name in ("lambda", "apigateway", "apigatewayv2"):
        return AwsError("TooManyRequestsException", _THROTTLE_MESSAGE, 429)
    if protocol == "query":
        return AwsError("Throttling", _THROTTLE_MESSAGE, 400)
    return AwsError("ThrottlingException", _THROTTLE_MESSAGE, 400)


class ConnectionFault(AwsError):
    """A connection fault (:meth:`FaultInjector.timeout`): answered as HTTP 504 ``RequestTimeout`` carrying
    :data:`CONNECTION_FAULT_HEADER`, which :func:`instantstart_sandbox.aws.transport.install` turns into botocore's
    exception."""

    def __init__(self, kind: str) -> None:
        super().__init__("RequestTimeout", f"sandbox {kind}", 504)
        self.kind = kind


@dataclass
class _Fault:
    code: str
    message: str
    status: int
    remaining: int
    when: Callable[[AwsCall], bool] | None = None
    connection: str = ""  # "" (an AWS error), "connect-timeout" or "read-timeout"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TakenFault:
    """One injected fault a call received: the call, the error code (or connection fault kind), the message."""

    call: AwsCall
    code: str
    message: str
    connection: str = ""


@dataclass
class PendingFault:
    """A fault not yet (fully) consumed: service, operation, code (or connection fault kind), calls still to fail."""

    service: str
    operation: str
    code: str
    remaining: int
    when: Callable[[AwsCall], bool] | None = field(default=None, repr=False)


@dataclass
class _CapacityFault:
    message: str  # empty: EC2's default text
    remaining: int | None  # None: until cleared


class FaultInjector:
    """Per service/operation error injection, plus HyperPod capacity failures.

    Service names are botocore service names or SigV4 signing names (``sagemaker``, ``eks``,
    ``ec2``, ``states``/``stepfunctions``, ...); operations are model names (``CreateCluster``).
    """

    def __init__(self, now: Callable[[], float] | None = None) -> None:
        self._lock = threading.Lock()
        self._now = now or (lambda: 0.0)
        self._faults: dict[tuple[str, str], list[_Fault]] = {}
        self._capacity: dict[str, list[_CapacityFault]] = {}
        self._refused_zones: dict[str, int | None] = {}
        self._roles_created: dict[str, float] = {}
        self._buckets_deleted: dict[str, float] = {}
        self.role_propagation_seconds = DEFAULT_ROLE_PROPAGATION_SECONDS
        """IAM roles younger than this cannot be assumed by SageMaker/EKS (simulated seconds; 0: off)."""
        self.kube_access_seconds = DEFAULT_KUBE_ACCESS_SECONDS
        """A new access entry reaches the Kubernetes API after this long (simulated seconds; 0: at once)."""
        self.eni_linger_seconds = DEFAULT_ENI_LINGER_SECONDS
        """Network interfaces outlive a deleted EKS/HyperPod cluster by this long (simulated seconds; 0: off)."""
        self.bucket_reuse_seconds = DEFAULT_BUCKET_REUSE_SECONDS
        """A deleted S3 bucket's name cannot be created again for this long (simulated seconds; 0: off)."""
        self._health_check_failures: list[tuple[str | None, list[int]]] = []  # (instance id or None, [remaining])
        self._removed_offerings: set[tuple[str, str]] = set()  # (EC2 instance type, zone)
        self.taken: list[TakenFault] = []
        """Every fault a call received so far, oldest first (:meth:`clear` empties it)."""

    def inject(
        self,
        service: str,
        operation: str,
        code: str,
        message: str,
        *,
        status: int = 400,
        times: int = 1,
        when: Callable[[AwsCall], bool] | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        """Make the next ``times`` calls of ``service``/``operation`` answer the AWS error ``code``.

        The error is written in the service's protocol shape, so botocore raises a ClientError with
        ``Error.Code == code`` and HTTP status ``status``. Status 5xx errors are retried by botocore's
        standard retry mode, as they would be against AWS. ``when``: only calls it accepts count (e.g.
        ``lambda call: call.label == "tag-a"``: the calls of one cluster's workflow, see
        :attr:`AwsCall.label`); others pass. ``extra``: more members of the error body (DynamoDB's
        ``CancellationReasons``, ...).
        """
        if times < 1:
            raise ValueError("times must be >= 1")
        key = (MODELS.service_name(service), operation)
        with self._lock:
            self._faults.setdefault(key, []).append(_Fault(code, message, status, times, when, extra=extra or {}))

    def timeout(
        self,
        service: str,
        operation: str,
        times: int = 1,
        *,
        kind: str = "connect-timeout",
        when: Callable[[AwsCall], bool] | None = None,
    ) -> None:
        """Make the next ``times`` calls of ``service``/``operation`` time out on the connection.

        ``kind="connect-timeout"``: the request never reaches AWS (nothing is done) and the caller's botocore
        raises ``ConnectTimeoutError``; ``kind="read-timeout"``: AWS does the operation but the answer never
        arrives (``ReadTimeoutError``), the harsher case for calls that are not idempotent. botocore's standard
        retry mode retries both, as it does against AWS. The exceptions are raised by botocore in this process
        (the in-process functions, the sandbox's own clients) once
        :func:`instantstart_sandbox.aws.transport.install` ran (the sandbox does at start); a client in another
        process gets HTTP 504 ``RequestTimeout`` instead, which its botocore retries too. ``when`` as for
        :meth:`inject`.

        Raises:
            ValueError: ``times`` < 1 or an unknown ``kind``.
        """
        if times < 1:
            raise ValueError("times must be >= 1")
        if kind not in CONNECTION_FAULTS:
            raise ValueError(f"kind must be one of {', '.join(CONNECTION_FAULTS)}; got {kind!r}")
        key = (MODELS.service_name(service), operation)
        fault = _Fault("RequestTimeout", f"sandbox {kind}", 504, times, when, connection=kind)
        with self._lock:
            self._faults.setdefault(key, []).append(fault)

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

    def throttle(
        self, service: str, operation: str, times: int = 1, *, when: Callable[[AwsCall], bool] | None = None
    ) -> None:
        """Make the next ``times`` calls of ``service``/``operation`` throttled, per the service's convention.

        See :func:`throttling_error` for the codes. botocore retries throttling errors (standard
        mode: 3 attempts in all, legacy: 5), so a caller sees the error once ``times`` exceeds them.
        ``when`` as for :meth:`inject`.
        """
        error = throttling_error(service)
        self.inject(service, operation, error.code, error.message, status=error.status, times=times, when=when)

    def refuse_eks_zone(self, zone: str, times: int | None = None) -> None:
        """EKS CreateCluster with a subnet in ``zone`` answers ``UnsupportedAvailabilityZoneException``.

        ``times``: how many CreateCluster calls are refused (``None``: every one until :meth:`clear`).
        The message and ``validZones`` list the Region's other zones.
        """
        if times is not None and times < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._refused_zones[zone] = times

    def delay_role_propagation(self, seconds: float) -> None:
        """IAM roles created less than ``seconds`` (simulated) ago cannot be assumed by SageMaker or EKS.

        SageMaker CreateCluster answers ``ValidationException`` about the execution role, EKS
        CreateCluster ``InvalidParameterException`` ("could not be assumed"). 0 turns it off.
        """
        self.role_propagation_seconds = max(0.0, float(seconds))

    def delay_kubernetes_access(self, seconds: float) -> None:
        """A new EKS access entry answers 401, then 403, on the Kubernetes API for ``seconds`` (simulated)."""
        self.kube_access_seconds = max(0.0, float(seconds))

    def linger_network_interfaces(self, seconds: float) -> None:
        """Network interfaces of a deleted EKS or HyperPod cluster stay ``seconds`` (simulated) longer.

        While they exist, DeleteSubnet/DeleteSecurityGroup/DeleteVpc answer ``DependencyViolation``.
        """
        self.eni_linger_seconds = max(0.0, float(seconds))

    def delay_bucket_name_reuse(self, seconds: float) -> None:
        """CreateBucket of a name deleted less than ``seconds`` (simulated) ago answers 409 ``OperationAborted``."""
        self.bucket_reuse_seconds = max(0.0, float(seconds))

    def fail_deep_health_check(self, instance_id: str | None = None, times: int = 1) -> None:
        """Make the next ``times`` HyperPod deep health checks of one node fail (the node is then replaced).

        ``instance_id=None``: the first node checked fails; otherwise only that instance. Applies to
        StartClusterHealthCheck and to on-start deep health checks alike.

        Raises:
            ValueError: ``times`` < 1.
        """
        if times < 1:
            raise ValueError("times must be >= 1")
        with self._lock:
            self._health_check_failures.append((instance_id, [times]))

    def take_health_check_failure(self, instance_id: str) -> bool:
        """Consume one deep health check failure for ``instance_id``; whether its check fails."""
        with self._lock:
            for entry in self._health_check_failures:
                if entry[0] in (None, instance_id):
                    entry[1][0] -= 1
                    if entry[1][0] <= 0:
                        self._health_check_failures.remove(entry)
                    return True
        return False

    def remove_instance_type_offering(self, instance_type: str, zone: str) -> None:
        """EC2 stops offering ``instance_type`` in ``zone`` (DescribeInstanceTypeOfferings omits it).

        ``instance_type`` may carry SageMaker's ``ml.`` prefix; the EC2 type is what is removed. HyperPod
        launches of that type in that zone then fail with EC2's "Unsupported" message until
        :meth:`restore_instance_type_offering` or :meth:`clear`.
        """
        with self._lock:
            self._removed_offerings.add((instance_type.removeprefix("ml."), zone))

    def restore_instance_type_offering(self, instance_type: str | None = None, zone: str | None = None) -> None:
        """Undo :meth:`remove_instance_type_offering` (every removal matching the given type and/or zone)."""
        ec2_type = instance_type.removeprefix("ml.") if instance_type else None
        with self._lock:
            self._removed_offerings = {
                (t, z) for t, z in self._removed_offerings if (ec2_type or t) != t or (zone or z) != z
            }

    def offering_removed(self, instance_type: str, zone: str) -> bool:
        """Whether ``instance_type`` (EC2 or ``ml.`` name) was removed from ``zone``."""
        with self._lock:
            return (instance_type.removeprefix("ml."), zone) in self._removed_offerings

    def clear(self) -> None:
        """Drop every pending fault and reset every window to its default."""
        with self._lock:
            self._faults.clear()
            self.taken.clear()
            self._capacity.clear()
            self._refused_zones.clear()
            self._health_check_failures.clear()
            self._removed_offerings.clear()
        self.role_propagation_seconds = DEFAULT_ROLE_PROPAGATION_SECONDS
        self.kube_access_seconds = DEFAULT_KUBE_ACCESS_SECONDS
        self.eni_linger_seconds = DEFAULT_ENI_LINGER_SECONDS
        self.bucket_reuse_seconds = DEFAULT_BUCKET_REUSE_SECONDS

    # -- used by the extension -----------------------------------------------------------------
    def has_faults_for(self, service: str) -> bool:
        """Whether any fault is pending for ``service`` (botocore service name)."""
        with self._lock:
            return any(key[0] == service for key in self._faults)

    def pending(self) -> list[PendingFault]:
        """The faults injected and not yet consumed (per service/operation, in injection order)."""
        with self._lock:
            return [
                PendingFault(service, operation, f.connection or f.code, f.remaining, f.when)
                for (service, operation), queue in self._faults.items()
                for f in queue
            ]

    def withdraw(self, when: Callable[[AwsCall], bool]) -> int:
        """Drop the pending faults injected with filter ``when`` (the same object); how many calls they still held."""
        dropped = 0
        with self._lock:
            for key in list(self._faults):
                kept = [f for f in self._faults[key] if f.when is not when]
                dropped += sum(f.remaining for f in self._faults[key] if f.when is when)
                if kept:
                    self._faults[key] = kept
                else:
                    del self._faults[key]
        return dropped

    def take(self, service: str, operation: str, call: AwsCall | None = None) -> AwsError | None:
        """Consume one pending fault of ``service``/``operation`` that applies to ``call``; its error, or None.

        A connection fault comes back as a :class:`ConnectionFault`.
        """
        with self._lock:
            queue = self._faults.get((service, operation))
            if not queue:
                return None
            fault = next((f for f in queue if f.when is None or (call is not None and f.when(call))), None)
            if fault is None:
                return None
            fault.remaining -= 1
            if fault.remaining <= 0:
                queue.remove(fault)
                if not queue:
                    del self._faults[(service, operation)]
            if call is not None:
                self.taken.append(TakenFault(call, fault.connection or fault.code, fault.message, fault.connection))
            if fault.connection:
                return ConnectionFault(fault.connection)
            return AwsError(fault.code, fault.message, fault.status, **fault.extra)

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

    def take_refused_zone(self, zones: list[str]) -> str | None:
        """Consume one refusal for any of ``zones`` (sorted order); the refused zone, or None."""
        with self._lock:
            for zone in sorted(zones):
                if zone not in self._refused_zones:
                    continue
                remaining = self._refused_zones[zone]
                if remaining is not None:
                    if remaining <= 1:
                        del self._refused_zones[zone]
                    else:
                        self._refused_zones[zone] = remaining - 1
                return zone
        return None

    def role_created(self, role_name: str) -> None:
        """Record that IAM role ``role_name`` was created now (simulated time)."""
        with self._lock:
            self._roles_created[role_name] = self._now()

    def role_settled(self, role_name: str) -> None:
        """Treat IAM role ``role_name`` as created long ago (e.g. by tooling that ran before the test)."""
        with self._lock:
            self._roles_created.pop(role_name, None)

    def role_propagating(self, role_arn: str) -> bool:
        """Whether ``role_arn`` is too new to be assumed yet (see :meth:`delay_role_propagation`)."""
        window = self.role_propagation_seconds
        if window <= 0 or ":role/" not in role_arn:
            return False
        with self._lock:
            created = self._roles_created.get(role_arn.rsplit("/", 1)[-1])
        return created is not None and self._now() - created < window

    def bucket_deleted(self, bucket: str) -> None:
        """Record that S3 bucket ``bucket`` was deleted now (simulated time)."""
        with self._lock:
            self._buckets_deleted[bucket] = self._now()

    def bucket_name_reusable(self, bucket: str) -> bool:
        """Whether ``bucket`` may be created (False within :attr:`bucket_reuse_seconds` of its deletion)."""
        window = self.bucket_reuse_seconds
        if window <= 0:
            return True
        with self._lock:
            deleted = self._buckets_deleted.get(bucket)
        return deleted is None or self._now() - deleted >= window
