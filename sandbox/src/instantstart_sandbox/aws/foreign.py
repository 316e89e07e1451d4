"""EKS clusters created outside the control plane, for import tests (``extension.foreign``).

:meth:`ForeignClusters.create` builds what a customer's own tooling would have built, through the
sandbox's AWS APIs (so every emulated rule applies): a VPC with two subnets in two zones and a
security group, an EKS cluster role, the EKS cluster (ACTIVE at once, with its Kubernetes API), the
add-ons asked for (their objects installed; Deployment add-ons DEGRADED until a node exists, as
always) and optionally a HyperPod cluster orchestrated by it (continuous provisioning, one
``ml.t3.medium`` group; it reaches InService on the simulated clock like any other). None of these
resources carries the control plane's ownership tags (``instantstart:*``); they carry
``owner=platform-team`` instead.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

FOREIGN_TAGS = {"owner": "platform-team"}
"""The tags every foreign resource carries (no ``instantstart:*`` key)."""


@dataclass(frozen=True)
class ForeignCluster:
    """What :meth:`ForeignClusters.create` built (ids and names as AWS returns them)."""

    eks_cluster_name: str
    eks_cluster_arn: str
    kubernetes_version: str
    authentication_mode: str
    vpc_id: str
    subnet_ids: list[str]
    security_group_id: str
    role_arn: str
    addons: list[str] = field(default_factory=list)
    hyperpod_cluster_name: str | None = None
    hyperpod_cluster_arn: str | None = None


class ForeignClusters:
    """Builds foreign EKS clusters through the sandbox endpoint (set by the server at start)."""

    def __init__(self, extension: Any) -> None:
        self.extension = extension

    def _client(self, service: str) -> Any:
        import boto3

        endpoint = getattr(self.extension, "endpoint_url", None)
        if not endpoint:
            raise RuntimeError("the AWS sandbox server is not started (no endpoint_url)")
        client: Any = boto3.client(  # type: ignore[call-overload]
            service,
            endpoint_url=endpoint,
            region_name=self.extension.region,
            aws_access_key_id="foreign",
            aws_secret_access_key="foreign",
        )
        return client

    def create(
        self,
        name: str,
        kubernetes_version: str = "1.32",
        authentication_mode: str = "API_AND_CONFIG_MAP",
        with_addons: tuple[str, ...] | list[str] = (),
        with_hyperpod: bool = False,
    ) -> ForeignCluster:
        """Create EKS cluster ``name`` (ACTIVE on return) and what it runs on, without ownership tags.

        Args:
            name: the EKS cluster name (the HyperPod cluster, if any, is ``<name>-hp``).
            kubernetes_version: ``1.28`` ... ``1.34``.
            authentication_mode: ``API``, ``API_AND_CONFIG_MAP`` or ``CONFIG_MAP`` (HyperPod refuses the last).
            with_addons: EKS add-on names to install (default versions); ACTIVE, or DEGRADED while no node
                can run their Deployments or a dependency is missing.
            with_hyperpod: also create a HyperPod cluster orchestrated by it (InService ~5 simulated
                minutes later).

        Raises:
            botocore.exceptions.ClientError: what the AWS APIs answer (e.g. HyperPod on a CONFIG_MAP cluster).
        """
        ec2, iam, eks = self._client("ec2"), self._client("iam"), self._client("eks")
        tag_list = [{"Key": k, "Value": v} for k, v in FOREIGN_TAGS.items()]
        suffix = uuid.uuid4().hex[:6]
        vpc = ec2.create_vpc(
            CidrBlock="10.42.0.0/16",
            TagSpecifications=[{"ResourceType": "vpc", "Tags": [*tag_list, {"Key": "Name", "Value": f"{name}-vpc"}]}],
        )["Vpc"]["VpcId"]
        zones = [z["ZoneName"] for z in ec2.describe_availability_zones()["AvailabilityZones"]][:2]
        subnets = [
            ec2.create_subnet(
                VpcId=vpc,
                CidrBlock=f"10.42.{index * 64}.0/18",
                AvailabilityZone=zone,
                TagSpecifications=[{"ResourceType": "subnet", "Tags": tag_list}],
            )["Subnet"]["SubnetId"]
            for index, zone in enumerate(zones)
        ]
        group = ec2.create_security_group(
            GroupName=f"{name}-sg-{suffix}",
            Description=f"foreign cluster {name}",
            VpcId=vpc,
            TagSpecifications=[{"ResourceType": "security-group", "Tags": tag_list}],
        )["GroupId"]
        trust = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": ["eks.amazonaws.com", "sagemaker.amazonaws.com"]},
                    "Action": "sts:AssumeRole",
                }
            ],
        }
        role = iam.create_role(
            RoleName=f"{name}-role-{suffix}", AssumeRolePolicyDocument=json.dumps(trust), Tags=tag_list
        )["Role"]["Arn"]
        self.extension.faults.role_settled(role.rsplit("/", 1)[-1])  # the customer's tooling ran long ago
        cluster = eks.create_cluster(
            name=name,
            version=kubernetes_version,
            roleArn=role,
            resourcesVpcConfig={"subnetIds": subnets, "securityGroupIds": [group]},
            accessConfig={"authenticationMode": authentication_mode},
            tags=dict(FOREIGN_TAGS),
        )["cluster"]
        self.extension.eks.make_active(name)
        for addon in with_addons:
            eks.create_addon(clusterName=name, addonName=addon, tags=dict(FOREIGN_TAGS))
            self.extension.eks.finish_addon(name, addon)
        hp_name = hp_arn = None
        if with_hyperpod:
            hp_name, hp_arn = self._hyperpod(name, cluster["arn"], role, subnets, group, tag_list)
        return ForeignCluster(
            eks_cluster_name=name,
            eks_cluster_arn=cluster["arn"],
            kubernetes_version=kubernetes_version,
            authentication_mode=authentication_mode,
            vpc_id=vpc,
            subnet_ids=subnets,
            security_group_id=group,
            role_arn=role,
            addons=list(with_addons),
            hyperpod_cluster_name=hp_name,
            hyperpod_cluster_arn=hp_arn,
        )

    def _hyperpod(
        self, name: str, eks_arn: str, role: str, subnets: list[str], group: str, tags: list[dict[str, str]]
    ) -> tuple[str, str]:
        s3 = self._client("s3")
        bucket = f"sagemaker-{name}-lifecycle-{uuid.uuid4().hex[:6]}".lower()[:63]
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": self.extension.region})
        s3.put_object(Bucket=bucket, Key="scripts/on_create.sh", Body=b"#!/bin/bash\nexit 0\n")
        hp_name = f"{name}-hp"
        arn = self._client("sagemaker").create_cluster(
            ClusterName=hp_name,
            Orchestrator={"Eks": {"ClusterArn": eks_arn}},
            VpcConfig={"Subnets": subnets[:1], "SecurityGroupIds": [group]},
            NodeProvisioningMode="Continuous",
            InstanceGroups=[
                {
                    "InstanceGroupName": "workers",
                    "InstanceType": "ml.t3.medium",
                    "InstanceCount": 1,
                    "ExecutionRole": role,
                    "LifeCycleConfig": {"SourceS3Uri": f"s3://{bucket}/scripts", "OnCreate": "on_create.sh"},
                }
            ],
            Tags=tags,
        )["ClusterArn"]
        return hp_name, str(arn)
