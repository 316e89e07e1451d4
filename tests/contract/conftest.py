"""Fixtures of the contract tests: the SAM template as data (parsed once per session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    """template.yaml with CloudFormation short-form tags decoded as intrinsic-function dicts (cfn-lint's decoder)."""
    import cfnlint.decode

    decoded, errors = cfnlint.decode.decode(str(ROOT / "template.yaml"))
    assert not errors and decoded is not None, errors
    return dict(json.loads(json.dumps(decoded, default=str)))


@pytest.fixture(scope="session")
def translated() -> dict[str, Any]:
    """The template after the SAM transform (policy templates and HttpApi expanded), offline."""
    from instantstart_sandbox.deploy import translate

    cfn, _ = translate(ROOT / "template.yaml", "us-west-2")
    return dict(cfn)


class OpenApi:
    """The committed ``api_schema/openapi.json`` with ``$ref``/nullable resolution for the contract tests."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.schemas: dict[str, Any] = document["components"]["schemas"]

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        """``schema`` with its ``$ref`` target merged in (its own keys win) and the non-null ``anyOf`` branch.

        A nullable schema gets ``"nullable": True``.
        """
        out = dict(schema)
        branches = out.get("anyOf")
        if isinstance(branches, list):
            concrete = [b for b in branches if b.get("type") != "null"]
            if len(concrete) == 1:
                rest = {k: v for k, v in out.items() if k != "anyOf"}
                out = {**self.resolve(concrete[0]), **rest, "nullable": len(concrete) < len(branches)}
        ref = out.get("$ref")
        if isinstance(ref, str):
            out = {
                **self.resolve(self.schemas[ref.rsplit("/", 1)[-1]]),
                **{k: v for k, v in out.items() if k != "$ref"},
            }
        return out

    def operation(self, method: str, path: str) -> dict[str, Any]:
        """The operation object of ``METHOD path`` (KeyError when the document has none)."""
        return dict(self.document["paths"][path][method.lower()])

    def parameter(self, method: str, path: str, where: str, name: str) -> dict[str, Any]:
        """The resolved schema of one parameter (header names compare case-insensitively)."""
        for param in self.operation(method, path).get("parameters", []):
            if param["in"] == where and param["name"].lower() == name.lower():
                return self.resolve(param["schema"])
        raise KeyError(f"{method} {path} has no {where} parameter {name}")

    def body(self, method: str, path: str) -> dict[str, Any]:
        """The resolved JSON request body schema of ``METHOD path``."""
        return self.resolve(self.operation(method, path)["requestBody"]["content"]["application/json"]["schema"])


@pytest.fixture(scope="session")
def openapi() -> OpenApi:
    """The committed OpenAPI document (``make openapi``)."""
    return OpenApi(json.loads((ROOT / "api_schema" / "openapi.json").read_text()))
