"""Generate ``api_schema/openapi.json`` from the API function's routes (Powertools OpenAPI).

The same document is written to ``client/instantstart_client/openapi.json``: the client package ships it and
calls operations by id from it (``instantstart_client.operations``) without importing anything of the core.

The API function's routes in ``template.yaml`` (its ``Events``: one ``HttpApi`` event per operation) are generated
from the same document, so a new route is declared once, on its Powertools router.

Usage: ``python api_schema/generate.py`` (writes both copies and the template's routes) or ``--check`` (exit 1 when a
committed copy or the template's routes differ from the routes).
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
TEMPLATE = ROOT / "template.yaml"
"""The SAM template: the API function's ``Events`` (one ``HttpApi`` route per operation) are generated here."""
EVENTS_HEADER = (
    "      Events:\n"
    "        # Generated from api_schema/openapi.json by `make openapi` (api_schema/generate.py::template_events):\n"
    "        # one HttpApi route per operation, named by its operationId. Do not edit by hand.\n"
)


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


def template_events(document: dict[str, Any]) -> str:
    """The ``Events`` block of ``ApiFunction`` in ``template.yaml``: one ``HttpApi`` event per operation of
    ``document``, named by its ``operationId``, in the document's order (6-space indent, lines of at most 120)."""
    lines = [EVENTS_HEADER]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            route = path if "{" not in path else f'"{path}"'
            properties = f"{{ ApiId: !Ref HttpApi, Method: {method.upper()}, Path: {route} }}"
            lines.append(f"        {operation['operationId']}:\n          Type: HttpApi\n")
            one_line = f"          Properties: {properties}"
            lines.append(
                one_line + "\n" if len(one_line) <= 120 else f"          Properties:\n            {properties}\n"
            )
    return "".join(lines)


def with_template_events(template: str, events: str) -> str:
    """``template`` with the API function's ``Events`` block replaced by ``events`` (from its ``Events:`` line to the
    first blank line after it).

    Raises:
        ValueError: the template has no ``ApiFunction`` with an ``Events`` block.
    """
    start = template.index("\n  ApiFunction:\n")
    begin = template.index("\n      Events:\n", start) + 1
    end = template.index("\n\n", begin) + 1
    return template[:begin] + events + template[end:]


def stale_copies(text: str) -> list[Path]:
    """The copies in :data:`TARGETS` that are missing or differ from ``text``."""
    return [target for target in TARGETS if not target.exists() or target.read_text() != text]


def main() -> int:
    """Write both copies of the document, or with ``--check`` compare them with the generated one."""
    text = generate()
    template = TEMPLATE.read_text()
    routed = with_template_events(template, template_events(json.loads(text)))
    if "--check" in sys.argv:
        stale = stale_copies(text) + ([TEMPLATE] if routed != template else [])
        for target in stale:
            print(f"{target.relative_to(ROOT)} is stale: run python api_schema/generate.py (make openapi)")
        return 1 if stale else 0
    for target in TARGETS:
        target.write_text(text)
    TEMPLATE.write_text(routed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
