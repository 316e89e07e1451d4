"""Given the sandbox's moto shortcuts (instantstart_sandbox.moto_speedups), then moto answers exactly as
without them: the same DynamoDB response bodies, fresh Step Functions programs per execution, the same
parse errors, the same JSONPath results."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from instantstart_sandbox import moto_speedups

ITEM: dict[str, Any] = {
    "pk": {"S": "CLUSTER#demo"},
    "empty": {"S": ""},
    "count": {"N": "3"},
    "decimal": {"N": Decimal("1.5")},
    "ok": {"BOOL": False},
    "none": {"NULL": True},
    "tags": {"SS": ["a", "b"]},
    "sizes": {"NS": ["1", "2"]},
    "stages": {
        "L": [
            {"M": {"name": {"S": "network"}, "resources": {"M": {"vpcId": {"S": "vpc-1"}, "ids": {"L": []}}}}},
            {"M": {}},
        ]
    },
    "blob": {"B": b"\x00\x01"},
    "nested_blob": {"M": {"b": {"BS": [b"x"]}, "s": {"S": "kept"}}},
}


def _serialize(item: dict[str, Any]) -> dict[str, Any]:
    from moto.core.serialize import JSONSerializer, XFormedAttributePicker
    from moto.core.utils import get_service_model

    moto_speedups.install()
    operation = get_service_model("dynamodb").operation_model("GetItem")
    serializer = JSONSerializer(operation_model=operation, value_picker=XFormedAttributePicker())
    return dict(json.loads(serializer.serialize({"Item": item})["body"]))


def test_dynamodb_items_serialize_as_moto_does(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _serialize(ITEM)
    monkeypatch.setattr(moto_speedups, "attribute_value", lambda value: NotImplemented)  # moto's own path
    generic = _serialize(ITEM)
    assert fast == generic
    assert fast["Item"]["stages"]["L"][0]["M"]["name"] == {"S": "network"}
    assert fast["Item"]["blob"] == {"B": "AAE="}


DEFINITION = json.dumps(
    {
        "StartAt": "Pick",
        "States": {"Pick": {"Type": "Pass", "Parameters": {"tag.$": "$.cluster.tag"}, "End": True}},
    }
)


def test_each_parse_of_a_definition_builds_its_own_program() -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    moto_speedups.install()
    first, tree = AmazonStateLanguageParser.parse(DEFINITION)
    second, same_tree = AmazonStateLanguageParser.parse(DEFINITION)
    assert first is not second
    assert tree is same_tree


def test_an_invalid_definition_fails_on_every_parse() -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser, ASLParserException

    moto_speedups.install()
    for _ in range(2):
        with pytest.raises(ASLParserException):
            AmazonStateLanguageParser.parse('{"StartAt": "A", "States": {"A": {"Type": "Nope"')


def test_a_json_path_finds_the_same_values_twice() -> None:
    from moto.stepfunctions.parser.asl.utils.json_path import extract_json

    moto_speedups.install()
    data = {"cluster": {"tag": "demo", "groups": [{"n": 1}, {"n": 2}]}}
    for _ in range(2):
        assert extract_json("$.cluster.tag", data) == "demo"
        assert extract_json("$.cluster.groups[*].n", data) == [1, 2]
