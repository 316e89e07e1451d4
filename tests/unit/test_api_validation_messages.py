"""Every 422 of the HTTP API names the field and states its rule in the user's terms.

The test walks the published contract (``api_schema/openapi.json``): every operation's parameters (path,
query, header) and every field of its JSON request body. For each constraint of each field it sends a
value that breaks it through the real handler, in process, and checks the answer: the message names the
field and states the whole rule (both bounds of a range, the allowed values, the length range, a pattern's
rule in words and never the regular expression), the machine-readable details carry the same limits, and
the body is the documented ``ErrorResponse``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from test_api_handler import SAMPLE_BODY, STATE_MACHINE_ARN, Answer, api_event, call

from instantstart.config import Settings
from instantstart.models.errors import PATTERN_RULE_KEY
from instantstart.runtime import Runtime

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT: dict[str, Any] = json.loads((ROOT / "api_schema" / "openapi.json").read_text())
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
FULL_BODY: dict[str, Any] = {
    **SAMPLE_BODY,
    "instanceGroups": [
        {
            **SAMPLE_BODY["instanceGroups"][0],
            "minInstanceCount": 1,
            "threadsPerCore": 1,
            "instanceStorageConfigs": [{"ebsVolumeConfig": {"volumeSizeInGB": 500}}],
            "onStartDeepHealthChecks": ["InstanceStress"],
            "efaOnly": True,
            "labels": {"team": "research"},
            "taints": [{"key": "dedicated", "value": "train", "effect": "NoSchedule"}],
            "subnetId": "subnet-0123456789abcdef0",
            "autoPatch": {
                "patchingStrategy": "DrainFirst",
                "idleWaitWindowInSeconds": 3600,
                "drainTimeoutInSeconds": 600,
                "onDrainTimeout": "Force",
            },
        }
    ],
}
"""A valid ``POST /clusters`` body with every optional field set, so the walk reaches every nested field."""
VALID_PATH_VALUES = {
    "clusterTag": "demo",
    "stage": "hyperpod",
    "operationId": "op-0123456789abcdef0123456789abcdef",
    "instanceGroupName": "accel",
    "hyperPodOperationId": "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
    "computeQuotaName": "demo-research",
    "name": "llama-sft-1",
}
"""Valid values of the path parameters, to break one parameter at a time."""
NODE_IDS_BODY = {"nodeIds": ["i-0123456789abcdef0"]}
QUOTA_RESOURCE = {
    "instanceType": "ml.g6.4xlarge",
    "count": 1,
    "accelerators": 1,
    "vCpu": 4.0,
    "memoryInGiB": 16.0,
    "acceleratorPartition": {"type": "mig-1g.10gb", "count": 1},
}
QUOTA_CONFIG = {
    "computeQuotaResources": [QUOTA_RESOURCE],
    "resourceSharingConfig": {"strategy": "LendAndBorrow", "borrowLimit": 50, "absoluteBorrowLimits": [QUOTA_RESOURCE]},
    "preemptTeamTasks": "LowerPriority",
}
QUOTA_TARGET = {"teamName": "research", "fairShareWeight": 10}
JOB_COMMON: dict[str, Any] = {
    "name": "llama-sft-1",
    "namespace": "ml",
    "instanceType": "ml.g5.8xlarge",
    "nodes": 2,
    "image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch-training:2.5.1-gpu-py311",
    "env": {"NCCL_DEBUG": "INFO"},
    "runPolicy": {
        "jobMaxRetryCount": 3,
        "restartPolicy": {"numRestartBeforeFullJobRestart": 3, "evalPeriodSeconds": 3600, "maxFullJobRestarts": 1},
        "cleanPodPolicy": "None",
        "ttlSecondsAfterFinished": 3600,
        "logMonitoring": [
            {
                "name": "JobStart",
                "logPattern": ".*step.*",
                "expectedStartCutOffInSeconds": 600,
                "expectedRecurringFrequencyInSeconds": 300,
            }
        ],
    },
    "team": "research",
    "priorityClass": "training-priority",
}
FINE_TUNE: dict[str, Any] = {
    "nprocPerNode": 1,
    "configPath": "/s3/configs/sft.yaml",
    "model": "Qwen/Qwen2.5-0.5B-Instruct",
    "dataset": "alpaca",
    "outputPath": "/s3/outputs/sft",
}
JOB_BODIES: dict[str, dict[str, Any]] = {
    "pytorch": {**JOB_COMMON, "recipe": "pytorch", "nprocPerNode": 1, "script": "/s3/code/train.py", "args": ["-e"]},
    "script": {**JOB_COMMON, "recipe": "script", "nprocPerNode": 1, "command": ["python", "/s3/t.py"], "args": []},
    "llamafactory": {**JOB_COMMON, "recipe": "llamafactory", **FINE_TUNE},
    "msswift": {**JOB_COMMON, "recipe": "msswift", **FINE_TUNE},
    "verl": {
        **JOB_COMMON,
        "recipe": "verl",
        "algorithm": "grpo",
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "trainFiles": "/s3/data/train.parquet",
        "valFiles": "/s3/data/test.parquet",
        "outputPath": "/s3/outputs/verl",
        "totalEpochs": 1,
        "overrides": {"data.train_batch_size": 8},
        "rayVersion": "2.43.0",
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": 600,
    },
}
"""A valid ``POST /clusters/{clusterTag}/training-jobs`` body per recipe (the body is one shape per ``recipe``)."""
SAMPLE_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/clusters/{clusterTag}/training-jobs"): JOB_BODIES["pytorch"],
    ("POST", "/clusters/{clusterTag}/models"): {
        "source": "huggingface",
        "modelId": "Qwen/Qwen2.5-0.5B-Instruct",
        "revision": "main",
        "destination": "s3",
        "hfTokenSecret": {"name": "hf-token", "key": "token"},
    },
    ("POST", "/clusters/{clusterTag}/inference/deployments"): {
        "name": "qwen-vllm",
        "engine": "vllm",
        "modelPath": "/s3/models/Qwen/Qwen2.5-0.5B-Instruct",
        "servedModelName": "qwen",
        "instanceType": "ml.g6.4xlarge",
        "gpus": 1,
        "maxModelLen": 4096,
        "replicas": 1,
        "port": 8000,
        "image": "vllm/vllm-openai:v0.8.5",
        "service": {"type": "LoadBalancer", "exposure": "internal"},
        "hfTokenSecret": {"name": "hf-token", "key": "token"},
    },
    ("PATCH", "/clusters/{clusterTag}/inference/deployments/{name}"): {"replicas": 2},
    ("POST", "/clusters/{clusterTag}/inference/deployments/{name}/router"): {
        "policy": "cache_aware",
        "replicas": 1,
        "autoscaling": {
            "minReplicas": 1,
            "maxReplicas": 4,
            "prometheusServerAddress": "http://prometheus.monitoring:9090",
            "queueThreshold": 8,
        },
    },
    ("POST", "/clusters/{clusterTag}/inference/endpoints"): {
        "name": "qwen-managed",
        "instanceType": "ml.g6.4xlarge",
        "replicas": 1,
        "modelSource": {
            "type": "s3",
            "bucket": "instantstart-demo-123456789012-us-west-2",
            "region": "us-west-2",
            "modelLocation": "models/Qwen/Qwen2.5-0.5B-Instruct",
        },
        "worker": {
            "image": "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124",
            "port": 8080,
            "volumeMountPath": "/opt/ml/model",
            "resources": {"gpus": 1, "cpu": 4, "memoryGib": 16},
            "environment": [{"name": "OPTION_MAX_MODEL_LEN", "value": "4096"}],
        },
        "kvCacheSpec": {
            "enableL1Cache": True,
            "enableL2Cache": True,
            "l2CacheBackend": "redis",
            "l2CacheUrl": "redis://cache.internal:6379",
        },
        "intelligentRoutingSpec": {"strategy": "session", "sessionKey": "x-session-id"},
        "tls": {"certificateOutputS3Uri": "s3://instantstart-demo-123456789012-us-west-2-tls/qwen-managed/"},
        "autoscaling": {
            "minReplicas": 1,
            "maxReplicas": 4,
            "cloudWatch": {
                "namespace": "AWS/SageMaker",
                "metricName": "Invocations",
                "targetValue": 10,
                "statistic": "Average",
                "dimensions": {"EndpointName": "instantstart-demo-qwen-managed"},
            },
        },
        "maxDeployTimeSeconds": 3600,
    },
    ("POST", "/clusters/{clusterTag}/inference/endpoints/{name}/invoke"): {"body": {"prompt": "Hello"}},
    ("POST", "/clusters/{clusterTag}/inference/deployments/{name}/invoke"): {"body": {"prompt": "Hello"}},
    # every field at once, so each can be broken (one target is a rule of the whole body, checked after the fields)
    ("PUT", "/clusters/{clusterTag}/mlflow"): {
        "trackingServerArn": "arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/team",
        "create": {"kind": "trackingServer", "size": "Small", "mlflowVersion": "3.0.0"},
        "namespace": "default",
    },
    ("PUT", "/clusters/{clusterTag}/scheduler-config"): {
        "schedulerConfig": {
            "priorityClasses": [{"name": "inference", "weight": 100}],
            "fairShare": "Enabled",
            "idleResourceSharing": "Enabled",
        },
        "description": "policy",
        "targetVersion": 1,
    },
    ("POST", "/clusters/{clusterTag}/compute-quotas"): {
        "computeQuotaConfig": QUOTA_CONFIG,
        "computeQuotaTarget": QUOTA_TARGET,
        "activationState": "Enabled",
        "description": "research",
    },
    ("PATCH", "/clusters/{clusterTag}/compute-quotas/{computeQuotaName}"): {
        "computeQuotaConfig": QUOTA_CONFIG,
        "computeQuotaTarget": QUOTA_TARGET,
        "activationState": "Disabled",
        "description": "research",
        "targetVersion": 1,
    },
    ("POST", "/clusters"): FULL_BODY,
    ("POST", "/clusters/import"): {
        "eksClusterName": "platform-eks",
        "clusterTag": "demo",
        "availabilityZone": "us-west-2c",
        "instanceGroups": FULL_BODY["instanceGroups"],
    },
    ("POST", "/clusters/{clusterTag}/instance-groups"): FULL_BODY["instanceGroups"][0],
    ("PATCH", "/clusters/{clusterTag}/instance-groups/{instanceGroupName}"): {
        "instanceCount": 2,
        "labels": {"team": "a"},
        "instanceType": "ml.g6.4xlarge",
        "capacityType": "OnDemand",
        "trainingPlanArn": "arn:aws:sagemaker:us-west-2:123456789012:training-plan/p",
        "subnetId": "subnet-0123456789abcdef0",
    },
    ("PUT", "/clusters/{clusterTag}/autoscaling"): {
        "enabled": True,
        "instanceGroups": ["auto"],
        "limits": {"cpu": "1000", "nvidia.com/gpu": 64},
        "consolidateAfter": "30s",
    },
    ("PATCH", "/clusters/{clusterTag}/features"): {
        "trainingOperator": {"enabled": True, "version": "v1.1.0-eksbuild.1"},
        "inferenceOperator": {"enabled": True, "version": "v1.0.0-eksbuild.1"},
        "observability": {"enabled": False, "version": "v1.0.1-eksbuild.1"},
        "taskGovernance": {"enabled": True, "version": "v1.2.0-eksbuild.1"},
        "tieredCheckpointing": {"enabled": True, "instanceMemoryAllocationPercentage": 20},
        "kubeRay": {"enabled": True},
        "fsx": {
            "enabled": True,
            "version": "v1.5.0-eksbuild.1",
            "fileSystem": {"storageCapacity": 1200, "deploymentType": "PERSISTENT_2", "perUnitStorageThroughput": 250},
        },
    },
    ("POST", "/clusters/{clusterTag}/nodes/reboot"): NODE_IDS_BODY,
    ("POST", "/clusters/{clusterTag}/nodes/replace"): NODE_IDS_BODY,
    ("POST", "/clusters/{clusterTag}/nodes/delete"): NODE_IDS_BODY,
    ("POST", "/clusters/{clusterTag}/software-update"): {
        "instanceGroupNames": ["accel"],
        "deploymentConfig": {
            "rollingUpdatePolicy": {
                "maximumBatchSize": {"type": "INSTANCE_COUNT", "value": 1},
                "rollbackMaximumBatchSize": {"type": "CAPACITY_PERCENTAGE", "value": 50},
            },
            "waitIntervalInSeconds": 60,
            "autoRollbackAlarmNames": ["gpu-errors"],
        },
        "imageId": "default",
    },
    ("POST", "/clusters/{clusterTag}/health-checks"): {
        "instanceGroups": [
            {
                "instanceGroupName": "accel",
                "deepHealthChecks": ["InstanceStress"],
                "instanceIds": ["i-0123456789abcdef0"],
            }
        ]
    },
}
"""A valid body of each route that takes one, to break one field at a time."""


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its ``$ref`` target and non-null ``anyOf`` branch merged in (its own keys win)."""
    out = dict(schema)
    branches = out.pop("anyOf", None)
    if branches:
        [concrete] = [b for b in branches if b.get("type") != "null"]
        out = {**resolve(concrete), **out}
    ref = out.pop("$ref", None)
    if ref:
        out = {**resolve(SCHEMAS[ref.rsplit("/", 1)[-1]]), **out}
    return out


@dataclass(frozen=True)
class Case:
    """One request breaking one rule of one field."""

    method: str
    path: str
    where: str  # body, path, query or header
    field: str  # the name the answer must use
    location: tuple[str | int, ...]  # body path or parameter name
    value: Any  # the violating value; MISSING removes a required body field
    schema: dict[str, Any]  # the field's resolved schema (the rule)
    kind: str
    variant: str | None = None  # the discriminator value of a one-shape-per-value body (a recipe)

    @property
    def id(self) -> str:
        variant = f"[{self.variant}]" if self.variant else ""
        return f"{self.method} {self.path}{variant} {self.where}:{self.field}:{self.kind}"

    def sample(self) -> dict[str, Any] | None:
        """A deep copy of the valid body this case breaks one field of (None: the route takes no body)."""
        body = JOB_BODIES[self.variant] if self.variant else SAMPLE_BODIES.get((self.method, self.path))
        return copy.deepcopy(body)


MISSING = object()


def violations(schema: dict[str, Any], sample: Any) -> Iterator[tuple[str, Any]]:
    """``(kind, value)`` pairs, each breaking one constraint of ``schema`` (``sample`` is a valid value)."""
    if "enum" in schema:
        yield "enum", "not-an-allowed-value"
    if "minimum" in schema:
        yield "below-minimum", int(schema["minimum"]) - 1
    if "maximum" in schema:
        yield "above-maximum", int(schema["maximum"]) + 1
    if schema.get("type") == "integer":
        yield "not-an-integer", "2"
    low, high = schema.get("minLength"), schema.get("maxLength")
    if low:
        yield "too-short", "a" * (low - 1) if low > 1 else ""
    if high:
        yield "too-long", "a" * (high + 1)
    if "pattern" in schema:
        yield "pattern", "!" * max(low or 1, 3 if not high else min(3, high))
    if "minItems" in schema:
        yield "too-few-items", []
    if "maxItems" in schema and isinstance(sample, list) and sample:
        yield "too-many-items", [copy.deepcopy(sample[0]) for _ in range(schema["maxItems"] + 1)]


def constrained(schema: dict[str, Any]) -> bool:
    keys = ("enum", "minimum", "maximum", "minLength", "maxLength", "pattern", "minItems", "maxItems")
    return any(key in schema for key in keys)


def body_fields(
    schema: dict[str, Any], sample: Any, location: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[str | int, ...], dict[str, Any], Any, bool]]:
    """``(location, resolved schema, sample value, required)`` of every field of a request body schema."""
    schema = resolve(schema)
    if schema.get("type") == "object":
        required = set(schema.get("required", []))
        for name, prop in schema.get("properties", {}).items():
            sub = sample.get(name) if isinstance(sample, dict) else None
            yield (*location, name), resolve(prop), sub, name in required
            yield from body_fields(prop, sub, (*location, name))
    elif schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        item = sample[0] if isinstance(sample, list) and sample else None
        yield from body_fields(schema["items"], item, (*location, 0))


def display(location: tuple[str | int, ...]) -> str:
    out = ""
    for part in location:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def cases() -> Iterator[Case]:
    for path, item in DOCUMENT["paths"].items():
        for method, operation in item.items():
            method = method.upper()
            for param in operation.get("parameters", []):
                schema = resolve(param["schema"])
                name = param["name"]
                shown = "-".join(w.capitalize() for w in name.split("-")) if param["in"] == "header" else name
                for kind, value in violations(schema, None):
                    if value == "" or (param["in"] == "query" and kind == "not-an-integer"):
                        continue  # an empty header or query value reads as absent; query values are all text
                    yield Case(method, path, param["in"], shown, (name,), value, schema, kind)
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body is None:
                continue
            assert (method, path) in SAMPLE_BODIES, "add a valid sample body for this route to SAMPLE_BODIES"
            mapping = body.get("discriminator", {}).get("mapping")
            if mapping:  # one shape per discriminator value: walk each with its own valid body
                variants = [(tag, {"$ref": ref}, JOB_BODIES[tag]) for tag, ref in mapping.items()]
            else:
                variants = [(None, body, SAMPLE_BODIES[(method, path)])]
            for variant, shape, valid in variants:
                for location, schema, sample, required in body_fields(shape, valid):
                    if not constrained(schema):
                        continue
                    for kind, value in violations(schema, sample):
                        yield Case(method, path, "body", display(location), location, value, schema, kind, variant)
                    if required:
                        yield Case(
                            method, path, "body", display(location), location, MISSING, schema, "missing", variant
                        )


ALL_CASES = list(cases())


def rule_pieces(schema: dict[str, Any]) -> list[str]:
    """The words every message about this field must contain, computed from its schema."""

    def number(v: Any) -> str:
        return str(int(v)) if float(v).is_integer() else str(v)

    pieces = [str(v) for v in schema.get("enum", [])]
    if "minimum" in schema and "maximum" in schema:
        pieces.append(f"between {number(schema['minimum'])} and {number(schema['maximum'])}")
    elif "minimum" in schema or "maximum" in schema:
        pieces.append(number(schema.get("minimum", schema.get("maximum"))))
    low, high = schema.get("minLength"), schema.get("maxLength")
    if low is not None and high is not None:
        pieces.append(f"exactly {low} characters" if low == high else f"{low}-{high} characters")
    elif low is not None or high is not None:
        pieces.append(f"{low if low is not None else high} characters")
    if "minItems" in schema and "maxItems" in schema:
        pieces.append(f"{schema['minItems']}-{schema['maxItems']} items")
    if "pattern" in schema:
        assert schema.get(PATTERN_RULE_KEY), f"pattern without {PATTERN_RULE_KEY}"
        pieces.append(schema[PATTERN_RULE_KEY])
    return pieces


def send(handler: ModuleType, case: Case) -> Answer:
    if case.where == "body":
        body = case.sample()
        assert body is not None
        *parents, last = case.location
        target: Any = body
        for part in parents:  # an optional object the sample leaves out (e.g. one of two alternatives) is added
            target = target.setdefault(part, {}) if isinstance(target, dict) else target[part]
        if case.value is MISSING:
            target.pop(last, None)
        else:
            target[last] = case.value
        return call(handler, api_event(case.method, case.path.format(**VALID_PATH_VALUES), body=body))
    values = {**VALID_PATH_VALUES}
    query: dict[str, str] | None = None
    key = None
    if case.where == "path":
        values[case.field] = str(case.value)
    elif case.where == "query":
        query = {str(case.location[0]): str(case.value)}
    else:
        key = str(case.value)
    path = case.path.format(**values)
    body = case.sample()
    return call(handler, api_event(case.method, path, body=body, query=query, idempotency_key=key))


@pytest.fixture
def handler(aws_env: None, no_network: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """``functions/api/api_app.py`` as Lambda imports it; no AWS call is made before validation."""
    monkeypatch.setenv("CREATE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format("create"))
    monkeypatch.setenv("DELETE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format("delete"))
    monkeypatch.setenv("UPDATE_CLUSTER_STATE_MACHINE_ARN", STATE_MACHINE_ARN.format("update"))
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "api"))
    import api_app

    monkeypatch.setattr(api_app, "RUNTIME", Runtime(Settings()))  # this test's settings, not the first import's
    yield api_app


def test_the_walk_covers_every_route_parameter_and_body_field_with_a_rule() -> None:
    covered = {(c.method, c.path, c.where, c.field) for c in ALL_CASES}

    assert ("POST", "/clusters", "body", "instanceGroups[0].instanceCount") in covered
    assert ("POST", "/clusters", "header", "Idempotency-Key") in covered
    assert ("GET", "/clusters", "query", "maxResults") in covered
    assert ("POST", "/clusters/{clusterTag}/stages/{stage}/retry", "path", "stage") in covered
    assert ("GET", "/operations/{operationId}", "path", "operationId") in covered
    assert ("GET", "/catalog/instance-types", "query", "availabilityZone") in covered
    jobs = "/clusters/{clusterTag}/training-jobs"
    recipes = {c.variant for c in ALL_CASES if c.path == jobs and c.where == "body"}
    assert recipes == {"pytorch", "script", "llamafactory", "msswift", "verl"}
    assert ("POST", jobs, "body", "runPolicy.logMonitoring[0].name") in covered
    assert ("GET", f"{jobs}/{{name}}/logs", "query", "tailLines") in covered
    assert len(ALL_CASES) > 40


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_given_a_value_breaking_a_rule_then_422_names_the_field_and_states_the_rule(
    handler: ModuleType, case: Case
) -> None:
    answer = send(handler, case)

    assert answer.status == 422, answer.body
    jsonschema.validate(answer.body, {"$ref": "#/components/schemas/ErrorResponse", **DOCUMENT})
    assert answer.error["code"] == "ValidationError"
    details = [d for d in answer.error["details"] if d["field"] == case.field]
    assert details, f"no detail for {case.field}: {answer.error}"
    detail = details[0]
    message = detail["message"]
    assert message.startswith(case.field) and message in answer.error["message"]
    for piece in rule_pieces(case.schema):
        assert piece in message, f"{piece!r} missing from {message!r}"
    if "pattern" in case.schema:
        assert case.schema["pattern"] not in message, "a bare regular expression is not a rule a person can act on"
    for key in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
        assert detail.get(key) == case.schema.get(key), key
    if "enum" in case.schema:
        assert detail["allowedValues"] == [str(v) for v in case.schema["enum"]]


def test_given_a_negative_instance_count_then_the_message_gives_both_bounds(handler: ModuleType) -> None:
    body = copy.deepcopy(SAMPLE_BODY)
    body["instanceGroups"][0]["instanceCount"] = -1

    answer = call(handler, api_event("POST", "/clusters", body=body))

    [detail] = answer.error["details"]
    assert detail["message"] == "instanceGroups[0].instanceCount must be an integer between 0 and 6758; got -1"
    assert (detail["minimum"], detail["maximum"], detail["type"]) == (0, 6758, "greater_than_equal")


def test_given_every_group_at_0_instances_then_422_names_instance_groups_and_the_addons(handler: ModuleType) -> None:
    body = copy.deepcopy(SAMPLE_BODY)
    body["instanceGroups"][0]["instanceCount"] = 0

    answer = call(handler, api_event("POST", "/clusters", body=body))

    assert answer.status == 422
    [detail] = answer.error["details"]
    assert detail["field"] == "instanceGroups" and detail["instanceCounts"] == [0]
    assert "cert-manager" in detail["message"] and "metrics-server" in detail["message"]


def test_given_an_unknown_body_field_then_the_message_lists_the_fields_of_that_object(handler: ModuleType) -> None:
    body = copy.deepcopy(SAMPLE_BODY)
    body["instanceGroups"][0]["gpuCount"] = 8

    answer = call(handler, api_event("POST", "/clusters", body=body))

    assert answer.status == 422
    [detail] = answer.error["details"]
    assert detail["field"] == "instanceGroups[0].gpuCount"
    assert detail["message"] == (
        "instanceGroups[0].gpuCount is not a field of this request; allowed fields: "
        "autoPatch, capacityType, dedicatedSubnet, efaOnly, instanceCount, instanceGroupName, instanceStorageConfigs, "
        "instanceType, instanceTypes, labels, minInstanceCount, onStartDeepHealthChecks, subnetId, taints, "
        "threadsPerCore, trainingPlanArn"
    )


def test_given_a_body_that_is_not_json_then_415_uses_the_documented_error_shape(handler: ModuleType) -> None:
    event = api_event("POST", "/clusters", body="clusterTag=demo")
    event["headers"]["content-type"] = "application/x-www-form-urlencoded"

    answer = call(handler, event)

    assert answer.status == 415
    jsonschema.validate(answer.body, {"$ref": "#/components/schemas/ErrorResponse", **DOCUMENT})
    assert answer.error["details"] == [{"field": "Content-Type", "allowedValues": ["application/json"]}]


@pytest.mark.parametrize(
    ("recipe", "expected"),
    [
        ("nope", "recipe must be one of pytorch, script, llamafactory, msswift, verl; got 'nope'"),
        (None, "recipe is required"),
    ],
)
def test_given_a_job_without_a_known_recipe_then_422_names_recipe_and_the_recipes(
    handler: ModuleType, recipe: str | None, expected: str
) -> None:
    body = copy.deepcopy(JOB_BODIES["pytorch"])
    if recipe is None:
        del body["recipe"]
    else:
        body["recipe"] = recipe

    answer = call(handler, api_event("POST", "/clusters/demo/training-jobs", body=body))

    assert answer.status == 422, answer.body
    [detail] = answer.error["details"]
    assert detail["field"] == "recipe" and detail["message"].startswith(expected)
    assert detail["allowedValues"] == ["pytorch", "script", "llamafactory", "msswift", "verl"]


def test_given_a_bad_field_of_one_recipe_then_the_field_is_named_without_the_recipe(handler: ModuleType) -> None:
    body = copy.deepcopy(JOB_BODIES["verl"])
    body["runPolicy"]["restartPolicy"]["maxFullJobRestarts"] = -1

    answer = call(handler, api_event("POST", "/clusters/demo/training-jobs", body=body))

    assert answer.status == 422, answer.body
    assert [d["field"] for d in answer.error["details"]] == ["runPolicy.restartPolicy.maxFullJobRestarts"]
    assert "between 0 and 100" in answer.error["details"][0]["message"]


def test_given_kubeflows_running_clean_pod_policy_then_422_lists_the_hyperpod_operators_values(
    handler: ModuleType,
) -> None:
    body = copy.deepcopy(JOB_BODIES["pytorch"])
    body["runPolicy"]["cleanPodPolicy"] = "Running"

    answer = call(handler, api_event("POST", "/clusters/demo/training-jobs", body=body))

    assert answer.status == 422, answer.body
    [detail] = answer.error["details"]
    assert detail["field"] == "runPolicy.cleanPodPolicy"
    assert detail["allowedValues"] == ["All", "OnlyComplete", "None"]
