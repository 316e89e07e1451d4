"""A pytest plugin: no secret in any API answer, MCP tool result or log line the test suites produce.

Scanned: every answer the API clients of the suites receive (:func:`scan_response`, hooked into the ``api``
fixture's HTTP client), every MCP tool result the MCP tests read (``tests/mcp/conftest.py::text_of``), the sandbox's
engine log (at the end of its session) and everything each test wrote to stdout, stderr and the log (the Lambda
handlers' JSON log lines included: pytest captures them per test). A hit fails the session with where it was seen
and the kind of secret (never the secret itself); the figures print at the end (``secret scan: N texts ...``).

Secrets are what a real deployment must never echo: AWS access key ids and secret keys, session tokens, EKS bearer
tokens (``k8s-aws-v1.``, a presigned STS URL usable for 15 minutes), other bearer tokens and Hugging Face tokens. A
SigV4 request signature is not counted: it is a MAC of one request that cannot sign another (botocore logs them at
DEBUG, which a test may turn on).
The sandbox's fixed credentials (``AKIASANDBOXEXAMPLE00``, published in ``instantstart_sandbox.runner.CREDENTIALS``
and printed by ``serve`` on purpose, see ``docs/sandbox.md``) are not secrets and are not counted.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

PATTERNS = {
    "AWS access key id": re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)(?!SANDBOXEXAMPLE00)[A-Z0-9]{16}(?![A-Z0-9])"),
    "AWS secret access key": re.compile(
        r"(?i)(?:aws_secret_access_key|secretaccesskey)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{30,}"
    ),
    "AWS session token": re.compile(
        r"(?i)(?:x-amz-security-token|sessiontoken|aws_session_token)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+%]{40,}"
    ),
    "EKS bearer token": re.compile(r"k8s-aws-v1\.[A-Za-z0-9_-]{40,}"),
    "bearer token": re.compile(r"(?i)bearer\s+(?!sandbox-test-token)[A-Za-z0-9._~+/-]{24,}=*"),
    "Hugging Face token": re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{16,}"),
}
"""Kind of secret -> the pattern that finds it."""


@dataclass
class ScanResult:
    """What the scan saw in this process."""

    texts: int = 0
    characters: int = 0
    hits: list[tuple[str, str]] = field(default_factory=list)
    """``(where, kind)`` of each secret found."""
    lock: threading.Lock = field(default_factory=threading.Lock)


RESULT = ScanResult()


def find(text: str) -> list[str]:
    """The kinds of secret in ``text``."""
    return [kind for kind, pattern in PATTERNS.items() if pattern.search(text)]


def scan(text: str, where: str) -> None:
    """Scan ``text`` (seen at ``where``) and record any secret."""
    kinds = find(text) if text else []
    with RESULT.lock:
        RESULT.texts += 1
        RESULT.characters += len(text)
        RESULT.hits += [(where, kind) for kind in kinds]


def scan_response(response: Any) -> None:
    """An ``httpx`` response hook: scan the answer's body and headers."""
    response.read()
    scan(response.text, f"API answer to {response.request.method} {response.request.url.path}")
    scan(" ".join(f"{k}: {v}" for k, v in response.headers.items()), f"API headers of {response.request.url.path}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Scan what each test phase wrote to stdout, stderr and the log."""
    for title, content in report.sections:
        scan(content, f"{report.nodeid} ({report.when}): {title}")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the figures and every hit."""
    with RESULT.lock:
        found = len(RESULT.hits)
        terminalreporter.write_line(
            f"secret scan: {RESULT.texts} texts ({RESULT.characters} characters) scanned, {found} secrets found"
        )
        for where, kind in RESULT.hits:
            terminalreporter.write_line(f"  {kind} in {where}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when a secret was seen."""
    if RESULT.hits and session.exitstatus == 0:
        session.exitstatus = 1
