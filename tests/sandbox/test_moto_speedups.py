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
    assert tree is same_tree
    # no component of one program is a component of the other: an execution's state stays its own
    assert not _components(first) & _components(second)
    assert type(first) is type(second) and len(_components(first)) == len(_components(second)) > 3


def _components(program: Any) -> set[int]:
    """ids of the evaluation components reachable from ``program`` through attributes, lists and dicts."""
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    seen: set[int] = set()
    found: set[int] = set()
    stack = [program]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (list, tuple, set)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif type(obj).__module__.startswith("moto.stepfunctions.parser") and hasattr(obj, "__dict__"):
            if isinstance(obj, EvalComponent):
                found.add(id(obj))
            stack.extend(vars(obj).values())
    return found


def test_a_parsed_definition_is_kept_on_disk_and_a_later_process_loads_its_components(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    monkeypatch.setenv("INSTANTSTART_SANDBOX_CACHE", str(tmp_path))
    moto_speedups.install()
    definition = json.dumps(
        {"StartAt": "Kept", "States": {"Kept": {"Type": "Pass", "Result": str(tmp_path), "End": True}}}
    )
    parsed, tree = AmazonStateLanguageParser.parse(definition)  # parsed in this process, then kept
    assert tree is not None

    loaded = moto_speedups._kept_program(definition)  # what the next process reads instead of parsing

    assert type(loaded) is type(parsed) and len(_components(loaded)) == len(_components(parsed)) > 2
    [kept] = list(tmp_path.glob("asl-*/*.pickle"))
    kept.write_bytes(b"not a pickle")
    assert moto_speedups._kept_program(definition) is None, "an unreadable entry means: parse again"


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


def test_a_response_class_that_gains_or_loses_an_action_is_listed_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.core import responses

    moto_speedups.install()

    class Handler(responses.BaseResponse):
        def describe_thing(self) -> str:
            return "{}"

    assert "describe_thing" in responses.method_names_from_class(Handler)
    assert "list_things" not in responses.method_names_from_class(Handler)
    monkeypatch.setattr(Handler, "list_things", lambda self: "[]", raising=False)
    assert "list_things" in responses.method_names_from_class(Handler)
    monkeypatch.undo()
    assert "list_things" not in responses.method_names_from_class(Handler)
    monkeypatch.setattr(Handler, "search_things", lambda self: "[]", raising=False)  # as many attributes as before
    assert "search_things" in responses.method_names_from_class(Handler)
    assert "list_things" not in responses.method_names_from_class(Handler)


@pytest.fixture
def moto_in_process(monkeypatch: pytest.MonkeyPatch) -> Any:
    from moto import mock_aws

    for var in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")  # as the Sandbox runner sets it
    moto_speedups.install()
    with mock_aws():
        yield


def _table_t() -> Any:
    """A DynamoDB client of moto in process, with table ``t`` keyed by the string ``pk``."""
    import boto3

    ddb = boto3.client("dynamodb", region_name="us-west-2")
    ddb.create_table(
        TableName="t",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
    )
    return ddb


def test_the_same_update_expression_applies_to_each_item_and_a_bad_one_fails_every_time(moto_in_process: Any) -> None:
    from botocore.exceptions import ClientError

    ddb = _table_t()
    expression = "SET #s = :s, attempts = if_not_exists(attempts, :zero) + :one"
    for pk, status in (("a", "RUNNING"), ("b", "FAILED"), ("a", "READY")):
        ddb.update_item(
            TableName="t",
            Key={"pk": {"S": pk}},
            UpdateExpression=expression,
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": status}, ":zero": {"N": "0"}, ":one": {"N": "1"}},
        )
    a = ddb.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"]
    b = ddb.get_item(TableName="t", Key={"pk": {"S": "b"}})["Item"]
    assert (a["status"], a["attempts"], b["status"], b["attempts"]) == (
        {"S": "READY"},
        {"N": "2"},
        {"S": "FAILED"},
        {"N": "1"},
    )
    for _ in range(2):
        with pytest.raises(ClientError) as refused:
            ddb.update_item(TableName="t", Key={"pk": {"S": "a"}}, UpdateExpression="SET = :s")
        assert refused.value.response["Error"]["Code"] == "ValidationException"


def test_an_update_answers_the_old_and_new_values_as_moto_does(moto_in_process: Any) -> None:
    ddb = _table_t()
    ddb.put_item(
        TableName="t",
        Item={
            "pk": {"S": "a"},
            "status": {"S": "RUNNING"},
            "stages": {"M": {"network": {"M": {"status": {"S": "RUNNING"}}}}},
            "tags": {"SS": ["x"]},
            "rounds": {"L": [{"N": "1"}]},
        },
    )

    def update(return_values: str) -> dict[str, Any]:
        return dict(
            ddb.update_item(
                TableName="t",
                Key={"pk": {"S": "a"}},
                UpdateExpression="SET #s = :s, stages.network.#s = :s, rounds = list_append(rounds, :r) ADD tags :t",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={":s": {"S": "DONE"}, ":r": {"L": [{"N": "2"}]}, ":t": {"SS": ["y"]}},
                ReturnValues=return_values,
            ).get("Attributes", {})
        )

    old = update("ALL_OLD")
    assert old["status"] == {"S": "RUNNING"}
    assert old["stages"] == {"M": {"network": {"M": {"status": {"S": "RUNNING"}}}}}
    assert old["tags"] == {"SS": ["x"]} and old["rounds"] == {"L": [{"N": "1"}]}
    updated_old = update("UPDATED_OLD")  # the same values again: only the list changes (the set holds "y" already)
    assert updated_old == {"rounds": {"L": [{"N": "1"}, {"N": "2"}]}}
    assert update("NONE") == {}
    stored = ddb.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"]
    assert stored["stages"] == {"M": {"network": {"M": {"status": {"S": "DONE"}}}}}
    assert stored["rounds"] == {"L": [{"N": "1"}, {"N": "2"}, {"N": "2"}, {"N": "2"}]}


@pytest.mark.parametrize(
    ("expression", "values", "message"),
    [
        ("SET pk = :s", {":s": {"S": "b"}}, "Cannot update attribute pk"),  # UpdateHashRangeKeyValidator
        ("SET a = :s, a = :s", {":s": {"S": "x"}}, "overlap"),  # OverlappingPathsValidator
        ("SET a = :s, b = :s", {":s": {"S": "x"}, ":t": {"S": "x"}}, "unused"),  # ExpressionAttributeValueProcessor
        ("SET a = #missing", {}, "#missing"),  # ExpressionAttributeResolvingProcessor
        ("SET a = n + :s", {":s": {"S": "x"}}, "operand"),  # UpdateExpressionFunctionEvaluator / types
        ("REMOVE absent", {}, None),  # a missing attribute to remove: no error, no change
        ("REMOVE nested.deep.path", {}, "document path"),  # nor a path through a missing map
        ("SET nested.deep = :s", {":s": {"S": "x"}}, "document path"),  # NoneExistingPathChecker
    ],
)
def test_each_update_expression_check_still_refuses_what_moto_refuses(
    moto_in_process: Any, expression: str, values: dict[str, Any], message: str | None
) -> None:
    """Whether moto's validators process a node is answered once per node class: each check still sees its nodes."""
    from botocore.exceptions import ClientError

    ddb = _table_t()
    ddb.put_item(TableName="t", Item={"pk": {"S": "a"}, "n": {"N": "1"}})
    kwargs: dict[str, Any] = {"ExpressionAttributeValues": values} if values else {}
    if message is None:
        ddb.update_item(TableName="t", Key={"pk": {"S": "a"}}, UpdateExpression=expression, **kwargs)
        assert ddb.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}, "n": {"N": "1"}}
        return
    with pytest.raises(ClientError) as refused:
        ddb.update_item(TableName="t", Key={"pk": {"S": "a"}}, UpdateExpression=expression, **kwargs)
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert message in refused.value.response["Error"]["Message"]
    assert ddb.get_item(TableName="t", Key={"pk": {"S": "a"}})["Item"] == {"pk": {"S": "a"}, "n": {"N": "1"}}


def test_aws_managed_policies_attach_in_the_aws_partition(moto_in_process: Any) -> None:
    import boto3

    iam = boto3.client("iam", region_name="us-west-2")
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"}}]}
    iam.create_role(RoleName="cluster", AssumeRolePolicyDocument=json.dumps(trust))
    arn = "arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"
    iam.attach_role_policy(RoleName="cluster", PolicyArn=arn)
    attached = iam.list_attached_role_policies(RoleName="cluster")["AttachedPolicies"]
    assert attached == [{"PolicyName": "AmazonEKSClusterPolicy", "PolicyArn": arn}]
    assert iam.get_policy(PolicyArn=arn)["Policy"]["AttachmentCount"] == 1


def test_a_cancelled_transaction_leaves_every_item_as_it_was_and_a_good_one_applies(moto_in_process: Any) -> None:
    import boto3
    from botocore.exceptions import ClientError

    ddb = boto3.client("dynamodb", region_name="us-west-2")
    ddb.create_table(
        TableName="t",
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk")],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    )
    for pk, sk in (("c#a", "meta"), ("c#a", "stage#1"), ("c#b", "meta"), ("op#1", "op")):
        ddb.put_item(TableName="t", Item={"pk": {"S": pk}, "sk": {"S": sk}, "n": {"N": "1"}, "l": {"L": []}})

    def items() -> list[dict[str, Any]]:
        return sorted(ddb.scan(TableName="t")["Items"], key=lambda i: (i["pk"]["S"], i["sk"]["S"]))

    before = items()
    update = {
        "TableName": "t",
        "Key": {"pk": {"S": "c#a"}, "sk": {"S": "stage#1"}},
        "UpdateExpression": "SET n = n + :one, l = list_append(l, :x)",
        "ExpressionAttributeValues": {":one": {"N": "1"}, ":x": {"L": [{"S": "x"}]}},
    }
    put = {"TableName": "t", "Item": {"pk": {"S": "c#c"}, "sk": {"S": "meta"}}}
    delete = {"TableName": "t", "Key": {"pk": {"S": "c#b"}, "sk": {"S": "meta"}}}
    failing = {
        "TableName": "t",
        "Key": {"pk": {"S": "op#1"}, "sk": {"S": "op"}},
        "ConditionExpression": "n = :two",
        "ExpressionAttributeValues": {":two": {"N": "2"}},
    }
    for _ in range(2):
        with pytest.raises(ClientError) as cancelled:
            ddb.transact_write_items(
                TransactItems=[{"Update": update}, {"Put": put}, {"Delete": delete}, {"ConditionCheck": failing}]
            )
        assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
        assert items() == before, "the update, the put and the delete were all rolled back"

    ddb.transact_write_items(TransactItems=[{"Update": update}, {"Put": put}, {"Delete": delete}])
    after = {(i["pk"]["S"], i["sk"]["S"]): i for i in items()}
    assert set(after) == {("c#a", "meta"), ("c#a", "stage#1"), ("c#c", "meta"), ("op#1", "op")}
    assert after[("c#a", "stage#1")]["n"] == {"N": "2"} and after[("c#a", "stage#1")]["l"] == {"L": [{"S": "x"}]}
    assert after[("c#a", "meta")]["n"] == {"N": "1"}


def test_each_ec2_resource_reads_its_own_tags_and_tag_filters_match_as_before(moto_in_process: Any) -> None:
    import boto3

    ec2 = boto3.client("ec2", region_name="us-west-2")
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.1.{n}.0/24", AvailabilityZone="us-west-2c")["Subnet"]["SubnetId"]
        for n in range(12)
    ]
    for n, subnet in enumerate(subnets):  # subnet-...1 and subnet-...12 style ids must not mix
        ec2.create_tags(Resources=[subnet], Tags=[{"Key": "team", "Value": f"t{n % 3}"}, {"Key": "n", "Value": str(n)}])

    for subnet in subnets:
        moto_view = ec2.describe_tags(Filters=[{"Name": "resource-id", "Values": [subnet]}])["Tags"]
        described = ec2.describe_subnets(SubnetIds=[subnet])["Subnets"][0]["Tags"]
        assert described == [{"Key": t["Key"], "Value": t["Value"]} for t in moto_view]
    t1 = ec2.describe_subnets(Filters=[{"Name": "tag:team", "Values": ["t1"]}])["Subnets"]
    assert sorted(s["SubnetId"] for s in t1) == sorted(subnets[1::3])
    none = ec2.describe_subnets(Filters=[{"Name": "tag:team", "Values": ["t9"]}])["Subnets"]
    assert none == []


def test_moto_lists_the_same_backends_from_its_kept_list() -> None:
    import os

    import moto
    from moto import backends

    moto_speedups.install()
    package = os.path.dirname(moto.__file__)
    on_disk = sorted(
        name for name in os.listdir(package) if os.path.isdir(os.path.join(package, name)) and not name.startswith("__")
    )
    assert list(backends.list_of_moto_modules()) == on_disk
    assert "dynamodb" in on_disk and "stepfunctions" in on_disk
