"""Steps of the create-cluster workflow, one function per Step Functions task.

Each step reads what earlier stages recorded in DynamoDB, inspects AWS/Kubernetes before it
creates anything, records the ids it produced, and returns a small dict the state machine uses
(``{"done": bool, ...}`` for poll loops). AWS errors surface as exceptions named after the AWS
error code (see :func:`instantstart.errors.aws_error`).
"""

from __future__ import annotations

import logging
from importlib import resources
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.clusters import workflow
from instantstart.clusters.addons import ADDONS, ADDONS_BY_NAME, addon_state, ensure_addon
from instantstart.errors import StageFailed
from instantstart.kube import objects
from instantstart.models.common import ClusterStatus, OperationStatus, StageName
from instantstart.naming import (
    eks_cluster_name,
    hyperpod_cluster_name,
    owned_by,
    ownership_tags,
    storage_bucket_name,
    tag_list,
)
from instantstart.network import vpc
from instantstart.runtime import Runtime

logger = logging.getLogger(__name__)

EKS_ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"


def _cluster(rt: Runtime, tag: str) -> dict[str, Any]:
    item = rt.store.get_cluster(tag)
    if not item:
        raise StageFailed("ClusterNotFound", f"cluster record '{tag}' is missing")
    return item


# -- network -----------------------------------------------------------------------------------
def ensure_network(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """VPC, subnets, gateways and security group (:func:`instantstart.network.vpc.ensure_network`)."""
    cluster = _cluster(rt, tag)
    ids = vpc.ensure_network(rt.client("ec2"), tag, rt.region, cluster["availabilityZone"])
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.NETWORK,
        resources=ids,
        observed_status=f"NatGateway {ids['natGatewayState']}",
    )
    return {"natGatewayState": ids["natGatewayState"]}


def check_nat_gateway(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once the NAT gateway is ``available`` (EC2 ``DescribeNatGateways``).

    Raises:
        StageFailed: the NAT gateway failed (its FailureCode and FailureMessage verbatim).
    """
    res = workflow.stage_resources(rt, tag, generation, StageName.NETWORK)
    state, message = vpc.nat_gateway_state(rt.client("ec2"), res["natGatewayId"])
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.NETWORK,
        resources={"natGatewayState": state},
        observed_status=f"NatGateway {state}",
    )
    if state == "failed":
        raise StageFailed("NatGatewayFailed", message or "NAT gateway failed")
    return {"done": state == "available", "state": state}


def create_eks_cluster(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """Private default route through the NAT, then the EKS cluster (``API_AND_CONFIG_MAP``) unless it exists.

    Calls EKS ``DescribeCluster`` / ``CreateCluster``
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateCluster.html).

    Raises:
        StageFailed: an EKS cluster of that name exists without our ownership tags (``ClusterNotOwned``).
    """
    cluster = _cluster(rt, tag)
    res = workflow.stage_resources(rt, tag, generation, StageName.NETWORK)
    ec2 = rt.client("ec2")
    vpc.ensure_private_routes(ec2, res["privateRouteTableId"], res["natGatewayId"])
    eks = rt.client("eks")
    name = eks_cluster_name(tag)
    try:
        found = eks.describe_cluster(name=name)["cluster"]
        if not owned_by(found.get("tags", {}), tag):
            raise StageFailed("ClusterNotOwned", f"EKS cluster {name} exists and is not managed by InstantStart")
        status = found["status"]
    except ClientError as exc:
        if error_code(exc) != "ResourceNotFoundException":
            raise
        version = cluster.get("request", {}).get("kubernetesVersion") or rt.settings.KUBERNETES_VERSION
        status = eks.create_cluster(
            name=name,
            version=version,
            roleArn=rt.settings.EKS_CLUSTER_ROLE_ARN,
            resourcesVpcConfig={
                "subnetIds": res["privateSubnetIds"] + res["publicSubnetIds"],
                "securityGroupIds": [res["securityGroupId"]],
                "endpointPublicAccess": True,
                "endpointPrivateAccess": True,
            },
            accessConfig={
                "authenticationMode": "API_AND_CONFIG_MAP",
                "bootstrapClusterCreatorAdminPermissions": True,
            },
            tags=ownership_tags(tag),
        )["cluster"]["status"]
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.NETWORK,
        resources={"eksClusterName": name},
        observed_status=f"EKS {status}",
    )
    return {"status": status}


def check_eks_cluster(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once the EKS cluster is ACTIVE; records the EKS view.

    Raises:
        StageFailed: the cluster is FAILED (``EksClusterFailed``, with its health issues).
    """
    found = rt.client("eks").describe_cluster(name=eks_cluster_name(tag))["cluster"]
    status = found["status"]
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.NETWORK,
        resources={"eksClusterArn": found["arn"]},
        observed_status=f"EKS {status}",
    )
    workflow.update_cluster_view(
        rt,
        tag,
        eks={
            "clusterName": found["name"],
            "clusterArn": found["arn"],
            "status": status,
            "kubernetesVersion": found.get("version"),
            "endpoint": found.get("endpoint"),
            "vpcId": found.get("resourcesVpcConfig", {}).get("vpcId"),
        },
    )
    if status == "FAILED":
        issues = found.get("health", {}).get("issues", [])
        message = "; ".join(f"{i.get('code')}: {i.get('message')}" for i in issues) or "EKS cluster creation failed"
        raise StageFailed("EksClusterFailed", message)
    return {"done": status == "ACTIVE", "status": status}


# -- access ------------------------------------------------------------------------------------
def grant_access(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """Access entry + cluster-admin access policy for the control plane's role (EKS access entries API).

    Calls ``CreateAccessEntry`` and ``AssociateAccessPolicy``
    (https://docs.aws.amazon.com/eks/latest/APIReference/API_CreateAccessEntry.html).
    """
    eks = rt.client("eks")
    name = eks_cluster_name(tag)
    principal = rt.settings.CONTROL_PLANE_ROLE_ARN
    try:
        eks.create_access_entry(clusterName=name, principalArn=principal, tags=ownership_tags(tag))
    except ClientError as exc:
        if error_code(exc) != "ResourceInUseException":
            raise
    eks.associate_access_policy(
        clusterName=name, principalArn=principal, policyArn=EKS_ADMIN_POLICY, accessScope={"type": "cluster"}
    )
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.ACCESS,
        resources={"principalArn": principal, "accessPolicyArn": EKS_ADMIN_POLICY},
    )
    return {"principalArn": principal}


def check_kubernetes_access(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once the Kubernetes API answers with the EKS bearer token (GET /version, list namespaces).

    401/403 while the access entry propagates count as not done yet.
    """
    from kubernetes.client.exceptions import ApiException

    from instantstart.kube.client import connect, list_objects

    try:
        dyn = connect(eks_cluster_name(tag), rt.region)
        version = dyn.version.get("kubernetes", {}).get("gitVersion")
        namespaces = [n["metadata"]["name"] for n in list_objects(dyn, "v1", "Namespace")]
    except ApiException as exc:
        if exc.status in (401, 403):
            return {"done": False, "status": exc.status}
        raise
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.ACCESS,
        resources={"kubernetesVersion": version, "namespaces": len(namespaces)},
        observed_status=f"Kubernetes {version} reachable",
    )
    return {"done": True}


# -- dependencies -------------------------------------------------------------------------------
def plan_addons(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """The add-ons to install, for the state machine's Map state: ``{"addons": [{"addonName"}]}``."""
    return {"addons": [{"addonName": a.name} for a in ADDONS]}


def create_addon(rt: Runtime, tag: str, generation: int, addon_name: str) -> dict[str, Any]:
    """Install one add-on (:func:`instantstart.clusters.addons.ensure_addon`)."""
    spec = ADDONS_BY_NAME.get(addon_name)
    if spec is None:
        raise StageFailed("UnknownAddon", f"add-on {addon_name} is not one of {sorted(ADDONS_BY_NAME)}")
    result = ensure_addon(
        rt.client("eks"),
        rt.client("iam"),
        tag=tag,
        cluster_name=eks_cluster_name(tag),
        addon=spec,
        account_id=rt.account_id,
        region=rt.region,
        role_path=rt.settings.STORAGE_ROLE_PATH,
        permissions_boundary=rt.settings.STORAGE_PERMISSIONS_BOUNDARY_ARN or None,
    )
    _record_addon(rt, tag, generation, addon_name, result["status"], result.get("roleArn"))
    return {"addonName": addon_name, "status": result["status"]}


def _record_addon(rt: Runtime, tag: str, generation: int, name: str, status: str, role_arn: str | None = None) -> None:
    # Add-ons run in parallel: each writes its own key of the resources map.
    value: dict[str, Any] = {"status": status}
    if role_arn:
        value["roleArn"] = role_arn
    workflow.update_stage_resources(
        rt, tag=tag, generation=generation, stage=StageName.DEPENDENCIES, resources={f"addon:{name}": value}
    )


def check_addon(rt: Runtime, tag: str, generation: int, addon_name: str) -> dict[str, Any]:
    """``{"done"}`` once the add-on is ACTIVE (EKS ``DescribeAddon``)."""
    state = addon_state(rt.client("eks"), eks_cluster_name(tag), addon_name)
    _record_addon(rt, tag, generation, addon_name, state["status"])
    return {"done": state["done"], "status": state["status"]}


def apply_hyperpod_prerequisites(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """Server-side apply the Kubernetes objects HyperPod needs before nodes join."""
    from instantstart.kube.client import apply, connect

    dyn = connect(eks_cluster_name(tag), rt.region)
    applied = []
    for obj in objects.hyperpod_prerequisites(rt.region):
        apply(dyn, obj)
        ns = obj["metadata"].get("namespace")
        applied.append(f"{obj['kind']}/{ns + '/' if ns else ''}{obj['metadata']['name']}")
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.DEPENDENCIES,
        resources={"kubernetesObjects": applied},
    )
    return {"applied": len(applied)}


def stage_summary(rt: Runtime, tag: str, generation: int, stage: StageName) -> str | None:
    """The observed status a stage ends with, when its steps ran in parallel and none can tell alone.

    For ``dependencies``: how many add-ons are ACTIVE and how many Kubernetes objects were applied
    (from the stage's recorded resources). None keeps the last observed status of other stages.
    """
    if stage is not StageName.DEPENDENCIES:
        return None
    resources = workflow.stage_resources(rt, tag, generation, stage)
    addons = {k: v for k, v in resources.items() if k.startswith("addon:")}
    active = sum(1 for v in addons.values() if isinstance(v, dict) and v.get("status") == "ACTIVE")
    applied = len(resources.get("kubernetesObjects", []))
    return f"{active}/{len(ADDONS)} add-ons ACTIVE, {applied} Kubernetes objects applied"


# -- hyperpod ----------------------------------------------------------------------------------
def ensure_compute_subnet(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """The per-AZ compute subnet of the requested zone (:func:`instantstart.network.vpc.ensure_compute_subnet`)."""
    cluster = _cluster(rt, tag)
    net = workflow.stage_resources(rt, tag, generation, StageName.NETWORK)
    subnet = vpc.ensure_compute_subnet(
        rt.client("ec2"),
        tag=tag,
        vpc_id=net["vpcId"],
        availability_zone=cluster["availabilityZone"],
        nat_gateway_id=net["natGatewayId"],
        s3_endpoint_id=net["s3EndpointId"],
    )
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.HYPERPOD,
        resources={
            "computeSubnetId": subnet["subnetId"],
            "computeSubnetCidr": subnet["cidrBlock"],
            "computeSubnetSource": subnet["source"],
        },
    )
    return {"subnetId": subnet["subnetId"], "source": subnet["source"]}


def clear_failed_hyperpod_cluster(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once no Failed HyperPod cluster of an earlier attempt is in the way.

    A Failed HyperPod cluster cannot be resumed: a retried stage deletes it (SageMaker
    ``DeleteCluster``, ownership checked) and waits until it is gone before creating a new one.
    """
    sm = rt.client("sagemaker")
    name = hyperpod_cluster_name(tag)
    found = _describe_hyperpod(sm, name)
    if found is None:
        return {"done": True, "status": "absent"}
    status = found["ClusterStatus"]
    if status == "Failed":
        tags = sm.list_tags(ResourceArn=found["ClusterArn"]).get("Tags", [])
        if not owned_by(tags, tag):
            raise StageFailed("ClusterNotOwned", f"HyperPod cluster {name} is not managed by InstantStart")
        sm.delete_cluster(ClusterName=name)
        return {"done": False, "status": "Deleting"}
    return {"done": status != "Deleting", "status": status}


def _lifecycle_uri(rt: Runtime, tag: str, generation: int) -> str:
    """Upload the lifecycle script and return its S3 prefix (S3 ``PutObject``)."""
    prefix = f"clusters/{tag}/gen-{generation}/lifecycle/"
    script = resources.files("instantstart.clusters").joinpath("lifecycle/on_create.sh").read_bytes()
    rt.client("s3").put_object(Bucket=rt.settings.LIFECYCLE_BUCKET, Key=prefix + "on_create.sh", Body=script)
    return f"s3://{rt.settings.LIFECYCLE_BUCKET}/{prefix}"


def instance_group_specs(
    groups: list[dict[str, Any]],
    *,
    execution_role: str,
    lifecycle_uri: str,
    security_group_id: str,
    subnet_id: str,
) -> list[dict[str, Any]]:
    """HyperPod ``ClusterInstanceGroupSpecification`` list from the API's instance groups."""
    specs = []
    for g in groups:
        capacity = g.get("capacityType", "OnDemand")
        specs.append(
            {
                "InstanceGroupName": g["instanceGroupName"],
                "InstanceType": g["instanceType"],
                "InstanceCount": int(g["instanceCount"]),
                "ExecutionRole": execution_role,
                "LifeCycleConfig": {"SourceS3Uri": lifecycle_uri, "OnCreate": "on_create.sh"},
                "OverrideVpcConfig": {"SecurityGroupIds": [security_group_id], "Subnets": [subnet_id]},
                "CapacityRequirements": {capacity: {}},
            }
        )
    return specs


def hyperpod_create_request(
    tag: str,
    groups: list[dict[str, Any]],
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


def _describe_hyperpod(sm: Any, name: str) -> dict[str, Any] | None:
    try:
        return dict(sm.describe_cluster(ClusterName=name))
    except ClientError as exc:
        if error_code(exc) in ("ResourceNotFound", "ResourceNotFoundException", "ValidationException"):
            return None
        raise


def record_hyperpod(
    rt: Runtime, tag: str, generation: int, found: dict[str, Any], requested: list[dict[str, Any]]
) -> None:
    """Record an observation of the HyperPod cluster (DescribeCluster answer or state-change event detail).

    One recorder for the poll path and the event path: the cluster's ``hyperPod`` view (status,
    instance groups with target/current counts and the requested capacity type) and the stage's
    observed status.
    """
    capacity = {g["instanceGroupName"]: g.get("capacityType", "OnDemand") for g in requested}
    groups = [
        {
            "instanceGroupName": g["InstanceGroupName"],
            "instanceType": g.get("InstanceType"),
            "instanceCount": g.get("TargetCount", 0),
            "currentCount": g.get("CurrentCount", 0),
            "status": g.get("Status"),
            "capacityType": capacity.get(g["InstanceGroupName"], "OnDemand"),
        }
        for g in found.get("InstanceGroups", [])
    ]
    workflow.update_cluster_view(
        rt,
        tag,
        hyperPod={
            "clusterName": found["ClusterName"],
            "clusterArn": found["ClusterArn"],
            "status": found["ClusterStatus"],
            "instanceGroups": groups,
        },
    )
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.HYPERPOD,
        resources={"hyperPodClusterArn": found["ClusterArn"]},
        observed_status=f"HyperPod {found['ClusterStatus']}",
    )


def create_hyperpod_cluster(rt: Runtime, tag: str, generation: int, task_token: str) -> dict[str, Any]:
    """Store the task token, create the HyperPod cluster unless it exists, then re-check its status.

    The stage completes when the EventBridge "SageMaker HyperPod Cluster State Change" event arrives
    (:func:`instantstart.clusters.reconcile.on_hyperpod_state_change` sends the token). Because the
    event can arrive before the token is stored, the token is stored first and the status re-checked
    after: an InService/Failed cluster completes the task at once. Calls SageMaker ``CreateCluster``
    (https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateCluster.html).
    """
    from instantstart.store import keys

    pk, sk = keys.cluster_pk(tag), keys.stage_sk(generation, StageName.HYPERPOD)
    rt.store.update(pk, sk, {"taskToken": task_token})
    cluster = _cluster(rt, tag)
    groups = cluster.get("request", {}).get("instanceGroups", [])
    sm = rt.client("sagemaker")
    name = hyperpod_cluster_name(tag)
    found = _describe_hyperpod(sm, name)
    if found is None:
        net = workflow.stage_resources(rt, tag, generation, StageName.NETWORK)
        hp = workflow.stage_resources(rt, tag, generation, StageName.HYPERPOD)
        sm.create_cluster(
            **hyperpod_create_request(
                tag,
                groups,
                execution_role=rt.settings.HYPERPOD_EXECUTION_ROLE_ARN,
                lifecycle_uri=_lifecycle_uri(rt, tag, generation),
                security_group_id=net["securityGroupId"],
                subnet_id=hp["computeSubnetId"],
                eks_cluster_arn=net["eksClusterArn"],
            )
        )
        found = _describe_hyperpod(sm, name)
    elif found.get("ClusterStatus") == "Failed":
        raise StageFailed("HyperPodClusterFailed", str(found.get("FailureMessage") or f"{name} is Failed"))
    if found is None:
        return {"status": "Creating"}
    record_hyperpod(rt, tag, generation, found, groups)
    status = found["ClusterStatus"]
    if status in ("InService", "Failed"):
        complete_hyperpod_task(rt, task_token, found)
    return {"status": status}


def complete_hyperpod_task(rt: Runtime, task_token: str, found: dict[str, Any]) -> None:
    """``SendTaskSuccess`` for InService, ``SendTaskFailure`` (message verbatim) for Failed.

    A token that was already used or timed out (``TaskTimedOut``, ``InvalidToken``,
    ``TaskDoesNotExist``) is ignored: the poll fallback owns the stage then.
    """
    sfn = rt.client("stepfunctions")
    try:
        if found["ClusterStatus"] == "InService":
            sfn.send_task_success(taskToken=task_token, output='{"clusterStatus": "InService"}')
        else:
            sfn.send_task_failure(
                taskToken=task_token,
                error="HyperPodClusterFailed",
                cause=str(found.get("FailureMessage") or "HyperPod cluster creation failed")[:32000],
            )
    except ClientError as exc:
        if error_code(exc) not in ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist"):
            raise


def check_hyperpod_cluster(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """Poll fallback: ``{"done"}`` once the HyperPod cluster is InService.

    Raises:
        StageFailed: the cluster is Failed (``HyperPodClusterFailed``, FailureMessage verbatim) or gone.
    """
    cluster = _cluster(rt, tag)
    found = _describe_hyperpod(rt.client("sagemaker"), hyperpod_cluster_name(tag))
    if found is None:
        raise StageFailed("ResourceNotFound", f"HyperPod cluster {hyperpod_cluster_name(tag)} does not exist")
    record_hyperpod(rt, tag, generation, found, cluster.get("request", {}).get("instanceGroups", []))
    if found["ClusterStatus"] == "Failed":
        raise StageFailed(
            "HyperPodClusterFailed", str(found.get("FailureMessage") or "HyperPod cluster creation failed")
        )
    return {"done": found["ClusterStatus"] == "InService", "status": found["ClusterStatus"]}


# -- storage -----------------------------------------------------------------------------------
def ensure_storage(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """The cluster's S3 bucket (tagged, public access blocked) and the ``s3-claim`` PV + PVC.

    Calls S3 ``HeadBucket``/``CreateBucket``/``PutBucketTagging``/``PutPublicAccessBlock`` and applies
    the PersistentVolume and PersistentVolumeClaim with server-side apply.
    """
    from instantstart.kube.client import apply, connect

    s3 = rt.client("s3")
    bucket = storage_bucket_name(tag, rt.account_id, rt.region)
    try:
        s3.head_bucket(Bucket=bucket, ExpectedBucketOwner=rt.account_id)
    except ClientError as exc:
        if error_code(exc) not in ("404", "NoSuchBucket", "NotFound"):
            raise
        kwargs: dict[str, Any] = {"Bucket": bucket}
        if rt.region != "us-east-1":
            kwargs["CreateBucketConfiguration"] = {"LocationConstraint": rt.region}
        s3.create_bucket(**kwargs)
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": tag_list(ownership_tags(tag))})
    s3.put_public_access_block(
        Bucket=bucket,
        PublicAccessBlockConfiguration={
            "BlockPublicAcls": True,
            "IgnorePublicAcls": True,
            "BlockPublicPolicy": True,
            "RestrictPublicBuckets": True,
        },
    )
    dyn = connect(eks_cluster_name(tag), rt.region)
    apply(dyn, objects.s3_persistent_volume(bucket, rt.region))
    apply(dyn, objects.s3_persistent_volume_claim())
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.STORAGE,
        resources={
            "bucketName": bucket,
            "persistentVolume": objects.S3_VOLUME,
            "persistentVolumeClaim": objects.S3_CLAIM,
            "namespace": objects.STORAGE_NAMESPACE,
        },
    )
    return {"bucketName": bucket}


def _pvc_phase(dyn: Any) -> str | None:
    from instantstart.kube.client import get

    pvc = get(dyn, "v1", "PersistentVolumeClaim", objects.S3_CLAIM, objects.STORAGE_NAMESPACE)
    phase = (pvc or {}).get("status", {}).get("phase")
    return str(phase) if phase else None


def check_storage(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` once ``s3-claim`` is Bound; records the storage view."""
    from instantstart.kube.client import connect

    phase = _pvc_phase(connect(eks_cluster_name(tag), rt.region))
    bucket = storage_bucket_name(tag, rt.account_id, rt.region)
    workflow.update_cluster_view(
        rt,
        tag,
        storage={
            "bucketName": bucket,
            "persistentVolumeClaim": objects.S3_CLAIM,
            "namespace": objects.STORAGE_NAMESPACE,
            "phase": phase,
        },
    )
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.STORAGE,
        resources={},
        observed_status=f"PVC {phase}",
    )
    return {"done": phase == "Bound", "phase": phase}


# -- verify ------------------------------------------------------------------------------------
def _node_view(node: dict[str, Any]) -> dict[str, Any]:
    labels = node.get("metadata", {}).get("labels", {}) or {}
    conditions = node.get("status", {}).get("conditions", []) or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    name = str(node["metadata"]["name"])
    return {
        "nodeName": name,
        # HyperPod names its Kubernetes nodes hyperpod-<EC2 instance id>
        "instanceId": name.removeprefix("hyperpod-") if name.startswith("hyperpod-i-") else None,
        "instanceType": labels.get("node.kubernetes.io/instance-type"),
        "instanceGroupName": labels.get("sagemaker.amazonaws.com/instance-group-name"),
        "ready": ready,
        "healthStatus": labels.get("sagemaker.amazonaws.com/node-health-status"),
    }


def verify_cluster(rt: Runtime, tag: str, generation: int) -> dict[str, Any]:
    """``{"done"}`` when every requested HyperPod node is Ready and ``Schedulable`` and ``s3-claim`` is Bound.

    Lists nodes labelled ``sagemaker.amazonaws.com/compute-type=hyperpod`` and records them.
    """
    from instantstart.kube.client import connect, list_objects

    cluster = _cluster(rt, tag)
    expected = sum(int(g["instanceCount"]) for g in cluster.get("request", {}).get("instanceGroups", []))
    dyn = connect(eks_cluster_name(tag), rt.region)
    nodes = [
        _node_view(n)
        for n in list_objects(dyn, "v1", "Node", label_selector="sagemaker.amazonaws.com/compute-type=hyperpod")
    ]
    phase = _pvc_phase(dyn)
    healthy = [n for n in nodes if n["ready"] and n["healthStatus"] == "Schedulable"]
    workflow.update_cluster_view(rt, tag, nodes=nodes)
    observed = f"{len(healthy)}/{expected} nodes Ready and Schedulable, PVC {phase}"
    workflow.update_stage_resources(
        rt,
        tag=tag,
        generation=generation,
        stage=StageName.VERIFY,
        resources={"readyNodes": len(healthy), "expectedNodes": expected, "pvcPhase": phase},
        observed_status=observed,
    )
    return {"done": len(healthy) >= expected and phase == "Bound", "observed": observed}


def complete_create(rt: Runtime, operation_id: str, tag: str) -> dict[str, Any]:
    """The create (or retry) operation SUCCEEDED and the cluster READY."""
    return workflow.finish_operation(
        rt,
        operation_id=operation_id,
        tag=tag,
        status=OperationStatus.SUCCEEDED,
        cluster_status=ClusterStatus.READY,
    )
