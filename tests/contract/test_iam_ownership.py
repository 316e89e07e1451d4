"""Ownership conditions on the roles' EC2/EKS/SageMaker writes, and the IAM audit's evaluation of them.

Every mutating EC2, EKS and SageMaker action a role is granted is conditioned on the ownership tags
(``instantstart:managed`` on what the control plane created, ``instantstart:cluster-tag`` on an imported HyperPod
cluster), unless it is in :data:`UNCONDITIONED_WRITES` with the reason nothing narrower works. The second half
checks, with the statements of the deployed template, what IAM would decide for the calls the workflows make, using
the same evaluator the sandbox's IAM audit runs on every recorded EKS and HyperPod write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from instantstart_sandbox.aws.calls import IamTarget
from instantstart_sandbox.iam_audit import (
    UnsupportedCondition,
    allows,
    audit,
    condition_holds,
    policy_statements,
    role_statements,
)
from tests.contract.test_template_contract import RESOURCE_STAR_ALLOWLIST, as_list

ROOT = Path(__file__).resolve().parents[2]
REGION, ACCOUNT = "us-west-2", "123456789012"
READ_VERBS = ("Describe", "List", "Get", "Search")
OWNERSHIP_KEYS = ("aws:ResourceTag/instantstart:", "aws:RequestTag/instantstart:", "aws:TagKeys", "ec2:CreateAction")
"""Condition keys that scope a write to what the control plane owns (``ec2:CreateAction``: tags only while creating,
where the create itself needs the managed tag)."""

UNCONDITIONED_WRITES: dict[str, dict[str, str]] = {
    "HyperPodExecutionRole": {
        **{
            action: "AWS's documented HyperPod execution-role policy: the node agents manage the network interfaces "
            "of SageMaker's own instances, which carry none of our tags"
            # the ENI actions the node agents need on Resource "*" (that allowlist), and tagging those interfaces
            for action in sorted(
                {a for a in RESOURCE_STAR_ALLOWLIST["hyperpod-node-agents"] if a.startswith("ec2:")}
                | {"ec2:CreateTags"}
            )
        }
    },
    "ClusterStepsRole": {
        "ec2:AttachInternetGateway": "authorises on the VPC too, and an imported VPC carries no tags of ours; the "
        "gateway side needs the managed tag (NetworkModifyOwned)",
        **{
            action: "an access entry made before an import carries no tags of ours; the statement is scoped to the "
            "entries of the control plane's and the API's own roles (EksGrantsOnForeignEntries), and the delete "
            "takes the grant back"
            for action in ("eks:AssociateAccessPolicy", "eks:DisassociateAccessPolicy", "eks:UpdateAccessEntry")
        },
    },
    "ApiFunctionRole": {
        "sagemaker:InvokeEndpoint": "invokes a model and changes no resource; scoped to endpoint/instantstart-*",
    },
}


def _role_statements(translated: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(role, statement)`` of every role's inline and customer managed policies (the IAM audit's reading)."""
    out = []
    for lid, resource in translated["Resources"].items():
        if resource["Type"] == "AWS::IAM::Role":
            out += [(lid, s) for s in policy_statements(translated, lid)]
    return out


def _mutating(action: str) -> bool:
    service, _, name = action.partition(":")
    return service in ("ec2", "eks", "sagemaker") and not name.startswith(READ_VERBS)


def unconditioned_writes(translated: dict[str, Any]) -> dict[str, set[str]]:
    """Role logical id -> the EC2/EKS/SageMaker writes it is granted by a statement with no ownership condition."""
    out: dict[str, set[str]] = {}
    for role, statement in _role_statements(translated):
        keys = {key for block in (statement.get("Condition") or {}).values() for key in block}
        for action in as_list(statement.get("Action", [])):
            if _mutating(action) and not any(k.startswith(OWNERSHIP_KEYS) for k in keys):
                out.setdefault(role, set()).add(action)
    return out


def test_given_every_role_then_each_ec2_eks_sagemaker_write_is_conditioned_on_ownership_or_allowlisted(
    translated: dict[str, Any],
) -> None:
    found = unconditioned_writes(translated)

    # exactly the allowlist: nothing else unconditioned, and no stale entry
    assert found == {role: set(actions) for role, actions in UNCONDITIONED_WRITES.items()}


def test_given_a_role_granting_a_delete_without_condition_then_the_check_names_it() -> None:
    policy = {
        "Statement": [
            {"Effect": "Allow", "Action": ["eks:DeleteCluster", "eks:DescribeCluster"], "Resource": "*"},
            {
                "Effect": "Allow",
                "Action": "sagemaker:DeleteCluster",
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:ResourceTag/instantstart:managed": "true"}},
            },
        ]
    }
    role = {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyDocument": policy}]}}

    assert unconditioned_writes({"Resources": {"StepsRole": role}}) == {"StepsRole": {"eks:DeleteCluster"}}


def test_given_a_write_in_a_customer_managed_policy_then_the_check_names_it() -> None:
    policy = {"Statement": [{"Effect": "Allow", "Action": "ec2:DeleteVpc", "Resource": "*"}]}
    template = {
        "Resources": {
            "StepsRole": {"Type": "AWS::IAM::Role", "Properties": {"ManagedPolicyArns": [{"Ref": "Network"}]}},
            "Network": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": policy}},
            "Other": {
                "Type": "AWS::IAM::ManagedPolicy",
                "Properties": {"PolicyDocument": policy, "Roles": [{"Ref": "OtherRole"}]},
            },
            "OtherRole": {"Type": "AWS::IAM::Role", "Properties": {}},
        }
    }

    assert unconditioned_writes(template) == {"StepsRole": {"ec2:DeleteVpc"}, "OtherRole": {"ec2:DeleteVpc"}}


def test_given_the_steps_role_then_the_audit_reads_its_customer_managed_policies(translated: dict[str, Any]) -> None:
    sids = {s.get("Sid") for s in role_statements(translated)["ClusterStepsFunction"]}
    managed = [lid for lid, r in translated["Resources"].items() if r["Type"] == "AWS::IAM::ManagedPolicy"]

    assert managed
    for lid in managed:
        assert {s["Sid"] for s in translated["Resources"][lid]["Properties"]["PolicyDocument"]["Statement"]} <= sids
    # calls only a managed policy grants (network, IAM) are attributed and allowed
    calls = {("steps", "ec2", "CreateVpc"): 1, ("steps", "iam", "CreateRole"): 1, ("steps", "dynamodb", "Query"): 1}
    report = audit(calls, ROOT / "template.yaml", REGION, {"steps": "ClusterStepsFunction"})
    assert report.ok and report.checked == 3, report.summary()


# -- what IAM decides for the workflows' calls (the IAM audit's evaluator) -----------------------------------
MANAGED = (("instantstart:cluster-tag", "demo"), ("instantstart:managed", "true"))
IMPORTED = (("instantstart:cluster-tag", "demo"),)
EKS = f"arn:aws:eks:{REGION}:{ACCOUNT}"
HYPERPOD = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/p8rw4hnc2xja"
ENTRY = f"{EKS}:access-entry/eks-cluster-demo/role/{ACCOUNT}/x/1"
ADDON = f"{EKS}:addon/prod/cert-manager/1a2b"
NEEDED_BY = (("instantstart:needed-by", "a"),)


@pytest.fixture(scope="module")
def roles(translated: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Function logical id -> its role's Allow statements."""
    return role_statements(translated)


def decide(roles: dict[str, list[dict[str, Any]]], function: str, action: str, target: IamTarget) -> bool:
    return any(allows(s, action, target, REGION, ACCOUNT) for s in roles[function])


@pytest.mark.parametrize(
    ("action", "target", "allowed"),
    [
        # EKS: created with the managed tag under our name; deleted only when it carries it
        ("eks:CreateCluster", IamTarget(f"{EKS}:cluster/eks-cluster-demo", (), MANAGED), True),
        ("eks:CreateCluster", IamTarget(f"{EKS}:cluster/eks-cluster-demo", (), None), False),
        ("eks:CreateCluster", IamTarget(f"{EKS}:cluster/prod", (), MANAGED), False),
        ("eks:DeleteCluster", IamTarget(f"{EKS}:cluster/eks-cluster-demo", MANAGED), True),
        ("eks:DeleteCluster", IamTarget(f"{EKS}:cluster/eks-cluster-demo", ()), False),
        ("eks:DeleteCluster", IamTarget(f"{EKS}:cluster/prod", MANAGED), False),
        # on an imported cluster: add-ons and access entries of ours only
        ("eks:CreateAddon", IamTarget(f"{EKS}:cluster/prod", (), MANAGED), True),
        ("eks:CreateAddon", IamTarget(f"{EKS}:cluster/prod", (), (("team", "ml"),)), False),
        ("eks:DeleteAddon", IamTarget(f"{EKS}:addon/prod/vpc-cni/1a2b", ()), False),
        ("eks:UpdateAddon", IamTarget(f"{EKS}:addon/prod/metrics-server/1a2b", MANAGED), True),
        # EKS's creator entry carries no tags: the steps role cannot change it
        ("eks:AssociateAccessPolicy", IamTarget(ENTRY, ()), False),
        ("eks:AssociateAccessPolicy", IamTarget(ENTRY, MANAGED), True),
        # re-tagging an add-on of ours (which features need it) sets no managed tag in the request
        ("eks:TagResource", IamTarget(ADDON, MANAGED, NEEDED_BY), True),
        ("eks:TagResource", IamTarget(ADDON, (), NEEDED_BY), False),
        # HyperPod: ids in the ARN, so the tags are the only scope
        ("sagemaker:CreateCluster", IamTarget(f"{HYPERPOD}", (), MANAGED), True),
        ("sagemaker:CreateCluster", IamTarget(f"{HYPERPOD}", (), None), False),
        ("sagemaker:DeleteCluster", IamTarget(HYPERPOD, MANAGED), True),
        ("sagemaker:DeleteCluster", IamTarget(HYPERPOD, IMPORTED), False),
        ("sagemaker:DeleteCluster", IamTarget(HYPERPOD, ()), False),
        ("sagemaker:UpdateCluster", IamTarget(HYPERPOD, MANAGED), True),
        ("sagemaker:BatchReplaceClusterNodes", IamTarget(HYPERPOD, IMPORTED), True),
        ("sagemaker:BatchRebootClusterNodes", IamTarget(HYPERPOD, ()), False),
        # DELETE of an imported cluster removes only the import's key, never from a cluster created here
        ("sagemaker:DeleteTags", IamTarget(HYPERPOD, IMPORTED, (("instantstart:cluster-tag", ""),)), True),
        ("sagemaker:DeleteTags", IamTarget(HYPERPOD, MANAGED, (("instantstart:cluster-tag", ""),)), False),
        ("sagemaker:DeleteTags", IamTarget(HYPERPOD, IMPORTED, (("team", ""),)), False),
    ],
)
def test_given_a_steps_call_then_iam_decides_by_the_ownership_tags(
    roles: dict[str, list[dict[str, Any]]], action: str, target: IamTarget, allowed: bool
) -> None:
    assert decide(roles, "ClusterStepsFunction", action, target) is allowed


@pytest.mark.parametrize(
    ("action", "target", "allowed"),
    [
        # POST /clusters/import: the import's key only, on a cluster not created here
        ("sagemaker:AddTags", IamTarget(HYPERPOD, (), (("instantstart:cluster-tag", "demo"),)), True),
        ("sagemaker:AddTags", IamTarget(HYPERPOD, MANAGED, (("instantstart:cluster-tag", "other"),)), False),
        ("sagemaker:AddTags", IamTarget(HYPERPOD, (), (("instantstart:managed", "true"),)), False),
        # task governance: created tagged, changed only when tagged
        (
            "sagemaker:CreateComputeQuota",
            IamTarget(f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/(new)", (), MANAGED),
            True,
        ),
        (
            "sagemaker:UpdateComputeQuota",
            IamTarget(f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/q-1", ()),
            False,
        ),
        # the API role changes no HyperPod cluster itself
        ("sagemaker:UpdateCluster", IamTarget(HYPERPOD, MANAGED), False),
    ],
)
def test_given_an_api_call_then_iam_decides_by_the_ownership_tags(
    roles: dict[str, list[dict[str, Any]]], action: str, target: IamTarget, allowed: bool
) -> None:
    assert decide(roles, "ApiFunction", action, target) is allowed


def test_given_iam_operators_then_absent_keys_are_judged_as_iam_does() -> None:
    untagged = IamTarget("arn:x", ())
    tagged = IamTarget("arn:x", (("instantstart:managed", "true"),), (("a", "1"), ("b", "2")))

    # a plain operator on an absent key fails; ForAllValues on an absent key holds; Null tests presence
    assert not condition_holds({"StringEquals": {"aws:ResourceTag/instantstart:managed": "true"}}, untagged)
    assert condition_holds({"ForAllValues:StringEquals": {"aws:TagKeys": ["a"]}}, untagged)
    assert not condition_holds({"ForAllValues:StringEquals": {"aws:TagKeys": ["a"]}}, tagged)
    assert condition_holds({"ForAnyValue:StringLike": {"aws:TagKeys": ["b*"]}}, tagged)
    assert condition_holds({"Null": {"aws:ResourceTag/instantstart:managed": "true"}}, untagged)
    assert not condition_holds({"Null": {"aws:ResourceTag/instantstart:managed": "true"}}, tagged)
    with pytest.raises(UnsupportedCondition):
        condition_holds({"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}, tagged)
