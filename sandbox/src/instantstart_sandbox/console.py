"""The web console in the sandbox: its static files at ``/console/``, its config and a local sign-in.

In production the console's files sit in a private S3 bucket behind CloudFront, and the browser gets temporary
credentials from Amazon Cognito (``template.yaml``). Here the sandbox's HTTP server serves the same files from the
checkout (``console/site``) on the API's own origin, with the response headers CloudFront adds in production, plus:

- ``GET /console/config.json``: ``{"mode": "sandbox", "apiUrl": "", "region": ...}`` (empty ``apiUrl``: same origin);
- ``POST /console/sandbox-session`` (header ``X-InstantStart-Console: sign-in``): the sandbox's fixed local
  credentials, which the console keeps in the tab's session storage and signs every API request with (SigV4, as
  the CLI does). The header makes a cross-site form post impossible; the answer carries no CORS header, so no
  other origin can read it.

Nothing under ``/console/`` reaches the API function: these paths are answered before the SigV4 check, like
CloudFront answers them before API Gateway in production.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

PREFIX = "/console"
SIGN_IN_HEADER = "x-instantstart-console"
SESSION_HOURS = 12

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".md": "text/plain; charset=utf-8",
    ".LICENSE": "text/plain; charset=utf-8",
}

SECURITY_HEADERS = {
    # The policy of the production ResponseHeadersPolicy (template.yaml), with the API on this same origin.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}


def content_type(path: Path) -> str | None:
    """The Content-Type a console file is served with; None for a kind the console does not ship."""
    return CONTENT_TYPES.get(path.suffix)


class ConsoleSite:
    """Answers the ``/console/`` paths of the sandbox's HTTP server.

    Args:
        site_dir: the console's static files (``console/site`` of the checkout).
        region: the sandbox's Region (the console signs for it).
        credentials: ``{"access_key", "secret_key"}`` handed out by the local sign-in.
    """

    def __init__(self, site_dir: Path, region: str, credentials: dict[str, str]) -> None:
        self.site_dir = site_dir.resolve()
        self.region = region
        self.credentials = credentials

    @staticmethod
    def handles(path: str) -> bool:
        """Whether ``path`` (no query) is the console's."""
        return path == PREFIX or path.startswith(PREFIX + "/")

    def answer(self, method: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """``(status, headers, body)`` for a request to a console path; ``headers`` have lower-case names."""
        if path == PREFIX:
            return 301, {"Location": PREFIX + "/"}, b""
        relative = path[len(PREFIX) + 1 :] or "index.html"
        if relative == "sandbox-session":
            return self._sign_in(method, headers)
        if method not in ("GET", "HEAD"):
            return self._json(405, {"message": "Method Not Allowed"})
        if relative == "config.json":
            return self._json(200, {"mode": "sandbox", "apiUrl": "", "region": self.region})
        file = (self.site_dir / relative).resolve()
        kind = content_type(file)
        if not file.is_relative_to(self.site_dir) or not file.is_file() or kind is None:
            return self._json(404, {"message": "Not Found"})
        return 200, {"Content-Type": kind, **SECURITY_HEADERS}, file.read_bytes()

    def _sign_in(self, method: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        if method != "POST":
            return self._json(405, {"message": "Method Not Allowed"})
        if headers.get(SIGN_IN_HEADER) != "sign-in":
            return self._json(403, {"message": f"the console's sign-in sends the {SIGN_IN_HEADER} header"})
        expiration = datetime.now(UTC) + timedelta(hours=SESSION_HOURS)
        return self._json(
            200,
            {
                "accessKeyId": self.credentials["access_key"],
                "secretAccessKey": self.credentials["secret_key"],
                "sessionToken": None,
                "expiration": expiration.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        )

    @staticmethod
    def _json(status: int, body: dict[str, object]) -> tuple[int, dict[str, str], bytes]:
        return status, {"Content-Type": "application/json", **SECURITY_HEADERS}, json.dumps(body).encode()
