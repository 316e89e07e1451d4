"""Kubernetes objects the control plane applies validate against the real Kubernetes 1.32 schemas (strict)."""

from __future__ import annotations

import copy
from typing import Any

import kubernetes_validate
import pytest

from instantstart.kube import objects

pytestmark = pytest.mark.usefixtures("no_network")

KUBERNETES_VERSION = "1.32"
BUCKET = "instantstart-demo-123456789012-us-west-2"


def validate(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def name_of(obj: dict[str, Any]) -> str:
    return f"{obj['kind']}/{obj['metadata']['name']}"


@pytest.mark.parametrize("obj", objects.hyperpod_prerequisites("us-west-2"), ids=name_of)
def test_given_a_hyperpod_prerequisite_when_validating_against_kubernetes_1_32_then_it_is_valid(
    obj: dict[str, Any],
) -> None:
    validate(obj)


def test_given_the_prerequisites_then_the_namespace_comes_before_everything_placed_in_it() -> None:
    objs = objects.hyperpod_prerequisites("us-west-2")
    namespace_at = next(i for i, o in enumerate(objs) if o["kind"] == "Namespace")

    assert objs[namespace_at]["metadata"]["name"] == objects.HYPERPOD_NAMESPACE
    assert all(
        i > namespace_at for i, o in enumerate(objs) if o["metadata"].get("namespace") == objects.HYPERPOD_NAMESPACE
    )
    kinds = [o["kind"] for o in objs]
    assert kinds.index("ServiceAccount") < kinds.index("ClusterRoleBinding") < kinds.index("DaemonSet")


def test_given_the_prerequisites_then_daemonsets_run_only_on_hyperpod_nodes_and_select_their_own_pods() -> None:
    daemonsets = [o for o in objects.hyperpod_prerequisites("us-west-2") if o["kind"] == "DaemonSet"]

    assert {d["metadata"]["name"] for d in daemonsets} == {
        "health-monitoring-agent",
        "nvidia-device-plugin",
        "aws-efa-k8s-device-plugin",
    }
    for ds in daemonsets:
        selector = ds["spec"]["selector"]["matchLabels"]
        pod_labels = ds["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= pod_labels.items(), name_of(ds)
        terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ]["nodeSelectorTerms"]
        assert terms[0]["matchExpressions"] == [
            {"key": "sagemaker.amazonaws.com/compute-type", "operator": "In", "values": ["hyperpod"]}
        ]


def test_given_a_region_when_building_prerequisites_then_regional_images_come_from_that_region() -> None:
    images = [
        c["image"]
        for o in objects.hyperpod_prerequisites("eu-north-1")
        if o["kind"] == "DaemonSet"
        for c in o["spec"]["template"]["spec"]["containers"]
    ]

    ecr = [i for i in images if ".dkr.ecr." in i]
    assert ecr and all(".dkr.ecr.eu-north-1.amazonaws.com/" in i for i in ecr)


def test_given_the_health_agent_then_its_binding_grants_its_role_to_its_service_account() -> None:
    objs = {(o["kind"], o["metadata"]["name"]): o for o in objects.hyperpod_prerequisites("us-west-2")}
    binding = next(o for (kind, _), o in objs.items() if kind == "ClusterRoleBinding")
    agent = objs[("DaemonSet", "health-monitoring-agent")]

    assert ("ClusterRole", binding["roleRef"]["name"]) in objs
    [subject] = binding["subjects"]
    assert ("ServiceAccount", subject["name"]) in objs
    assert subject["namespace"] == agent["metadata"]["namespace"]
    assert agent["spec"]["template"]["spec"]["serviceAccountName"] == subject["name"]


def test_given_a_bucket_when_building_the_s3_volume_then_it_is_a_valid_read_write_many_mountpoint_pv() -> None:
    pv = objects.s3_persistent_volume(BUCKET, "us-west-2")

    validate(pv)
    spec = pv["spec"]
    assert spec["accessModes"] == ["ReadWriteMany"]
    assert "allow-delete" in spec["mountOptions"]
    assert "region us-west-2" in spec["mountOptions"]
    assert spec["csi"]["driver"] == "s3.csi.aws.com"
    assert spec["csi"]["volumeAttributes"] == {"bucketName": BUCKET}
    assert spec["claimRef"] == {"namespace": "default", "name": "s3-claim"}
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"  # deleting the claim never deletes data


def test_given_another_region_when_building_the_s3_volume_then_the_mount_option_names_that_region() -> None:
    pv = objects.s3_persistent_volume(BUCKET, "ap-southeast-2")

    assert "region ap-southeast-2" in pv["spec"]["mountOptions"]
    assert not any("us-west-2" in o for o in pv["spec"]["mountOptions"])


def test_given_the_s3_claim_then_it_is_a_valid_pvc_s3_claim_in_default_bound_to_the_volume_by_name() -> None:
    pvc = objects.s3_persistent_volume_claim()
    pv = objects.s3_persistent_volume(BUCKET, "us-west-2")

    validate(pvc)
    assert (pvc["metadata"]["name"], pvc["metadata"]["namespace"]) == ("s3-claim", "default")
    assert pvc["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pvc["spec"]["accessModes"] == pv["spec"]["accessModes"]
    # static binding: an empty class on both sides keeps a default StorageClass from provisioning a volume
    assert pvc["spec"]["storageClassName"] == pv["spec"]["storageClassName"] == ""
    assert pvc["spec"]["resources"]["requests"]["storage"] == pv["spec"]["capacity"]["storage"]


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda o: o["spec"].update(accessModes="ReadWriteMany"), id="access-modes-not-a-list"),
        pytest.param(lambda o: o["spec"].update(volumeNam="s3-pv"), id="misspelt-field"),
    ],
)
def test_given_a_broken_claim_when_validating_then_the_schema_check_refuses_it(mutate: Any) -> None:
    broken = copy.deepcopy(objects.s3_persistent_volume_claim())
    mutate(broken)

    with pytest.raises(kubernetes_validate.ValidationError):
        validate(broken)
