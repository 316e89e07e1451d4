"""The managed endpoint's builder and rules: the resource a request becomes, the served version chosen from a CRD,
the fields a served schema does not know, and the request's own refusals."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from instantstart.errors import Conflict, ValidationFailed
from instantstart.inference import endpoint_builders as eb
from instantstart.inference import rules
from instantstart.models.inference_endpoints import CreateInferenceEndpointRequest

IMAGE = "763104351884.dkr.ecr.us-west-2.amazonaws.com/djl-inference:0.32.0-lmi14.0.0-cu124"
BODY: dict[str, Any] = {
    "name": "qwen-managed",
    "instanceType": "ml.g6.4xlarge",
    "modelSource": {"type": "s3", "modelLocation": "models/Qwen/Qwen2.5-0.5B-Instruct"},
    "worker": {"image": IMAGE, "resources": {"gpus": 1, "cpu": 4, "memoryGib": 16}},
}


def build(body: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    return eb.build_endpoint(
        CreateInferenceEndpointRequest.model_validate(body),
        tag="demo",
        api_version=f"{eb.GROUP}/{version}",
        bucket="instantstart-demo-123456789012-us-west-2",
        region="us-west-2",
        tls_uri="s3://instantstart-demo-123456789012-us-west-2-tls/qwen-managed/",
        operation_id="op-1",
    )


def crd(versions: dict[str, dict[str, Any]], served: tuple[str, ...]) -> dict[str, Any]:
    return {
        "spec": {
            "versions": [
                {"name": n, "served": n in served, "schema": {"openAPIV3Schema": {"properties": {"spec": s}}}}
                for n, s in versions.items()
            ]
        }
    }


V1_SPEC = {
    "type": "object",
    "properties": {
        "modelName": {"type": "string"},
        "kvCacheSpec": {"type": "object", "properties": {"enableL1Cache": {"type": "boolean"}}},
        "worker": {"type": "object", "properties": {"image": {"type": "string"}, "resources": {"type": "object"}}},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}


def test_an_s3_source_defaults_to_the_cluster_bucket_and_region_and_names_the_sagemaker_endpoint() -> None:
    obj = build(BODY)

    assert obj["apiVersion"] == "inference.sagemaker.aws.amazon.com/v1" and obj["kind"] == "InferenceEndpointConfig"
    spec = obj["spec"]
    assert spec["modelSourceConfig"] == {
        "modelSourceType": "s3",
        "s3Storage": {"bucketName": "instantstart-demo-123456789012-us-west-2", "region": "us-west-2"},
        "modelLocation": "models/Qwen/Qwen2.5-0.5B-Instruct",
    }
    assert spec["endpointName"] == "instantstart-demo-qwen-managed" and spec["instanceType"] == "ml.g6.4xlarge"
    assert spec["worker"]["resources"]["limits"] == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1}
    assert spec["worker"]["modelInvocationPort"] == {"containerPort": 8080, "name": "http"}
    assert spec["tlsConfig"]["tlsCertificateOutputS3Uri"].endswith("-tls/qwen-managed/")
    assert obj["metadata"]["labels"] == {eb.LABEL_MANAGED: "qwen-managed"}


def test_cache_routing_and_autoscaling_map_to_the_operator_fields() -> None:
    obj = build(
        {
            **BODY,
            "kvCacheSpec": {"enableL2Cache": True, "l2CacheBackend": "redis", "l2CacheUrl": "redis://cache:6379"},
            "intelligentRoutingSpec": {"strategy": "session", "sessionKey": "x-session-id"},
            "autoscaling": {"minReplicas": 1, "maxReplicas": 4},
        }
    )

    spec = obj["spec"]
    assert spec["kvCacheSpec"] == {
        "enableL1Cache": True,
        "enableL2Cache": True,
        "l2CacheSpec": {"l2CacheBackend": "redis", "l2CacheLocalUrl": "redis://cache:6379"},
    }
    assert spec["intelligentRoutingSpec"] == {"enabled": True, "routingStrategy": "session"}
    assert obj["metadata"]["annotations"][eb.ANNOTATION_SESSION_KEY] == "x-session-id"
    assert spec["autoScalingSpec"] == {"minReplicaCount": 1, "maxReplicaCount": 4}


def test_a_hugging_face_source_carries_only_a_secret_reference() -> None:
    body = {
        **BODY,
        "modelSource": {"type": "huggingface", "modelId": "org/model", "hfTokenSecret": {"name": "hf", "key": "t"}},
    }

    hf = build(body)["spec"]["modelSourceConfig"]["huggingFaceModel"]

    assert hf == {"modelId": "org/model", "tokenSecretRef": {"name": "hf", "key": "t"}}


def test_a_jumpstart_model_is_a_jumpstartmodel_with_its_sagemaker_endpoint() -> None:
    obj = build(
        {"name": "js", "instanceType": "ml.g6.4xlarge", "jumpStart": {"modelId": "deepseek-r1", "acceptEula": True}}
    )

    assert obj["kind"] == "JumpStartModel"
    assert obj["spec"]["model"] == {"modelId": "deepseek-r1", "acceptEula": True}
    assert obj["spec"]["server"] == {"instanceType": "ml.g6.4xlarge"}
    assert obj["spec"]["sageMakerEndpoint"] == {"name": "instantstart-demo-js"}


@pytest.mark.parametrize(
    ("served", "expected"),
    [(("v1", "v1alpha1"), "v1"), (("v1alpha1",), "v1alpha1"), (("v1beta2", "v1alpha1"), "v1beta2"), ((), None)],
)
def test_the_served_version_is_the_highest_priority_served_one(served: tuple[str, ...], expected: str | None) -> None:
    versions = {v: V1_SPEC for v in ("v1", "v1beta2", "v1alpha1")}

    assert eb.served_version(crd(versions, served)) == expected


def test_unknown_fields_are_the_paths_the_schema_does_not_declare() -> None:
    spec = {
        "modelName": "m",
        "kvCacheSpec": {"enableL1Cache": True, "l2CacheSpec": {}},
        "worker": {"image": "i", "resources": {"anything": 1}, "probes": {}},
        "tags": [{"name": "a", "value": "b"}],
        "labels": {"free": "x"},
        "intelligentRoutingSpec": {},
    }

    assert eb.unknown_fields(spec, V1_SPEC) == [
        "kvCacheSpec.l2CacheSpec",
        "worker.probes",
        "tags[0].value",
        "intelligentRoutingSpec",
    ]
    assert eb.request_field("intelligentRoutingSpec") == "intelligentRoutingSpec"
    assert eb.request_field("autoScalingSpec.minReplicaCount") == "autoscaling"


def test_refuse_unknown_fields_is_422_per_request_field_with_the_served_version() -> None:
    with pytest.raises(ValidationFailed) as refused:
        rules.refuse_unknown_fields(
            ["kvCacheSpec", "autoScalingSpec.cloudWatchTrigger"],
            "InferenceEndpointConfig",
            f"{eb.GROUP}/v1alpha1",
            ["kvCacheSpec", "autoscaling"],
        )

    fields = {d["field"]: d for d in refused.value.details}
    assert set(fields) == {"kvCacheSpec", "autoscaling"}
    assert fields["autoscaling"]["specPaths"] == ["spec.autoScalingSpec.cloudWatchTrigger"]
    assert fields["kvCacheSpec"]["servedVersion"] == f"{eb.GROUP}/v1alpha1"
    rules.refuse_unknown_fields([], "InferenceEndpointConfig", f"{eb.GROUP}/v1", [])


@pytest.mark.parametrize(
    ("patch", "words"),
    [
        ({"kvCacheSpec": {"enableL2Cache": True, "l2CacheBackend": "redis"}}, "l2CacheUrl"),
        ({"kvCacheSpec": {"enableL2Cache": True}}, "l2CacheBackend"),
        ({"intelligentRoutingSpec": {"strategy": "session"}}, "sessionKey"),
        ({"intelligentRoutingSpec": {"strategy": "kvaware", "sessionKey": "x-s"}}, "sessionKey"),
        ({"jumpStart": {"modelId": "m"}}, "jumpStart"),
        ({"worker": None}, "worker"),
        ({"modelSource": {"type": "fsx", "modelLocation": "m"}}, "fileSystemId"),
        ({"modelSource": {"type": "s3", "modelLocation": "m", "modelId": "a/b"}}, "modelId"),
        ({"worker": {"image": IMAGE, "environment": [{"name": "HF_TOKEN", "value": "hf_x"}]}}, "hfTokenSecret"),
    ],
)
def test_the_request_refuses_inconsistent_settings_naming_what_is_missing(patch: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as refused:
        CreateInferenceEndpointRequest.model_validate({**BODY, **patch})

    assert words in str(refused.value)


def test_tiered_storage_needs_tiered_checkpointing_and_tls_must_be_the_operator_bucket() -> None:
    with pytest.raises(Conflict) as off:
        rules.check_tiered_storage("demo", {"TieredStorageConfig": {"Mode": "Disable"}})
    assert off.value.details[0]["field"] == "tieredCheckpointing"
    rules.check_tiered_storage("demo", {"TieredStorageConfig": {"Mode": "Enable"}})

    with pytest.raises(ValidationFailed) as tls:
        rules.check_tls_uri("s3://other/certs/", "instantstart-demo-tls")
    assert tls.value.details[0]["allowedValues"] == ["s3://instantstart-demo-tls/"]
    rules.check_tls_uri("s3://instantstart-demo-tls/qwen/", "instantstart-demo-tls")
