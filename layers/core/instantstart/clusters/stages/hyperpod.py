"""Stage ``hyperpod``: the HyperPod cluster (``CreateCluster``, continuous provisioning).

Its compute subnets are made by the ``network`` stage while EKS creates
(:func:`instantstart.clusters.stages.network.ensure_compute_subnets`); only in an imported VPC (whose network stage
did not run) does this stage make them, with their egress, in ``clear_failed_hyperpod_cluster``.

Create steps: poll ``clear_failed_hyperpod_cluster`` ->
``create_hyperpod_cluster`` -> event-or-poll ``check_hyperpod_cluster`` (:mod:`instantstart.clusters.waits`:
the State Change event wakes it, else it checks every poll interval). Teardown step: poll
``delete_hyperpod_cluster`` (the cluster's own task governance resources first, then the cluster).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.capacity.subnets import check_pinned_subnets
from instantstart.clusters import autoscaling_role, records, task_governance
from instantstart.clusters.stages.common import Step
from instantstart.clusters.stages.network import ensure_compute_subnets
from instantstart.errors import StageFailed
from instantstart.models.cluster import HyperPodView, InstanceGroupRequest, InstanceGroupView
from instantstart.models.cluster_events import ClusterEventView
from instantstart.models.common import CapacityType, StageName
from instantstart.models.resources import HyperPodResources, NetworkResources
from instantstart.models.workflow import PollResult, StepPayload, StepResult
from instantstart.naming import MANAGED_KEY, TAG_KEY, hyperpod_cluster_name, owned_by, ownership_tags, tag_list
from instantstart.network import vpc
from instantstart.runtime import Runtime

STAGE = StageName.HYPERPOD


def with_dedicated_subnets(
    groups: list[InstanceGroupRequest], subnets: dict[str, str] | None
) -> list[InstanceGroupRequest]:
    """``groups`` with each ``dedicatedSubnet`` group's own subnet (from ``subnets``) as its ``subnetId``.

    Raises:
        StageFailed: ``DedicatedSubnetNotFound`` when a dedicated group has no subnet recorded.
    """
    out = []
    for g in groups:
        if g.dedicated_subnet:
            subnet_id = (subnets or {}).get(g.instance_group_name)
            if subnet_id is None:
                raise StageFailed(
                    "DedicatedSubnetNotFound", f"instance group {g.instance_group_name} has no dedicated subnet yet"
                )
            g = g.model_copy(update={"subnet_id": subnet_id})
        out.append(g)
    return out


def clear_failed_hyperpod_cluster(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once no Failed HyperPod cluster of an earlier attempt is in the way.

    A Failed HyperPod cluster cannot be resumed: a retried stage deletes it (SageMaker
    ``DeleteCluster``, ownership checked) and waits until it is gone before creating a new one.
    When the network stage has no compute subnet recorded (an imported VPC: that stage did not run) the
    first round makes the subnets and their owned egress
    (:func:`instantstart.clusters.stages.network.ensure_compute_subnets`); in an imported VPC it then waits
    for the owned NAT gateway to be ``available`` (EC2 ``DescribeNatGateways``): HyperPod nodes need egress
    when they come up.

    Raises:
        StageFailed: the Failed cluster is not ours (``ClusterNotOwned``).
    """
    sm = rt.client("sagemaker")
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    nat = records.stage_resources(rt, p.cluster_tag, p.generation, StageName.NETWORK, NetworkResources)
    if nat.compute_subnet_id is None:
        nat = ensure_compute_subnets(rt, p)
    if records.stage_imported(rt, p.cluster_tag, p.generation, StageName.NETWORK):
        state, message = vpc.nat_gateway_state(rt.client("ec2"), str(nat.nat_gateway_id))
        if state == "failed":
            raise StageFailed("NatGatewayFailed", message or "NAT gateway failed")
        if state != "available":
            return PollResult(done=False, status=f"NatGateway {state}")
    found = describe(sm, name)
    if found is None:
        return PollResult(done=True, status="absent")
    status = found["ClusterStatus"]
    if status == "Failed":
        if not owned_by(sm.list_tags(ResourceArn=found["ClusterArn"]).get("Tags", []), p.cluster_tag):
            raise StageFailed("ClusterNotOwned", f"HyperPod cluster {name} is not managed by InstantStart")
        sm.delete_cluster(ClusterName=name)
        return PollResult(done=False, status="Deleting")
    return PollResult(done=status != "Deleting", status=status)


def _lifecycle_uri(rt: Runtime, tag: str, generation: int) -> str:
    """Upload the lifecycle script and return its S3 prefix (S3 ``PutObject``)."""
    prefix = f"clusters/{tag}/gen-{generation}/lifecycle/"
    script = resources.files(__package__ or "").joinpath("lifecycle/on_create.sh").read_bytes()
    rt.client("s3").put_object(Bucket=rt.settings.LIFECYCLE_BUCKET, Key=prefix + "on_create.sh", Body=script)
    return f"s3://{rt.settings.LIFECYCLE_BUCKET}/{prefix}"


def _capacity_of(found_group: dict[str, Any]) -> CapacityType:
    """The capacity type of a DescribeCluster ``ClusterInstanceGroupDetails`` (a group not in the request)."""
    if found_group.get("TrainingPlanArn"):
        return CapacityType.TRAINING_PLAN
    if "Spot" in (found_group.get("CapacityRequirements") or {}):
        return CapacityType.SPOT
    return CapacityType.ON_DEMAND


def instance_group_spec(
    g: InstanceGroupRequest,
    *,
    execution_role: str,
    lifecycle_uri: str,
    security_group_id: str,
    subnet_id: str,
) -> dict[str, Any]:
    """HyperPod ``ClusterInstanceGroupSpecification`` of one API group, field for field.

    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupSpecification.html

    ``instanceType`` -> ``InstanceType`` or ``instanceTypes`` -> ``InstanceRequirements.InstanceTypes``;
    ``capacityType`` OnDemand/Spot -> ``CapacityRequirements`` (TrainingPlan -> ``TrainingPlanArn``);
    ``subnetId`` (else the cluster's compute subnet ``subnet_id``) -> ``OverrideVpcConfig.Subnets``;
    ``efaOnly`` -> ``NetworkInterface.InterfaceType = efa-only``; ``labels``/``taints`` -> ``KubernetesConfig``;
    ``autoPatch`` -> ``AutoPatchConfig``. Optional fields left out of the request are left out here.
    """
    spec: dict[str, Any] = {"InstanceGroupName": g.instance_group_name}
    if g.instance_type:
        spec["InstanceType"] = g.instance_type
    else:
        spec["InstanceRequirements"] = {"InstanceTypes": list(g.instance_types or [])}
    spec["InstanceCount"] = g.instance_count
    if g.min_instance_count is not None:
        spec["MinInstanceCount"] = g.min_instance_count
    spec["ExecutionRole"] = execution_role
    spec["LifeCycleConfig"] = {"SourceS3Uri": lifecycle_uri, "OnCreate": "on_create.sh"}
    spec["OverrideVpcConfig"] = {"SecurityGroupIds": [security_group_id], "Subnets": [g.subnet_id or subnet_id]}
    if g.capacity_type is CapacityType.TRAINING_PLAN:
        spec["TrainingPlanArn"] = g.training_plan_arn
    else:
        spec["CapacityRequirements"] = {g.capacity_type.value: {}}
    if g.threads_per_core is not None:
        spec["ThreadsPerCore"] = g.threads_per_core
    if g.instance_storage_configs:
        spec["InstanceStorageConfigs"] = [
            {"EbsVolumeConfig": {"VolumeSizeInGB": c.ebs_volume_config.volume_size_in_gb}}
            for c in g.instance_storage_configs
        ]
    if g.on_start_deep_health_checks:
        spec["OnStartDeepHealthChecks"] = [c.value for c in g.on_start_deep_health_checks]
    if g.efa_only:
        spec["NetworkInterface"] = {"InterfaceType": "efa-only"}
    if g.labels or g.taints:
        kube: dict[str, Any] = {}
        if g.labels:
            kube["Labels"] = dict(g.labels)
        if g.taints:
            kube["Taints"] = [
                {"Key": t.key, **({"Value": t.value} if t.value is not None else {}), "Effect": t.effect.value}
                for t in g.taints
            ]
        spec["KubernetesConfig"] = kube
    if g.auto_patch is not None:
        patch: dict[str, Any] = {"PatchingStrategy": g.auto_patch.patching_strategy.value}
        if g.auto_patch.idle_wait_window_in_seconds is not None:
            patch["IdleWaitWindowInSeconds"] = g.auto_patch.idle_wait_window_in_seconds
        drain: dict[str, Any] = {}
        if g.auto_patch.drain_timeout_in_seconds is not None:
            drain["DrainTimeoutInSeconds"] = g.auto_patch.drain_timeout_in_seconds
        if g.auto_patch.on_drain_timeout is not None:
            drain["OnDrainTimeout"] = g.auto_patch.on_drain_timeout.value
        if drain:
            patch["DrainPolicy"] = drain
        spec["AutoPatchConfig"] = patch
    return spec


def instance_group_specs(
    groups: list[InstanceGroupRequest],
    *,
    execution_role: str,
    lifecycle_uri: str,
    security_group_id: str,
    subnet_id: str,
) -> list[dict[str, Any]]:
    """HyperPod ``ClusterInstanceGroupSpecification`` list (SageMaker request shapes) from the API's groups."""
    return [
        instance_group_spec(
            g,
            execution_role=execution_role,
            lifecycle_uri=lifecycle_uri,
            security_group_id=security_group_id,
            subnet_id=subnet_id,
        )
        for g in groups
    ]


def hyperpod_create_request(
    tag: str,
    groups: list[InstanceGroupRequest],
    *,
    execution_role: str,
    lifecycle_uri: str,
    security_group_id: str,
    subnet_id: str,
    eks_cluster_arn: str,
) -> dict[str, Any]:
    """The SageMaker ``CreateCluster`` request (keyword arguments) of the cluster's HyperPod cluster.

    ``hp-cluster-<tag>`` orchestrated by the EKS cluster ``eks_cluster_arn``, one instance group per
    API group (:func:`instance_group_specs`), automatic node recovery, continuous provisioning, and
    the ownership tags. Pure: builds the request, calls nothing.
    """
    return {
        "ClusterName": hyperpod_cluster_name(tag),
        "InstanceGroups": instance_group_specs(
            groups,
            execution_role=execution_role,
            lifecycle_uri=lifecycle_uri,
            security_group_id=security_group_id,
            subnet_id=subnet_id,
        ),
        "VpcConfig": {"SecurityGroupIds": [security_group_id], "Subnets": [subnet_id]},
        "Orchestrator": {"Eks": {"ClusterArn": eks_cluster_arn}},
        "NodeRecovery": "Automatic",
        "NodeProvisioningMode": "Continuous",
        "Tags": tag_list(ownership_tags(tag)),
    }


def adopt_imported(sm: Any, cluster_arn: str, tag: str) -> None:
    """Mark an imported HyperPod cluster as this control plane's: the tag ``instantstart:cluster-tag`` = ``tag``,
    and no other (never ``instantstart:managed``: an imported cluster is never deleted).

    The steps role may change (scale, reboot, replace, update) only HyperPod clusters carrying that tag, and
    add only that key to a cluster without the managed tag (template.yaml, ``HyperPodChangeManaged``); SageMaker
    ``AddTags`` (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_AddTags.html).

    Raises:
        botocore.exceptions.ClientError: from ``AddTags`` (e.g. ``AccessDeniedException``).
    """
    sm.add_tags(ResourceArn=cluster_arn, Tags=tag_list({TAG_KEY: tag}))


def release_imported(sm: Any, cluster_arn: str, tag: str) -> bool:
    """Undo :func:`adopt_imported` when DELETE lets an imported cluster go: remove ``instantstart:cluster-tag``
    while it still names ``tag`` (another import may have taken the cluster since). Returns whether it was removed.

    SageMaker ``ListTags``, ``DeleteTags`` (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_DeleteTags.html).
    """
    tags = {t["Key"]: t["Value"] for t in sm.list_tags(ResourceArn=cluster_arn).get("Tags", [])}
    if tags.get(TAG_KEY) != tag or tags.get(MANAGED_KEY) == "true":
        return False
    sm.delete_tags(ResourceArn=cluster_arn, TagKeys=[TAG_KEY])
    return True


def describe(sm: Any, name: str) -> dict[str, Any] | None:
    """SageMaker ``DescribeCluster`` of ``name``, or None when it does not exist."""
    try:
        return dict(sm.describe_cluster(ClusterName=name))
    except ClientError as exc:
        if error_code(exc) in ("ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
            return None
        raise


def observe(
    rt: Runtime,
    tag: str,
    generation: int,
    found: dict[str, Any],
    requested: list[InstanceGroupRequest],
    *,
    event_time: str | None = None,
    latest_errors: list[ClusterEventView] | None = None,
) -> bool:
    """Record an observation of the HyperPod cluster (a DescribeCluster answer or a state-change event detail).

    One recorder for the poll path and the event path: the cluster's ``hyperPod`` view (status, instance
    groups with target/current counts and the requested capacity type) and the stage's observed status.
    An event (``event_time``) older than the recorded observation changes nothing; a poll always records.
    ``latest_errors`` replaces the recorded Error events (None keeps them). Returns True when it was recorded.
    """
    by_name = {g.instance_group_name: g for g in requested}
    requested_count = {g.instance_group_name: g.instance_count for g in requested}
    if latest_errors is None:
        cluster = rt.store.get_cluster(tag)
        latest_errors = cluster.hyper_pod.latest_errors if cluster and cluster.hyper_pod else []
    view = HyperPodView(
        cluster_name=found["ClusterName"],
        cluster_arn=found["ClusterArn"],
        status=found["ClusterStatus"],
        instance_groups=[
            InstanceGroupView(
                instance_group_name=g["InstanceGroupName"],
                instance_type=g.get("InstanceType"),
                instance_count=requested_count.get(g["InstanceGroupName"], g.get("TargetCount", 0)),
                target_count=g.get("TargetCount"),
                current_count=g.get("CurrentCount", 0),
                status=g.get("Status"),
                **(
                    InstanceGroupView.requested_fields(by_name[g["InstanceGroupName"]])
                    if g["InstanceGroupName"] in by_name
                    else {"capacity_type": _capacity_of(g)}
                ),
            )
            for g in found.get("InstanceGroups", [])
        ],
        latest_errors=latest_errors,
    )
    now = records.now()
    if not rt.store.record_hyperpod_observation(tag, view, now=now, event_time=event_time):
        return False
    stage = rt.store.get_stage(tag, generation, STAGE)
    if stage is not None and stage.status.value == "RUNNING":
        records.update_stage_resources(
            rt,
            tag=tag,
            generation=generation,
            stage=STAGE,
            resources=HyperPodResources(hyper_pod_cluster_arn=found["ClusterArn"]),
            observed_status=f"HyperPod {found['ClusterStatus']}",
        )
    return True


def create_hyperpod_cluster(rt: Runtime, p: StepPayload) -> StepResult:
    """Create the HyperPod cluster unless it exists (SageMaker ``CreateCluster``).

    https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html

    A group's pinned ``subnetId`` is checked first (:func:`instantstart.capacity.subnets.check_pinned_subnets`).

    Raises:
        StageFailed: an existing cluster is Failed (``HyperPodClusterFailed``, FailureMessage verbatim); a pinned
            subnet is not in the cluster's VPC and zone (``InvalidSubnet``) or does not exist (EC2's error).
    """
    tag, generation = p.cluster_tag, p.generation
    record = records.cluster_record(rt, tag)
    groups = record.request.instance_groups
    sm = rt.client("sagemaker")
    name = record.hyper_pod_cluster_name
    found = describe(sm, name)
    if found is not None and found.get("ClusterStatus") == "Failed":
        raise StageFailed("HyperPodClusterFailed", str(found.get("FailureMessage") or f"{name} is Failed"))
    if found is None:
        net = records.stage_resources(rt, tag, generation, StageName.NETWORK, NetworkResources)
        groups = with_dedicated_subnets(groups, net.dedicated_subnet_ids)
        check_pinned_subnets(
            rt.client("ec2"),
            groups,
            vpc_id=str(net.vpc_id),
            availability_zone=record.availability_zone,
        )
        sm.create_cluster(
            **hyperpod_create_request(
                tag,
                groups,
                execution_role=rt.settings.HYPERPOD_EXECUTION_ROLE_ARN,
                lifecycle_uri=_lifecycle_uri(rt, tag, generation),
                security_group_id=str(net.security_group_id),
                subnet_id=str(net.compute_subnet_id),
                eks_cluster_arn=str(net.eks_cluster_arn),
            )
        )
        return StepResult(status="Creating")
    return StepResult(status=str(found["ClusterStatus"]))


def check_hyperpod_cluster(rt: Runtime, p: StepPayload) -> PollResult:
    """Check of the event-or-poll wait (:mod:`instantstart.clusters.waits`): done once the cluster is InService.

    Under continuous provisioning the cluster is InService once its cluster-level resources exist, while
    instances are still being provisioned (the ``verify`` stage waits for them). Calls SageMaker
    ``DescribeCluster``.

    Raises:
        StageFailed: the cluster is Failed (``HyperPodClusterFailed``, FailureMessage verbatim).
        ClientError: SageMaker's error, e.g. ``ResourceNotFound`` when the cluster is gone (recorded verbatim).
    """
    cluster = records.cluster_record(rt, p.cluster_tag)
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    # the cluster was created by this stage: a NotFound (or any error) fails the stage with SageMaker's words verbatim
    found = dict(rt.client("sagemaker").describe_cluster(ClusterName=name))
    observe(rt, p.cluster_tag, p.generation, found, cluster.request.instance_groups)
    if found["ClusterStatus"] == "Failed":
        raise StageFailed(
            "HyperPodClusterFailed", str(found.get("FailureMessage") or "HyperPod cluster creation failed")
        )
    return PollResult(done=found["ClusterStatus"] == "InService", status=str(found["ClusterStatus"]))


# -- teardown ----------------------------------------------------------------------------------
def delete_hyperpod_cluster(rt: Runtime, p: StepPayload) -> PollResult:
    """Done once the HyperPod cluster is gone; starts SageMaker ``DeleteCluster`` if needed (ownership checked).

    First the task governance resources this control plane created on it (compute quotas, the scheduler config) are
    deleted and waited for (:func:`instantstart.clusters.task_governance.release_owned`: the harsher reading, that
    SageMaker refuses ``DeleteCluster`` while they exist); others' are left alone. Once the cluster is gone, the
    managed-Karpenter ClusterRole of the cluster (ours only) is deleted with it.

    An imported HyperPod cluster (the stage is ``imported``) is never deleted: only the task governance resources
    created here are released (waited for) and the import's tag removed (:func:`release_imported`), then the step
    is done and the cluster is retained.

    Raises:
        StageFailed: the cluster is not ours (``ClusterNotOwned``).
    """
    sm = rt.client("sagemaker")
    name = records.hyperpod_name(rt, p.cluster_tag, p.generation)
    if records.stage_imported(rt, p.cluster_tag, p.generation, STAGE):
        imported = describe(sm, name)
        governance = task_governance.release_owned(sm, str(imported["ClusterArn"]), p.cluster_tag) if imported else []
        if governance:
            return PollResult(done=False, status=f"deleting task governance: {', '.join(governance)}")
        if imported:
            release_imported(sm, str(imported["ClusterArn"]), p.cluster_tag)
        return PollResult(done=True, status=f"imported HyperPod cluster {name} retained")
    found = describe(sm, name)
    if found is None:
        role_deleted = autoscaling_role.delete_cluster_role(rt.client("iam"), p.cluster_tag)
        return PollResult(done=True, status="deleted" + ("; autoscaling ClusterRole deleted" if role_deleted else ""))
    if found["ClusterStatus"] != "Deleting":
        if not owned_by(sm.list_tags(ResourceArn=found["ClusterArn"]).get("Tags", []), p.cluster_tag):
            raise StageFailed("ClusterNotOwned", f"HyperPod cluster {name} is not managed by InstantStart")
        governance = task_governance.release_owned(sm, str(found["ClusterArn"]), p.cluster_tag)
        if governance:
            return PollResult(done=False, status=f"deleting task governance first: {', '.join(governance)}")
        sm.delete_cluster(ClusterName=name)
    return PollResult(done=False, status="Deleting")


CREATE_STEPS: dict[str, Step] = {
    "clear_failed_hyperpod_cluster": clear_failed_hyperpod_cluster,
    "create_hyperpod_cluster": create_hyperpod_cluster,
    "check_hyperpod_cluster": check_hyperpod_cluster,
}
"""The create workflow's steps of this stage, by task action name."""

TEARDOWN_STEPS: dict[str, Step] = {"delete_hyperpod_cluster": delete_hyperpod_cluster}
"""The delete workflow's steps of this stage, by task action name."""
