"""Every property and parameter of the published OpenAPI document says what it is, in words.

pydantic's automatic title ("Endedat") is not a description; a pattern is never published without its rule in
words (``x-patternRule``, which the API's 422 messages quote); ids, names, timestamps and statuses carry an example.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from instantstart.models.errors import PATTERN_RULE_KEY

EXAMPLE_WANTED = re.compile(r"(Id|Name|At|Tag|Arn|Zone|Type|Version|Count)$|^(status|region|code)$")
"""Property names whose value is easier to get right from an example: ids, names, timestamps, statuses, ..."""


def properties(name: str, schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(where, property name, property schema)`` of ``schema`` and of the object schemas nested inline in it."""
    for prop, sub in schema.get("properties", {}).items():
        yield f"{name}.{prop}", prop, sub
        yield from properties(f"{name}.{prop}", sub)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from properties(f"{name}[]", schema[key])
    for branch in schema.get("anyOf", []):
        yield from properties(name, branch)


def parameters(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for param in operation.get("parameters", []):
                yield f"{method.upper()} {path} {param['in']} {param['name']}", param


def auto_title(name: str) -> str:
    """pydantic's generated title of a field name (``endedAt`` -> ``Endedat``)."""
    return name.replace("_", " ").title().replace(" ", "") if name.islower() else name.capitalize()


def _described(prop: str, schema: dict[str, Any]) -> bool:
    description = str(schema.get("description", "")).strip()
    return bool(description) and description not in (auto_title(prop), schema.get("title"), prop)


def test_given_the_document_then_every_schema_property_has_a_real_description(openapi: Any) -> None:
    missing = [
        where
        for schema_name, schema in openapi.schemas.items()
        for where, prop, sub in properties(schema_name, schema)
        if not _described(prop, sub)
    ]

    assert not missing, f"properties without a description (add one on the pydantic Field): {missing}"


def test_given_the_document_then_every_parameter_has_a_real_description(openapi: Any) -> None:
    missing = [
        where
        for where, param in parameters(openapi.document)
        if not (param.get("description") or _described(param["name"], param["schema"]))
    ]

    assert not missing, f"parameters without a description: {missing}"


def test_given_the_document_then_every_pattern_has_its_rule_in_words(openapi: Any) -> None:
    places = [
        *((where, sub) for name, schema in openapi.schemas.items() for where, _, sub in properties(name, schema)),
        *((where, param["schema"]) for where, param in parameters(openapi.document)),
    ]
    bare = [
        where
        for where, schema in places
        if any("pattern" in branch for branch in [schema, *schema.get("anyOf", [])])
        and not schema.get(PATTERN_RULE_KEY)
    ]

    assert places
    assert not bare, f"patterns without {PATTERN_RULE_KEY} (use models.errors.pattern_rule): {bare}"


def test_given_the_document_then_ids_names_timestamps_and_statuses_have_examples(openapi: Any) -> None:
    without = [
        where
        for schema_name, schema in openapi.schemas.items()
        for where, prop, sub in properties(schema_name, schema)
        if EXAMPLE_WANTED.search(prop) and not (sub.get("examples") or openapi.resolve(sub).get("examples"))
    ]

    assert not without, f"properties that want an example: {without}"


def test_auto_title_is_pydantics_title() -> None:
    # The check above is only as good as this guess of the generated title.
    from pydantic import BaseModel, Field

    class Sample(BaseModel):
        ended_at: str = Field(alias="endedAt")

    assert Sample.model_json_schema(by_alias=True)["properties"]["endedAt"]["title"] == auto_title("endedAt")
