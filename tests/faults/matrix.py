"""The fault matrix's parts: which operations the workflows call, which faults each gets, how a run is judged.

Nothing here holds a list of AWS operations: they are read from a recorded sandbox run
(:func:`workflow_operations`), and each operation's own documented failure from botocore's service model
(:func:`documented_error`; EC2's model lists no errors, so :data:`EC2_ERRORS` names EC2's documented codes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import botocore.session

from instantstart_sandbox.aws.calls import AwsCall
from instantstart_sandbox.aws.faults import throttling_error

ROOT = Path(__file__).resolve().parents[2]

WORKFLOW_FUNCTIONS = ("ClusterStepsFunction", "HyperPodEventsFunction", "ExecutionEventsFunction")
"""Logical ids of the functions the create and delete workflows run (the steps and the event reconcilers)."""

FAULTS = ("throttling", "5xx", "timeout", "documented")
"""The fault columns: the service's throttling error, ServiceUnavailable (503), a connection timeout
(botocore ``ConnectTimeoutError``), the operation's own documented failure."""
TIMES = (1, 3)
"""Each fault is injected into the next 1 and 3 calls of the operation."""

CONVERGED, FAILED_CLEAN, BAD = "converged", "failed-clean", "BAD"

_TAG = re.compile(r"clusterTag\W+([a-z][a-z0-9-]{1,22}[a-z0-9])|(?:hp|eks)-cluster-([a-z][a-z0-9-]{1,22}[a-z0-9])")


def label(function: str, event: Any) -> str | None:
    """``"<cluster tag>|<step action or function>|<stage>"`` of one invocation of a workflow function (None for
    other functions: ``function`` is the deployed name, ``<stack>-<logical id>``).

    A step payload names its ``clusterTag``, ``action`` and (mostly) ``stage``; an EventBridge event names
    the cluster in its EKS/HyperPod cluster name or, for an execution's status change, in the execution's input.
    """
    if not function.endswith(WORKFLOW_FUNCTIONS):  # the API function's calls are not the workflows'
        return None
    data = json.loads(event or "{}") if isinstance(event, str | bytes) else event
    if isinstance(data, dict) and isinstance(data.get("clusterTag"), str):
        return f"{data['clusterTag']}|{data.get('action') or function}|{data.get('stage') or ''}"
    found = _TAG.search(json.dumps(data))
    if found is None:
        return None
    return f"{found.group(1) or found.group(2)}|{function}|"


def tag_of(call: AwsCall) -> str | None:
    """The cluster tag of a labelled call."""
    return call.label.split("|", 1)[0] if call.label else None


def for_tag(tag: str) -> Callable[[AwsCall], bool]:
    """A fault filter: only the calls of cluster ``tag``'s workflows."""
    return lambda call: tag_of(call) == tag


def action_stages(asl_path: Path) -> dict[str, str]:
    """Step action -> the stage it belongs to: the stage of the last ``begin_stage``/``begin_teardown`` task before
    it in its branch (states in the order ``statemachines/build.py`` writes them)."""
    found: dict[str, str] = {}

    def walk(states: dict[str, Any], current: str) -> None:
        for state in states.values():
            params = state.get("Parameters") if isinstance(state.get("Parameters"), dict) else {}
            payload = params.get("Payload") if isinstance(params.get("Payload"), dict) else {}
            action, stage = payload.get("action"), payload.get("stage")
            if action in ("begin_stage", "begin_teardown") and isinstance(stage, str):
                current = stage
            if isinstance(action, str) and current and action not in found:
                found[action] = current
            for branch in state.get("Branches", []):
                walk(branch["States"], current)

    walk(json.loads(asl_path.read_text())["States"], "")
    return found


def stage_of(call: AwsCall, stages: dict[str, str]) -> str | None:
    """The stage a labelled call was made for (the payload's stage, else its action's), None for event calls."""
    if not call.label:
        return None
    _, action, stage = [*call.label.split("|"), "", ""][:3]
    return stage or stages.get(action)


Operation = tuple[str, str]
"""``(botocore service name, operation name)``."""


def workflow_operations(calls: Iterable[AwsCall], tag: str, callers: set[str]) -> list[Operation]:
    """The distinct operations cluster ``tag``'s workflow functions (``callers``: function names) called, in the
    order of their first call."""
    seen: dict[Operation, None] = {}
    for call in calls:
        if call.caller in callers and tag_of(call) == tag:
            seen.setdefault((call.service, call.operation), None)
    return list(seen)


# -- each operation's own documented failure --------------------------------------------------------------------

EC2_ERRORS: dict[str, tuple[str, str]] = {
    "CreateVpc": ("VpcLimitExceeded", "The maximum number of VPCs has been reached."),
    "CreateSubnet": ("SubnetLimitExceeded", "The maximum number of subnets has been reached for this VPC."),
    "CreateInternetGateway": (
        "InternetGatewayLimitExceeded",
        "The maximum number of internet gateways has been reached.",
    ),
    "AllocateAddress": ("AddressLimitExceeded", "The maximum number of addresses has been reached."),
    "CreateNatGateway": ("NatGatewayLimitExceeded", "The maximum number of NAT gateways has been reached."),
    "CreateRouteTable": ("RouteTableLimitExceeded", "The maximum number of route tables has been reached."),
    "CreateRoute": ("RouteLimitExceeded", "The maximum number of routes has been reached."),
    "CreateSecurityGroup": ("SecurityGroupLimitExceeded", "The maximum number of security groups has been reached."),
    "AuthorizeSecurityGroupIngress": (
        "RulesPerSecurityGroupLimitExceeded",
        "The maximum number of rules per security group has been reached.",
    ),
    "AuthorizeSecurityGroupEgress": (
        "RulesPerSecurityGroupLimitExceeded",
        "The maximum number of rules per security group has been reached.",
    ),
    "CreateVpcEndpoint": ("VpcEndpointLimitExceeded", "The maximum number of VPC endpoints has been reached."),
    "CreateTags": ("TagLimitExceeded", "The maximum number of tags has been reached for this resource."),
    "DeleteSubnet": ("DependencyViolation", "The subnet has dependencies and cannot be deleted."),
    "DeleteVpc": ("DependencyViolation", "The vpc has dependencies and cannot be deleted."),
    "DeleteSecurityGroup": ("DependencyViolation", "resource sg has a dependent object"),
    "DeleteRouteTable": ("DependencyViolation", "The routeTable has dependencies and cannot be deleted."),
    "DetachInternetGateway": (
        "DependencyViolation",
        "Network vpc has some mapped public address(es). Please unmap those public address(es) before detaching "
        "the gateway.",
    ),
    "DeleteInternetGateway": ("DependencyViolation", "The internetGateway has dependencies and cannot be deleted."),
    "DeleteNatGateway": ("NatGatewayNotFound", "The Nat Gateway does not exist"),
    "ReleaseAddress": ("InvalidAllocationID.NotFound", "The allocation ID does not exist"),
    "DisassociateAddress": ("InvalidAssociationID.NotFound", "The association ID does not exist"),
    "DeleteVpcEndpoints": ("InvalidVpcEndpointId.NotFound", "The Vpc Endpoint Id does not exist"),
}
"""EC2 operation -> its documented limit / dependency / not-found error (EC2's "Error codes for the Amazon EC2
API"). EC2's botocore model lists no errors; operations not here get :data:`EC2_DEFAULT`."""
EC2_DEFAULT = ("UnauthorizedOperation", "You are not authorized to perform this operation.")
"""EC2's documented refusal of any action (a permission boundary or SCP can refuse a read as well)."""

_PREFER_NOT_FOUND = ("Delete", "Describe", "List", "Get", "Head", "Disassociate", "Detach", "Remove", "Revoke")
_RETRIED_BY_SDK = re.compile(
    r"Throttl|RequestLimitExceeded|TooManyRequests|ServiceUnavailable|InternalServer|InternalFailure|InternalException|"
    r"InternalError|ServiceFailure|ServerException|SlowDown|^LimitExceededException$|TransactionInProgress|"
    r"BandwidthLimitExceeded|ProvisionedThroughputExceeded"
)
"""Errors botocore's standard mode retries itself (throttling codes, 5xx): the other columns cover them."""

_CONFLICT = "Transaction is ongoing for the item"
DYNAMODB_ERRORS: dict[str, tuple[str, str, dict[str, Any]]] = {
    op: ("TransactionConflictException", _CONFLICT, {}) for op in ("PutItem", "UpdateItem", "DeleteItem")
} | {
    "TransactWriteItems": (
        "TransactionCanceledException",
        "Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]",
        {"CancellationReasons": [{"Code": "TransactionConflict", "Message": _CONFLICT}]},
    )
}
"""DynamoDB writes: the failure any of them meets when another transaction holds the item (documented for each;
botocore does not retry it). The model's other errors are an index size limit or a missing table."""


def _rank(code: str, operation: str) -> int:
    lowered = code.lower()
    if "capacity" in lowered:
        group = 0
    elif "limitexceeded" in lowered or "quota" in lowered:
        group = 1
    elif "notfound" in lowered or "nosuch" in lowered or "doesnotexist" in lowered:
        group = 2
    elif "inuse" in lowered or "conflict" in lowered or "dependency" in lowered or "canceled" in lowered:
        group = 3
    else:
        group = 4
    if operation.startswith(_PREFER_NOT_FOUND) and group == 2:
        group = -1
    return group


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html or "")).strip()


_SESSION = botocore.session.get_session()


def documented_error(service: str, operation: str) -> tuple[str, str, dict[str, Any]]:
    """The documented failure injected into ``service``/``operation``: ``(code, message)``.

    From the operation's ``errors`` in botocore's service model, the first of: a capacity error, a limit or quota
    exceeded, (for reads and deletes first) a not-found, an in-use/conflict/dependency error, any other; errors
    botocore retries itself (throttling, 5xx) are left to their own columns. The message is the error shape's
    documentation. EC2 from :data:`EC2_ERRORS`, DynamoDB writes from :data:`DYNAMODB_ERRORS`. The third item: more
    members of the error body.
    """
    if service == "ec2":
        return (*EC2_ERRORS.get(operation, EC2_DEFAULT), {})
    if service == "dynamodb" and operation in DYNAMODB_ERRORS:
        return DYNAMODB_ERRORS[operation]
    model = _SESSION.get_service_model(service)
    shapes = model.operation_model(operation).error_shapes
    candidates = [s for s in shapes if not _RETRIED_BY_SDK.search(s.error_code or s.name)]
    if not candidates:
        code = "AccessDeniedException" if model.protocol not in ("query", "rest-xml") else "AccessDenied"
        return (code, f"User is not authorized to perform: {service}:{operation}", {})
    chosen = min(candidates, key=lambda s: (_rank(s.error_code or s.name, operation), s.name))
    code = chosen.error_code or chosen.name
    message = _text(chosen.documentation) or f"{code} ({service} {operation})"
    status = int((chosen.metadata.get("error") or {}).get("httpStatusCode") or 400)
    return code, message[:300], {"__status__": status}


@dataclass(frozen=True)
class Fault:
    """One fault to inject: column, times, and the error the caller should see (for the record check)."""

    column: str
    times: int
    code: str
    message: str
    status: int = 400
    extra: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @staticmethod
    def of(column: str, service: str, operation: str, times: int) -> Fault:
        """The fault ``column`` for ``service``/``operation``, ``times`` calls."""
        if column == "throttling":
            error = throttling_error(service)
            return Fault(column, times, error.code, error.message, error.status)
        if column == "5xx":
            return Fault(column, times, "ServiceUnavailable", "Service is unable to handle request.", 503)
        if column == "timeout":
            return Fault(column, times, "ConnectTimeoutError", "Connect timeout on endpoint URL", 0)
        code, message, extra = documented_error(service, operation)
        extra = dict(extra)
        status = int(extra.pop("__status__", 400))
        if service == "s3" and operation.startswith("Head"):  # no body: botocore names the error by its status
            code, message = str(status), {404: "Not Found", 403: "Forbidden"}.get(status, "Bad Request")
        return Fault(column, times, code, message, status, extra)


def inject(faults: Any, operation: Operation, fault: Fault, when: Callable[[AwsCall], bool]) -> None:
    """Inject ``fault`` into ``operation`` for the calls ``when`` accepts (one cluster's: :func:`for_tag`)."""
    service, name = operation
    if fault.column == "timeout":
        faults.timeout(service, name, fault.times, kind="connect-timeout", when=when)
    else:
        status, times, extra = fault.status, fault.times, fault.extra
        faults.inject(service, name, fault.code, fault.message, status=status, times=times, when=when, extra=extra)


def recorded_verbatim(error: dict[str, Any] | None, fault: Fault) -> bool:
    """Whether a recorded ``{"code", "message"}`` is the injected fault's, verbatim (a connection timeout has no
    AWS message: botocore's own text, which names the endpoint)."""
    if not error:
        return False
    if fault.column == "timeout":
        return error.get("code") == fault.code and str(error.get("message", "")).startswith(fault.message)
    return error.get("code") == fault.code and error.get("message") == fault.message


@dataclass
class Cell:
    """One cell's outcome and, when not converged, what was seen."""

    outcome: str
    detail: str = ""
    retries: int = 0


@dataclass
class Matrix:
    """Rows (workflow, operation) x columns (fault, times) -> :class:`Cell`."""

    rows: list[tuple[str, Operation]] = field(default_factory=list)
    cells: dict[tuple[str, Operation, str, int], Cell] = field(default_factory=dict)

    def render(self) -> str:
        """The matrix as text: one line per row, then the BAD cells with what was seen."""
        columns = [(f, t) for f in FAULTS for t in TIMES]
        width = max((len(f"{w} {s}:{o}") for w, (s, o) in self.rows), default=20)
        head = " " * width + " | " + " | ".join(f"{f} x{t}".ljust(12) for f, t in columns)
        lines = [head, "-" * len(head)]
        for workflow, (service, operation) in self.rows:
            cells = [self.cells.get((workflow, (service, operation), f, t)) for f, t in columns]
            text = [(c.outcome if c else "-").ljust(12) for c in cells]
            lines.append(f"{workflow} {service}:{operation}".ljust(width) + " | " + " | ".join(text))
        bad = [(k, c) for k, c in self.cells.items() if c.outcome == BAD]
        for (workflow, (service, operation), f, t), c in bad:
            lines.append(f"BAD {workflow} {service}:{operation} {f} x{t}: {c.detail}")
        return "\n".join(lines)

    def summary(self) -> str:
        """The figures: operations, cells, and each outcome's count."""
        counts = {o: sum(1 for c in self.cells.values() if c.outcome == o) for o in (CONVERGED, FAILED_CLEAN, BAD)}
        operations = len({op for _, op in self.rows})
        total = len(self.rows) * len(FAULTS) * len(TIMES)
        left = total - len(self.cells)
        return (
            f"fault matrix: {operations} operations ({len(self.rows)} workflow rows), {total} cells: "
            f"{counts[CONVERGED]} converged, {counts[FAILED_CLEAN]} failed-clean, {counts[BAD]} BAD"
            + (f", {left} not judged" if left else "")
        )
