"""In-process behaviour of the emulated cluster (``KubeCluster``) and its simulated controllers,
as the AWS emulation and simulated workloads use it (no HTTP)."""

from __future__ import annotations

import threading
from typing import Any

import kubernetes_validate
import pytest

from instantstart_sandbox.kube.controllers import EXIT_CODE_ANNOTATION, SimulatedControllers
from instantstart_sandbox.kube.errors import KubeError
from instantstart_sandbox.kube.patches import Typer, json_patch, strategic_merge
from instantstart_sandbox.kube.store import KubeCluster


@pytest.fixture
def kube() -> KubeCluster:
    cluster = KubeCluster("unit")
    SimulatedControllers(cluster)
    return cluster


def node(name: str, ready: bool = True, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        },
    }


def workload(kind: str, name: str, replicas: int = 2, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "img:1"}]},
            },
            **spec,
        },
    }


def test_in_process_api_behaves_like_the_http_verbs(kube: KubeCluster) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}
    created = kube.create(cm)
    assert created["metadata"]["namespace"] == "default" and created["metadata"]["uid"]
    with pytest.raises(KubeError) as err:
        kube.create(cm)
    assert err.value.code == 409 and err.value.reason == "AlreadyExists"
    merged = kube.apply({**cm, "data": {"b": "2"}}, field_manager="other")
    assert merged["data"] == {"a": "1", "b": "2"}
    assert kube.get("v1", "ConfigMap", "missing") is None
    assert [c["metadata"]["name"] for c in kube.list("v1", "ConfigMap", "default")] == ["cfg"]
    kube.delete("v1", "ConfigMap", "cfg", "default")
    with pytest.raises(KubeError) as err:
        kube.delete("v1", "ConfigMap", "cfg", "default")
    assert err.value.code == 404
    kube.delete("v1", "ConfigMap", "cfg", "default", missing_ok=True)
    with pytest.raises(KubeError) as err:
        kube.create({"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "x"}})
    assert err.value.code == 404


def test_node_status_is_kept_on_create_and_updated_through_patch_status(kube: KubeCluster) -> None:
    kube.apply(node("hp-node", ready=False, pool="gpu"), field_manager="sagemaker")
    assert kube.get("v1", "Node", "hp-node")["status"]["conditions"][0]["status"] == "False"  # type: ignore[index]
    # a re-apply of the main resource does not touch status (status subresource semantics)
    kube.apply(node("hp-node", ready=True, pool="gpu"), field_manager="sagemaker")
    assert kube.get("v1", "Node", "hp-node")["status"]["conditions"][0]["status"] == "False"  # type: ignore[index]
    kube.patch_status("v1", "Node", "hp-node", None, {"conditions": [{"type": "Ready", "status": "True"}]})
    assert kube.get("v1", "Node", "hp-node")["status"]["conditions"][0]["status"] == "True"  # type: ignore[index]


def test_strategic_merge_directives() -> None:
    live = {
        "spec": {
            "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}],
            "volumes": [{"name": "v1"}, {"name": "v2"}],
            "tolerations": [{"key": "x"}],
        },
        "metadata": {"finalizers": ["f1", "f2"]},
    }
    patched = strategic_merge(
        live,
        {
            "spec": {
                "containers": [{"name": "b", "$patch": "delete"}, {"name": "c", "image": "c:1"}],
                "volumes": [{"$patch": "replace"}, {"name": "only"}],
                "tolerations": [{"key": "y"}],
            },
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"], "finalizers": ["f3"]},
        },
        Typer(),
    )
    assert [c["name"] for c in patched["spec"]["containers"]] == ["a", "c"]
    assert patched["spec"]["volumes"] == [{"name": "only"}]
    assert patched["spec"]["tolerations"] == [{"key": "y"}]  # no merge key: replaced
    assert patched["metadata"]["finalizers"] == ["f2", "f3"]


def test_json_patch_operations_and_failed_test() -> None:
    doc = {"a": {"b": [1, 2]}, "c": 1}
    out = json_patch(
        doc,
        [
            {"op": "add", "path": "/a/b/-", "value": 3},
            {"op": "move", "from": "/c", "path": "/d"},
            {"op": "copy", "from": "/d", "path": "/e"},
            {"op": "remove", "path": "/a/b/0"},
            {"op": "test", "path": "/e", "value": 1},
        ],
    )
    assert out == {"a": {"b": [2, 3]}, "d": 1, "e": 1} and doc == {"a": {"b": [1, 2]}, "c": 1}
    with pytest.raises(KubeError) as err:
        json_patch(doc, [{"op": "test", "path": "/c", "value": 2}])
    assert err.value.code == 422


def test_deployment_rollout_replaces_the_replica_set(kube: KubeCluster) -> None:
    kube.create(node("n1"))
    kube.create(workload("Deployment", "api"))
    first = {rs["metadata"]["name"] for rs in kube.list("apps/v1", "ReplicaSet", "default")}
    kube.patch(
        "apps/v1",
        "Deployment",
        "api",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "img:2"}]}}}},
        "strategic",
    )
    sets = {rs["metadata"]["name"]: rs for rs in kube.list("apps/v1", "ReplicaSet", "default")}
    (new,) = set(sets) - first
    assert (
        sets[new]["spec"]["replicas"] == 2
        and sets[new]["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    )
    assert all(sets[name]["spec"]["replicas"] == 0 for name in first)
    images = {p["spec"]["containers"][0]["image"] for p in kube.list("v1", "Pod", "default", "app=api")}
    assert images == {"img:2"}
    dep = kube.get("apps/v1", "Deployment", "api", "default")
    assert dep is not None and dep["status"]["updatedReplicas"] == 2 and dep["status"]["observedGeneration"] == 2


def test_pods_of_a_deleted_node_are_replaced_elsewhere(kube: KubeCluster) -> None:
    kube.create(node("n1"))
    kube.create(workload("Deployment", "api", 2))
    kube.create(node("n2"))
    kube.delete("v1", "Node", "n1")
    pods = kube.list("v1", "Pod", "default", "app=api")
    assert len(pods) == 2 and {p["spec"]["nodeName"] for p in pods} == {"n2"}
    assert all(p["status"]["phase"] == "Running" for p in pods)


def test_statefulset_creates_ordinal_pods_with_provisioned_claims(kube: KubeCluster) -> None:
    kube.create(node("n1"))
    kube.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "ebs"},
            "provisioner": "ebs.csi.aws.com",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    kube.create(
        workload(
            "StatefulSet",
            "db",
            2,
            serviceName="db",
            volumeClaimTemplates=[
                {
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": "ebs",
                        "resources": {"requests": {"storage": "10Gi"}},
                    },
                }
            ],
        )
    )
    pods = sorted(kube.list("v1", "Pod", "default", "app=db"), key=lambda p: p["metadata"]["name"])
    assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1"]
    assert all(p["status"]["phase"] == "Running" for p in pods)
    claims = {c["metadata"]["name"]: c for c in kube.list("v1", "PersistentVolumeClaim", "default")}
    assert set(claims) == {"data-db-0", "data-db-1"}
    assert all(c["status"]["phase"] == "Bound" for c in claims.values())
    sts = kube.get("apps/v1", "StatefulSet", "db", "default")
    assert sts is not None and sts["status"]["readyReplicas"] == 2


def test_job_fails_after_backoff_limit(kube: KubeCluster) -> None:
    kube.create(node("n1"))
    kube.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "crash", "namespace": "default"},
            "spec": {
                "backoffLimit": 1,
                "template": {
                    "metadata": {"annotations": {EXIT_CODE_ANNOTATION: "3"}},
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]},
                },
            },
        }
    )
    job = kube.get("batch/v1", "Job", "crash", "default")
    assert job is not None
    assert job["status"]["failed"] == 2
    assert {c["type"]: c["status"] for c in job["status"]["conditions"]}["Failed"] == "True"
    assert "exited with code 3" in kube.pod_log("default", kube.list("v1", "Pod", "default")[0]["metadata"]["name"])


def test_concurrent_writers_get_distinct_resource_versions(kube: KubeCluster) -> None:
    results: list[str] = []

    def writer(i: int) -> None:
        for j in range(20):
            obj = kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c-{i}-{j}"}})
            results.append(obj["metadata"]["resourceVersion"])

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == len(set(results)) == 160
    assert len(kube.list("v1", "ConfigMap")) == 160


def test_watch_replays_from_a_resource_version_and_filters(kube: KubeCluster) -> None:
    rt = kube.resource_type("v1", "ConfigMap")
    start = kube.list_objects(rt, "default")["metadata"]["resourceVersion"]
    kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"x": "1"}}})
    kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}})
    kube.patch("v1", "ConfigMap", "a", "default", {"metadata": {"labels": {"x": "2"}}})
    w = kube.watch(rt, "default", label_selector="x=1", resource_version=start)
    events = []
    while (event := w.get(0.01)) is not None:
        events.append((event[0], event[1]["metadata"]["name"]))
    assert events == [("ADDED", "a"), ("DELETED", "a")]  # label no longer matches: DELETED
    kube.stop_watch(w)


def test_objects_the_controllers_produce_validate_against_the_real_schemas(kube: KubeCluster) -> None:
    kube.create(node("n1"))
    kube.create(workload("Deployment", "api", 2))
    ds = workload("DaemonSet", "agent")
    del ds["spec"]["replicas"]
    kube.create(ds)
    kube.create(workload("StatefulSet", "db", 1, serviceName="db"))
    kube.create(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}},
        }
    )
    kube.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}})
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "pv"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "csi": {"driver": "fsx.csi.aws.com", "volumeHandle": "fs-1"},
            },
        }
    )
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "pvc"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "storageClassName": "",
                "volumeName": "pv",
                "resources": {"requests": {"storage": "1Gi"}},
            },
        }
    )
    kinds = [
        ("v1", "Pod"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "StatefulSet"),
        ("batch/v1", "Job"),
        ("v1", "Service"),
        ("v1", "Namespace"),
        ("v1", "Event"),
        ("v1", "PersistentVolume"),
        ("v1", "PersistentVolumeClaim"),
        ("v1", "ServiceAccount"),
    ]
    checked = 0
    for api_version, kind in kinds:
        for obj in kube.list(api_version, kind):
            kubernetes_validate.validate(obj, "1.32", strict=True)
            checked += 1
    assert checked > 20


def test_shared_apply_ownership_keeps_a_field_another_manager_also_applied(kube: KubeCluster) -> None:
    base = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}}
    kube.apply({**base, "data": {"k": "v", "only-alice": "1"}}, field_manager="alice")
    kube.apply({**base, "data": {"k": "v"}}, field_manager="bob")  # same value: shared, no change
    result = kube.apply(base, field_manager="alice")  # alice stops managing data
    assert result["data"] == {"k": "v"}
    assert sorted(m["manager"] for m in result["metadata"]["managedFields"]) == ["bob"]
