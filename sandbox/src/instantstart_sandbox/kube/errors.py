"""Kubernetes ``Status`` errors raised by the emulated API server and its in-process store."""

from __future__ import annotations

from typing import Any

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    500: "InternalError",
}


class KubeError(Exception):
    """An API error that the server renders as a ``Status`` object.

    Args:
        code: HTTP status code (404, 409, 422, ...).
        message: human-readable message, as a real kube-apiserver words it.
        reason: ``StatusReason`` (``NotFound``, ``AlreadyExists``, ``Conflict``, ``Invalid``, ...);
            derived from ``code`` when omitted.
        details: ``StatusDetails`` (``name``, ``group``, ``kind``, ``causes``).
    """

    def __init__(
        self,
        code: int,
        message: str = "",
        reason: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message or _REASONS.get(code, "Error"))
        self.code = code
        self.message = message or _REASONS.get(code, "Error")
        self.reason = reason or _REASONS.get(code, "Unknown")
        self.details = details

    def status(self) -> dict[str, Any]:
        """The ``meta/v1 Status`` body for this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(resource: str, name: str, group: str = "") -> KubeError:
    """404 NotFound for ``resource`` (plural, optionally ``plural.group``) named ``name``."""
    qualified = f"{resource}.{group}" if group else resource
    return KubeError(
        404,
        f'{qualified} "{name}" not found',
        "NotFound",
        {"name": name, "group": group, "kind": resource},
    )


def already_exists(resource: str, name: str, group: str = "") -> KubeError:
    """409 AlreadyExists for ``resource`` named ``name``."""
    qualified = f"{resource}.{group}" if group else resource
    return KubeError(
        409,
        f'{qualified} "{name}" already exists',
        "AlreadyExists",
        {"name": name, "group": group, "kind": resource},
    )


def conflict(resource: str, name: str, group: str = "", message: str | None = None) -> KubeError:
    """409 Conflict (stale resourceVersion, or a server-side-apply field conflict)."""
    qualified = f"{resource}.{group}" if group else resource
    msg = message or (
        f'Operation cannot be fulfilled on {qualified} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    return KubeError(409, msg, "Conflict", {"name": name, "group": group, "kind": resource})


def invalid(kind: str, name: str, causes: list[dict[str, str]], group: str = "") -> KubeError:
    """422 Invalid with ``details.causes`` (each ``{reason, message, field}``)."""
    qualified = f"{kind}.{group}" if group else kind
    parts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    text = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return KubeError(
        422,
        f'{qualified} "{name}" is invalid: {text}',
        "Invalid",
        {"name": name, "group": group, "kind": kind, "causes": causes},
    )


def bad_request(message: str) -> KubeError:
    """400 BadRequest."""
    return KubeError(400, message, "BadRequest")
