"""The template's IAM figures against IAM's quotas, with every intrinsic resolved to its longest value.

The SAM-transformed ``template.yaml`` (the function and state machine roles SAM generates from ``Policies:``
included) is read role by role: the characters of its inline policies together, of its trust policy, of each
customer managed policy attached to it (``ManagedPolicyArns`` naming an ``AWS::IAM::ManagedPolicy``, or a managed
policy whose ``Roles`` name the role) and how many managed policies it has (AWS managed ones count too). Every
``Ref``/``Fn::GetAtt``/``Fn::Sub``/``Fn::Join``/``Fn::Select``/``Fn::Split``/``Fn::If``/``Fn::FindInMap`` is resolved
with the longest value it can take in any deployment:

- ``AWS::Partition``, ``AWS::Region``, ``AWS::URLSuffix``: the longest partition id, Region name and DNS suffix in
  botocore's partition data, each on its own (``aws-us-gov``, ``us-isof-south-1``, ``amazonaws.com.cn`` with
  botocore 1.40); no real Region has all three, so the figures are an upper bound;
- ``AWS::StackName``: 128 characters (CloudFormation's maximum); ``AWS::AccountId``: 12 digits;
- a resource without an explicit name: the longest name its type allows (CloudFormation generates
  ``<stack>-<logical id>-<suffix>`` cut to that length); ``Fn::If``: the longer branch.

Print the figures with ``.venv/bin/python -m tests.contract.iam_quotas``; ``tests/contract/test_iam_quotas.py``
asserts each is within ``instantstart.aws.iam_quotas.HEADROOM`` of its quota.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from instantstart.aws import iam_quotas

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT_ID = "123456789012"
STACK_NAME = "s" * 128
GENERIC = 256
"""Length assumed for an attribute or a resource kind this module has no rule for (longer than any it knows)."""

MAX_NAME = {
    "AWS::DynamoDB::Table": 255,
    "AWS::S3::Bucket": 63,
    "AWS::Events::EventBus": 256,
    "AWS::IAM::Role": 64,
    "AWS::IAM::ManagedPolicy": 128,
    "AWS::Lambda::Function": 64,
    "AWS::Logs::LogGroup": 512,
    "AWS::StepFunctions::StateMachine": 80,
    "AWS::ApiGatewayV2::Api": 10,
    "AWS::CloudFront::Distribution": 14,
    "AWS::Cognito::IdentityPool": 55,
    "AWS::Cognito::UserPool": 55,
    "AWS::Cognito::UserPoolClient": 128,
}
"""The longest physical name (or id) of each resource type, from each service's API reference."""
NAME_PROPERTY = {
    "AWS::DynamoDB::Table": "TableName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::Events::EventBus": "Name",
    "AWS::IAM::Role": "RoleName",
    "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
}
ARN = {
    "AWS::DynamoDB::Table": "arn:{P}:dynamodb:{R}:{A}:table/{name}",
    "AWS::S3::Bucket": "arn:{P}:s3:::{name}",
    "AWS::Events::EventBus": "arn:{P}:events:{R}:{A}:event-bus/{name}",
    "AWS::IAM::Role": "arn:{P}:iam::{A}:role{path}{name}",
    "AWS::IAM::ManagedPolicy": "arn:{P}:iam::{A}:policy{path}{name}",
    "AWS::Lambda::Function": "arn:{P}:lambda:{R}:{A}:function:{name}",
    "AWS::Logs::LogGroup": "arn:{P}:logs:{R}:{A}:log-group:{name}:*",
    "AWS::StepFunctions::StateMachine": "arn:{P}:states:{R}:{A}:stateMachine:{name}",
    "AWS::Cognito::UserPool": "arn:{P}:cognito-idp:{R}:{A}:userpool/{name}",
}
REF_IS_ARN = {"AWS::IAM::ManagedPolicy", "AWS::StepFunctions::StateMachine"}


def longest_pseudo_parameters() -> dict[str, str]:
    """``AWS::*`` pseudo parameter -> its longest value (see the module docstring), from botocore's data."""
    import botocore

    data = json.loads((Path(botocore.__file__).parent / "data" / "partitions.json").read_text())
    partitions = data["partitions"]
    regions = [r for p in partitions for r in p.get("regions", {}) if not r.endswith("-global")]
    return {
        "AWS::Partition": max((p["id"] for p in partitions), key=len),
        "AWS::Region": max(regions, key=len),
        "AWS::URLSuffix": max((p["outputs"]["dnsSuffix"] for p in partitions), key=len),
        "AWS::AccountId": ACCOUNT_ID,
        "AWS::StackName": STACK_NAME,
        "AWS::StackId": f"arn:{{P}}:cloudformation:{{R}}:{ACCOUNT_ID}:stack/{STACK_NAME}/{'0' * 36}",
    }


class Resolver:
    """Resolves a SAM-transformed template's intrinsics to their longest values (module docstring)."""

    def __init__(self, template: dict[str, Any], pseudo: dict[str, str] | None = None) -> None:
        self.template = template
        self.resources: dict[str, Any] = template.get("Resources", {})
        self.pseudo = dict(pseudo or longest_pseudo_parameters())
        p, r = self.pseudo["AWS::Partition"], self.pseudo["AWS::Region"]
        self.pseudo["AWS::StackId"] = self.pseudo["AWS::StackId"].replace("{P}", p).replace("{R}", r)

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its longest value.

        Raises:
            ValueError: an intrinsic this resolver does not know (``Fn::ImportValue``, ``Fn::GetAZs``, ...).
        """
        if isinstance(value, list):
            return [v for v in (self.resolve(x) for x in value) if v is not _NOVALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref" or key.startswith("Fn::") or key == "Condition":
                return self._intrinsic(key, arg)
        out = {}
        for k, v in value.items():
            resolved = self.resolve(v)
            if resolved is not _NOVALUE:
                out[k] = resolved
        return out

    def _intrinsic(self, key: str, arg: Any) -> Any:
        if key == "Ref":
            return self.ref(str(arg))
        if key == "Fn::GetAtt":
            logical, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
            return self.get_att(logical, attribute)
        if key == "Fn::Sub":
            return self._sub(arg)
        if key == "Fn::Join":
            separator, items = arg
            return str(separator).join(str(i) for i in self.resolve(items))
        if key == "Fn::Select":
            index, items = arg
            return self.resolve(items)[int(self.resolve(index))]
        if key == "Fn::Split":
            separator, text = arg
            return str(self.resolve(text)).split(separator)
        if key == "Fn::If":
            _, yes, no = arg
            branches = [b for b in (self.resolve(yes), self.resolve(no)) if b is not _NOVALUE]
            return max(branches, key=lambda b: len(json.dumps(b))) if branches else _NOVALUE
        if key == "Fn::FindInMap":
            name, top, second = (self.resolve(a) for a in arg)
            return self.template["Mappings"][name][top][second]
        if key == "Fn::Base64":
            return self.resolve(arg)
        raise ValueError(f"cannot resolve {key} to its longest value")

    def _sub(self, arg: Any) -> str:
        text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
        values = {k: self.resolve(v) for k, v in extra.items()}

        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in values:
                return str(values[name])
            if "." in name:
                return str(self.get_att(*name.split(".", 1)))
            return str(self.ref(name))

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def ref(self, name: str) -> Any:
        """The longest value of ``Ref name``: a pseudo parameter, a parameter or a resource."""
        if name == "AWS::NoValue":
            return _NOVALUE
        if name in self.pseudo:
            return self.pseudo[name]
        parameters = self.template.get("Parameters", {})
        if name in parameters:
            spec = parameters[name]
            if spec.get("AllowedValues"):
                return max((str(v) for v in spec["AllowedValues"]), key=len)
            if spec.get("MaxLength"):
                return "x" * int(spec["MaxLength"])
            return str(spec.get("Default", ""))
        kind = self.resources[name]["Type"]
        if kind in REF_IS_ARN:
            return self.get_att(name, "Arn")
        return self.physical_name(name)

    def physical_name(self, logical_id: str) -> str:
        """The resource's explicit name (resolved), else the longest name its type allows."""
        resource = self.resources[logical_id]
        prop = NAME_PROPERTY.get(resource["Type"])
        explicit = (resource.get("Properties") or {}).get(prop) if prop else None
        if explicit is not None:
            return str(self.resolve(explicit))
        return "n" * MAX_NAME.get(resource["Type"], GENERIC)

    def get_att(self, logical_id: str, attribute: str) -> str:
        """The longest value of ``Fn::GetAtt logical_id.attribute``."""
        resource = self.resources[logical_id]
        kind = resource["Type"]
        p, r, a = (self.pseudo[k] for k in ("AWS::Partition", "AWS::Region", "AWS::AccountId"))
        suffix = self.pseudo["AWS::URLSuffix"]
        if attribute in ("Arn", "PolicyArn") and kind in ARN:
            path = str(self.resolve((resource.get("Properties") or {}).get("Path", "/")))
            return ARN[kind].format(P=p, R=r, A=a, path=path, name=self.physical_name(logical_id))
        if kind == "AWS::S3::Bucket" and attribute == "RegionalDomainName":
            return f"{self.physical_name(logical_id)}.s3.{r}.{suffix}"
        if kind == "AWS::CloudFront::Distribution" and attribute == "DomainName":
            return f"d{'n' * 13}.cloudfront.net"
        if kind == "AWS::Cognito::UserPool" and attribute == "ProviderName":
            return f"cognito-idp.{r}.{suffix}/{self.physical_name(logical_id)}"
        return "n" * GENERIC


_NOVALUE: Any = object()


@dataclass
class RoleFigures:
    """One role's figures: characters as IAM counts them (``instantstart.aws.iam_quotas.policy_size``)."""

    role: str
    inline_chars: int
    trust_chars: int
    managed: list[tuple[str, int | None]] = field(default_factory=list)
    """``(policy, characters)`` of each attached managed policy; characters None for an AWS managed one."""

    @property
    def managed_count(self) -> int:
        """Managed policies attached (AWS managed ones included)."""
        return len(self.managed)


def _document(policy: Any) -> dict[str, Any]:
    """A policy document as IAM receives it: the sandbox's deployer and CloudFormation add no whitespace; a
    document without ``Version`` (SAM's policy templates) is counted with one, as the sandbox sends it."""
    return {"Version": "2012-10-17", **policy} if isinstance(policy, dict) else policy


def figures(translated: dict[str, Any], resolver: Resolver | None = None) -> list[RoleFigures]:
    """Every ``AWS::IAM::Role`` of the SAM-transformed template ``translated`` with its figures, by logical id.

    Raises:
        ValueError: an intrinsic the resolver cannot take to its longest value.
    """
    resolver = resolver or Resolver(translated)
    resources = translated["Resources"]
    managed_sizes = {
        lid: iam_quotas.policy_size(_document(resolver.resolve(r["Properties"]["PolicyDocument"])))
        for lid, r in resources.items()
        if r["Type"] == "AWS::IAM::ManagedPolicy"
    }
    out = []
    for lid, resource in sorted(resources.items()):
        if resource["Type"] != "AWS::IAM::Role":
            continue
        props = resource.get("Properties") or {}
        inline = sum(
            iam_quotas.policy_size(_document(resolver.resolve(p["PolicyDocument"]))) for p in props.get("Policies", [])
        )
        for other in resources.values():
            if other["Type"] in ("AWS::IAM::Policy", "AWS::IAM::RolePolicy") and _names_role(other, lid):
                inline += iam_quotas.policy_size(_document(resolver.resolve(other["Properties"]["PolicyDocument"])))
        managed: list[tuple[str, int | None]] = []
        for arn in props.get("ManagedPolicyArns", []):
            ref = arn.get("Ref") if isinstance(arn, dict) else None
            if ref in managed_sizes:
                managed.append((str(ref), managed_sizes[ref]))
            else:
                name = str(resolver.resolve(arn)).rsplit("/", 1)[-1]
                managed.append((f"AWS managed {name}", None))
        for policy_id, size in managed_sizes.items():
            if _names_role(resources[policy_id], lid) and all(m[0] != policy_id for m in managed):
                managed.append((policy_id, size))
        trust = iam_quotas.policy_size(resolver.resolve(props["AssumeRolePolicyDocument"]))
        out.append(RoleFigures(lid, inline, trust, managed))
    return out


def _names_role(resource: dict[str, Any], role: str) -> bool:
    props = resource.get("Properties") or {}
    names = props.get("Roles", []) + ([props["RoleName"]] if "RoleName" in props else [])
    return any(isinstance(n, dict) and n.get("Ref") == role for n in names)


def report(roles: list[RoleFigures], pseudo: dict[str, str]) -> str:
    """The figures as text: one block per role, each figure with its budget and quota."""
    inline_budget = iam_quotas.budget(iam_quotas.INLINE_POLICIES_PER_ROLE)
    managed_budget = iam_quotas.budget(iam_quotas.MANAGED_POLICY)
    trust_budget = iam_quotas.budget(iam_quotas.TRUST_POLICY)
    count_budget = iam_quotas.budget(iam_quotas.MANAGED_POLICIES_PER_ROLE)
    lines = [
        "IAM quotas of template.yaml (SAM-transformed), characters without whitespace; "
        f"budget = {iam_quotas.HEADROOM:.0%} of each quota",
        "longest values: " + ", ".join(f"{k}={v if len(v) < 40 else f'<{len(v)} chars>'}" for k, v in pseudo.items()),
    ]
    for role in roles:
        lines.append(
            f"{role.role}: inline {role.inline_chars}/{inline_budget} (quota {iam_quotas.INLINE_POLICIES_PER_ROLE}), "
            f"trust {role.trust_chars}/{trust_budget} (quota {iam_quotas.TRUST_POLICY}), "
            f"managed policies {role.managed_count}/{count_budget} (quota {iam_quotas.MANAGED_POLICIES_PER_ROLE})"
        )
        for name, size in role.managed:
            shown = "AWS managed, not counted here" if size is None else f"{size}/{managed_budget}"
            lines.append(f"    {name}: {shown}" + ("" if size is None else f" (quota {iam_quotas.MANAGED_POLICY})"))
    return "\n".join(lines)


def translated_template(path: Path = ROOT / "template.yaml") -> dict[str, Any]:
    """``template.yaml`` after the SAM transform, as the sandbox's deployer reads it (offline)."""
    from instantstart_sandbox.deploy import translate

    os.environ.setdefault("AWS_DEFAULT_REGION", "us-west-2")
    cfn, _ = translate(path, "us-west-2")
    return dict(cfn)


def main() -> None:
    """Print the figures of ``template.yaml``."""
    pseudo = longest_pseudo_parameters()
    print(report(figures(translated_template(), Resolver(translated_template(), pseudo)), pseudo))


if __name__ == "__main__":
    main()
