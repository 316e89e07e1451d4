"""Generate ``api_schema/openapi.json`` from the API function's routes (Powertools OpenAPI).

The same document is written to ``client/instantstart_client/openapi.json``: the client package ships it and
calls operations by id from it (``instantstart_client.operations``) without importing anything of the core.

Usage: ``python api_schema/generate.py`` (writes both copies) or ``--check`` (exit 1 when either committed copy
differs from the routes).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "api_schema" / "openapi.json"
CLIENT_COPY = ROOT / "client" / "instantstart_client" / "openapi.json"
TARGETS = (TARGET, CLIENT_COPY)
"""Every committed copy of the document: the published one and the one the client package ships."""


def generate() -> str:
    """The OpenAPI 3.1 document of the HTTP API as committed (sorted keys, 2-space indent)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-west-2")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    # The handler requires its settings at import (cold start); the document does not depend on them.
    machines = (
        "CREATE_CLUSTER_STATE_MACHINE_ARN",
        "DELETE_CLUSTER_STATE_MACHINE_ARN",
        "UPDATE_CLUSTER_STATE_MACHINE_ARN",
    )
    for name in machines:
        os.environ.setdefault(name, f"arn:aws:states:us-west-2:000000000000:stateMachine:{name.lower()}")
    os.environ.setdefault("TABLE_NAME", "instantstart-openapi")
    sys.path.insert(0, str(ROOT / "functions" / "api"))
    import api_app
    from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn

    schema = api_app.include_all_routes().get_openapi_json_schema(
        title="InstantStart Serverless API",
        version="0.1.0",
        description="Control plane for Amazon SageMaker HyperPod clusters orchestrated by Amazon EKS. "
        "Every request is SigV4-signed for the execute-api service (API Gateway AWS_IAM authorization). "
        "Long-running requests answer 202 with an operation to poll.",
        security_schemes={
            "sigv4": APIKey(
                name="Authorization",
                in_=APIKeyIn.header,
                description="AWS Signature Version 4 (service execute-api)",
            )
        },
        security=[{"sigv4": []}],
    )
    return json.dumps(without_unused_schemas(json.loads(schema)), indent=2, sort_keys=True) + "\n"


def _refs(node: Any) -> set[str]:
    """Names of the component schemas ``node`` references (``#/components/schemas/<name>``)."""
    if isinstance(node, dict):
        found = {str(v).rsplit("/", 1)[-1] for k, v in node.items() if k == "$ref"}
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def without_unused_schemas(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` without the component schemas no operation reaches.

    Powertools always adds its own validation-error shapes (``HTTPValidationError``, ``ValidationError``,
    ``ResponseValidationError``); this API never answers them (every error is ``ErrorResponse``).
    """
    schemas = document.get("components", {}).get("schemas", {})
    reached: set[str] = set()
    todo = _refs(document.get("paths", {}))
    while todo:
        name = todo.pop()
        if name in reached or name not in schemas:
            continue
        reached.add(name)
        todo |= _refs(schemas[name]) - reached
    for name in set(schemas) - reached:
        del schemas[name]
    return document


def stale_copies(text: str) -> list[Path]:
    """The copies in :data:`TARGETS` that are missing or differ from ``text``."""
    return [target for target in TARGETS if not target.exists() or target.read_text() != text]


def main() -> int:
    """Write both copies of the document, or with ``--check`` compare them with the generated one."""
    text = generate()
    if "--check" in sys.argv:
        stale = stale_copies(text)
        for target in stale:
            print(f"{target.relative_to(ROOT)} is stale: run python api_schema/generate.py (make openapi)")
        return 1 if stale else 0
    for target in TARGETS:
        target.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
