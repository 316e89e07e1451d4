"""Which function made each AWS call, and whether its role in the template allows it.

The sandbox does not evaluate IAM (moto accepts any signed request), so a role missing an action only shows in a
real account. This module closes that gap for every call a sandbox run makes:

- :func:`acting_as` marks the thread running a deployed function's handler (the in-process Lambda invoker uses it);
  :func:`install` makes every botocore request of the process carry that function's name in the
  :data:`CALLER_HEADER` header (added after signing; AWS would never see it). Calls from threads the handler starts
  itself carry no name and are not judged (:attr:`AuditReport.unattributed` counts them).
- The AWS server records the header on each :class:`~instantstart_sandbox.aws.calls.AwsCall` (``caller``).
- :func:`audit` maps each ``(service, operation)`` to its IAM action (:func:`iam_actions`) and asks whether an
  ``Allow`` statement of the caller's role in the SAM-transformed template names it (wildcards as IAM matches them).
- For the EKS and HyperPod writes, whose permissions the template conditions on ownership tags, the sandbox also
  records the resource IAM authorises and its tags when the call arrived
  (:class:`~instantstart_sandbox.aws.calls.IamTarget`); :func:`audit` then requires a statement whose action,
  ``Resource`` and ``Condition`` (``aws:ResourceTag``, ``aws:RequestTag``, ``aws:TagKeys``; :func:`condition_holds`)
  all match, as IAM would. An untagged resource that a real account would refuse to touch shows as ``denied``.
  Other calls are judged on actions only: the check finds missing permissions, not over-broad ones.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from instantstart_sandbox.aws.calls import IamTarget

CALLER_HEADER = "X-Sandbox-Function"
LABEL_HEADER = "X-Sandbox-Label"
_CALLER: ContextVar[str | None] = ContextVar("sandbox_function", default=None)
_LABEL: ContextVar[str | None] = ContextVar("sandbox_label", default=None)

IAM_PREFIX = {
    "stepfunctions": "states",
    "sagemaker-runtime": "sagemaker",
    "service-quotas": "servicequotas",
}
"""botocore service name -> IAM service prefix, where they differ."""

ACTIONS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("s3", "ListObjectsV2"): (("s3:ListBucket",),),
    ("s3", "ListObjects"): (("s3:ListBucket",),),
    ("s3", "HeadBucket"): (("s3:ListBucket",),),
    ("s3", "HeadObject"): (("s3:GetObject",),),
    ("s3", "CopyObject"): (("s3:PutObject",), ("s3:GetObject",)),
    ("s3", "DeleteObjects"): (("s3:DeleteObject",),),
    ("s3", "ListObjectVersions"): (("s3:ListBucketVersions",),),
    ("s3", "PutPublicAccessBlock"): (("s3:PutBucketPublicAccessBlock",),),
    ("s3", "GetPublicAccessBlock"): (("s3:GetBucketPublicAccessBlock",),),
    ("s3", "DeletePublicAccessBlock"): (("s3:PutBucketPublicAccessBlock",),),
    ("s3", "PutBucketEncryption"): (("s3:PutEncryptionConfiguration",),),
    ("s3", "GetBucketEncryption"): (("s3:GetEncryptionConfiguration",),),
    ("s3", "PutBucketLifecycleConfiguration"): (("s3:PutLifecycleConfiguration",),),
    ("s3", "GetBucketLifecycleConfiguration"): (("s3:GetLifecycleConfiguration",),),
    ("lambda", "Invoke"): (("lambda:InvokeFunction",),),
    ("sagemaker-runtime", "InvokeEndpoint"): (("sagemaker:InvokeEndpoint",),),
    ("dynamodb", "TransactWriteItems"): (
        ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"),
    ),
    ("dynamodb", "TransactGetItems"): (("dynamodb:GetItem",),),
    ("sts", "GetCallerIdentity"): (),
}
"""``(service, operation)`` -> what authorises it when the IAM action's name differs: every requirement must be
granted, and a requirement is a choice (any one of its actions: which a transaction needs depends on its items);
``()`` needs no permission. Source: the Service Authorization Reference's "API operations" tables."""


def iam_actions(service: str, operation: str) -> tuple[tuple[str, ...], ...]:
    """The IAM requirements of ``operation`` of botocore ``service`` (see :data:`ACTIONS`)."""
    if (service, operation) in ACTIONS:
        return ACTIONS[(service, operation)]
    return ((f"{IAM_PREFIX.get(service, service)}:{operation}",),)


def current_function() -> str | None:
    """The deployed function whose handler runs in this thread (None outside a handler)."""
    return _CALLER.get()


@contextlib.contextmanager
def acting_as(function_name: str) -> Iterator[None]:
    """Mark the AWS calls of the code run inside as made by ``function_name``."""
    token = _CALLER.set(function_name)
    try:
        yield
    finally:
        _CALLER.reset(token)


_installed = False


def current_label() -> str | None:
    """The label of the invocation this thread runs (:func:`label_invocations`), None outside one."""
    return _LABEL.get()


_ACCESS_KEY = re.compile(r"Credential=([A-Z0-9]+)/")
_ENVIRONMENT_KEY = "instantstart.sandbox.environment"


def attribute(environ: dict[str, Any]) -> None:
    """Name the caller of a request signed by a deployed function's own process (the ``process`` Lambda runtime):
    its access key id names the environment, which names the function and the label of the invocation it serves.
    Sets the ``WSGI`` keys of :data:`CALLER_HEADER` and :data:`LABEL_HEADER` unless the request carries them."""
    if environ.get("HTTP_X_SANDBOX_FUNCTION"):
        return
    found = _ACCESS_KEY.search(str(environ.get("HTTP_AUTHORIZATION") or ""))
    if found is None:
        return
    from instantstart_sandbox.lambda_process import environment_of

    environment = environment_of(found.group(1))
    if environment is None:
        return
    environ["HTTP_X_SANDBOX_FUNCTION"] = environment.name
    if environment.label is not None:
        environ["HTTP_X_SANDBOX_LABEL"] = environment.label
    environ[_ENVIRONMENT_KEY] = environment


def after_response(environ: dict[str, Any], operation: str, body: Iterable[bytes]) -> Iterable[bytes]:
    """``body``, the answer to ``environ``, computed (AWS did the work); when a function's process made the call
    (:func:`attribute`), its environment counts the call before the answer goes out, so an invocation fault that
    kills the process there leaves it no chance of a further call (as the in-process runtime freezes the thread)."""
    environment = environ.get(_ENVIRONMENT_KEY)
    if environment is not None:
        environment.after_call(operation)
    return body


def install() -> None:
    """Make every botocore request of this process carry :data:`CALLER_HEADER` while a handler runs, and
    :data:`LABEL_HEADER` while a labelled invocation runs (:func:`label_invocations`) (idempotent; the headers are
    added after signing)."""
    global _installed
    if _installed:
        return
    from botocore import endpoint

    cls: Any = endpoint.Endpoint
    original = cls._send

    def _send(self: Any, request: Any) -> Any:
        caller = _CALLER.get()
        if caller is not None:
            request.headers[CALLER_HEADER] = caller
        label = _LABEL.get()
        if label is not None:
            request.headers[LABEL_HEADER] = label
        return original(self, request)

    cls._send = _send
    _installed = True


Labeller = Callable[[str, Any], str | None]
"""``(function name, event)`` -> the label of that invocation's AWS calls (None: no label)."""
_labeller: list[Labeller | None] = [None]


def label_invocations(labeller: Labeller | None) -> None:
    """Label the AWS calls of each in-process Lambda invocation with ``labeller(function name, event)``.

    The label reaches the AWS server as :data:`LABEL_HEADER` and is recorded on
    :attr:`~instantstart_sandbox.aws.calls.AwsCall.label`, so a test can tell which cluster's workflow made a
    call (and scope a fault to it: ``FaultInjector.inject(..., when=...)``). ``None`` stops labelling. The
    event is what the function receives (a JSON string or its parsed value); a labeller that raises labels
    nothing. Wraps the in-process runtime's invoke (:func:`instantstart_sandbox.lambdas.install` first).
    """
    _labeller[0] = labeller
    from moto.awslambda.models import LambdaFunction

    if getattr(LambdaFunction, "_instantstart_labelled", False):
        return
    original = LambdaFunction._invoke_lambda

    def _invoke_lambda(self: Any, event: Any = None) -> Any:
        current = _labeller[0]
        label: str | None = None
        if current is not None:
            try:
                label = current(str(self.function_name), event)
            except Exception:  # noqa: BLE001  # a labeller's bug must not fail the invocation
                label = None
        token = _LABEL.set(label)
        try:
            return original(self, event)
        finally:
            _LABEL.reset(token)

    LambdaFunction._invoke_lambda = _invoke_lambda  # type: ignore[method-assign]
    LambdaFunction._instantstart_labelled = True  # type: ignore[attr-defined]


@dataclass
class AuditReport:
    """What :func:`audit` found."""

    checked: int = 0
    """Calls judged (made inside a handler of a deployed function)."""
    unattributed: int = 0
    """Calls made outside any handler thread (the sandbox's own, or threads a handler started)."""
    allowed: set[tuple[str, str]] = field(default_factory=set)
    """``(function, IAM action)`` pairs seen and allowed."""
    missing: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """``(function, IAM action, the API operation that needed it)`` -> calls its role does not allow."""
    conditioned: int = 0
    """Calls judged with their resource and tags (EKS and HyperPod writes)."""
    denied: dict[tuple[str, str, str], int] = field(default_factory=dict)
    """``(function, IAM action, what was refused: the resource kind and its ownership tags)`` -> calls no statement
    allows once ``Resource`` and ``Condition`` are evaluated."""

    def summary(self) -> str:
        """One line of figures, then one line per missing permission."""
        lines = [
            f"IAM audit: {self.checked} calls by deployed functions checked against their roles "
            f"({len(self.allowed)} distinct function/action pairs allowed), {self.unattributed} unattributed, "
            f"{len(self.missing)} missing permissions; {self.conditioned} EKS/HyperPod writes judged with their "
            f"resource and ownership tags, {sum(self.denied.values())} denied"
        ]
        lines += [
            f"  {fn} lacks {action} ({n} calls of {operation})"
            for (fn, action, operation), n in sorted(self.missing.items())
        ]
        lines += [
            f"  {fn} denied {action} on {what} ({n} calls)" for (fn, action, what), n in sorted(self.denied.items())
        ]
        return "\n".join(lines)

    @property
    def ok(self) -> bool:
        """No missing action and no denied call."""
        return not self.missing and not self.denied


def _document_statements(document: Any) -> list[dict[str, Any]]:
    if not isinstance(document, dict):
        return []
    statement = document.get("Statement") or []
    return statement if isinstance(statement, list) else [statement]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _names_role(resource: dict[str, Any], role_id: str) -> bool:
    """Whether a policy resource's ``Roles`` (or an ``AWS::IAM::RolePolicy``'s ``RoleName``) is ``Ref role_id``."""
    props = resource.get("Properties") or {}
    names = _as_list(props.get("Roles") or []) + ([props["RoleName"]] if "RoleName" in props else [])
    return any(isinstance(n, dict) and n.get("Ref") == role_id for n in names)


def policy_statements(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    """Every statement of the policies of role ``role_id`` in a (SAM-transformed) template: its inline
    ``Policies``, the ``AWS::IAM::Policy``/``AWS::IAM::RolePolicy`` resources naming it, and the customer managed
    policies (``AWS::IAM::ManagedPolicy``) attached to it through ``ManagedPolicyArns`` (``Ref``) or the policy's own
    ``Roles``. AWS managed policies (named by ARN) are not read: the template does not hold their text."""
    resources = template.get("Resources", {})
    role = resources.get(role_id) or {}
    props = role.get("Properties") or {}
    out: list[dict[str, Any]] = []
    for policy in props.get("Policies", []) or []:
        out += _document_statements(policy.get("PolicyDocument"))
    attached = [a.get("Ref") for a in props.get("ManagedPolicyArns", []) or [] if isinstance(a, dict)]
    for lid, resource in resources.items():
        kind = resource.get("Type")
        if kind not in ("AWS::IAM::ManagedPolicy", "AWS::IAM::Policy", "AWS::IAM::RolePolicy"):
            continue
        if (kind == "AWS::IAM::ManagedPolicy" and lid in attached) or _names_role(resource, role_id):
            out += _document_statements((resource.get("Properties") or {}).get("PolicyDocument"))
    return out


def role_statements(template: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Function logical id -> its role's ``Allow`` statements (:func:`policy_statements`; SAM-transformed template,
    roles referenced with ``Fn::GetAtt <Role>.Arn``)."""
    resources = template.get("Resources", {})
    out: dict[str, list[dict[str, Any]]] = {}
    for lid, resource in resources.items():
        if resource.get("Type") != "AWS::Lambda::Function":
            continue
        role_ref = resource.get("Properties", {}).get("Role")
        role_id = role_ref.get("Fn::GetAtt", [None])[0] if isinstance(role_ref, dict) else None
        if isinstance(role_id, str) and "." in role_id:
            role_id = role_id.split(".", 1)[0]
        out[lid] = [s for s in policy_statements(template, str(role_id)) if s.get("Effect") == "Allow"]
    return out


def role_actions(template: dict[str, Any]) -> dict[str, list[str]]:
    """Function logical id -> the action patterns its role's ``Allow`` statements name (:func:`role_statements`)."""
    return {
        lid: [str(a) for s in statements for a in _as_list(s.get("Action", []))]
        for lid, statements in role_statements(template).items()
    }


class UnsupportedCondition(ValueError):
    """A condition operator or key the audit cannot evaluate (it refuses to guess)."""


def _context_values(key: str, target: IamTarget) -> list[str] | None:
    """The request context's values of condition ``key`` for a call on ``target``; None when the key is absent."""
    resource = dict(target.resource_tags)
    request = dict(target.request_tags or ())
    if key.startswith("aws:ResourceTag/"):
        name = key.split("/", 1)[1]
        return [resource[name]] if name in resource else None
    if key.startswith("aws:RequestTag/"):
        name = key.split("/", 1)[1]
        return [request[name]] if name in request else None
    if key == "aws:TagKeys":
        return list(request) or None
    raise UnsupportedCondition(f"condition key {key}")


def condition_holds(condition: dict[str, Any], target: IamTarget) -> bool:
    """Whether an IAM ``Condition`` block holds for a call on ``target`` (every operator and key must hold).

    Operators: ``StringEquals``, ``StringLike`` (with ``ForAllValues:``/``ForAnyValue:``) and ``Null``, as IAM
    evaluates them: a plain operator on an absent key fails; ``ForAllValues`` on an absent key holds.
    https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html

    Raises:
        UnsupportedCondition: another operator, or a key other than ``aws:ResourceTag/*``, ``aws:RequestTag/*``,
            ``aws:TagKeys``.
    """
    for operator, block in condition.items():
        qualifier, _, name = operator.rpartition(":")
        for key, expected in block.items():
            wanted = [str(e) for e in _as_list(expected)]
            values = _context_values(key, target)
            if name == "Null" and not qualifier:
                if (values is None) != (wanted[0].lower() == "true"):
                    return False
                continue
            if name not in ("StringEquals", "StringLike") or qualifier not in ("", "ForAllValues", "ForAnyValue"):
                raise UnsupportedCondition(f"condition operator {operator}")

            like = name == "StringLike"
            matched = [any(fnmatch.fnmatchcase(v, w) if like else v == w for w in wanted) for v in values or []]
            # ForAllValues holds on an absent key (no values); a plain operator and ForAnyValue need one to match
            holds = all(matched) if qualifier == "ForAllValues" else any(matched)
            if not holds:
                return False
    return True


def _resource_patterns(value: Any, region: str, account_id: str) -> list[str]:
    """A statement's ``Resource`` as ARN patterns: literal strings and ``Fn::Sub`` with the pseudo parameters.
    ``Fn::GetAtt``/``Ref`` name the stack's own resources (never an EKS or HyperPod cluster) and match nothing."""
    out: list[str] = []
    for item in _as_list(value):
        if isinstance(item, dict) and "Fn::Sub" in item:
            item = item["Fn::Sub"][0] if isinstance(item["Fn::Sub"], list) else item["Fn::Sub"]
        if isinstance(item, str):
            out.append(
                item.replace("${AWS::Partition}", "aws")
                .replace("${AWS::Region}", region)
                .replace("${AWS::AccountId}", account_id)
            )
    return out


def allows(statement: dict[str, Any], action: str, target: IamTarget, region: str, account_id: str) -> bool:
    """Whether an ``Allow`` statement grants ``action`` on ``target``: action, ``Resource`` and ``Condition``.

    Raises:
        UnsupportedCondition: see :func:`condition_holds`.
    """
    if not _allows([str(a) for a in _as_list(statement.get("Action", []))], action):
        return False
    patterns = _resource_patterns(statement.get("Resource", []), region, account_id)
    if not any(fnmatch.fnmatchcase(target.arn, p) for p in patterns):
        return False
    return condition_holds(statement.get("Condition") or {}, target)


def _described(target: IamTarget) -> str:
    kind = target.arn.split(":", 5)[-1].split("/", 1)[0]
    tags = {k: ("<tag>" if k == "instantstart:cluster-tag" else v) for k, v in target.resource_tags}
    request = None if target.request_tags is None else [k for k, _ in target.request_tags]
    return f"{kind} with tags {tags or '{}'}, request tag keys {request}"


def _allows(patterns: list[str], action: str) -> bool:
    return any(fnmatch.fnmatchcase(action.lower(), p.lower()) for p in patterns)


def audit(
    counts: Mapping[tuple[str | None, str, str], int],
    template_path: Path,
    region: str,
    functions: dict[str, str],
    targets: Mapping[tuple[str | None, str, str, IamTarget], int] | None = None,
    account_id: str = "123456789012",
) -> AuditReport:
    """Judge the recorded calls against their callers' roles in the template.

    Args:
        counts: ``(caller function name, botocore service, operation)`` -> calls
            (:attr:`~instantstart_sandbox.aws.calls.CallRecorder.by_caller`).
        template_path: the deployed SAM template.
        functions: deployed function name -> logical id.
        targets: ``(caller, service, operation, IamTarget)`` -> calls
            (:attr:`~instantstart_sandbox.aws.calls.CallRecorder.by_target`): judged with resource and conditions.
        account_id: the account the ARNs in ``Resource`` are resolved for.
    """
    from instantstart_sandbox.deploy import translate

    cfn, _ = translate(template_path, region)
    statements = role_statements(cfn)
    actions = role_actions(cfn)
    report = AuditReport()
    for (caller, service, operation), n in counts.items():
        lid = functions.get(caller) if caller else None
        if lid is None or lid not in actions:
            report.unattributed += n
            continue
        report.checked += n
        for choice in iam_actions(service, operation):
            granted = next((a for a in choice if _allows(actions[lid], a)), None)
            if granted is not None:
                report.allowed.add((lid, granted))
            else:
                key = (lid, choice[0], f"{service} {operation}")
                report.missing[key] = report.missing.get(key, 0) + n
    for (caller, service, operation, target), n in (targets or {}).items():
        lid = functions.get(caller) if caller else None
        if lid is None or lid not in statements:
            continue
        report.conditioned += n
        for choice in iam_actions(service, operation):
            if not any(allows(st, a, target, region, account_id) for a in choice for st in statements[lid]):
                key = (lid, choice[0], _described(target))
                report.denied[key] = report.denied.get(key, 0) + n
    return report
