"""Kubernetes API server limits, worded as the kube-apiserver (k8s.io/apimachinery validation) words them.

* object names: a DNS-1123 subdomain (at most 253 characters) by default; a DNS-1123 label (63) for the kinds that
  require one (Namespace), a DNS-1035 label (63, starting with a letter) for Service, a path segment for RBAC objects
  and Events; each broken rule is one ``metadata.name`` cause of a 422 ``Invalid``;
* labels: keys are qualified names (an optional DNS-1123 subdomain prefix of at most 253 characters and ``/``, a name
  part of at most 63 characters of ``[-A-Za-z0-9_.]`` starting and ending alphanumeric), values at most 63 such
  characters or empty; annotations: keys the same rule (case-insensitive), and keys plus values at most 262,144
  bytes in all (``metadata.annotations: Too long: may not be more than 262144 bytes``, the wording of Kubernetes
  1.32, the sandbox's default version; older apiservers say "must have at most 262144 bytes");
* a ConfigMap's ``data`` and ``binaryData`` values, a Secret's ``data`` (decoded) and ``stringData`` values: at most
  1 MiB (1,048,576 bytes) in all (``[]: Too long: ...`` for a ConfigMap, ``data: Too long: ...`` for a Secret);
* a request body over 3 MiB (3,145,728 bytes) is 413 ``RequestEntityTooLarge`` "Request entity too large: limit is
  3145728".
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from instantstart_sandbox.kube.errors import KubeError

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
"""The kube-apiserver's limit on a JSON or YAML request body (3 MiB)."""

MAX_ANNOTATIONS_BYTES = 256 * 1024
"""Kubernetes' limit on an object's annotations, keys plus values (256 KiB)."""

MAX_DATA_BYTES = 1024 * 1024
"""Kubernetes' limit on a ConfigMap's or a Secret's data values (1 MiB, ``MaxSecretSize``)."""

_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = _LABEL_FMT + "(\\." + _LABEL_FMT + ")*"
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FMT = "(" + _QNAME_FMT + ")?"
_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: the rule, its examples and the regular expression."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _matches(fmt: str, value: str) -> bool:
    return re.fullmatch(fmt, value) is not None


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def subdomain_problems(value: str) -> list[str]:
    """apimachinery's ``IsDNS1123Subdomain``: one message per broken rule (none: valid)."""
    problems = [_max_len(253)] if len(value) > 253 else []
    if not _matches(_SUBDOMAIN_FMT, value):
        problems.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
                _SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return problems


def label_problems(value: str) -> list[str]:
    """apimachinery's ``IsDNS1123Label``."""
    problems = [_max_len(63)] if len(value) > 63 else []
    if not _matches(_LABEL_FMT, value):
        if _matches(_SUBDOMAIN_FMT, value):
            problems.append("must not contain dots")
        else:
            problems.append(
                _regex_error(
                    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                    "start and end with an alphanumeric character",
                    _LABEL_FMT,
                    "my-name",
                    "123-abc",
                )
            )
    return problems


def dns1035_problems(value: str) -> list[str]:
    """apimachinery's ``IsDNS1035Label`` (Service names)."""
    problems = [_max_len(63)] if len(value) > 63 else []
    if not _matches(_DNS1035_FMT, value):
        problems.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character",
                _DNS1035_FMT,
                "my-name",
                "abc-123",
            )
        )
    return problems


def path_segment_problems(value: str) -> list[str]:
    """apimachinery's ``IsValidPathSegmentName`` (RBAC objects, Events)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


_NAME_RULES = {
    "subdomain": subdomain_problems,
    "label": label_problems,
    "dns1035": dns1035_problems,
    "path": path_segment_problems,
}


def _invalid(field: str, value: str, message: str) -> dict[str, str]:
    return {"reason": "FieldValueInvalid", "field": field, "message": f"Invalid value: {json.dumps(value)}: {message}"}


def name_causes(name: str, rule: str) -> list[dict[str, str]]:
    """The ``metadata.name`` causes of a 422 for ``name`` under the kind's naming ``rule`` (``subdomain``, ``label``,
    ``dns1035`` or ``path``); empty when it is valid."""
    return [_invalid("metadata.name", name, m) for m in _NAME_RULES.get(rule, subdomain_problems)(name)]


def qualified_name_problems(value: str) -> list[str]:
    """apimachinery's ``IsQualifiedName`` (label and annotation keys)."""
    parts = value.split("/")
    problems: list[str] = []
    if len(parts) > 2:
        return [
            "a qualified name "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problems += [f"prefix part {m}" for m in subdomain_problems(prefix)]
    if not name:
        problems.append("name part must be non-empty")
    elif len(name) > 63:
        problems.append("name part " + _max_len(63))
    if not _matches(_QNAME_FMT, name):
        problems.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return problems


def label_value_problems(value: str) -> list[str]:
    """apimachinery's ``IsValidLabelValue``."""
    problems = [_max_len(63)] if len(value) > 63 else []
    if not _matches(_VALUE_FMT, value):
        problems.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                "must start and end with an alphanumeric character",
                _VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return problems


def metadata_causes(meta: dict[str, Any], path: str = "metadata") -> list[dict[str, str]]:
    """The 422 causes of an object's ``metadata`` labels and annotations (``ValidateLabels``,
    ``ValidateAnnotations``); empty when they are valid. Non-string keys or values are left to the schema checks."""
    causes: list[dict[str, str]] = []
    labels = meta.get("labels") or {}
    if isinstance(labels, dict):
        for key, value in labels.items():
            causes += [_invalid(f"{path}.labels", str(key), m) for m in qualified_name_problems(str(key))]
            if isinstance(value, str):
                causes += [_invalid(f"{path}.labels", value, m) for m in label_value_problems(value)]
    annotations = meta.get("annotations") or {}
    if isinstance(annotations, dict):
        for key in annotations:
            causes += [_invalid(f"{path}.annotations", str(key), m) for m in qualified_name_problems(str(key).lower())]
        size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
        if size > MAX_ANNOTATIONS_BYTES:
            causes.append(_too_long(f"{path}.annotations", MAX_ANNOTATIONS_BYTES))
    return causes


def _too_long(field: str, limit: int) -> dict[str, str]:
    """apimachinery's ``field.TooLong`` cause (the value left out of the message)."""
    return {"reason": "FieldValueTooLong", "field": field, "message": f"Too long: may not be more than {limit} bytes"}


def _decoded_bytes(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value), validate=False))
    except (binascii.Error, ValueError):
        return len(str(value))


def data_causes(kind: str, obj: dict[str, Any]) -> list[dict[str, str]]:
    """The 422 cause of a ConfigMap or a Secret whose data values pass 1 MiB (``ValidateConfigMap``,
    ``ValidateSecret``); empty for other kinds and for data within the limit."""
    if kind == "ConfigMap":
        size = sum(len(str(v).encode()) for v in (obj.get("data") or {}).values())
        size += sum(_decoded_bytes(v) for v in (obj.get("binaryData") or {}).values())
        return [_too_long("[]", MAX_DATA_BYTES)] if size > MAX_DATA_BYTES else []
    if kind == "Secret":
        size = sum(_decoded_bytes(v) for v in (obj.get("data") or {}).values())
        size += sum(len(str(v).encode()) for v in (obj.get("stringData") or {}).values())
        return [_too_long("data", MAX_DATA_BYTES)] if size > MAX_DATA_BYTES else []
    return []


def check_request_body(body: bytes) -> None:
    """Refuse a request body over the kube-apiserver's 3 MiB.

    Raises:
        KubeError: 413 ``RequestEntityTooLarge``.
    """
    if len(body) > MAX_REQUEST_BODY_BYTES:
        raise KubeError(413, f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}", "RequestEntityTooLarge")
