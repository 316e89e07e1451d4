"""Property-based fuzzing of the HTTP API from its contract (``make fuzz``; not part of ``make test``).

Schemathesis generates requests from ``api_schema/openapi.json`` and sends them, SigV4-signed, to the sandbox's
HTTP API (the API Gateway emulation in front of the real API function). Read operations get valid and invalid
inputs; write operations get invalid ones only (valid writes start workflows: the integration suites cover them).
Every answer must be: not a 5xx; a status the contract documents for the operation; a body matching the
contract's schema; and, for a 4xx, the one error shape (``{"error": {"code", "message", "details"}}``) naming the
field at fault for a 422. ``test_encodings_and_bodies`` adds the cases a generator does not reach: path and query
encodings, bodies that are not JSON, other content types, base64 bodies, oversized bodies.

The figures print at the end: cases per operation, statuses seen, failures.
"""

from __future__ import annotations

import base64
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import requests
import schemathesis
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode, checks

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import CREDENTIALS, Sandbox
from tests.integration.conftest import GROUP, ready_cluster

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = schemathesis.openapi.from_path(ROOT / "api_schema" / "openapi.json")
TAG = "fuzz"
CASES_PER_OPERATION = int(os.environ.get("INSTANTSTART_FUZZ_CASES", "25"))
"""Generated cases per operation (at least 1,000 in all with the default)."""
SEEN: Counter[tuple[str, int]] = Counter()
"""``(operation, status)`` -> answers."""


class SigV4(requests.auth.AuthBase):
    """Sign each request for ``execute-api`` with the sandbox's credentials (as API Gateway's IAM auth expects)."""

    def __init__(self, region: str) -> None:
        self.region = region
        self.credentials = Credentials(CREDENTIALS["access_key"], CREDENTIALS["secret_key"])

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
        aws = AWSRequest(method=request.method, url=request.url, data=body, headers=dict(request.headers))
        SigV4Auth(self.credentials, "execute-api", self.region).add_auth(aws)
        request.headers.update(dict(aws.headers.items()))
        return request


@pytest.fixture(scope="module")
def session(sandbox: Sandbox, api: InstantStartClient) -> requests.Session:
    """A signing session, after the ``fuzz`` cluster is READY (so generated paths also reach real resources)."""
    ready_cluster(api, TAG, [GROUP])
    s = requests.Session()
    s.auth = SigV4(sandbox.region)
    return s


GATEWAY_STATUSES = (403, 404, 413, 414)
"""API Gateway's own answers (``{"message": ...}``): no IAM signature, no route for the method and path, a body or a
request line over its limits. They never reach the API function."""
EXCLUDED_CHECKS = [
    checks.ignored_auth,
    checks.missing_required_header,
    checks.unsupported_method,
    checks.positive_data_acceptance,
]
"""The auth is a real SigV4 signature (so "generated auth accepted" is expected); API Gateway answers a method no
route has with 404, not 405; and schema-valid input may still break a rule the schema cannot state (a zone of the
Region, an instance type the zone offers): a 422 naming the field, which :func:`check_error_shape` checks."""


def check_error_shape(response: Any, operation: str) -> None:
    """A 4xx is the API's error body (or API Gateway's own answer); a 422 names the field at fault."""
    if not 400 <= response.status_code < 500:
        return
    if response.status_code == 414:
        return  # the request line is over the front door's limit: nothing reached the API
    body = response.json()
    if response.status_code in GATEWAY_STATUSES and set(body) == {"message"}:
        return
    assert set(body) == {"error"}, (operation, body)
    error = body["error"]
    assert isinstance(error.get("code"), str) and isinstance(error.get("message"), str), (operation, body)
    if response.status_code == 422:
        assert error.get("details") and all(d.get("field") for d in error["details"]), (operation, body)


@SCHEMA.parametrize()
@settings(
    max_examples=CASES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_generated_requests_get_documented_answers(case: Any, session: requests.Session, sandbox: Sandbox) -> None:
    if case.method.upper() != "GET" and case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE:
        return  # valid writes start workflows; their behaviour is the integration suites'
    # A generated Authorization header stands for "signed" (the real signature replaces it); a case without one is
    # the generator's missing-credentials case: sent unsigned, API Gateway's IAM authorizer answers 403.
    signed = any(k.lower() == "authorization" for k in (case.headers or {}))
    response = case.call(base_url=sandbox.api_url, session=session if signed else requests.Session())
    operation = f"{case.method.upper()} {case.path}"
    SEEN[(operation, response.status_code)] += 1
    assert response.status_code < 500, (operation, response.status_code, response.text[:500])
    if not signed:
        assert response.status_code in (403, 414), response.text[:300]
        return
    check_error_shape(response, operation)
    case.validate_response(response, excluded_checks=EXCLUDED_CHECKS)


ODD_REQUESTS: list[tuple[str, str, dict[str, str], bytes | None, int]] = [
    ("GET", f"/clusters/{quote('a b')}", {}, None, 422),
    ("GET", "/clusters/a+b", {}, None, 422),
    ("GET", f"/clusters/{quote('a/b', safe='')}", {}, None, 422),
    ("GET", f"/clusters/{quote('a?b', safe='')}", {}, None, 422),
    ("GET", f"/clusters/{quote('ünïcode', safe='')}", {}, None, 422),
    ("GET", f"/clusters/{TAG}/events?maxResults=5&maxResults=6", {}, None, 200),
    ("GET", f"/clusters/{TAG}/events?maxResults=%F0%9F%98%80", {}, None, 422),
    ("POST", "/clusters", {"Content-Type": "application/json"}, b"{not json", 400),
    ("POST", "/clusters", {"Content-Type": "text/plain"}, b'{"clusterTag": "x"}', 415),
    ("POST", "/clusters", {"Content-Type": "application/json"}, base64.b64encode(b'{"clusterTag": "x"}'), 400),
    ("POST", "/clusters", {"Content-Type": "application/json"}, b"[]", 400),
    ("POST", "/clusters", {"Content-Type": "application/json"}, b'{"clusterTag": ' + b'"a' * 200 + b'"}', 400),
    ("POST", "/clusters", {"Content-Type": "application/json"}, b"x" * (10 * 1024 * 1024 + 1), 413),
    ("PATCH", f"/clusters/{TAG}/features", {"Content-Type": "application/json"}, b"null", 400),
]
"""``(method, path, headers, body, expected status)`` the generator does not produce."""


@pytest.mark.parametrize(("method", "path", "headers", "body", "status"), ODD_REQUESTS)
def test_encodings_and_bodies(
    session: requests.Session,
    sandbox: Sandbox,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None,
    status: int,
) -> None:
    response = session.request(method, sandbox.api_url + path, headers=headers, data=body)
    SEEN[(f"{method} (odd) {path[:40]}", response.status_code)] += 1
    assert response.status_code == status, (response.status_code, response.text[:500])
    if response.status_code != 404:
        check_error_shape(response, path)


def test_print_figures() -> None:
    """The figures of this run (runs last in the file)."""
    by_status = Counter(status for (_, status), n in SEEN.items() for _ in range(n))
    total = sum(SEEN.values())
    print(f"\nAPI fuzz: {total} requests over {len({op for op, _ in SEEN})} operations; statuses {dict(by_status)}")
    assert total >= min(1000, CASES_PER_OPERATION * 40) and not any(status >= 500 for status in by_status)
    print(json.dumps({f"{op} -> {status}": n for (op, status), n in sorted(SEEN.items())}, indent=0)[:4000])
