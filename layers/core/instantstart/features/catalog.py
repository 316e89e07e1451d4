"""The catalogue of managed features: one typed spec per feature.

Each :class:`FeatureSpec` says what turning the feature on installs (its EKS add-on, the add-ons it needs
first, the IAM roles it creates with their trust and policy, the pod identity associations, a bucket,
cluster settings, Kubernetes objects) so that turning it off can remove exactly that.

Requirements as the AWS guides state them (checked 2026): the HyperPod training operator needs cert-manager
and the EKS Pod Identity Agent, and a role for service account ``hp-training-operator-controller-manager``
in ``aws-hyperpod`` (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-eks-operator-install.html);
the inference operator needs cert-manager, a role and an S3 bucket for its TLS certificates
(https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-setup.html).
Roles trust EKS Pod Identity (``pods.eks.amazonaws.com``) for one cluster, namespace and service account only,
through the session tags Pod Identity sets (``aws:RequestTag/eks-cluster-name``, ``.../kubernetes-namespace``,
``.../kubernetes-service-account``: https://docs.aws.amazon.com/eks/latest/userguide/pod-id-role.html).
The policies below are the narrowest this control plane knows the operators need; where the AWS guide attaches
a managed policy, the inline policy grants the documented actions on this cluster's resources only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

POD_IDENTITY_AGENT = "eks-pod-identity-agent"
CERT_MANAGER = "cert-manager"
CLOUDWATCH_OBSERVABILITY = "amazon-cloudwatch-observability"


@dataclass(frozen=True)
class PolicyContext:
    """What a role's inline policy is scoped to."""

    partition: str
    region: str
    account_id: str
    tag: str
    storage_bucket: str
    tls_bucket: str
    eks_cluster_name: str = ""
    prometheus_workspace_arn: str | None = None
    """The cluster's Amazon Managed Service for Prometheus workspace (observability), once it exists."""


@dataclass(frozen=True)
class PodIdentityRole:
    """An IAM role a feature creates for one Kubernetes service account, bound through EKS Pod Identity.

    ``via_addon``: passed to CreateAddon as ``podIdentityAssociations`` (EKS then owns the association and
    deletes it with the add-on); otherwise created with ``CreatePodIdentityAssociation`` (owned by us).
    """

    suffix: str
    namespace: str
    service_account: str
    policy: Callable[[PolicyContext], dict[str, Any]]
    via_addon: bool = True


@dataclass(frozen=True)
class Companion:
    """A further EKS add-on of a feature, installed when request option ``option`` is true, with its own roles.

    Owned like the feature's own add-on (ownership tags, ``instantstart:needed-by`` the feature's key); turning
    the option or the feature off removes it with its roles.
    """

    option: str
    addon: str
    roles: tuple[PodIdentityRole, ...] = ()


@dataclass(frozen=True)
class FeatureSpec:
    """One managed feature.

    Attributes:
        key: the camelCase key of the API (``trainingOperator``).
        addon: its EKS add-on, or None (a cluster setting only).
        requires: add-ons that must be ACTIVE before ``addon`` is created (installed when missing, shared with
            other features and the create workflow through the add-on's ``instantstart:needed-by`` tag).
        roles: the pod identity roles it creates.
        tls_bucket: it creates the cluster's TLS certificate bucket.
        tiered_storage: it sets HyperPod ``TieredStorageConfig`` (UpdateCluster).
        kubernetes_objects: ``Kind/name`` of the Kubernetes objects it installs (an add-on's CRDs).
        cost: what it costs and needs, in words (the skill and the docs say the same).
    """

    key: str
    addon: str | None = None
    requires: tuple[str, ...] = ()
    roles: tuple[PodIdentityRole, ...] = ()
    tls_bucket: bool = False
    tiered_storage: bool = False
    kubernetes_objects: tuple[str, ...] = ()
    service_accounts: tuple[tuple[str, str], ...] = field(default=())
    """``(namespace, name)`` of ServiceAccounts the control plane itself creates in Kubernetes."""
    operator_objects: bool = False
    """Its Kubernetes objects are built and applied by the control plane itself (kubeRay:
    :mod:`instantstart.features.kuberay`), observed only by the workflow."""
    lustre: bool = False
    """It may create an FSx for Lustre file system, its security group and claim ``fsx-claim``
    (:mod:`instantstart.features.fsx`)."""
    addon_option: str | None = None
    """Request option (attribute name) that turns ``addon`` on; None: ``addon`` is always on with the feature."""
    companions: tuple[Companion, ...] = ()
    prometheus_workspace: bool = False
    """With ``addon`` it creates an Amazon Managed Service for Prometheus workspace owned by the cluster and passes
    it to the add-on (:mod:`instantstart.features.amp`)."""
    cost: str = ""


def _statement(actions: list[str], resources: list[str] | str) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": actions, "Resource": resources}


def _policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def _hyperpod_clusters(c: PolicyContext) -> str:
    # HyperPod cluster ARNs end in a generated id, not the name: the account's clusters in this Region.
    return f"arn:{c.partition}:sagemaker:{c.region}:{c.account_id}:cluster/*"


def _training_operator_policy(c: PolicyContext) -> dict[str, Any]:
    return _policy(_statement(["sagemaker:DescribeClusterNode"], _hyperpod_clusters(c)))


def _inference_operator_policy(c: PolicyContext) -> dict[str, Any]:
    bucket = f"arn:{c.partition}:s3:::{c.tls_bucket}"
    return _policy(
        _statement(["s3:ListBucket", "s3:GetBucketLocation"], bucket),
        _statement(["s3:GetObject", "s3:PutObject", "s3:PutObjectTagging", "s3:DeleteObject"], f"{bucket}/*"),
        _statement(["sagemaker:DescribeCluster", "sagemaker:DescribeClusterNode"], _hyperpod_clusters(c)),
        # ACM ImportCertificate supports no resource-level permission on create.
        _statement(["acm:ImportCertificate", "acm:DescribeCertificate", "acm:AddTagsToCertificate"], "*"),
        _statement(["acm:DeleteCertificate"], f"arn:{c.partition}:acm:{c.region}:{c.account_id}:certificate/*"),
    )


def _observability_policy(c: PolicyContext) -> dict[str, Any]:
    # The HyperPod observability guide's collector role: aps:RemoteWrite on the cluster's workspace, logs under
    # /aws/sagemaker/Clusters/ (https://docs.aws.amazon.com/sagemaker/latest/dg/hyperpod-observability-addon-setup.html).
    workspace = c.prometheus_workspace_arn or f"arn:{c.partition}:aps:{c.region}:{c.account_id}:workspace/*"
    groups = f"arn:{c.partition}:logs:{c.region}:{c.account_id}:log-group:/aws/sagemaker/Clusters/*"
    return _policy(
        _statement(["aps:RemoteWrite"], workspace),
        _statement(
            ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            [groups, f"{groups}:log-stream:*"],
        ),
    )


def _cloudwatch_agent_policy(c: PolicyContext) -> dict[str, Any]:
    # The narrowest inline equivalent of CloudWatchAgentServerPolicy (plus AWSXrayWriteOnlyAccess, which the EKS
    # guide also attaches for Application Signals): PutMetricData, the EC2 reads and X-Ray writes allow no resource
    # scope; logs are this EKS cluster's Container Insights groups and Application Signals' group only
    # (https://docs.aws.amazon.com/eks/latest/userguide/amazon-cloudwatch-observability.html).
    logs = f"arn:{c.partition}:logs:{c.region}:{c.account_id}:log-group:"
    groups = [f"{logs}/aws/containerinsights/{c.eks_cluster_name}/*", f"{logs}/aws/application-signals/*"]
    return _policy(
        _statement(["cloudwatch:PutMetricData", "ec2:DescribeVolumes", "ec2:DescribeTags"], "*"),
        _statement(["logs:DescribeLogGroups"], "*"),
        _statement(
            ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
            groups + [f"{g}:log-stream:*" for g in groups],
        ),
        _statement(
            [
                "xray:PutTraceSegments",
                "xray:PutTelemetryRecords",
                "xray:GetSamplingRules",
                "xray:GetSamplingTargets",
                "xray:GetSamplingStatisticSummaries",
            ],
            "*",
        ),
    )


def _tiered_checkpointing_policy(c: PolicyContext) -> dict[str, Any]:
    bucket = f"arn:{c.partition}:s3:::{c.storage_bucket}"
    return _policy(
        _statement(["s3:ListBucket"], bucket),
        _statement(["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"], f"{bucket}/*"),
        _statement(["sagemaker:DescribeCluster"], _hyperpod_clusters(c)),
    )


def _fsx_csi_driver_policy(c: PolicyContext) -> dict[str, Any]:
    # The EKS guide attaches AmazonFSxFullAccess to kube-system/fsx-csi-controller-sa; these are the actions the
    # driver's controller calls (dynamic provisioning creates, resizes and deletes file systems), scoped to the
    # account and Region where the API allows it.
    file_systems = f"arn:{c.partition}:fsx:{c.region}:{c.account_id}:file-system/*"
    return _policy(
        _statement(["fsx:DescribeFileSystems"], "*"),
        _statement(
            ["fsx:CreateFileSystem", "fsx:DeleteFileSystem", "fsx:UpdateFileSystem", "fsx:TagResource"], file_systems
        ),
        _statement(["ec2:DescribeSubnets", "ec2:DescribeSecurityGroups", "ec2:DescribeNetworkInterfaces"], "*"),
        {
            "Effect": "Allow",
            "Action": ["iam:CreateServiceLinkedRole"],
            "Resource": "*",
            "Condition": {"StringLike": {"iam:AWSServiceName": ["fsx.amazonaws.com"]}},
        },
    )


TIERED_CHECKPOINTING_NAMESPACE = "default"
TIERED_CHECKPOINTING_SERVICE_ACCOUNT = "tiered-checkpointing"

FEATURES: dict[str, FeatureSpec] = {
    spec.key: spec
    for spec in (
        FeatureSpec(
            key="trainingOperator",
            addon="amazon-sagemaker-hyperpod-training-operator",
            requires=(CERT_MANAGER, POD_IDENTITY_AGENT),
            roles=(
                PodIdentityRole(
                    "training-operator",
                    "aws-hyperpod",
                    "hp-training-operator-controller-manager",
                    _training_operator_policy,
                ),
            ),
            kubernetes_objects=("CustomResourceDefinition/hyperpodpytorchjobs.sagemaker.amazonaws.com",),
            cost="No charge for the add-on; its controller runs on your nodes (one small Deployment). Needs "
            "cert-manager and the EKS Pod Identity Agent (installed when missing) and one IAM role.",
        ),
        FeatureSpec(
            key="inferenceOperator",
            addon="amazon-sagemaker-hyperpod-inference",
            requires=(CERT_MANAGER, POD_IDENTITY_AGENT),
            roles=(
                PodIdentityRole(
                    "inference-operator",
                    "hyperpod-inference-system",
                    "hyperpod-inference-operator-controller-manager",
                    _inference_operator_policy,
                ),
            ),
            tls_bucket=True,
            kubernetes_objects=(
                "CustomResourceDefinition/inferenceendpointconfigs.inference.sagemaker.aws.amazon.com",
                "CustomResourceDefinition/jumpstartmodels.inference.sagemaker.aws.amazon.com",
            ),
            cost="No charge for the add-on; endpoints it creates bill as their instances, load balancers and "
            "certificates. Needs cert-manager and the Pod Identity Agent, one IAM role and an S3 bucket for TLS "
            "certificates (S3 storage charges).",
        ),
        FeatureSpec(
            key="observability",
            addon="amazon-sagemaker-hyperpod-observability",
            requires=(POD_IDENTITY_AGENT,),
            roles=(
                PodIdentityRole(
                    "observability",
                    "hyperpod-observability",
                    "hyperpod-observability-operator-otel-collector",
                    _observability_policy,
                ),
            ),
            addon_option="hyper_pod_observability",
            prometheus_workspace=True,
            companions=(
                Companion(
                    "cloud_watch",
                    CLOUDWATCH_OBSERVABILITY,
                    (
                        PodIdentityRole(
                            "cloudwatch-agent", "amazon-cloudwatch", "cloudwatch-agent", _cloudwatch_agent_policy
                        ),
                    ),
                ),
            ),
            cost="hyperPodObservability (default): an Amazon Managed Service for Prometheus workspace owned by the "
            "cluster (billed per sample ingested, GB stored and samples queried) and HyperPod's collector DaemonSet "
            "on every node, logs to CloudWatch Logs (per GB); no Grafana workspace is created: point your Grafana at "
            "the workspace. cloudWatch (opt-in): Container Insights (per observation or GB ingested) and Fluent "
            "Bit shipping container logs (per GB). Needs the Pod Identity Agent and one IAM role per add-on.",
        ),
        FeatureSpec(
            key="taskGovernance",
            addon="amazon-sagemaker-hyperpod-taskgovernance",
            kubernetes_objects=(
                "CustomResourceDefinition/clusterqueues.kueue.x-k8s.io",
                "CustomResourceDefinition/localqueues.kueue.x-k8s.io",
                "CustomResourceDefinition/workloadpriorityclasses.kueue.x-k8s.io",
            ),
            cost="No charge for the add-on; Kueue's controller runs on your nodes. Compute quotas and the "
            "scheduler config are set with the SageMaker task-governance APIs.",
        ),
        FeatureSpec(
            key="tieredCheckpointing",
            requires=(POD_IDENTITY_AGENT,),
            roles=(
                PodIdentityRole(
                    "tiered-checkpointing",
                    TIERED_CHECKPOINTING_NAMESPACE,
                    TIERED_CHECKPOINTING_SERVICE_ACCOUNT,
                    _tiered_checkpointing_policy,
                    via_addon=False,
                ),
            ),
            tiered_storage=True,
            service_accounts=((TIERED_CHECKPOINTING_NAMESPACE, TIERED_CHECKPOINTING_SERVICE_ACCOUNT),),
            kubernetes_objects=(
                f"ServiceAccount/{TIERED_CHECKPOINTING_NAMESPACE}/{TIERED_CHECKPOINTING_SERVICE_ACCOUNT}",
            ),
            cost="No charge for the setting; it reserves InstanceMemoryAllocationPercentage of every instance's "
            "memory for checkpoints (less memory for your jobs). Training pods use service account "
            "tiered-checkpointing in namespace default (its role reaches the cluster's S3 bucket).",
        ),
        FeatureSpec(
            key="fsx",
            addon="aws-fsx-csi-driver",
            requires=(POD_IDENTITY_AGENT,),
            roles=(PodIdentityRole("fsx-csi-driver", "kube-system", "fsx-csi-controller-sa", _fsx_csi_driver_policy),),
            lustre=True,
            kubernetes_objects=("CSIDriver/fsx.csi.aws.com",),
            cost="No charge for the add-on (a controller Deployment and a node DaemonSet on your nodes); needs the "
            "Pod Identity Agent and one IAM role. A file system bills per provisioned GiB-month whether used or not "
            "(PERSISTENT_2 by GiB and throughput tier; 1200 GiB is the smallest), from CREATING (5-10 minutes) until "
            "it is deleted; it lives in the compute subnet with its own security group.",
        ),
        FeatureSpec(
            key="kubeRay",
            operator_objects=True,
            kubernetes_objects=(
                "Namespace/kuberay-system",
                "Deployment/kuberay-system/kuberay-operator",
                "CustomResourceDefinition/rayclusters.ray.io",
                "CustomResourceDefinition/rayjobs.ray.io",
                "CustomResourceDefinition/rayservices.ray.io",
            ),
            cost="No charge: the KubeRay operator (one Deployment, 100m CPU / 512Mi) runs on your nodes; Ray clusters "
            "you create bill as the nodes they use. Turning it off deletes the CRDs and with them every RayCluster, "
            "RayJob and RayService.",
        ),
    )
}
"""Every managed feature, by its API key."""


def feature_role_name(tag: str, role: PodIdentityRole) -> str:
    """IAM role name of a feature's pod identity role: ``instantstart-<tag>-<suffix>`` (at most 64 characters)."""
    return f"instantstart-{tag}-{role.suffix}"


def tls_bucket_name(tag: str, account_id: str, region: str) -> str:
    """S3 bucket of the inference operator's TLS certificates: ``instantstart-<tag>-<account>-<region>-tls``.

    The storage bucket's name ends with the Region, this one with ``-tls``, so they never collide; a name over
    S3's 63 characters replaces account and Region with a short digest of them.
    """
    name = f"instantstart-{tag}-{account_id}-{region}-tls"
    if len(name) > 63:
        digest = hashlib.sha256(f"{account_id}/{region}".encode()).hexdigest()[:10]
        name = f"instantstart-{tag}-{digest}-tls"
    return name


def addons_of(spec: FeatureSpec) -> tuple[str, ...]:
    """Every add-on a feature uses: what it requires, then its own (companions included)."""
    return spec.requires + own_addons(spec)


def own_addons(spec: FeatureSpec) -> tuple[str, ...]:
    """The feature's own add-ons (not those it requires): its add-on, then its companions'."""
    return ((spec.addon,) if spec.addon else ()) + tuple(c.addon for c in spec.companions)


def all_roles(spec: FeatureSpec) -> tuple[PodIdentityRole, ...]:
    """Every pod identity role the feature may create (its own and its companions')."""
    return spec.roles + tuple(r for c in spec.companions for r in c.roles)


def roles_of(spec: FeatureSpec, addon: str | None) -> tuple[PodIdentityRole, ...]:
    """The roles that belong to ``addon`` (the feature's add-on, or one of its companions)."""
    for companion in spec.companions:
        if companion.addon == addon:
            return companion.roles
    return spec.roles


def wanted_addons(spec: FeatureSpec, request: Any) -> frozenset[str]:
    """The feature's own add-ons a request turns on: none when ``enabled`` is false; ``addon`` unless its
    ``addon_option`` is false; each companion whose option is true."""
    if not request.enabled:
        return frozenset()
    out = set()
    if spec.addon and (spec.addon_option is None or getattr(request, spec.addon_option, True)):
        out.add(spec.addon)
    out.update(c.addon for c in spec.companions if getattr(request, c.option, False))
    return frozenset(out)
