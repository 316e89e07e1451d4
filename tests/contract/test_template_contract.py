"""template.yaml: IAM auth on every route, least-privilege IAM, ASL substitutions, cfn-lint, handler wiring."""

from __future__ import annotations

import ast
import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_.:]+)\}")
TAG_CONDITION = "aws:ResourceTag/instantstart:managed"

# Actions a statement may grant on Resource "*", each family with the reason no narrower resource fits.
RESOURCE_STAR_ALLOWLIST: dict[str, set[str]] = {
    # EC2 Describe* (catalog reads, inspect-before-create) support no resource-level permissions.
    "ec2-describe": {
        "ec2:Describe*",
        "ec2:DescribeAvailabilityZones",
        "ec2:DescribeInstanceTypeOfferings",
        "ec2:DescribeInstances",
        "ec2:DescribeInstanceTypes",
        "ec2:DescribeNetworkInterfaces",
        "ec2:DescribeSubnets",
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeVpcs",
    },
    # FSx DescribeFileSystems and DescribeDataRepositoryAssociations (managed feature fsx, GET /models) list
    # without a resource ARN (filtered by file-system-id in the request).
    "fsx-describe": {"fsx:DescribeFileSystems", "fsx:DescribeDataRepositoryAssociations"},
    # ListWorkspaces authorizes on no resource type (a list call; the alias filter is in the request).
    "aps-list": {"aps:ListWorkspaces"},
    # HyperPod node agents (AWS's documented execution-role policy): ENIs the service creates on its own
    # instances, and image pulls from AWS-owned registries in other accounts; GetAuthorizationToken has no
    # resource at all; pod identity is requested by the node for whichever cluster it joined.
    "hyperpod-node-agents": {
        "ec2:AssignPrivateIpAddresses",
        "ec2:AttachNetworkInterface",
        "ec2:CreateNetworkInterface",
        "ec2:CreateNetworkInterfacePermission",
        "ec2:DeleteNetworkInterface",
        "ec2:DeleteNetworkInterfacePermission",
        "ec2:DetachNetworkInterface",
        "ec2:ModifyNetworkInterfaceAttribute",
        "ec2:UnassignPrivateIpAddresses",
        "ecr:BatchCheckLayerAvailability",
        "ecr:BatchGetImage",
        "ecr:GetAuthorizationToken",
        "ecr:GetDownloadUrlForLayer",
        "eks-auth:AssumeRoleForPodIdentity",
    },
    # SendTaskSuccess/SendTaskFailure authorise on the task token, not on a resource ARN.
    "step-functions-callbacks": {"states:SendTaskSuccess", "states:SendTaskFailure"},
    # GetCallerIdentity has no resource.
    "sts-identity": {"sts:GetCallerIdentity"},
    # Capacity preflight and the training plan catalog: list/search reads without a resource ARN.
    "capacity-reads": {
        "servicequotas:ListServiceQuotas",
        "sagemaker:ListClusters",
        "sagemaker:ListTrainingPlans",
        "sagemaker:SearchTrainingPlanOfferings",
    },
    # Task governance listings (filtered by ClusterArn in the request) have no resource type.
    "task-governance-listings": {"sagemaker:ListClusterSchedulerConfigs", "sagemaker:ListComputeQuotas"},
    # MLflow app listing (an app is found by name; its ARN holds a generated id) has no resource type.
    "mlflow-listings": {"sagemaker:ListMlflowApps"},
    # A cluster delete lists SageMaker endpoints, configs and models (then filters them by their ownership tags):
    # the List actions have no resource type.
    "inference-endpoint-listings": {"sagemaker:ListEndpoints", "sagemaker:ListEndpointConfigs", "sagemaker:ListModels"},
    # The EKS add-on catalog is a Region-wide read without a resource ARN.
    "eks-addon-catalog": {"eks:DescribeAddonVersions"},
    # Step Functions log delivery: these CloudWatch Logs actions support no resource-level permissions.
    "step-functions-log-delivery": {
        "logs:CreateLogDelivery",
        "logs:GetLogDelivery",
        "logs:UpdateLogDelivery",
        "logs:DeleteLogDelivery",
        "logs:ListLogDeliveries",
        "logs:PutResourcePolicy",
        "logs:DescribeResourcePolicies",
        "logs:DescribeLogGroups",
    },
}
ALLOWED_ON_STAR = set().union(*RESOURCE_STAR_ALLOWLIST.values())

# Actions allowed on Resource "*" only when a condition scopes them: the condition key each needs.
CONDITION_SCOPED: dict[str, str] = {
    # Deletes of network resources: only those carrying the managed tag (ids are unknown in advance).
    **{
        action: TAG_CONDITION
        for action in (
            "ec2:DeleteVpc",
            "ec2:DeleteSubnet",
            "ec2:DeleteInternetGateway",
            "ec2:DetachInternetGateway",
            "ec2:DeleteRouteTable",
            "ec2:DisassociateRouteTable",
            "ec2:ReleaseAddress",
            "ec2:DeleteNatGateway",
            "ec2:DeleteVpcEndpoints",
            "ec2:DeleteSecurityGroup",
        )
    },
    # Service-linked roles: only those of the services the workflow uses.
    "iam:CreateServiceLinkedRole": "iam:AWSServiceName",
}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(node: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every IAM policy statement anywhere in a template (inline policies, role policies, trust policies)."""
    if isinstance(node, dict):
        if isinstance(node.get("Statement"), list):
            for i, statement in enumerate(node["Statement"]):
                yield f"{where}.Statement[{i}]", statement
        for key, value in node.items():
            yield from statements(value, f"{where}.{key}" if where else key)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from statements(value, f"{where}[{i}]")


def http_api_events(template: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, resource in template["Resources"].items():
        for name, event in resource.get("Properties", {}).get("Events", {}).items():
            if event.get("Type") == "HttpApi":
                yield f"{logical_id}.{name}", event["Properties"]


# -- HTTP API authorization --------------------------------------------------------------------------------
def test_given_the_template_then_every_route_is_on_an_http_api_whose_default_authorizer_is_aws_iam(
    template: dict[str, Any],
) -> None:
    events = list(http_api_events(template))

    assert events
    for where, props in events:
        assert isinstance(props.get("ApiId"), dict) and "Ref" in props["ApiId"], f"{where} is on the implicit API"
        api = template["Resources"][props["ApiId"]["Ref"]]
        assert api["Type"] == "AWS::Serverless::HttpApi", where
        auth = api["Properties"]["Auth"]
        assert auth["DefaultAuthorizer"] == "AWS_IAM" and auth.get("EnableIamAuthorizer") is True, where
        assert "Auth" not in props, f"{where} overrides the API's IAM authorization"


def test_given_the_transformed_template_then_every_deployed_route_requires_sigv4(
    template: dict[str, Any], translated: dict[str, Any]
) -> None:
    apis = [r for r in translated["Resources"].values() if r["Type"] == "AWS::ApiGatewayV2::Api"]
    routes = [r for r in translated["Resources"].values() if r["Type"] == "AWS::ApiGatewayV2::Route"]

    assert len(apis) == 1 and routes == []
    body = apis[0]["Properties"]["Body"]
    deployed = {(method.upper(), path) for path, item in body["paths"].items() for method in item}
    assert deployed == {(p["Method"].upper(), p["Path"]) for _, p in http_api_events(template)}
    for path, item in body["paths"].items():
        for method, operation in item.items():
            assert operation.get("security") == [{"AWS_IAM": []}], f"{method.upper()} {path}"
    assert body["components"]["securitySchemes"]["AWS_IAM"]["x-amazon-apigateway-authtype"] == "awsSigv4"


# -- IAM least privilege ------------------------------------------------------------------------------------
@pytest.mark.parametrize("source", ["template.yaml", "transformed"])
def test_given_every_iam_statement_then_no_action_is_a_wildcard_of_everything_or_of_a_whole_service(
    template: dict[str, Any], translated: dict[str, Any], source: str
) -> None:
    found = list(statements(template if source == "template.yaml" else translated))

    assert found
    for where, statement in found:
        assert "NotAction" not in statement and "NotResource" not in statement, where
        for action in as_list(statement.get("Action", [])):
            assert isinstance(action, str), where
            assert action != "*" and not action.endswith(":*"), f"{where}: {action}"


def test_given_every_statement_on_resource_star_then_its_actions_support_no_narrower_resource(
    translated: dict[str, Any],
) -> None:
    on_star = [(w, s) for w, s in statements(translated) if "*" in as_list(s.get("Resource", []))]

    assert on_star
    for where, statement in on_star:
        assert statement["Effect"] == "Allow", where
        conditions = {k for operator in statement.get("Condition", {}).values() for k in operator}
        for action in as_list(statement["Action"]):
            if action in CONDITION_SCOPED:
                assert CONDITION_SCOPED[action] in conditions, f"{where}: {action} needs {CONDITION_SCOPED[action]}"
            else:
                assert action in ALLOWED_ON_STAR, f"{where}: {action} on Resource '*' is not allowlisted"


def test_given_tag_scoped_deletes_then_the_condition_requires_the_managed_tag_to_be_true(
    translated: dict[str, Any],
) -> None:
    scoped = [
        s
        for _, s in statements(translated)
        if any(CONDITION_SCOPED.get(a) == TAG_CONDITION for a in as_list(s.get("Action", [])))
    ]

    assert scoped
    for statement in scoped:
        assert statement["Condition"]["StringEquals"][TAG_CONDITION] == "true"


def test_given_the_allowlist_checker_then_a_service_wide_grant_on_star_is_refused() -> None:
    assert "ec2:DeleteVpc" not in ALLOWED_ON_STAR
    assert "s3:DeleteBucket" not in ALLOWED_ON_STAR and "s3:DeleteBucket" not in CONDITION_SCOPED
    assert not any(a == "*" or a.endswith(":*") for a in ALLOWED_ON_STAR)


# -- state machine definitions and their substitutions -------------------------------------------------------
def state_machines(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (logical_id, resource["Properties"])
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::StateMachine"
    ]


def test_given_each_state_machine_then_its_asl_placeholders_equal_its_definition_substitutions(
    template: dict[str, Any],
) -> None:
    machines = state_machines(template)

    assert sorted(props["DefinitionUri"] for _, props in machines) == sorted(
        f"statemachines/{p.name}" for p in (ROOT / "statemachines").glob("*.asl.json")
    )
    for logical_id, props in machines:
        text = (ROOT / props["DefinitionUri"]).read_text()
        placeholders = set(PLACEHOLDER.findall(text))
        substitutions = set(props.get("DefinitionSubstitutions", {}))
        assert placeholders, logical_id
        assert placeholders - substitutions == set(), f"{logical_id}: placeholders without a substitution"
        assert substitutions - placeholders == set(), f"{logical_id}: substitutions the ASL never uses"


def test_given_the_substitutions_then_each_is_an_arn_from_a_template_resource(template: dict[str, Any]) -> None:
    for logical_id, props in state_machines(template):
        for name, value in props["DefinitionSubstitutions"].items():
            assert isinstance(value, dict) and ({"Fn::GetAtt"} == set(value) or {"Ref"} == set(value)), name
            target = value.get("Ref") or value["Fn::GetAtt"][0]
            assert target in template["Resources"], f"{logical_id}.{name} -> {target}"


# -- cfn-lint -------------------------------------------------------------------------------------------------
def test_given_the_template_when_linting_with_cfn_lint_then_there_are_no_errors_or_warnings() -> None:
    """As strict as ``cfn-lint template.yaml`` (``make contract``), which exits non-zero on a warning too."""
    from cfnlint.api import ManualArgs, lint_file

    matches = lint_file(ROOT / "template.yaml", config=ManualArgs(regions=["us-west-2"]))

    found = [
        f"{m.rule.id} ({m.rule.severity}) {m.linenumber}: {m.message}"
        for m in matches
        if m.rule.severity.lower() in ("error", "warning")
    ]
    assert found == []


# -- function handlers ----------------------------------------------------------------------------------------
def functions(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    globals_ = template.get("Globals", {}).get("Function", {})
    return [
        (logical_id, {**globals_, **resource["Properties"]})
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    ]


def test_given_the_function_folders_then_no_two_handler_modules_share_a_name() -> None:
    modules = [
        path.stem
        for folder in sorted((ROOT / "functions").iterdir())
        if folder.is_dir() and not folder.name.startswith(("_", "."))
        for path in folder.glob("*.py")
        if path.name != "__init__.py"
    ]

    assert modules
    assert [name for name, count in Counter(modules).items() if count > 1] == []


def test_given_every_function_then_its_handler_is_a_top_level_function_of_a_module_in_its_code_uri(
    template: dict[str, Any],
) -> None:
    found = functions(template)

    assert {logical_id for logical_id, _ in found} >= {"ApiFunction", "ClusterStepsFunction", "HyperPodEventsFunction"}
    for logical_id, props in found:
        module, _, function = props["Handler"].rpartition(".")
        source = ROOT / props["CodeUri"] / (module.replace(".", "/") + ".py")
        assert source.is_file(), f"{logical_id}: {source} does not exist"
        tree = ast.parse(source.read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert function in defined, f"{logical_id}: {props['Handler']} is not a function of {source.name}"


def test_given_every_function_folder_then_the_template_deploys_it(template: dict[str, Any]) -> None:
    folders = {p.name for p in (ROOT / "functions").iterdir() if p.is_dir() and any(p.glob("*.py"))}

    deployed = {Path(props["CodeUri"]) for _, props in functions(template)}
    assert {p.name for p in deployed if p.parent == Path("functions")} == folders
    assert deployed - {Path("functions") / name for name in folders} == {Path("console")}, "and the console publisher"


def test_given_the_template_then_the_sandbox_reads_it_as_cfn_lint_does_and_translates_it_the_same_each_time(
    template: dict[str, Any], tmp_path: Path
) -> None:
    from instantstart_sandbox.deploy import parse_template, translate

    assert parse_template(ROOT / "template.yaml") == template, "short-form intrinsics read as cfn-lint reads them"
    first, _ = translate(ROOT / "template.yaml", "us-west-2")
    first["Resources"].clear()  # a caller's change does not reach the next caller
    again, local = translate(ROOT / "template.yaml", "us-west-2")
    assert again["Resources"] and local
    broken = tmp_path / "template.yaml"
    broken.write_text("Resources: !Ref [unclosed\n")
    with pytest.raises(ValueError, match="does not parse"):
        translate(broken, "us-west-2")


def test_given_a_template_translated_once_then_another_process_reads_the_same_transform_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from instantstart_sandbox import deploy

    monkeypatch.setattr(deploy, "TRANSLATE_CACHE_DIR", tmp_path / "cache")
    moved = tmp_path / "project" / "template.yaml"
    moved.parent.mkdir()
    moved.write_bytes((ROOT / "template.yaml").read_bytes())
    deploy._translated.cache_clear()
    made, made_local = deploy.translate(moved, "us-west-2")
    [kept] = (tmp_path / "cache").iterdir()

    deploy._translated.cache_clear()  # as in a new process

    def no_transform(*args: Any) -> Any:
        raise AssertionError("the kept transform should have been read")

    with monkeypatch.context() as reading_only:
        reading_only.setattr(deploy, "_transform", no_transform)
        read, read_local = deploy.translate(moved, "us-west-2")
    assert read == made and read_local == made_local
    assert all(path.is_relative_to(moved.parent) for path in read_local.values())

    kept.write_text("{not json")  # a damaged file is made again, not trusted
    deploy._translated.cache_clear()
    assert deploy.translate(moved, "us-west-2")[0] == made
    assert json.loads(kept.read_text())["template"] == made
    deploy._translated.cache_clear()
