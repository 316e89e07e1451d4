"""Deploy ``template.yaml`` into the emulated AWS: the same template real users ``sam deploy``.

The template is transformed offline with ``aws-sam-translator`` (local ``CodeUri``/``ContentUri``/
``DefinitionUri`` become ``s3://`` placeholders first, as ``sam build`` packages them; the map from logical id to
local path is kept for the in-process Lambda runtime). The resulting CloudFormation resources are
created in dependency order through the AWS APIs with boto3. There is no second list of functions,
routes or state machines: everything comes from the template.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import io
import json
import os
import re
import tempfile
import zipfile
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from pathlib import Path
from typing import Any

import boto3
import yaml
from samtranslator.yaml_helper import intrinsics_multi_constructor

from instantstart_sandbox import artifacts, code_size, deploy_iam
from instantstart_sandbox.aws import scheduler
from instantstart_sandbox.aws.lambda_limits import DECLARED_SIZE_ENTRY
from instantstart_sandbox.lambdas import REGISTRY, LambdaCode

LOCAL_URI_PROPS = ("CodeUri", "ContentUri", "DefinitionUri")
PLACEHOLDER_BUCKET = "sandbox-local-artifacts"

PRODUCTION_ONLY = {
    "AWS::CloudFront::Distribution",
    "AWS::CloudFront::OriginAccessControl",
    "AWS::CloudFront::ResponseHeadersPolicy",
    "AWS::Cognito::UserPool",
    "AWS::Cognito::UserPoolClient",
    "AWS::Cognito::IdentityPool",
    "AWS::Cognito::IdentityPoolRoleAttachment",
    "Custom::ConsoleContent",
}
"""Resource types the sandbox does not create: the web console's delivery (CloudFront, and the custom resource
that fills its bucket) and sign-in (Cognito). The sandbox's HTTP server serves the console itself at ``/console/``
with a local sign-in (``instantstart_sandbox.console``). References to them resolve to placeholders
(:class:`ProductionOnly`) so that what names them (the API's CORS origin, the console bucket's policy, the console
role's trust) still deploys."""


@dataclass
class Route:
    """One HTTP API route: method, path template and the Lambda function it integrates."""

    method: str
    path: str
    function_name: str

    @property
    def route_key(self) -> str:
        """API Gateway route key, e.g. ``GET /clusters/{clusterTag}``."""
        return f"{self.method} {self.path}"


@dataclass
class Deployment:
    """What the deployer created: physical ids, attributes, routes and the processes' environment."""

    stack_name: str
    physical: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, dict[str, str]] = field(default_factory=dict)
    routes: list[Route] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    """Logical ids of the production-only resources (:data:`PRODUCTION_ONLY`) not created here."""


class ProductionOnly(dict[str, str]):
    """The attributes of a resource the sandbox does not create: every ``Fn::GetAtt`` answers a placeholder."""

    def __init__(self, logical_id: str) -> None:
        super().__init__()
        self.logical_id = logical_id

    def __missing__(self, attribute: str) -> str:
        return f"{self.logical_id.lower()}-{attribute.lower()}-production-only"


class _NoManagedPolicies:
    """Managed-policy loader for the translator: the template names policies by ARN only."""

    def load(self) -> dict[str, str]:
        return {}


class _TemplateLoader(yaml.SafeLoader):
    """PyYAML's safe loader that reads CloudFormation's short-form intrinsics (``!Ref``, ``!GetAtt A.B``, ``!Sub``)
    as their long forms, with the SAM translator's own constructor (what ``sam-translate`` does); a subclass, so
    ``yaml.safe_load`` elsewhere in the process keeps refusing tags."""


_TemplateLoader.add_multi_constructor("!", intrinsics_multi_constructor)


def parse_template(path: Path, text: bytes | None = None) -> dict[str, Any]:
    """The template at ``path`` (YAML or JSON) as plain JSON values, short-form intrinsics in their long forms;
    ``text`` is the file's contents when the caller already read them.

    Raises:
        ValueError: the file does not parse, or is not a mapping of template sections.
    """
    source = path.read_bytes() if text is None else text
    try:
        template = yaml.load(source, Loader=_TemplateLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        raise ValueError(f"{path} does not parse: {exc}") from exc
    if not isinstance(template, dict):
        raise ValueError(f"{path} does not parse: not a template (a mapping of sections)")
    return dict(json.loads(json.dumps(template, default=str)))


def translate(template_path: Path, region: str) -> tuple[dict[str, Any], dict[str, Path]]:
    """SAM-transform ``template_path`` offline; returns ``(cfn_template, {logical_id: local_path})``.

    The transform is kept per process for the file's path, size, modification time and Region (the deployment and
    the IAM audit both translate the template), and between processes in :data:`TRANSLATE_CACHE_DIR`; each call
    returns its own copy.

    Raises:
        ValueError: the file is not a YAML/JSON template.
    """
    path = template_path.resolve()
    stat = path.stat()
    cfn, local = _translated(path, stat.st_size, stat.st_mtime_ns, region)
    return copy.deepcopy(cfn), dict(local)


TRANSLATE_CACHE_DIR = Path(tempfile.gettempdir()) / "instantstart-sandbox" / "translated"
"""Where SAM transforms are kept between processes, one JSON file per template text, Region and translator version."""


@functools.lru_cache(maxsize=8)
def _translated(path: Path, size: int, mtime_ns: int, region: str) -> tuple[dict[str, Any], dict[str, Path]]:
    """The transform of the template at ``path``: from :data:`TRANSLATE_CACHE_DIR` when this text was transformed for
    this Region by this translator version before (the transform is a pure function of them and takes ~1.7 s of CPU,
    once per sandbox start), else made and kept there. A cache file that cannot be read or written is ignored."""
    text = path.read_bytes()
    cached = _cache_file(text, region)
    try:
        kept = json.loads(cached.read_text())
        cfn, relative = kept["template"], kept["local"]
    except (OSError, ValueError, KeyError, TypeError):
        cfn, relative = _transform(path, text, region)
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps({"template": cfn, "local": relative}))
            os.replace(partial, cached)  # atomic: a concurrent reader sees the old file or the whole new one
        except OSError:
            pass
    return cfn, {logical_id: (path.parent / value).resolve() for logical_id, value in relative.items()}


def _cache_file(text: bytes, region: str) -> Path:
    from importlib.metadata import version

    key = hashlib.sha256(b"\0".join([text, region.encode(), version("aws-sam-translator").encode()])).hexdigest()
    return TRANSLATE_CACHE_DIR / f"{key}.json"


def _transform(path: Path, text: bytes, region: str) -> tuple[dict[str, Any], dict[str, str]]:
    """SAM-transform ``text``, the template at ``path`` (the text the cache key was made of):
    ``(cfn_template, {logical_id: local path relative to the template})``."""
    from samtranslator.translator.transform import transform

    template = parse_template(path, text)
    relative: dict[str, str] = {}
    for logical_id, resource in template.get("Resources", {}).items():
        props = resource.get("Properties", {})
        for prop in LOCAL_URI_PROPS:
            value = props.get(prop)
            if isinstance(value, str) and not value.startswith("s3://"):
                relative[logical_id] = value
                props[prop] = f"s3://{PLACEHOLDER_BUCKET}/{logical_id}/{prop}"
    os.environ.setdefault("AWS_DEFAULT_REGION", region)
    return dict(transform(template, {"AWS::Region": region}, _NoManagedPolicies())), relative


def _zip_placeholder(note: str, unzipped_bytes: int = 0) -> bytes:
    """A ZIP standing for local code: a note, and the unzipped size of the code it stands for (Lambda's size limit
    counts it: :data:`instantstart_sandbox.aws.lambda_limits.DECLARED_SIZE_ENTRY`)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("SANDBOX.txt", note)
        zf.writestr(DECLARED_SIZE_ENTRY, str(unzipped_bytes))
    return buf.getvalue()


class Deployer:
    """Creates a translated template's resources in moto through boto3.

    Args:
        session: boto3 session whose clients reach the sandbox (``AWS_ENDPOINT_URL`` or explicit).
        endpoint_url: the sandbox AWS endpoint.
        region, account_id: where the stack lives.
        stack_name: prefix of physical names.
    """

    def __init__(
        self,
        endpoint_url: str,
        region: str,
        account_id: str,
        stack_name: str = "instantstart",
        build: Path | None = None,
    ) -> None:
        self.endpoint_url = endpoint_url
        self.build = build
        """``sam build``'s layout the functions run from (:mod:`instantstart_sandbox.artifacts`); None: the source
        directories (a template whose functions are never invoked)."""
        self._layer_dirs: dict[str, Path] = {}
        self.region = region
        self.account_id = account_id
        self.stack_name = stack_name
        self._session = boto3.session.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region
        )
        self._clients: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        """A boto3 client of the sandbox."""
        if service not in self._clients:
            factory: Any = self._session
            self._clients[service] = factory.client(service, endpoint_url=self.endpoint_url)
        return self._clients[service]

    # -- intrinsic functions ---------------------------------------------------------------
    def _pseudo(self, name: str) -> str | None:
        return {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account_id,
            "AWS::StackName": self.stack_name,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": None,
        }.get(name)

    def _resolve(self, value: Any, dep: Deployment, params: dict[str, str], conditions: dict[str, bool]) -> Any:
        if isinstance(value, list):
            return [v for v in (self._resolve(x, dep, params, conditions) for x in value) if v is not _NOVALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                if arg == "AWS::NoValue":
                    return _NOVALUE
                if arg in params:
                    return params[arg]
                pseudo = self._pseudo(arg)
                if pseudo is not None:
                    return pseudo
                return dep.physical[arg]
            if key == "Fn::GetAtt":
                logical, attr = arg if isinstance(arg, list) else arg.split(".", 1)
                return dep.attributes[logical][attr]
            if key == "Fn::Sub":
                template, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
                extra = {k: self._resolve(v, dep, params, conditions) for k, v in extra.items()}

                def sub(m: re.Match[str]) -> str:
                    name = m.group(1)
                    if name in extra:
                        return str(extra[name])
                    if "." in name:
                        logical, attr = name.split(".", 1)
                        return str(dep.attributes[logical][attr])
                    return str(self._resolve({"Ref": name}, dep, params, conditions))

                return re.sub(r"\$\{([^}!]+)\}", sub, template)
            if key == "Fn::Join":
                sep, items = arg
                return sep.join(str(i) for i in self._resolve(items, dep, params, conditions))
            if key == "Fn::If":
                cond, yes, no = arg
                return self._resolve(yes if conditions[cond] else no, dep, params, conditions)
            if key == "Fn::Select":
                index, items = arg
                return self._resolve(items, dep, params, conditions)[int(index)]
        out = {}
        for k, v in value.items():
            resolved = self._resolve(v, dep, params, conditions)
            if resolved is not _NOVALUE:
                out[k] = resolved
        return out

    def _condition(self, expr: Any, params: dict[str, str], conditions: dict[str, bool]) -> bool:
        ((key, arg),) = expr.items()
        if key == "Fn::Not":
            return not self._condition(arg[0], params, conditions)
        if key == "Fn::Equals":
            a, b = (self._resolve(x, Deployment(self.stack_name), params, conditions) for x in arg)
            return bool(a == b)
        if key == "Condition":
            return conditions[arg]
        raise ValueError(f"unsupported condition {key}")

    # -- deploy ----------------------------------------------------------------------------
    def deploy(self, template_path: Path, parameters: dict[str, str] | None = None) -> Deployment:
        """Transform and create every resource of the template; returns what was created."""
        cfn, local = translate(template_path, self.region)
        params = {k: str(v.get("Default", "")) for k, v in cfn.get("Parameters", {}).items()}
        params.update(parameters or {})
        conditions: dict[str, bool] = {}
        for name, expr in cfn.get("Conditions", {}).items():
            conditions[name] = self._condition(expr, params, conditions)
        resources: dict[str, Any] = cfn["Resources"]
        graph = {lid: _dependencies(res, set(resources)) for lid, res in resources.items()}
        dep = Deployment(self.stack_name)
        # Lambda functions first get their environment merged: in-process functions share os.environ.
        for lid in TopologicalSorter(graph).static_order():
            res = resources[lid]
            if res["Type"] in PRODUCTION_ONLY:
                dep.physical[lid] = f"{lid.lower()}-production-only"
                dep.attributes[lid] = ProductionOnly(lid)
                dep.skipped.append(lid)
                continue
            props = self._resolve(res.get("Properties", {}), dep, params, conditions)
            creator = getattr(self, "_create_" + res["Type"].replace("::", "_"), None)
            if creator is None:
                raise NotImplementedError(f"sandbox deployer cannot create {res['Type']} ({lid})")
            creator(lid, props, dep, local)
        for name, output in cfn.get("Outputs", {}).items():
            dep.outputs[name] = str(self._resolve(output["Value"], dep, params, conditions))
        self._collect_routes(resources, dep)
        return dep

    def _name(self, logical_id: str, limit: int = 64) -> str:
        return f"{self.stack_name}-{logical_id}"[:limit]

    # -- resource creators (one per CloudFormation type the template uses) ------------------------
    def _create_AWS_DynamoDB_Table(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        name = p.get("TableName") or self._name(lid)
        kwargs: dict[str, Any] = {
            k: p[k] for k in ("AttributeDefinitions", "KeySchema", "BillingMode", "GlobalSecondaryIndexes") if k in p
        }
        if p.get("SSESpecification"):
            kwargs["SSESpecification"] = {"Enabled": bool(p["SSESpecification"].get("SSEEnabled"))}
        arn = self.client("dynamodb").create_table(TableName=name, **kwargs)["TableDescription"]["TableArn"]
        if p.get("TimeToLiveSpecification"):
            self.client("dynamodb").update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={
                    "AttributeName": p["TimeToLiveSpecification"]["AttributeName"],
                    "Enabled": bool(p["TimeToLiveSpecification"]["Enabled"]),
                },
            )
        dep.physical[lid] = name
        dep.attributes[lid] = {"Arn": arn}

    def _create_AWS_Events_EventBus(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        arn = self.client("events").create_event_bus(Name=p["Name"])["EventBusArn"]
        dep.physical[lid] = p["Name"]
        dep.attributes[lid] = {"Arn": arn, "Name": p["Name"]}

    def _create_AWS_S3_Bucket(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        name = p.get("BucketName") or self._name(lid).lower()
        kwargs: dict[str, Any] = {"Bucket": name}
        if self.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self.region}
        self.client("s3").create_bucket(**kwargs)
        if p.get("PublicAccessBlockConfiguration"):
            self.client("s3").put_public_access_block(
                Bucket=name,
                PublicAccessBlockConfiguration={k: bool(v) for k, v in p["PublicAccessBlockConfiguration"].items()},
            )
        dep.physical[lid] = name
        dep.attributes[lid] = {
            "Arn": f"arn:aws:s3:::{name}",
            "DomainName": f"{name}.s3.amazonaws.com",
            "RegionalDomainName": f"{name}.s3.{self.region}.amazonaws.com",
        }

    def _create_AWS_S3_BucketPolicy(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        self.client("s3").put_bucket_policy(Bucket=p["Bucket"], Policy=json.dumps(p["PolicyDocument"]))
        dep.physical[lid] = p["Bucket"]
        dep.attributes[lid] = {}

    def _create_AWS_Logs_LogGroup(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        name = p.get("LogGroupName") or f"/sandbox/{self._name(lid)}"
        self.client("logs").create_log_group(logGroupName=name)
        if p.get("RetentionInDays"):
            self.client("logs").put_retention_policy(logGroupName=name, retentionInDays=int(p["RetentionInDays"]))
        dep.physical[lid] = name
        dep.attributes[lid] = {"Arn": f"arn:aws:logs:{self.region}:{self.account_id}:log-group:{name}:*"}

    def _create_AWS_IAM_Role(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        name = p.get("RoleName") or self._name(lid)
        dep.attributes[lid] = deploy_iam.create_role(self.client("iam"), name, p)
        dep.physical[lid] = name

    def _create_AWS_IAM_ManagedPolicy(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        arn = deploy_iam.create_managed_policy(self.client("iam"), self._name(lid, 128), p, list(p.get("Roles", [])))
        dep.physical[lid] = arn
        dep.attributes[lid] = {"PolicyArn": arn}

    def _create_AWS_Lambda_LayerVersion(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        if self.build is not None:  # what the build holds, its bytecode included
            layer_size = code_size.directory_bytes(artifacts.layer_dir(self.build, lid).parent, skip_caches=False)
        else:
            layer_size = code_size.layer_bytes(local[lid]) if lid in local else 0
        out = self.client("lambda").publish_layer_version(
            LayerName=p["LayerName"],
            Description=p.get("Description", ""),
            Content={"ZipFile": _zip_placeholder("code is served from the local layer directory", layer_size)},
            CompatibleRuntimes=p.get("CompatibleRuntimes", []),
        )
        dep.physical[lid] = out["LayerVersionArn"]
        dep.attributes[lid] = {"Arn": out["LayerVersionArn"]}
        if self.build is not None:
            self._layer_dirs[out["LayerVersionArn"]] = artifacts.layer_dir(self.build, lid)

    def _create_AWS_Lambda_Function(self, lid: str, p: dict[str, Any], dep: Deployment, local: dict[str, Path]) -> None:
        name = p.get("FunctionName") or self._name(lid)
        env = p.get("Environment", {}).get("Variables", {})
        for key, value in env.items():
            known = dep.environment.get(key)
            if known is not None and known != str(value):
                raise ValueError(
                    f"{lid}: environment variable {key} differs between functions; in-process functions share one "
                    "environment in the sandbox"
                )
            dep.environment[key] = str(value)
        code_dir = artifacts.function_dir(self.build, lid) if self.build is not None else local[lid]
        out = self.client("lambda").create_function(
            FunctionName=name,
            Runtime=p.get("Runtime", "python3.13"),
            Role=p["Role"],
            Handler=p["Handler"],
            Code={
                "ZipFile": _zip_placeholder(
                    "code is served from the local function directory",
                    code_size.directory_bytes(code_dir, skip_caches=self.build is None),
                )
            },
            Timeout=int(p.get("Timeout", 3)),
            MemorySize=int(p.get("MemorySize", 128)),
            Environment={"Variables": {k: str(v) for k, v in env.items()}},
            Layers=p.get("Layers", []),
            Architectures=p.get("Architectures", ["x86_64"]),
        )
        REGISTRY[name] = LambdaCode(
            code_dir=code_dir,
            handler=p["Handler"],
            timeout=int(p.get("Timeout", 3)),
            memory_size=int(p.get("MemorySize", 128)),
            layers=tuple(self._layer_dirs[arn] for arn in p.get("Layers", []) if arn in self._layer_dirs),
            environment={k: str(v) for k, v in env.items()},
        )
        dep.physical[lid] = name
        dep.attributes[lid] = {"Arn": out["FunctionArn"]}

    def _create_AWS_Lambda_Version(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        out = self.client("lambda").publish_version(FunctionName=p["FunctionName"])
        dep.physical[lid] = out["FunctionArn"]
        dep.attributes[lid] = {"Version": out["Version"]}

    def _create_AWS_Lambda_Alias(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        out = self.client("lambda").create_alias(
            FunctionName=p["FunctionName"], Name=p["Name"], FunctionVersion=p["FunctionVersion"]
        )
        dep.physical[lid] = out["AliasArn"]
        dep.attributes[lid] = {}

    def _create_AWS_Lambda_Permission(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        kwargs = {
            "FunctionName": p["FunctionName"],
            "StatementId": lid,
            "Action": p["Action"],
            "Principal": p["Principal"],
        }
        if p.get("SourceArn"):
            kwargs["SourceArn"] = p["SourceArn"]
        self.client("lambda").add_permission(**kwargs)
        dep.physical[lid] = lid
        dep.attributes[lid] = {}

    def _create_AWS_StepFunctions_StateMachine(
        self, lid: str, p: dict[str, Any], dep: Deployment, local: dict[str, Path]
    ) -> None:
        definition = local[lid].read_text()
        placeholders = set(re.findall(r"\$\{([A-Za-z0-9]+)\}", definition))
        substitutions = {k: str(v) for k, v in p.get("DefinitionSubstitutions", {}).items()}
        if placeholders != set(substitutions):
            raise ValueError(f"{lid}: placeholders {sorted(placeholders)} != substitutions {sorted(substitutions)}")
        for key, value in substitutions.items():
            definition = definition.replace("${" + key + "}", value)
        name = p.get("StateMachineName") or self._name(lid, 80)
        arn = self.client("stepfunctions").create_state_machine(
            name=name, definition=definition, roleArn=p["RoleArn"], type=p.get("StateMachineType", "STANDARD")
        )["stateMachineArn"]
        dep.physical[lid] = arn
        dep.attributes[lid] = {"Arn": arn, "Name": name}

    def _create_AWS_Events_Rule(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        events = self.client("events")
        name = p.get("Name") or self._name(lid)
        kwargs: dict[str, Any] = {"Name": name, "State": p.get("State", "ENABLED")}
        if p.get("EventPattern"):
            kwargs["EventPattern"] = json.dumps(p["EventPattern"])
        if p.get("EventBusName"):
            kwargs["EventBusName"] = p["EventBusName"]
        arn = events.put_rule(**kwargs)["RuleArn"]
        targets = []
        for t in p.get("Targets", []):
            target = {"Id": t["Id"], "Arn": t["Arn"]}
            for key in ("Input", "InputPath", "RoleArn", "RetryPolicy", "DeadLetterConfig"):
                if key in t:
                    target[key] = t[key]
            targets.append(target)
        if targets:
            target_kwargs: dict[str, Any] = {"Rule": name, "Targets": targets}
            if p.get("EventBusName"):
                target_kwargs["EventBusName"] = p["EventBusName"]
            events.put_targets(**target_kwargs)
        dep.physical[lid] = name
        dep.attributes[lid] = {"Arn": arn}

    def _create_AWS_Scheduler_Schedule(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        name = p.get("Name") or self._name(lid)
        arn = scheduler.create(self.client("scheduler"), name, p)
        dep.physical[lid] = name
        dep.attributes[lid] = {"Arn": arn}

    def _create_AWS_ApiGatewayV2_Api(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        out = self.client("apigatewayv2").create_api(Name=self._name(lid), ProtocolType="HTTP")
        dep.physical[lid] = out["ApiId"]
        dep.attributes[lid] = {"ApiEndpoint": out.get("ApiEndpoint", ""), "ApiId": out["ApiId"]}
        dep.attributes[lid]["_Body"] = json.dumps(p.get("Body", {}))

    def _create_AWS_ApiGatewayV2_Stage(self, lid: str, p: dict[str, Any], dep: Deployment, local: Any) -> None:
        self.client("apigatewayv2").create_stage(
            ApiId=p["ApiId"],
            StageName=p.get("StageName", "$default"),
            AutoDeploy=bool(p.get("AutoDeploy", True)),
        )
        dep.physical[lid] = p.get("StageName", "$default")
        dep.attributes[lid] = {}

    def _collect_routes(self, resources: dict[str, Any], dep: Deployment) -> None:
        """HTTP API routes from the translated API's OpenAPI ``Body`` (integration = the Lambda it calls)."""
        arn_to_name = {attrs.get("Arn"): dep.physical[lid] for lid, attrs in dep.attributes.items() if "Arn" in attrs}
        apigw = self.client("apigatewayv2")
        for lid, res in resources.items():
            if res["Type"] != "AWS::ApiGatewayV2::Api":
                continue
            body = json.loads(dep.attributes[lid]["_Body"])
            for path, methods in body.get("paths", {}).items():
                for method, spec in methods.items():
                    uri = spec.get("x-amazon-apigateway-integration", {}).get("uri", "")
                    match = re.search(r"functions/(arn:[^/]+)/invocations", uri)
                    function_arn = match.group(1) if match else ""
                    function_name = arn_to_name.get(function_arn, function_arn.rsplit(":", 1)[-1])
                    route = Route(method.upper(), path, function_name)
                    dep.routes.append(route)
                    integration = apigw.create_integration(
                        ApiId=dep.physical[lid],
                        IntegrationType="AWS_PROXY",
                        IntegrationUri=function_arn,
                        PayloadFormatVersion="2.0",
                    )
                    apigw.create_route(
                        ApiId=dep.physical[lid],
                        RouteKey=route.route_key,
                        AuthorizationType="AWS_IAM",
                        Target=f"integrations/{integration['IntegrationId']}",
                    )


_NOVALUE = object()


def _dependencies(resource: dict[str, Any], names: set[str]) -> set[str]:
    deps: set[str] = set()
    depends_on = resource.get("DependsOn", [])
    deps.update([depends_on] if isinstance(depends_on, str) else depends_on)

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for key, arg in value.items():
                if key == "Ref" and isinstance(arg, str) and arg in names:
                    deps.add(arg)
                elif key == "Fn::GetAtt":
                    logical = arg[0] if isinstance(arg, list) else str(arg).split(".", 1)[0]
                    if logical in names:
                        deps.add(logical)
                elif key == "Fn::Sub":
                    template = arg if isinstance(arg, str) else arg[0]
                    for ref in re.findall(r"\$\{([^}!]+)\}", template):
                        if ref.split(".", 1)[0] in names:
                            deps.add(ref.split(".", 1)[0])
                    if isinstance(arg, list):
                        walk(arg[1])
                else:
                    walk(arg)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(resource.get("Properties", {}))
    return deps
