"""Label and field selectors, parsed and matched like kube-apiserver does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from instantstart_sandbox.kube.errors import bad_request

_KEY = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_RE_NOT_EXISTS = re.compile(rf"^!\s*({_KEY})$")
_RE_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s*\((.*)\)$")
_RE_EQ = re.compile(rf"^({_KEY})\s*(==|!=|=)\s*({_VALUE})$")
_RE_CMP = re.compile(rf"^({_KEY})\s*(>|<)\s*(-?\d+)$")
_RE_EXISTS = re.compile(rf"^({_KEY})$")
_RE_VALUE = re.compile(rf"^{_VALUE}$")


@dataclass(frozen=True)
class Requirement:
    """One label requirement: ``op`` is one of in, notin, exists, !exists, gt, lt."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """Whether ``labels`` satisfy this requirement."""
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op == "in":
            return present and value in self.values
        if self.op == "notin":
            return not present or value not in self.values
        if self.op in ("gt", "lt"):
            try:
                num = int(value or "")
            except ValueError:
                return False
            return num > int(self.values[0]) if self.op == "gt" else num < int(self.values[0])
        raise AssertionError(self.op)


def _split_top(text: str) -> list[str]:
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def parse_label_selector(text: str | None) -> list[Requirement]:
    """Parse ``a=b,c!=d,e in (x,y),f notin (z),g,!h,i>3``; raises KubeError 400 when malformed."""
    if not text or not text.strip():
        return []
    reqs: list[Requirement] = []
    for raw in _split_top(text):
        part = raw.strip()
        if not part:
            raise bad_request(f"unable to parse requirement: found '', expected: identifier in {text!r}")
        if m := _RE_NOT_EXISTS.match(part):
            reqs.append(Requirement(m.group(1), "!exists"))
        elif m := _RE_SET.match(part):
            values = tuple(v.strip() for v in m.group(3).split(",")) if m.group(3).strip() else ()
            if not values or any(not _RE_VALUE.match(v) for v in values):
                raise bad_request(f"unable to parse requirement: invalid values in {part!r}")
            reqs.append(Requirement(m.group(1), m.group(2), values))
        elif m := _RE_EQ.match(part):
            op = "notin" if m.group(2) == "!=" else "in"
            reqs.append(Requirement(m.group(1), op, (m.group(3),)))
        elif m := _RE_CMP.match(part):
            reqs.append(Requirement(m.group(1), "gt" if m.group(2) == ">" else "lt", (m.group(3),)))
        elif m := _RE_EXISTS.match(part):
            reqs.append(Requirement(m.group(1), "exists"))
        else:
            raise bad_request(f"unable to parse requirement: {part!r} is not a valid label selector")
    return reqs


def match_labels(reqs: list[Requirement], labels: dict[str, str] | None) -> bool:
    """Whether every requirement holds for ``labels``."""
    labels = labels or {}
    return all(r.matches(labels) for r in reqs)


def requirements_from_label_selector(selector: dict[str, Any] | None) -> list[Requirement] | None:
    """Requirements of a ``LabelSelector`` object; ``None`` means it selects nothing (nil selector)."""
    if selector is None:
        return None
    reqs = [Requirement(k, "in", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!exists"}
    for expr in selector.get("matchExpressions") or []:
        reqs.append(Requirement(expr["key"], ops[expr["operator"]], tuple(expr.get("values") or ())))
    return reqs


def label_selector_to_string(selector: dict[str, Any] | None) -> str:
    """Render a ``LabelSelector`` object as the string form used by ``Scale.status.selector``."""
    parts = [f"{k}={v}" for k, v in sorted((selector or {}).get("matchLabels", {}).items())]
    for expr in (selector or {}).get("matchExpressions") or []:
        op, key, vals = expr["operator"], expr["key"], ",".join(expr.get("values") or ())
        parts.append({"In": f"{key} in ({vals})", "NotIn": f"{key} notin ({vals})", "Exists": key}.get(op, f"!{key}"))
    return ",".join(parts)


@dataclass(frozen=True)
class FieldRequirement:
    """``field op value`` with op ``=`` or ``!=``."""

    field: str
    negate: bool
    value: str


_ALWAYS_FIELDS = ("metadata.name", "metadata.namespace")


def parse_field_selector(text: str | None, allowed: tuple[str, ...], kind: str) -> list[FieldRequirement]:
    """Parse ``metadata.name=x,status.phase!=Running``; unsupported fields are a 400 like the real server."""
    if not text or not text.strip():
        return []
    out = []
    for part in text.split(","):
        part = part.strip()
        m = re.match(r"^([A-Za-z0-9_.]+)\s*(==|!=|=)\s*(.*)$", part)
        if not m:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        fld, op, value = m.groups()
        if fld not in _ALWAYS_FIELDS and fld not in allowed:
            raise bad_request(f"field label not supported: {fld}")
        out.append(FieldRequirement(fld, op == "!=", value.replace("\\,", ",").replace("\\=", "=")))
    return out


def field_value(obj: dict[str, Any], dotted: str) -> str:
    """The string form of ``obj``'s field at ``dotted`` ('' when absent; booleans lower-case)."""
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return "false" if dotted == "spec.unschedulable" else ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, dict) and dotted == "source":
        return str(cur.get("component", ""))
    return str(cur)


def match_fields(reqs: list[FieldRequirement], obj: dict[str, Any]) -> bool:
    """Whether every field requirement holds for ``obj``."""
    for r in reqs:
        equal = field_value(obj, r.field) == r.value
        if equal == r.negate:
            return False
    return True
