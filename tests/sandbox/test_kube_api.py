"""The emulated Kubernetes API server, driven by the official ``kubernetes`` client over HTTPS.

Every test talks to a real ``KubeApiServer`` on 127.0.0.1 through ``Configuration.host`` with the
``/clusters/<name>-<id>`` prefix, verifying the server certificate against ``ca_pem``.
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient

from instantstart_sandbox.clock import SimClock
from instantstart_sandbox.kube.auth import eks_token_validator
from instantstart_sandbox.kube.server import KubeApiServer
from instantstart_sandbox.kube.store import KubeCluster

TOKEN = "Bearer sandbox-test-token"


@pytest.fixture(scope="module")
def server() -> Iterator[KubeApiServer]:
    srv = KubeApiServer()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def cluster_name(server: KubeApiServer, request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:60].strip("-")
    server.add_cluster(name)
    return name


@pytest.fixture
def kube(server: KubeApiServer, cluster_name: str) -> KubeCluster:
    return server.cluster(cluster_name)


def make_client(
    server: KubeApiServer, cluster_name: str, tmp_path: Path, token: str | None = TOKEN
) -> client.ApiClient:
    ca = tmp_path / "ca.pem"
    ca.write_text(server.ca_pem)
    cfg = client.Configuration()
    cfg.host = server.endpoint(cluster_name)
    cfg.ssl_ca_cert = str(ca)
    if token:
        cfg.api_key = {"authorization": token}
    return client.ApiClient(cfg)


@pytest.fixture
def api(server: KubeApiServer, cluster_name: str, tmp_path: Path) -> client.ApiClient:
    return make_client(server, cluster_name, tmp_path)


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def apps(api: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api)


@pytest.fixture
def dyn(api: client.ApiClient, tmp_path: Path) -> DynamicClient:
    return DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))


def ready_node(name: str, labels: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.1.17"}],
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            **status,
        },
    }


def deployment(name: str, replicas: int = 2, containers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": containers or [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    }


def raw(
    api: client.ApiClient,
    method: str,
    path: str,
    body: str | None = None,
    content_type: str = "application/json",
    query: list[tuple[str, str]] | None = None,
) -> Any:
    """A raw request through the client's transport (auth, TLS, host prefix); returns the response."""
    response = api.call_api(
        *api.param_serialize(
            method,
            path,
            query_params=query or [],
            header_params={"Content-Type": content_type, "Accept": "*/*"},
            body=body,
            auth_settings=["BearerToken"],
        )
    )
    response.read()
    return response


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


# ---------------------------------------------------------------------------------------------
# discovery, auth, errors


def test_discovery_lists_groups_resources_and_subresources(api: client.ApiClient, core: client.CoreV1Api) -> None:
    # Given a fresh cluster
    # When a client reads the version and discovery documents
    version = client.VersionApi(api).get_code()
    groups = client.ApisApi(api).get_api_versions()
    core_resources = core.get_api_resources()
    apps_resources = client.AppsV1Api(api).get_api_resources()

    # Then they describe an EKS-like server with built-in groups and their subresources
    assert version.git_version.startswith("v1.")
    by_name = {g.name: g for g in groups.groups}
    assert {"apps", "batch", "rbac.authorization.k8s.io", "apiextensions.k8s.io", "storage.k8s.io"} <= set(by_name)
    assert by_name["apps"].preferred_version.group_version == "apps/v1"
    names = {r.name: r for r in core_resources.resources}
    assert names["pods"].namespaced and names["pods"].short_names == ["po"] and "watch" in names["pods"].verbs
    assert names["pods/log"].kind == "Pod"
    assert not names["nodes"].namespaced
    scale = {r.name: r for r in apps_resources.resources}["deployments/scale"]
    assert (scale.group, scale.version, scale.kind) == ("autoscaling", "v1", "Scale")


def test_default_namespaces_and_service_accounts_exist(core: client.CoreV1Api) -> None:
    namespaces = {n.metadata.name: n for n in core.list_namespace().items}
    assert set(namespaces) == {"default", "kube-system", "kube-public", "kube-node-lease"}
    assert namespaces["default"].status.phase == "Active"
    sas = core.list_service_account_for_all_namespaces().items
    assert sorted(sa.metadata.namespace for sa in sas if sa.metadata.name == "default") == sorted(namespaces)


def test_requests_without_a_bearer_token_are_unauthorized(
    server: KubeApiServer, cluster_name: str, tmp_path: Path
) -> None:
    anonymous = client.CoreV1Api(make_client(server, cluster_name, tmp_path, token=None))
    with pytest.raises(ApiException) as err:
        anonymous.list_namespace()
    assert err.value.status == 401
    assert status_of(err.value)["reason"] == "Unauthorized"


def test_token_validator_decides_per_cluster(tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []

    def validator(cluster: str, token: str) -> bool:
        seen.append((cluster, token))
        return token == "good"

    srv = KubeApiServer(token_validator=validator)
    srv.start()
    try:
        srv.add_cluster("c1")
        good = client.CoreV1Api(make_client(srv, "c1", tmp_path, "Bearer good"))
        bad = client.CoreV1Api(make_client(srv, "c1", tmp_path, "Bearer bad"))
        assert good.read_namespace("default").metadata.name == "default"
        with pytest.raises(ApiException) as err:
            bad.read_namespace("default")
        assert err.value.status == 401
        assert ("c1", "good") in seen and ("c1", "bad") in seen
    finally:
        srv.stop()


def test_unknown_cluster_is_not_found(server: KubeApiServer, tmp_path: Path) -> None:
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(make_client(server, "no-such-cluster", tmp_path)).list_namespace()
    assert err.value.status == 404


def test_removed_cluster_stops_answering(server: KubeApiServer, tmp_path: Path) -> None:
    first = server.add_cluster("short-lived")
    assert server.add_cluster("short-lived") == first  # idempotent
    core = client.CoreV1Api(make_client(server, "short-lived", tmp_path))
    core.read_namespace("default")
    server.remove_cluster("short-lived")
    with pytest.raises(KeyError):
        server.cluster("short-lived")
    with pytest.raises(ApiException) as err:
        core.read_namespace("default")
    assert err.value.status == 404


def test_a_cluster_created_again_answers_at_a_new_endpoint(server: KubeApiServer, tmp_path: Path) -> None:
    # Given a cluster that was removed and created again under the same name
    old = server.add_cluster("again")
    old_core = client.CoreV1Api(make_client(server, "again", tmp_path))
    old_core.create_namespace({"metadata": {"name": "from-the-first"}})
    server.remove_cluster("again")
    new = server.add_cluster("again")

    # Then, as with EKS, the new cluster has its own endpoint and the old one is gone
    assert new != old and new.split("/clusters/")[1].startswith("again-")
    with pytest.raises(ApiException) as err:
        old_core.read_namespace("default")
    assert err.value.status == 404
    names = [ns.metadata.name for ns in client.CoreV1Api(make_client(server, "again", tmp_path)).list_namespace().items]
    assert "default" in names and "from-the-first" not in names


# ---------------------------------------------------------------------------------------------
# CRUD


def test_create_read_replace_delete_round_trip(core: client.CoreV1Api) -> None:
    # Given a created ConfigMap
    created = core.create_namespaced_config_map(
        "default", {"metadata": {"name": "settings", "labels": {"app": "x"}}, "data": {"k": "v"}}
    )
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp

    # When it is replaced with its current resourceVersion
    created.data = {"k": "v2"}
    replaced = core.replace_namespaced_config_map("settings", "default", created)
    assert replaced.data == {"k": "v2"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    # Then a replace with the stale resourceVersion conflicts
    created.data = {"k": "stale"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("settings", "default", created)
    assert err.value.status == 409 and status_of(err.value)["reason"] == "Conflict"

    # And deleting it answers Success and makes it disappear
    core.delete_namespaced_config_map("settings", "default")
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("settings", "default")
    assert err.value.status == 404
    assert status_of(err.value)["reason"] == "NotFound"
    assert status_of(err.value)["message"] == 'configmaps "settings" not found'


def test_create_errors_map_to_status_codes(core: client.CoreV1Api) -> None:
    core.create_namespaced_secret("default", {"metadata": {"name": "s1"}, "stringData": {"password": "hunter2"}})
    with pytest.raises(ApiException) as err:
        core.create_namespaced_secret("default", {"metadata": {"name": "s1"}})
    assert err.value.status == 409 and status_of(err.value)["reason"] == "AlreadyExists"

    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("missing-ns", {"metadata": {"name": "c"}})
    assert err.value.status == 404

    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "Not_Valid"}})
    assert err.value.status == 422
    body = status_of(err.value)
    assert body["reason"] == "Invalid" and body["details"]["causes"][0]["field"] == "metadata.name"

    secret = core.read_namespaced_secret("s1", "default")
    assert secret.type == "Opaque"
    assert base64.b64decode(secret.data["password"]) == b"hunter2"


def test_generate_name_and_server_defaults(core: client.CoreV1Api) -> None:
    svc = core.create_namespaced_service(
        "default",
        {"metadata": {"generateName": "api-"}, "spec": {"selector": {"app": "api"}, "ports": [{"port": 80}]}},
    )
    assert re.fullmatch(r"api-[a-z0-9]{5}", svc.metadata.name)
    assert svc.spec.type == "ClusterIP" and svc.spec.cluster_ip.startswith("10.100.")
    assert svc.spec.ports[0].protocol == "TCP" and svc.spec.ports[0].target_port == 80


def test_label_and_field_selectors_filter_lists(core: client.CoreV1Api) -> None:
    for name, labels in {
        "a": {"tier": "web", "env": "prod"},
        "b": {"tier": "web", "env": "dev"},
        "c": {"tier": "db"},
        "d": {},
    }.items():
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": labels}})

    def names(**kw: Any) -> list[str]:
        return sorted(
            c.metadata.name for c in core.list_namespaced_config_map("default", **kw).items if c.metadata.name in "abcd"
        )

    assert names(label_selector="tier=web") == ["a", "b"]
    assert names(label_selector="tier==web,env=prod") == ["a"]
    assert names(label_selector="tier!=web") == ["c", "d"]
    assert names(label_selector="env in (prod, dev)") == ["a", "b"]
    assert names(label_selector="env notin (prod)") == ["b", "c", "d"]
    assert names(label_selector="env") == ["a", "b"]
    assert names(label_selector="!env") == ["c", "d"]
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(field_selector="metadata.name!=c") == ["a", "b", "d"]
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map("default", label_selector="tier in (web")
    assert err.value.status == 400
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map("default", field_selector="data.x=1")
    assert err.value.status == 400


def test_list_pages_with_limit_and_continue(core: client.CoreV1Api) -> None:
    for i in range(5):
        core.create_namespaced_config_map("kube-public", {"metadata": {"name": f"page-{i}"}})
    first = core.list_namespaced_config_map("kube-public", limit=2)
    assert [c.metadata.name for c in first.items] == ["page-0", "page-1"]
    assert first.metadata.remaining_item_count == 3
    second = core.list_namespaced_config_map("kube-public", limit=2, _continue=first.metadata._continue)
    assert [c.metadata.name for c in second.items] == ["page-2", "page-3"]
    rest = core.list_namespaced_config_map("kube-public", limit=10, _continue=second.metadata._continue)
    assert [c.metadata.name for c in rest.items] == ["page-4"] and not rest.metadata._continue
    assert int(rest.metadata.resource_version) > 0


def test_finalizers_keep_a_deleted_object_until_removed(core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "guarded", "finalizers": ["example.com/keep"]}})
    core.delete_namespaced_config_map("guarded", "default")
    terminating = core.read_namespaced_config_map("guarded", "default")
    assert terminating.metadata.deletion_timestamp is not None
    core.patch_namespaced_config_map("guarded", "default", {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("guarded", "default")
    assert err.value.status == 404


def test_namespace_deletion_removes_its_objects(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "team-a"}})
    core.create_namespaced_config_map("team-a", {"metadata": {"name": "cfg"}})
    core.create_namespaced_secret("team-a", {"metadata": {"name": "sec"}})
    core.delete_namespace("team-a")
    with pytest.raises(ApiException) as err:
        core.read_namespace("team-a")
    assert err.value.status == 404
    assert not [c for c in core.list_config_map_for_all_namespaces().items if c.metadata.namespace == "team-a"]
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("team-a", {"metadata": {"name": "late"}})
    assert err.value.status == 404


def test_owner_references_cascade_deletion(core: client.CoreV1Api) -> None:
    owner = core.create_namespaced_config_map("default", {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map("default", {"metadata": {"name": "child", "ownerReferences": [ref]}})
    core.delete_namespaced_config_map("owner", "default")
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("child", "default")


# ---------------------------------------------------------------------------------------------
# patches and server-side apply


def test_merge_strategic_and_json_patches(core: client.CoreV1Api, apps: client.AppsV1Api) -> None:
    apps.create_namespaced_deployment(
        "default",
        deployment("patched", 1, [{"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "proxy:1"}]),
    )
    # strategic merge: containers merge by name
    apps.patch_namespaced_deployment(
        "patched",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}},
    )
    containers = apps.read_namespaced_deployment("patched", "default").spec.template.spec.containers
    assert [(c.name, c.image) for c in containers] == [("app", "app:2"), ("sidecar", "proxy:1")]
    # json patch
    apps.patch_namespaced_deployment("patched", "default", [{"op": "replace", "path": "/spec/replicas", "value": 3}])
    dep = apps.read_namespaced_deployment("patched", "default")
    assert dep.spec.replicas == 3 and dep.metadata.generation == 3
    # merge patch replaces lists wholesale
    core.create_namespaced_config_map("default", {"metadata": {"name": "m", "labels": {"a": "1", "b": "2"}}})
    patched = core.patch_namespaced_config_map(
        "m",
        "default",
        {"metadata": {"labels": {"a": None, "c": "3"}}},
        _content_type="application/merge-patch+json",
    )
    assert patched.metadata.labels == {"b": "2", "c": "3"}
    response = raw(core.api_client, "PATCH", "/api/v1/namespaces/default/configmaps/m", "{}", "text/plain")
    assert response.status == 415 and json.loads(response.data)["reason"] == "UnsupportedMediaType"


def test_status_subresource_separates_spec_and_status(apps: client.AppsV1Api, kube: KubeCluster) -> None:
    apps.create_namespaced_stateful_set(
        "default",
        {
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 0,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "pg"}]},
                },
            },
        },
    )
    apps.patch_namespaced_stateful_set_status(
        "db", "default", {"status": {"replicas": 0, "availableReplicas": 0, "currentRevision": "manual"}}
    )
    # a main-resource write cannot change status
    apps.patch_namespaced_stateful_set(
        "db", "default", {"status": {"currentRevision": "ignored"}, "metadata": {"labels": {"x": "y"}}}
    )
    sts = apps.read_namespaced_stateful_set("db", "default")
    assert sts.metadata.labels == {"x": "y"}
    assert sts.status.current_revision != "ignored"
    # a status write cannot change spec
    apps.patch_namespaced_stateful_set_status("db", "default", {"spec": {"replicas": 5}})
    assert apps.read_namespaced_stateful_set("db", "default").spec.replicas == 0


def test_dynamic_client_server_side_apply_owns_and_conflicts(dyn: DynamicClient) -> None:
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa", "namespace": "default", "labels": {"owner": "alice"}},
        "data": {"a": "1", "b": "2"},
    }
    # create through apply
    created = cms.server_side_apply(body=body, field_manager="alice")
    assert created.data.to_dict() == {"a": "1", "b": "2"}
    assert [m.manager for m in created.metadata.managedFields] == ["alice"]
    # another manager changing alice's field conflicts
    other = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "ssa", "namespace": "default"},
        "data": {"a": "bob"},
    }
    with pytest.raises(ApiException) as err:
        cms.server_side_apply(body=other, field_manager="bob")
    assert err.value.status == 409
    assert 'conflict with "alice"' in status_of(err.value)["message"]
    # unless forced
    forced = cms.server_side_apply(body=other, field_manager="bob", force_conflicts=True)
    assert forced.data.to_dict() == {"a": "bob", "b": "2"}
    # alice dropping "b" from her config removes it; "a" now belongs to bob and stays
    again = cms.server_side_apply(body={**body, "data": {}}, field_manager="alice")
    assert again.data.to_dict() == {"a": "bob"}
    # apply requires a field manager
    with pytest.raises(ApiException) as err:
        cms.server_side_apply(body=body)
    assert err.value.status == 400


def test_apply_accepts_yaml_and_merges_containers_by_name(api: client.ApiClient, apps: client.AppsV1Api) -> None:
    doc = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: yml, namespace: default}
spec:
  replicas: 0
  selector: {matchLabels: {app: yml}}
  template:
    metadata: {labels: {app: yml}}
    spec:
      containers:
      - {name: main, image: "main:1"}
"""
    response = raw(
        api,
        "PATCH",
        "/apis/apps/v1/namespaces/default/deployments/yml",
        doc,
        "application/apply-patch+yaml",
        [("fieldManager", "ops")],
    )
    assert response.status == 201
    dep = apps.read_namespaced_deployment("yml", "default")
    assert dep.spec.template.spec.containers[0].image == "main:1"


# ---------------------------------------------------------------------------------------------
# CustomResourceDefinitions


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "trainingjobs.ml.example.com"},
    "spec": {
        "group": "ml.example.com",
        "scope": "Namespaced",
        "names": {
            "plural": "trainingjobs",
            "singular": "trainingjob",
            "kind": "TrainingJob",
            "shortNames": ["tj"],
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                },
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["image"],
                                "properties": {
                                    "image": {"type": "string"},
                                    "replicas": {"type": "integer", "default": 1, "minimum": 0},
                                    "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
                                    "note": {"type": "string", "nullable": True},
                                    "port": {"x-kubernetes-int-or-string": True},
                                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"phase": {"type": "string"}, "replicas": {"type": "integer"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}


def test_crd_registers_a_validated_custom_resource(api: client.ApiClient, dyn: DynamicClient) -> None:
    ext = client.ApiextensionsV1Api(api)
    custom = client.CustomObjectsApi(api)
    # Given a CRD created at runtime
    crd = ext.create_custom_resource_definition(CRD)
    conditions = {c.type: c.status for c in ext.read_custom_resource_definition(crd.metadata.name).status.conditions}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    group = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}["ml.example.com"]
    assert group.preferred_version.version == "v1"

    # When a custom resource is created with an unknown field
    obj = custom.create_namespaced_custom_object(
        "ml.example.com",
        "v1",
        "default",
        "trainingjobs",
        {
            "apiVersion": "ml.example.com/v1",
            "kind": "TrainingJob",
            "metadata": {"name": "llama"},
            "spec": {
                "image": "train:1",
                "bogus": True,
                "port": "http",
                "note": None,
                "extra": {"free": {"form": 1}},
            },
        },
    )
    # Then defaults are applied and the unknown field is pruned
    assert obj["spec"] == {
        "image": "train:1",
        "replicas": 1,
        "mode": "safe",
        "port": "http",
        "note": None,
        "extra": {"free": {"form": 1}},
    }
    # strict field validation rejects unknown fields instead
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(
            "ml.example.com",
            "v1",
            "default",
            "trainingjobs",
            {
                "apiVersion": "ml.example.com/v1",
                "kind": "TrainingJob",
                "metadata": {"name": "strict"},
                "spec": {"image": "x", "bogus": 1},
            },
            field_validation="Strict",
        )
    assert err.value.status == 400 and "bogus" in status_of(err.value)["message"]
    # schema violations are 422 Invalid with causes
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(
            "ml.example.com",
            "v1",
            "default",
            "trainingjobs",
            {
                "apiVersion": "ml.example.com/v1",
                "kind": "TrainingJob",
                "metadata": {"name": "bad"},
                "spec": {"replicas": "two", "mode": "slow"},
            },
        )
    assert err.value.status == 422
    fields = {c["field"] for c in status_of(err.value)["details"]["causes"]}
    assert fields == {"spec.image", "spec.replicas", "spec.mode"}

    # status subresource: status writes keep spec, spec writes keep status
    custom.patch_namespaced_custom_object_status(
        "ml.example.com", "v1", "default", "trainingjobs", "llama", {"status": {"phase": "Running"}}
    )
    updated = custom.patch_namespaced_custom_object(
        "ml.example.com",
        "v1",
        "default",
        "trainingjobs",
        "llama",
        {"spec": {"replicas": 4}, "status": {"phase": "Hacked"}},
    )
    assert updated["spec"]["replicas"] == 4 and updated["status"] == {"phase": "Running"}
    assert updated["metadata"]["generation"] == 2
    # scale subresource
    scale = custom.get_namespaced_custom_object_scale("ml.example.com", "v1", "default", "trainingjobs", "llama")
    assert scale["spec"]["replicas"] == 4

    # strategic merge patch is not supported for custom resources
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(
            "ml.example.com",
            "v1",
            "default",
            "trainingjobs",
            "llama",
            {"spec": {"replicas": 1}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert err.value.status == 415

    # the DynamicClient finds the new kind and applies to it
    tj = dyn.resources.get(api_version="ml.example.com/v1", kind="TrainingJob")
    applied = tj.server_side_apply(
        body={
            "apiVersion": "ml.example.com/v1",
            "kind": "TrainingJob",
            "metadata": {"name": "qwen", "namespace": "default"},
            "spec": {"image": "train:2"},
        },
        field_manager="operator",
    )
    assert applied.spec.mode == "safe"
    assert sorted(i.metadata.name for i in tj.get(namespace="default").items) == ["llama", "qwen"]

    # deleting the CRD removes its objects and its API
    ext.delete_custom_resource_definition(crd.metadata.name)
    with pytest.raises(ApiException) as err:
        custom.get_namespaced_custom_object("ml.example.com", "v1", "default", "trainingjobs", "llama")
    assert err.value.status == 404
    assert "ml.example.com" not in {g.name for g in client.ApisApi(api).get_api_versions().groups}


def test_crd_name_must_match_plural_and_group(api: client.ApiClient) -> None:
    bad = json.loads(json.dumps(CRD))
    bad["metadata"]["name"] = "wrong.ml.example.com"
    with pytest.raises(ApiException) as err:
        client.ApiextensionsV1Api(api).create_custom_resource_definition(bad)
    assert err.value.status == 422


# ---------------------------------------------------------------------------------------------
# simulated controllers


def test_pvc_binds_to_the_named_volume_whichever_comes_first(core: client.CoreV1Api) -> None:
    pv = {
        "metadata": {"name": "fsx-pv"},
        "spec": {
            "capacity": {"storage": "1200Gi"},
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-0123456789abcdef0"},
        },
    }
    pvc = {
        "metadata": {"name": "fsx-claim"},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": "fsx-pv",
            "resources": {"requests": {"storage": "1200Gi"}},
        },
    }
    # the claim first: it waits
    core.create_namespaced_persistent_volume_claim("default", pvc)
    assert core.read_namespaced_persistent_volume_claim("fsx-claim", "default").status.phase == "Pending"
    # then the volume: both bind
    core.create_persistent_volume(pv)
    claim = core.read_namespaced_persistent_volume_claim("fsx-claim", "default")
    volume = core.read_persistent_volume("fsx-pv")
    assert claim.status.phase == "Bound" and claim.status.capacity == {"storage": "1200Gi"}
    assert volume.status.phase == "Bound"
    assert volume.spec.claim_ref.name == "fsx-claim" and volume.spec.claim_ref.uid == claim.metadata.uid
    # a claim that does not fit stays pending
    core.create_persistent_volume(
        {**pv, "metadata": {"name": "small"}, "spec": {**pv["spec"], "capacity": {"storage": "1Gi"}}}
    )
    core.create_namespaced_persistent_volume_claim(
        "default", {**pvc, "metadata": {"name": "too-big"}, "spec": {**pvc["spec"], "volumeName": "small"}}
    )
    assert core.read_namespaced_persistent_volume_claim("too-big", "default").status.phase == "Pending"
    # deleting the bound claim releases a Retain volume
    core.delete_namespaced_persistent_volume_claim("fsx-claim", "default")
    assert core.read_persistent_volume("fsx-pv").status.phase == "Released"


def test_storage_class_provisions_a_volume(core: client.CoreV1Api, api: client.ApiClient) -> None:
    client.StorageV1Api(api).create_storage_class(
        {"metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com", "volumeBindingMode": "Immediate"}
    )
    core.create_namespaced_persistent_volume_claim(
        "default",
        {
            "metadata": {"name": "data"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "gp3",
                "resources": {"requests": {"storage": "20Gi"}},
            },
        },
    )
    claim = core.read_namespaced_persistent_volume_claim("data", "default")
    assert claim.status.phase == "Bound"
    volume = core.read_persistent_volume(claim.spec.volume_name)
    assert volume.spec.csi.driver == "ebs.csi.aws.com" and volume.spec.capacity == {"storage": "20Gi"}


def test_pods_wait_for_a_node_then_run(core: client.CoreV1Api, kube: KubeCluster) -> None:
    core.create_namespaced_pod(
        "default",
        {"metadata": {"name": "lonely"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
    )
    pod = core.read_namespaced_pod("lonely", "default")
    assert pod.status.phase == "Pending"
    scheduled = {c.type: c for c in pod.status.conditions}["PodScheduled"]
    assert scheduled.status == "False" and scheduled.reason == "Unschedulable"
    kube.create(ready_node("ip-10-0-1-17.us-west-2.compute.internal"))
    pod = core.read_namespaced_pod("lonely", "default")
    assert pod.status.phase == "Running" and pod.spec.node_name == "ip-10-0-1-17.us-west-2.compute.internal"
    assert pod.status.host_ip == "10.0.1.17" and pod.status.pod_ip
    assert {c.type: c.status for c in pod.status.conditions}["Ready"] == "True"
    assert pod.status.container_statuses[0].ready
    events = sorted(
        core.list_namespaced_event("default", field_selector="involvedObject.name=lonely").items,
        key=lambda e: int(e.metadata.resource_version),
    )
    assert [e.reason for e in events] == ["FailedScheduling", "Scheduled", "Pulled", "Started"]
    assert events[0].type == "Warning" and "0/0 nodes are available" in events[0].message


def test_scheduler_honours_gpu_requests_selectors_and_taints(core: client.CoreV1Api, kube: KubeCluster) -> None:
    kube.create(ready_node("cpu-node", {"pool": "cpu"}))
    gpu = ready_node("gpu-node", {"pool": "gpu"}, allocatable={"cpu": "192", "memory": "2Ti", "nvidia.com/gpu": "8"})
    gpu["spec"]["taints"] = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    kube.create(gpu)

    def pod(name: str, gpus: int, tolerate: bool) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "containers": [{"name": "c", "image": "trainer", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]
        }
        if tolerate:
            spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        return {"metadata": {"name": name}, "spec": spec}

    core.create_namespaced_pod("default", pod("untolerated", 1, False))
    core.create_namespaced_pod("default", pod("fits", 8, True))
    core.create_namespaced_pod("default", pod("too-many", 1, True))
    assert core.read_namespaced_pod("fits", "default").spec.node_name == "gpu-node"
    for name in ("untolerated", "too-many"):
        pending = core.read_namespaced_pod(name, "default")
        assert pending.status.phase == "Pending" and pending.spec.node_name is None
    message = {c.type: c for c in core.read_namespaced_pod("too-many", "default").status.conditions}[
        "PodScheduled"
    ].message
    assert "Insufficient nvidia.com/gpu" in message


def test_deployment_gets_pods_status_scale_and_logs(
    core: client.CoreV1Api, apps: client.AppsV1Api, kube: KubeCluster
) -> None:
    kube.create(ready_node("node-1"))
    apps.create_namespaced_deployment("default", deployment("web", 2))
    dep = apps.read_namespaced_deployment("web", "default")
    assert (dep.status.replicas, dep.status.ready_replicas, dep.status.available_replicas) == (2, 2, 2)
    assert {c.type: c.status for c in dep.status.conditions} == {"Available": "True", "Progressing": "True"}
    pods = core.list_namespaced_pod("default", label_selector="app=web").items
    assert len(pods) == 2 and all(p.status.phase == "Running" and p.spec.node_name == "node-1" for p in pods)
    assert pods[0].metadata.owner_references[0].kind == "ReplicaSet"

    # scale subresource
    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 3}})
    assert apps.read_namespaced_deployment_scale("web", "default").status.replicas == 3
    assert len(core.list_namespaced_pod("default", label_selector="app=web").items) == 3

    # logs are text/plain, a few deterministic lines
    log = core.read_namespaced_pod_log(pods[0].metadata.name, "default")
    assert "started container web" in log and log.count("\n") == 3
    assert core.read_namespaced_pod_log(pods[0].metadata.name, "default", tail_lines=1).count("\n") == 1

    # deleting the deployment garbage-collects its replica sets and pods
    apps.delete_namespaced_deployment("web", "default")
    assert core.list_namespaced_pod("default", label_selector="app=web").items == []
    assert apps.list_namespaced_replica_set("default").items == []


def test_replicaset_scale_down_deletes_the_lowest_pod_deletion_cost_first(
    core: client.CoreV1Api, apps: client.AppsV1Api, kube: KubeCluster
) -> None:
    kube.create(ready_node("node-1"))
    apps.create_namespaced_deployment("default", deployment("web", 3))
    pods = sorted(core.list_namespaced_pod("default", label_selector="app=web").items, key=lambda p: p.metadata.name)
    costs = {pods[0].metadata.name: "1000", pods[1].metadata.name: "-1000", pods[2].metadata.name: "500"}
    for name, cost in costs.items():
        core.patch_namespaced_pod(
            name, "default", {"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": cost}}}
        )

    apps.patch_namespaced_deployment_scale("web", "default", {"spec": {"replicas": 1}})

    left = [p.metadata.name for p in core.list_namespaced_pod("default", label_selector="app=web").items]
    assert left == [pods[0].metadata.name]


def test_multi_container_pod_log_needs_a_container_name(core: client.CoreV1Api, kube: KubeCluster) -> None:
    kube.create(ready_node("node-1"))
    core.create_namespaced_pod(
        "default",
        {
            "metadata": {"name": "two"},
            "spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "proxy", "image": "envoy:1"}]},
        },
    )
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("two", "default")
    assert err.value.status == 400 and "choose one of: [app proxy]" in status_of(err.value)["message"]
    assert "envoy:1" in core.read_namespaced_pod_log("two", "default", container="proxy")


def test_daemonset_follows_eligible_nodes(apps: client.AppsV1Api, core: client.CoreV1Api, kube: KubeCluster) -> None:
    kube.create(ready_node("hp-1", {"sagemaker.amazonaws.com/compute-type": "hyperpod"}))
    kube.create(ready_node("other", {}))
    not_ready = ready_node("hp-down", {"sagemaker.amazonaws.com/compute-type": "hyperpod"})
    not_ready["status"]["conditions"][0]["status"] = "False"
    kube.create(not_ready)
    apps.create_namespaced_daemon_set(
        "kube-system",
        {
            "metadata": {"name": "health-agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "health"}},
                "template": {
                    "metadata": {"labels": {"app": "health"}},
                    "spec": {
                        "nodeSelector": {"sagemaker.amazonaws.com/compute-type": "hyperpod"},
                        "containers": [{"name": "agent", "image": "agent:1"}],
                    },
                },
            },
        },
    )

    def state() -> tuple[int, int, list[str]]:
        ds = apps.read_namespaced_daemon_set("health-agent", "kube-system")
        nodes = sorted(
            p.spec.node_name for p in core.list_namespaced_pod("kube-system", label_selector="app=health").items
        )
        return ds.status.desired_number_scheduled, ds.status.number_ready, nodes

    assert state() == (1, 1, ["hp-1"])
    kube.create(ready_node("hp-2", {"sagemaker.amazonaws.com/compute-type": "hyperpod"}))
    assert state() == (2, 2, ["hp-1", "hp-2"])
    kube.delete("v1", "Node", "hp-1")
    assert state() == (1, 1, ["hp-2"])


def test_job_runs_a_pod_to_completion(api: client.ApiClient, core: client.CoreV1Api, kube: KubeCluster) -> None:
    kube.create(ready_node("node-1"))
    batch = client.BatchV1Api(api)
    batch.create_namespaced_job(
        "default",
        {
            "metadata": {"name": "once"},
            "spec": {
                "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}
            },
        },
    )
    job = batch.read_namespaced_job("once", "default")
    assert job.status.succeeded == 1 and job.status.completion_time is not None
    assert {c.type: c.status for c in job.status.conditions}["Complete"] == "True"
    pods = core.list_namespaced_pod("default", label_selector="job-name=once").items
    assert [p.status.phase for p in pods] == ["Succeeded"]
    assert "exited with code 0" in core.read_namespaced_pod_log(pods[0].metadata.name, "default")
    with pytest.raises(ApiException) as err:
        batch.create_namespaced_job(
            "default",
            {
                "metadata": {"name": "always"},
                "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}},
            },
        )
    assert err.value.status == 422


def test_controllers_take_simulated_time_with_a_clock(tmp_path: Path) -> None:
    # schedule + start are 5 simulated seconds: 0.5 wall s at 10x, room for a loaded machine to read Pending first
    clock = SimClock(scale=10.0)
    srv = KubeApiServer(clock=clock)
    srv.start()
    try:
        srv.add_cluster("timed")
        kube = srv.cluster("timed")
        core = client.CoreV1Api(make_client(srv, "timed", tmp_path))
        kube.create(ready_node("node-1"))
        core.create_namespaced_pod(
            "default",
            {"metadata": {"name": "slow"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
        )
        assert core.read_namespaced_pod("slow", "default").status.phase == "Pending"
        wait_for(lambda: core.read_namespaced_pod("slow", "default").status.phase == "Running", 5.0)
    finally:
        srv.stop()
        clock.stop()


def wait_for(predicate: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


# ---------------------------------------------------------------------------------------------
# watch


def test_watch_streams_changes_after_a_resource_version(core: client.CoreV1Api) -> None:
    start = core.list_namespaced_config_map("default").metadata.resource_version
    core.create_namespaced_config_map("default", {"metadata": {"name": "w", "labels": {"watch": "me"}}})
    core.patch_namespaced_config_map("w", "default", {"data": {"k": "v"}})
    core.create_namespaced_config_map("default", {"metadata": {"name": "ignored"}})
    core.delete_namespaced_config_map("w", "default")

    w = watch.Watch()
    events = []
    for e in w.stream(
        core.list_namespaced_config_map,
        "default",
        label_selector="watch=me",
        resource_version=start,
        timeout_seconds=5,
    ):
        events.append((e["type"], e["object"].metadata.name, e["object"].data))
        if len(events) == 3:
            w.stop()
    assert events == [("ADDED", "w", None), ("MODIFIED", "w", {"k": "v"}), ("DELETED", "w", {"k": "v"})]


def test_watch_without_resource_version_starts_with_current_objects(core: client.CoreV1Api) -> None:
    w = watch.Watch()
    seen = []
    for event in w.stream(core.list_namespace, timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 4:
            w.stop()
    assert sorted(seen) == sorted(("ADDED", n) for n in ("default", "kube-system", "kube-public", "kube-node-lease"))


# ---------------------------------------------------------------------------------------------
# EKS tokens


def eks_token(cluster: str) -> str:
    import botocore.session
    from botocore.signers import RequestSigner

    session = botocore.session.get_session()
    session.set_credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    sts = session.create_client("sts", region_name="us-west-2")
    signer = RequestSigner(
        sts.meta.service_model.service_id,
        "us-west-2",
        "sts",
        "v4",
        session.get_credentials(),
        session.get_component("event_emitter"),
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": "https://sts.us-west-2.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {"x-k8s-aws-id": cluster},
            "context": {},
        },
        region_name="us-west-2",
        expires_in=60,
        operation_name="",
    )
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def test_eks_token_validator_accepts_real_tokens_and_rejects_malformed_ones() -> None:
    token = eks_token("hp-eks")
    assert eks_token_validator("hp-eks", token)
    assert not eks_token_validator("hp-eks", "k8s-aws-v1.bm90LWEtdXJs")
    assert not eks_token_validator("hp-eks", token.replace("k8s-aws-v1.", "k8s-aws-v2."))
    assert not eks_token_validator("hp-eks", token, now=time.time() + 16 * 60)  # expired
    url = base64.urlsafe_b64decode(token[11:] + "==").decode()
    unsigned = url.replace("x-k8s-aws-id", "x-other")
    assert not eks_token_validator(
        "hp-eks", "k8s-aws-v1." + base64.urlsafe_b64encode(unsigned.encode()).decode().rstrip("=")
    )
    evil = url.replace("sts.us-west-2.amazonaws.com", "evil.example.com")
    assert not eks_token_validator(
        "hp-eks", "k8s-aws-v1." + base64.urlsafe_b64encode(evil.encode()).decode().rstrip("=")
    )


def test_server_with_eks_validator_accepts_client_tokens(tmp_path: Path) -> None:
    srv = KubeApiServer(token_validator=eks_token_validator)
    srv.start()
    try:
        srv.add_cluster("hp-eks")
        ok = client.CoreV1Api(make_client(srv, "hp-eks", tmp_path, "Bearer " + eks_token("hp-eks")))
        assert ok.read_namespace("kube-system").status.phase == "Active"
        bad = client.CoreV1Api(make_client(srv, "hp-eks", tmp_path, "Bearer k8s-aws-v1.garbage"))
        with pytest.raises(ApiException) as err:
            bad.read_namespace("kube-system")
        assert err.value.status == 401
    finally:
        srv.stop()


# ---------------------------------------------------------------------------------------------
# odds and ends a client notices


def test_dry_run_validates_without_persisting(core: client.CoreV1Api) -> None:
    preview = core.create_namespaced_config_map("default", {"metadata": {"name": "dry"}}, dry_run="All")
    assert preview.metadata.name == "dry"
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("dry", "default")
    assert err.value.status == 404


def test_delete_collection_by_label_and_pod_delete_returns_the_pod(core: client.CoreV1Api) -> None:
    for name, team in (("x1", "a"), ("x2", "a"), ("x3", "b")):
        core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": {"team": team}}})
    core.delete_collection_namespaced_config_map("default", label_selector="team=a")
    left = [c.metadata.name for c in core.list_namespaced_config_map("default", label_selector="team").items]
    assert left == ["x3"]
    core.create_namespaced_pod(
        "default", {"metadata": {"name": "gone"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    )
    deleted = core.delete_namespaced_pod("gone", "default")
    assert deleted.metadata.name == "gone" and deleted.kind == "Pod"


def test_dynamic_client_watches_custom_resources(api: client.ApiClient, dyn: DynamicClient) -> None:
    client.ApiextensionsV1Api(api).create_custom_resource_definition(CRD)
    jobs = dyn.resources.get(api_version="ml.example.com/v1", kind="TrainingJob")
    start = jobs.get(namespace="default").metadata.resourceVersion
    jobs.create(
        body={
            "apiVersion": "ml.example.com/v1",
            "kind": "TrainingJob",
            "metadata": {"name": "w1"},
            "spec": {"image": "x"},
        },
        namespace="default",
    )
    jobs.patch(
        name="w1",
        namespace="default",
        body={"spec": {"replicas": 2}},
        content_type="application/merge-patch+json",
    )
    seen = []
    for event in jobs.watch(namespace="default", resource_version=start, timeout=5):
        seen.append((event["type"], event["object"].spec.replicas))
        if len(seen) == 2:
            break
    assert seen == [("ADDED", 1), ("MODIFIED", 2)]


def test_unserved_paths_and_methods_answer_with_status(api: client.ApiClient) -> None:
    assert raw(api, "GET", "/apis/nope.example.com/v1").status == 404
    assert raw(api, "GET", "/api/v1/namespaces/default/widgets").status == 404
    assert raw(api, "GET", "/openapi/v2").status == 404
    response = raw(api, "POST", "/api/v1/pods", "{}")
    assert response.status == 405 and json.loads(response.data)["reason"] == "MethodNotAllowed"
    response = raw(api, "PUT", "/api/v1/namespaces/default/configmaps/none", '{"metadata": {"name": "none"}}')
    assert response.status == 404 and json.loads(response.data)["kind"] == "Status"


def test_access_reviews_allow_the_authenticated_user(api: client.ApiClient) -> None:
    review = client.AuthorizationV1Api(api).create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}}
    )
    assert review.status.allowed is True
    assert raw(api, "GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews").status == 405
