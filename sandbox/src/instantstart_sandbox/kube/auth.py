"""EKS bearer tokens (``k8s-aws-v1.<base64url presigned STS GetCallerIdentity URL>``).

The real check (aws-iam-authenticator) replays the presigned URL against STS. Offline we cannot
verify the signature, so we check what the server can see: the token's shape, that it is a
presigned ``GetCallerIdentity`` URL for STS, that ``x-k8s-aws-id`` (the cluster name) is among the
signed headers, its expiry (at most 15 minutes) and its age by the wall clock.
"""

from __future__ import annotations

import base64
import binascii
import calendar
import re
import time
from urllib.parse import parse_qs, urlsplit

TOKEN_PREFIX = "k8s-aws-v1."
MAX_AGE_SECONDS = 15 * 60
_CLOCK_SKEW_SECONDS = 5 * 60
_STS_HOST = re.compile(r"^sts(\.[a-z0-9-]+)?\.amazonaws\.com(\.cn)?$")
_LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
_ALLOWED_PARAMS = {
    "action",
    "version",
    "x-amz-algorithm",
    "x-amz-credential",
    "x-amz-date",
    "x-amz-expires",
    "x-amz-signedheaders",
    "x-amz-signature",
    "x-amz-security-token",
}


def _decode(token: str) -> str | None:
    if not token.startswith(TOKEN_PREFIX):
        return None
    payload = token[len(TOKEN_PREFIX) :]
    if not payload or "=" in payload:
        return None
    try:
        return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


def eks_token_validator(cluster_name: str, token: str, now: float | None = None) -> bool:
    """Whether ``token`` has the shape of an EKS token that ``aws eks get-token`` would produce.

    Args:
        cluster_name: the cluster the request is for (it is the signed ``x-k8s-aws-id`` header, whose
            value is not visible in the URL, so it cannot be compared offline).
        token: the bearer token.
        now: wall-clock epoch seconds (defaults to ``time.time()``).

    Returns:
        ``True`` for a well-formed, unexpired presigned STS GetCallerIdentity URL signing
        ``x-k8s-aws-id``; ``False`` otherwise (never raises).
    """
    url = _decode(token)
    if url is None or not cluster_name:
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    host = parts.hostname or ""
    if parts.scheme == "https" and _STS_HOST.match(host):
        pass
    elif parts.scheme in ("http", "https") and host in _LOCAL_HOSTS:
        pass  # the sandbox's STS endpoint (AWS_ENDPOINT_URL)
    else:
        return False
    if parts.path not in ("", "/"):
        return False
    raw = parse_qs(parts.query, keep_blank_values=True)
    if any(len(v) != 1 for v in raw.values()):
        return False
    query = {k.lower(): v[0] for k, v in raw.items()}
    if not set(query) <= _ALLOWED_PARAMS:
        return False
    if query.get("action") != "GetCallerIdentity":
        return False
    if query.get("x-amz-algorithm") != "AWS4-HMAC-SHA256" or not query.get("x-amz-credential"):
        return False
    if not re.fullmatch(r"[0-9a-f]{64}", query.get("x-amz-signature", "")):
        return False
    signed = query.get("x-amz-signedheaders", "").lower().split(";")
    if "x-k8s-aws-id" not in signed or "host" not in signed:
        return False
    try:
        expires = int(query.get("x-amz-expires", ""))
        signed_at = calendar.timegm(time.strptime(query.get("x-amz-date", ""), "%Y%m%dT%H%M%SZ"))
    except ValueError:
        return False
    if not 0 < expires <= MAX_AGE_SECONDS:
        return False
    current = time.time() if now is None else now
    age = current - signed_at
    return -_CLOCK_SKEW_SECONDS <= age <= MAX_AGE_SECONDS
