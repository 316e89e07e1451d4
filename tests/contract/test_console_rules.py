"""The console's create form checks the API's own field rules: console/site/rules.json against the OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RULES = json.loads((ROOT / "console" / "site" / "rules.json").read_text())
SCHEMAS = json.loads((ROOT / "api_schema" / "openapi.json").read_text())["components"]["schemas"]
WHERE = {
    "clusterTag": "CreateClusterRequest",
    "availabilityZone": "CreateClusterRequest",
    "kubernetesVersion": "CreateClusterRequest",
    "instanceGroups": "CreateClusterRequest",
    "instanceGroupName": "InstanceGroupRequest",
    "instanceType": "InstanceGroupRequest",
    "instanceCount": "InstanceGroupRequest",
    "trainingPlanArn": "InstanceGroupRequest",
}
KEYS = {"pattern", "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems"}


def api_rule(model: str, field: str) -> dict[str, Any]:
    """The field's schema in the API document, its non-null branch merged in."""
    schema = dict(SCHEMAS[model]["properties"][field])
    for branch in schema.pop("anyOf", []):
        if branch.get("type") != "null":
            schema = {**branch, **schema}
    return schema


@pytest.mark.parametrize("field", sorted(WHERE))
def test_given_a_field_the_form_checks_then_its_rule_is_the_apis(field: str) -> None:
    schema = api_rule(WHERE[field], field)
    mine = RULES[field]

    assert {k: v for k, v in mine.items() if k in KEYS} == {k: schema[k] for k in KEYS if k in schema}
    assert mine.get("rule") == schema.get("x-patternRule")


def test_given_the_capacity_types_then_the_form_offers_the_apis_values() -> None:
    assert RULES["capacityType"]["enum"] == SCHEMAS["CapacityType"]["enum"]


def test_given_the_rules_file_then_it_names_only_fields_the_request_has() -> None:
    assert set(RULES) - {"_comment", "capacityType"} == set(WHERE)
