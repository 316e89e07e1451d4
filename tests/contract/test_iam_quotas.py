"""Every role of the template, after the SAM transform and with intrinsics at their longest, fits IAM's quotas with
``instantstart.aws.iam_quotas.HEADROOM`` to spare: its inline policies together, each customer managed policy
attached to it, its trust policy and its number of managed policies. The figures are printed (``pytest -s``, or
``.venv/bin/python -m tests.contract.iam_quotas``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from instantstart.aws import iam_quotas
from tests.contract.iam_quotas import Resolver, RoleFigures, figures, longest_pseudo_parameters, report


@pytest.fixture(scope="module")
def roles(translated: dict[str, Any]) -> list[RoleFigures]:
    """The figures of every role of the transformed template, printed once."""
    pseudo = longest_pseudo_parameters()
    found = figures(translated, Resolver(translated, pseudo))
    print("\n" + report(found, pseudo))
    return found


def test_given_botocore_partitions_then_the_longest_values_are_at_least_the_known_longest() -> None:
    pseudo = longest_pseudo_parameters()

    # a newer botocore may know longer ones; never shorter than these
    assert len(pseudo["AWS::Partition"]) >= len("aws-us-gov")
    assert len(pseudo["AWS::Region"]) >= len("us-isof-south-1")
    assert len(pseudo["AWS::URLSuffix"]) >= len("amazonaws.com.cn")
    assert len(pseudo["AWS::StackName"]) == 128 and len(pseudo["AWS::AccountId"]) == 12


def test_given_the_template_then_every_role_is_measured_including_those_sam_generates(
    roles: list[RoleFigures], template: dict[str, Any]
) -> None:
    names = {r.role for r in roles}

    sam_functions = [lid for lid, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"]
    assert {f"{f}Role" for f in sam_functions if "Role" not in template["Resources"][f]["Properties"]} <= names
    assert {"ClusterStepsRole", "EksClusterRole", "HyperPodExecutionRole", "ConsoleUserRole"} <= names


def test_given_every_role_then_its_inline_policies_together_are_within_budget(roles: list[RoleFigures]) -> None:
    over = {r.role: r.inline_chars for r in roles if not within(r.inline_chars, iam_quotas.INLINE_POLICIES_PER_ROLE)}

    assert not over, f"inline policies over {iam_quotas.budget(iam_quotas.INLINE_POLICIES_PER_ROLE)} characters"


def test_given_every_customer_managed_policy_then_it_is_within_budget(roles: list[RoleFigures]) -> None:
    managed = {name: size for r in roles for name, size in r.managed if size is not None}

    assert managed, "ClusterStepsRole's permissions are customer managed policies"
    over = {name: size for name, size in managed.items() if not within(size, iam_quotas.MANAGED_POLICY)}
    assert not over, f"managed policies over {iam_quotas.budget(iam_quotas.MANAGED_POLICY)} characters"


def test_given_every_role_then_its_trust_policy_is_within_budget(roles: list[RoleFigures]) -> None:
    over = {r.role: r.trust_chars for r in roles if not within(r.trust_chars, iam_quotas.TRUST_POLICY)}

    assert not over, f"trust policies over {iam_quotas.budget(iam_quotas.TRUST_POLICY)} characters"


def test_given_every_role_then_its_managed_policies_are_within_budget(roles: list[RoleFigures]) -> None:
    over = {r.role: r.managed_count for r in roles if not within(r.managed_count, iam_quotas.MANAGED_POLICIES_PER_ROLE)}

    assert not over, f"more than {iam_quotas.budget(iam_quotas.MANAGED_POLICIES_PER_ROLE)} managed policies"


def within(size: int, limit: int) -> bool:
    return iam_quotas.within_budget(size, limit)


# -- the measure itself -------------------------------------------------------------------------------------
def test_given_intrinsics_then_each_resolves_to_its_longest_value() -> None:
    template: dict[str, Any] = {
        "Parameters": {"Version": {"Type": "String", "AllowedValues": ["1.28", "1.300"]}},
        "Resources": {
            "Bus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": {"Fn::Sub": "${AWS::StackName}-e"}}},
            "Table": {"Type": "AWS::DynamoDB::Table", "Properties": {}},
            "Policy": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {}},
        },
    }
    pseudo = {**longest_pseudo_parameters(), "AWS::Partition": "p", "AWS::Region": "r", "AWS::StackName": "s"}
    resolver = Resolver(template, pseudo)

    assert resolver.resolve({"Fn::GetAtt": ["Bus", "Arn"]}) == "arn:p:events:r:123456789012:event-bus/s-e"
    assert resolver.resolve({"Fn::Sub": "${Table}/${!Literal}"}) == "n" * 255 + "/${Literal}"
    assert resolver.resolve({"Ref": "Policy"}) == "arn:p:iam::123456789012:policy/" + "n" * 128
    assert resolver.resolve({"Fn::If": ["C", "a", {"Fn::Join": ["-", ["b", {"Ref": "Version"}]]}]}) == "b-1.300"
    assert resolver.resolve({"Fn::Select": [1, {"Fn::Split": [",", "a,bc"]}]}) == "bc"
    assert resolver.resolve(["a", {"Ref": "AWS::NoValue"}]) == ["a"]
    with pytest.raises(ValueError):
        resolver.resolve({"Fn::ImportValue": "x"})


def test_given_a_role_with_policies_attached_every_way_then_each_is_counted() -> None:
    document = {"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}
    trust = {"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}]}
    template: dict[str, Any] = {
        "Resources": {
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": trust,
                    "Policies": [{"PolicyName": "a", "PolicyDocument": document}],
                    "ManagedPolicyArns": [{"Ref": "ByArn"}, "arn:aws:iam::aws:policy/ReadOnlyAccess"],
                },
            },
            "ByArn": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": document}},
            "ByRoles": {
                "Type": "AWS::IAM::ManagedPolicy",
                "Properties": {"PolicyDocument": document, "Roles": [{"Ref": "Role"}]},
            },
            "Inline": {
                "Type": "AWS::IAM::Policy",
                "Properties": {"PolicyName": "b", "PolicyDocument": document, "Roles": [{"Ref": "Role"}]},
            },
        }
    }
    size = iam_quotas.policy_size({"Version": "2012-10-17", **document})

    (role,) = figures(copy.deepcopy(template))

    assert role.inline_chars == 2 * size
    assert role.managed == [("ByArn", size), ("AWS managed ReadOnlyAccess", None), ("ByRoles", size)]
    assert role.trust_chars == iam_quotas.policy_size(trust)
