"""IAM's hard size and count quotas on roles and policies, which moto does not enforce, answered as IAM answers.

- a role's trust policy, 2,048 characters: ``CreateRole``, ``UpdateAssumeRolePolicy`` answer ``LimitExceeded``
  "Cannot exceed quota for ACLSizePerRole: 2048";
- a role's inline policies together, 10,240 characters: ``PutRolePolicy`` (its document replacing one of the same
  name) answers ``LimitExceeded`` "Maximum policy size of 10240 bytes exceeded for role <name>";
- one managed policy, 6,144 characters: ``CreatePolicy``, ``CreatePolicyVersion`` answer ``LimitExceeded``
  "Cannot exceed quota for PolicySize: 6144";
- managed policies attached to a role, 10: ``AttachRolePolicy`` of an eleventh answers ``LimitExceeded`` "Cannot
  exceed quota for PoliciesPerRole: 10" (attaching one already attached changes nothing).

Each answer is HTTP 409, as IAM's API reference documents ``LimitExceeded``. The messages are those AWS accounts
report; the trust policy's is the least attested (IAM's reference documents ``LimitExceeded`` for ``CreateRole`` and
``UpdateAssumeRolePolicy``, not its text). Characters are counted as IAM counts them, without whitespace: the
document's JSON written without whitespace between tokens; whitespace inside string values and ``\\uXXXX`` escapes
count in full (the harsher reading where IAM may count fewer). A document that is not JSON, or a role that does not
exist, is left to moto's own answer.
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html

Every caller is held to them: the core's steps at run time, and the deployer (``instantstart_sandbox.deploy_iam``),
so a template over a quota fails ``deploy`` as it fails ``sam deploy``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from instantstart_sandbox.aws.protocol import AwsError, AwsRequest

TRUST_POLICY = 2_048
INLINE_POLICIES_PER_ROLE = 10_240
MANAGED_POLICY = 6_144
MANAGED_POLICIES_PER_ROLE = 10
LIMIT_EXCEEDED = "LimitExceeded"
STATUS = 409


def document_size(text: str) -> int | None:
    """Characters IAM counts in policy document ``text`` (module docstring); None when it is not JSON."""
    try:
        return len(json.dumps(json.loads(text), separators=(",", ":")))
    except (TypeError, ValueError):
        return None


class IamLimits:
    """The quota checks, run before moto handles each IAM request (:meth:`checks`).

    Args:
        account_id: the account whose roles are measured (moto's IAM of the ``aws`` partition).
    """

    def __init__(self, account_id: str) -> None:
        self.account_id = account_id

    def checks(self) -> dict[str, Callable[[AwsRequest], None]]:
        """IAM operation -> its check (raises :class:`AwsError` ``LimitExceeded``; returns to let moto answer)."""
        return {
            "CreateRole": self._trust_policy,
            "UpdateAssumeRolePolicy": self._trust_policy,
            "PutRolePolicy": self._inline_policies,
            "CreatePolicy": self._managed_policy,
            "CreatePolicyVersion": self._managed_policy,
            "AttachRolePolicy": self._attachments,
        }

    def _role(self, name: str) -> Any | None:
        from moto.iam.models import iam_backends

        try:
            return iam_backends[self.account_id]["aws"].get_role(name)
        except Exception:  # noqa: BLE001 - moto raises NoSuchEntity; moto answers it itself
            return None

    def _trust_policy(self, req: AwsRequest) -> None:
        key = "AssumeRolePolicyDocument" if req.operation == "CreateRole" else "PolicyDocument"
        size = document_size(str(req.params.get(key) or ""))
        if size is not None and size > TRUST_POLICY:
            raise AwsError(LIMIT_EXCEEDED, f"Cannot exceed quota for ACLSizePerRole: {TRUST_POLICY}", STATUS)

    def _inline_policies(self, req: AwsRequest) -> None:
        name = str(req.params.get("RoleName") or "")
        size = document_size(str(req.params.get("PolicyDocument") or ""))
        role = self._role(name)
        if size is None or role is None:
            return
        replaced = str(req.params.get("PolicyName") or "")
        others = (document_size(str(doc)) or 0 for policy, doc in role.policies.items() if policy != replaced)
        if size + sum(others) > INLINE_POLICIES_PER_ROLE:
            raise AwsError(
                LIMIT_EXCEEDED,
                f"Maximum policy size of {INLINE_POLICIES_PER_ROLE} bytes exceeded for role {name}",
                STATUS,
            )

    def _managed_policy(self, req: AwsRequest) -> None:
        size = document_size(str(req.params.get("PolicyDocument") or ""))
        if size is not None and size > MANAGED_POLICY:
            raise AwsError(LIMIT_EXCEEDED, f"Cannot exceed quota for PolicySize: {MANAGED_POLICY}", STATUS)

    def _attachments(self, req: AwsRequest) -> None:
        role = self._role(str(req.params.get("RoleName") or ""))
        if role is None or str(req.params.get("PolicyArn") or "") in role.managed_policies:
            return
        if len(role.managed_policies) >= MANAGED_POLICIES_PER_ROLE:
            raise AwsError(
                LIMIT_EXCEEDED, f"Cannot exceed quota for PoliciesPerRole: {MANAGED_POLICIES_PER_ROLE}", STATUS
            )
