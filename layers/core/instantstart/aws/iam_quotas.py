"""IAM's size and count quotas on roles and policies, and the one way this project measures a policy against them.

IAM counts a policy document's characters without whitespace
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html, "IAM and STS character limits"):

- the inline policies of a role together: 10,240 characters (``PutRolePolicy`` answers ``LimitExceeded``
  "Maximum policy size of 10240 bytes exceeded for role <name>");
- one customer managed policy: 6,144 characters (``CreatePolicy``/``CreatePolicyVersion``: "Cannot exceed quota for
  PolicySize: 6144");
- a role's trust policy: 2,048 characters by default (``CreateRole``/``UpdateAssumeRolePolicy``: "Cannot exceed quota
  for ACLSizePerRole: 2048");
- managed policies attached to a role (AWS managed ones included): 10 by default (``AttachRolePolicy``: "Cannot
  exceed quota for PoliciesPerRole: 10").

Everything this project builds stays within :data:`HEADROOM` of each, so a permission added later has room before
a deploy or a step fails (``tests/contract/test_iam_quotas.py`` for the template,
``tests/unit/test_runtime_iam_quotas.py`` for the documents the core builds at run time).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

INLINE_POLICIES_PER_ROLE = 10_240
"""Characters of all of a role's inline policies together."""
MANAGED_POLICY = 6_144
"""Characters of one customer managed policy."""
TRUST_POLICY = 2_048
"""Characters of a role's trust policy (the default quota; adjustable)."""
MANAGED_POLICIES_PER_ROLE = 10
"""Managed policies attached to one role (the default quota; adjustable)."""
HEADROOM = 0.8
"""The share of each quota this project allows itself."""


def policy_size(document: Mapping[str, Any] | str) -> int:
    """The characters IAM counts in a policy ``document`` (a parsed document, or its JSON text).

    The document is written as JSON without whitespace between its tokens (``json.dumps`` with ``(",", ":")``
    separators). Whitespace inside string values and ``\\uXXXX`` escapes of non-ASCII characters are counted in
    full: where IAM might count fewer, this counts more (the harsher reading). Calls nothing.

    Raises:
        ValueError: ``document`` is text that is not JSON.
    """
    parsed = json.loads(document) if isinstance(document, str) else document
    return len(json.dumps(parsed, separators=(",", ":")))


def budget(limit: int) -> int:
    """The part of quota ``limit`` this project allows itself (:data:`HEADROOM`), in the quota's unit."""
    return int(limit * HEADROOM)


def within_budget(size: int, limit: int) -> bool:
    """Whether ``size`` (characters or a count) is within :func:`budget` of quota ``limit``."""
    return size <= budget(limit)
