"""The committed OpenAPI document, the resolver's routes and the template's HttpApi routes are one set."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options"}


def load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("api_schema_generate", ROOT / "api_schema" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generator(monkeypatch_module: pytest.MonkeyPatch) -> ModuleType:
    return load_generator()


@pytest.fixture(scope="module")
def generated_text(generator: ModuleType) -> str:
    """The document the routes generate (once per module: about 1.6 s)."""
    return str(generator.generate())


@pytest.fixture(scope="module")
def generated(generated_text: str) -> dict[str, Any]:
    return dict(json.loads(generated_text))


@pytest.fixture(scope="module")
def monkeypatch_module() -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", "us-west-2")
        mp.setenv("POWERTOOLS_TRACE_DISABLED", "true")
        yield mp


def openapi_routes(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {
        (method.upper(), path) for path, item in document["paths"].items() for method in item if method in HTTP_METHODS
    }


def template_routes(template: dict[str, Any]) -> set[tuple[str, str]]:
    routes = set()
    for resource in template["Resources"].values():
        for event in resource.get("Properties", {}).get("Events", {}).values():
            if event.get("Type") == "HttpApi":
                props = event["Properties"]
                routes.add((props["Method"].upper(), props["Path"]))
    return routes


def test_given_the_routes_when_generating_openapi_then_it_equals_the_committed_document(generated_text: str) -> None:
    committed = (ROOT / "api_schema" / "openapi.json").read_text()

    assert generated_text == committed, "api_schema/openapi.json is stale: run make openapi"


def test_given_the_routes_then_the_client_package_ships_the_same_document(generated_text: str) -> None:
    shipped = ROOT / "client" / "instantstart_client" / "openapi.json"

    assert shipped.read_text() == generated_text, f"{shipped.relative_to(ROOT)} is stale: make openapi"


def test_given_the_routes_then_the_templates_http_api_events_are_the_generated_ones(
    generator: ModuleType, generated_text: str
) -> None:
    """What ``api_schema/generate.py --check`` checks of the template: its ``HttpApi`` events, byte for byte."""
    template = (ROOT / "template.yaml").read_text()

    routed = generator.with_template_events(template, generator.template_events(json.loads(generated_text)))

    assert routed == template, "template.yaml's HttpApi events are stale: run make openapi"


def test_given_the_template_the_resolver_and_the_document_then_they_serve_the_same_routes(
    template: dict[str, Any], generated: dict[str, Any]
) -> None:
    committed = json.loads((ROOT / "api_schema" / "openapi.json").read_text())
    in_template = template_routes(template)

    assert in_template, "no HttpApi routes found in template.yaml"
    assert openapi_routes(generated) == in_template, "resolver routes differ from template.yaml HttpApi events"
    assert openapi_routes(committed) == in_template, "api_schema/openapi.json paths differ from template.yaml"


def test_given_the_document_then_every_post_route_accepts_an_idempotency_key_header(generated: dict[str, Any]) -> None:
    for path, item in generated["paths"].items():
        if "post" in item:
            headers = [p["name"].lower() for p in item["post"].get("parameters", []) if p.get("in") == "header"]
            assert "idempotency-key" in headers, path  # header names are case-insensitive


def test_given_the_document_then_it_is_openapi_3_1_signed_with_sigv4(generated: dict[str, Any]) -> None:
    assert generated["openapi"].startswith("3.1")
    assert generated["security"] == [{"sigv4": []}]
