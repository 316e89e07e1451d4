"""The sandbox Kubernetes API's limits (``instantstart_sandbox.kube.limits``), met through the official client:
object names, label keys and values, the annotations' 256 KiB and the 3 MiB request body, in the apiserver's words."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from instantstart_sandbox.kube import limits
from instantstart_sandbox.kube.server import KubeApiServer

TOKEN = "Bearer sandbox-test-token"
SUBDOMAIN_RULE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
DNS1035_RULE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, "
    "and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
    "'[a-z]([-a-z0-9]*[a-z0-9])?')"
)


@pytest.fixture(scope="module")
def server() -> Iterator[KubeApiServer]:
    srv = KubeApiServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def core(server: KubeApiServer, tmp_path_factory: pytest.TempPathFactory) -> client.CoreV1Api:
    """The official client's CoreV1Api on a cluster of the sandbox API server."""
    server.add_cluster("limits")
    ca = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.write_text(server.ca_pem)
    cfg = client.Configuration()
    cfg.host = server.endpoint("limits")
    cfg.ssl_ca_cert = str(ca)
    cfg.api_key = {"authorization": TOKEN}
    return client.CoreV1Api(client.ApiClient(cfg))


def _refusal(call: Callable[[], Any]) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiException) as refused:
        call()
    return refused.value.status, json.loads(refused.value.body)


def _config_map(name: str, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}, "data": {}}


def test_given_names_past_their_kinds_rules_then_the_api_answers_422_invalid(core: client.CoreV1Api) -> None:
    long = "a" * 254
    status, body = _refusal(lambda: core.create_namespaced_config_map("default", _config_map(long)))
    assert (status, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        f'ConfigMap "{long}" is invalid: metadata.name: Invalid value: "{long}": must be no more than 253 characters'
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "field": "metadata.name",
            "message": f'Invalid value: "{long}": must be no more than 253 characters',
        }
    ]
    core.create_namespaced_config_map("default", _config_map("a" * 253))
    status, body = _refusal(lambda: core.create_namespaced_config_map("default", _config_map("Upper")))
    assert body["message"] == f'ConfigMap "Upper" is invalid: metadata.name: Invalid value: "Upper": {SUBDOMAIN_RULE}'
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n" * 64}}
    status, body = _refusal(lambda: core.create_namespace(namespace))
    assert status == 422 and body["message"].endswith("must be no more than 63 characters")
    dotted = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    assert _refusal(lambda: core.create_namespace(dotted))[1]["message"].endswith(": must not contain dots")
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1-svc"}, "spec": {"ports": [{"port": 80}]}}
    status, body = _refusal(lambda: core.create_namespaced_service("default", service))
    assert body["message"] == f'Service "1-svc" is invalid: metadata.name: Invalid value: "1-svc": {DNS1035_RULE}'


def test_given_label_keys_and_values_past_the_rules_then_create_and_patch_answer_422(core: client.CoreV1Api) -> None:
    key = "k" * 64
    status, body = _refusal(lambda: core.create_namespaced_config_map("default", _config_map("l1", labels={key: "v"})))
    assert status == 422
    assert body["message"] == (
        f'ConfigMap "l1" is invalid: metadata.labels: Invalid value: "{key}": name part must be no more than 63 '
        "characters"
    )
    prefixed = "p" * 254 + "/name"
    _, body = _refusal(lambda: core.create_namespaced_config_map("default", _config_map("l2", labels={prefixed: "v"})))
    assert "prefix part must be no more than 253 characters" in body["message"]
    value = "v" * 64
    _, body = _refusal(lambda: core.create_namespaced_config_map("default", _config_map("l3", labels={"k": value})))
    assert body["message"] == (
        f'ConfigMap "l3" is invalid: metadata.labels: Invalid value: "{value}": must be no more than 63 characters'
    )
    core.create_namespaced_config_map("default", _config_map("l4", labels={"example.com/" + "k" * 63: "v" * 63}))
    status, body = _refusal(
        lambda: core.patch_namespaced_config_map("l4", "default", {"metadata": {"labels": {"k": "-bad"}}})
    )
    assert status == 422 and "a valid label must be an empty string or consist of alphanumeric" in body["message"]


def test_given_annotations_over_256_kib_then_the_api_answers_too_long(core: client.CoreV1Api) -> None:
    at_limit = {"a": "x" * (limits.MAX_ANNOTATIONS_BYTES - 1)}  # key and value: 262,144 bytes
    core.create_namespaced_config_map("default", _config_map("notes", annotations=at_limit))
    over = {"a": "x" * limits.MAX_ANNOTATIONS_BYTES}
    status, body = _refusal(lambda: core.create_namespaced_config_map("default", _config_map("more", annotations=over)))
    assert (status, body["reason"]) == (422, "Invalid")
    assert (
        body["message"]
        == 'ConfigMap "more" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes'
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "field": "metadata.annotations",
            "message": "Too long: may not be more than 262144 bytes",
        }
    ]
    status, _ = _refusal(
        lambda: core.patch_namespaced_config_map("notes", "default", {"metadata": {"annotations": {"b": "y"}}})
    )
    assert status == 422


def test_given_a_request_body_over_3_mib_then_the_api_answers_413(core: client.CoreV1Api, tmp_path: Path) -> None:
    big = _config_map("big")
    big["data"] = {"blob": "x" * limits.MAX_REQUEST_BODY_BYTES}
    status, body = _refusal(lambda: core.create_namespaced_config_map("default", big))
    assert (status, body["reason"], body["message"]) == (
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    )
    big["data"] = {"blob": "x" * (limits.MAX_REQUEST_BODY_BYTES - 200)}  # just under: past the next limit only
    status, body = _refusal(lambda: core.create_namespaced_config_map("default", big))
    assert (status, body["reason"]) == (422, "Invalid")


def test_given_config_map_or_secret_data_over_1_mib_then_the_api_answers_too_long(core: client.CoreV1Api) -> None:
    at_limit = _config_map("data-ok")
    at_limit["data"] = {"a": "x" * (limits.MAX_DATA_BYTES // 2), "b": "y" * (limits.MAX_DATA_BYTES // 2)}
    core.create_namespaced_config_map("default", at_limit)
    over = _config_map("data-big")
    over["data"] = {"a": "x" * limits.MAX_DATA_BYTES}
    over["binaryData"] = {"b": base64.b64encode(b"z").decode()}
    status, body = _refusal(lambda: core.create_namespaced_config_map("default", over))
    assert (status, body["message"]) == (
        422,
        'ConfigMap "data-big" is invalid: []: Too long: may not be more than 1048576 bytes',
    )
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "big-secret"},
        "data": {"blob": base64.b64encode(b"s" * (limits.MAX_DATA_BYTES + 1)).decode()},
    }
    status, body = _refusal(lambda: core.create_namespaced_secret("default", secret))
    assert (status, body["message"]) == (
        422,
        'Secret "big-secret" is invalid: data: Too long: may not be more than 1048576 bytes',
    )
