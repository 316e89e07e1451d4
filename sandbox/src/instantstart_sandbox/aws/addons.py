"""The EKS add-on catalog of the sandbox: one data entry per add-on.

Each entry says what DescribeAddonVersions answers for the add-on (type, owner, publisher,
versions) and what the add-on installs into the cluster's Kubernetes API once ACTIVE (namespace,
DaemonSets/Deployments, CRDs, CSIDrivers, service accounts). :func:`addon_objects` turns an entry
into Kubernetes objects.

Versions are per Kubernetes version, as DescribeAddonVersions answers them: an entry's
``compatible`` maps an add-on version to the inclusive (oldest, newest) Kubernetes minor versions it
supports (a version not listed supports every version of :data:`KUBERNETES_VERSIONS`); the first
compatible version is the default. ``no_inline_pod_identity`` lists versions that predate EKS Pod
Identity support of the add-on: CreateAddon/UpdateAddon with ``podIdentityAssociations`` refuse them
(InvalidParameterException) and DescribeAddonConfiguration answers no ``podIdentityConfiguration``.
Version ranges and which versions lack Pod Identity are modelled (not AWS's exact matrix), with the
harsher reading: older versions stop at an older Kubernetes version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ECR = "602401143452.dkr.ecr.{region}.amazonaws.com"
KUBERNETES_VERSIONS = ("1.28", "1.29", "1.30", "1.31", "1.32", "1.33", "1.34")


@dataclass(frozen=True)
class Workload:
    """A DaemonSet or Deployment an add-on runs."""

    kind: str  # DaemonSet | Deployment
    name: str
    image: str  # repository path below the registry, without tag
    replicas: int = 2
    service_account: str | None = None


@dataclass(frozen=True)
class Crd:
    """A CustomResourceDefinition an add-on installs."""

    group: str
    kind: str
    plural: str
    versions: tuple[str, ...] = ("v1",)
    scope: str = "Namespaced"
    spec_schema: dict[str, Any] | None = None
    version_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-version spec schema
    top_level: dict[str, Any] = field(default_factory=dict)  # properties beside spec (WorkloadPriorityClass)
    top_level_required: tuple[str, ...] = ()
    scale: bool = False  # serves the scale subresource (spec.replicas / status.replicas)
    status_schema: dict[str, Any] | None = None  # None: status keeps any fields


@dataclass(frozen=True)
class AddonSpec:
    """One add-on of the catalog."""

    name: str
    type: str
    versions: tuple[str, ...]  # newest first; "{k8s}" is replaced by the cluster's minor version
    namespace: str
    owner: str = "aws"
    publisher: str = "eks"
    owns_namespace: bool = False
    create_seconds: int = 90
    requires: tuple[str, ...] = ()
    pod_identity_service_accounts: tuple[str, ...] = ()
    requires_iam_permissions: bool = False
    workloads: tuple[Workload, ...] = ()
    crds: tuple[Crd, ...] = ()
    csi_drivers: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    compatible: dict[str, tuple[str, str]] = field(default_factory=dict)
    no_inline_pod_identity: tuple[str, ...] = ()
    extra_objects: tuple[dict[str, Any], ...] = ()

    def supports_inline_pod_identity(self, version: str) -> bool:
        """Whether ``version`` accepts ``podIdentityAssociations`` on CreateAddon/UpdateAddon."""
        return bool(self.pod_identity_service_accounts) and version not in self.no_inline_pod_identity


def _obj(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, **(spec or {})}


_INT = {"type": "integer", "format": "int32"}
_OBJECT_REF = {
    "type": "object",
    "properties": {
        k: {"type": "string"}
        for k in ("apiVersion", "fieldPath", "kind", "name", "namespace", "resourceVersion", "uid")
    },
}
_PYTORCHJOB_SPEC: dict[str, Any] = {
    # The training operator's HyperPodPyTorchJob spec (sagemaker.amazonaws.com/v1): a structural schema, so fields
    # it does not define are pruned (or refused with fieldValidation=Strict); pod templates keep theirs.
    "type": "object",
    "properties": {
        "nprocPerNode": {
            "type": "string",
            "default": "auto",
            "description": "Number of workers per node; supported values: [auto, cpu, gpu, int].",
        },
        "replicaSpecs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "replicas": {**_INT, "default": 1, "minimum": 0},
                    "spares": {**_INT, "default": 0, "minimum": 0},
                    "template": _obj(),
                },
            },
        },
        "runPolicy": {
            "type": "object",
            "properties": {
                "activeDeadlineSeconds": {"type": "integer", "format": "int64"},
                "cleanPodPolicy": {"type": "string", "default": "All", "enum": ["All", "OnlyComplete", "None"]},
                "faultDeadlineSeconds": {"type": "integer", "format": "int64"},
                "jobMaxRetryCount": {**_INT, "minimum": 0},
                "logMonitoringConfiguration": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "logPattern"],
                        "properties": {
                            "name": {"type": "string"},
                            "logPattern": {"type": "string"},
                            "stopPattern": {"type": "string"},
                            "expectedStartCutOffInSeconds": _INT,
                            "expectedRecurringFrequencyInSeconds": _INT,
                            "metricEvaluationDataPoints": _INT,
                            "metricThreshold": _INT,
                            "operator": {"type": "string", "enum": ["gt", "lt", "eq", "gteq", "lteq"]},
                        },
                    },
                },
                "restartPolicy": {
                    "type": "object",
                    "required": ["evalPeriodSeconds"],
                    "properties": {
                        "evalPeriodSeconds": {**_INT, "minimum": 1},
                        "maxFullJobRestarts": {**_INT, "minimum": 0},
                        "numRestartBeforeFullJobRestart": {**_INT, "minimum": 0},
                    },
                },
                "startupDeadlineSeconds": {"type": "integer", "format": "int64"},
                "suspend": {"type": "boolean"},
                "ttlSecondsAfterFinished": {**_INT, "default": 0},
            },
        },
    },
}
_PYTORCHJOB_STATUS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "completionTime": {"type": "string", "format": "date-time"},
        "conditions": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["status", "type"],
                "properties": {
                    "type": {"type": "string"},
                    "status": {"type": "string"},
                    "reason": {"type": "string"},
                    "message": {"type": "string"},
                    "lastProbeTime": {"type": "string", "format": "date-time"},
                    "lastTransitionTime": {"type": "string", "format": "date-time"},
                },
            },
        },
        "jobPods": {"type": "array", "items": _OBJECT_REF},
        "managerPods": _OBJECT_REF,
        "podManagerStatuses": {"type": "array", "items": _OBJECT_REF},
        "masterAddr": {"type": "string"},
        "masterPort": {"type": "string"},
        "podSetInfos": {"type": "array", "items": _obj()},
        "podSets": {"type": "array", "items": _obj()},
        "restartCount": _INT,
        "restartStatus": {
            "type": "object",
            "required": ["currentEvalPeriod", "fullJobRestartCount", "restartCount"],
            "properties": {"currentEvalPeriod": _INT, "fullJobRestartCount": _INT, "restartCount": _INT},
        },
        "startTime": {"type": "string", "format": "date-time"},
    },
}

_DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_NAME_63 = {"type": "string", "maxLength": 63, "pattern": "^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"}
_ML_INSTANCE = {"type": "string", "pattern": "^ml\\..*"}


_KV_CACHE_SPEC = _obj(
    {
        "properties": {
            "enableL1Cache": {"type": "boolean", "default": True},
            "enableL2Cache": {"type": "boolean", "default": False},
            "cacheConfigFile": {"type": "string"},
            "l2CacheSpec": _obj(
                {
                    "properties": {
                        "l2CacheBackend": {"type": "string", "pattern": "(?i)redis|tieredstorage"},
                        "l2CacheLocalUrl": {"type": "string"},
                    }
                }
            ),
        }
    }
)
_ROUTING_SPEC = _obj(
    {
        "properties": {
            "enabled": {"type": "boolean", "default": False},
            "routingStrategy": {
                "type": "string",
                "enum": ["prefixaware", "kvaware", "session", "roundrobin"],
                "default": "prefixaware",
            },
            "autoScalingSpec": _obj(),
        }
    }
)
_AUTOSCALING_SPEC = _obj(
    {
        "properties": {
            "minReplicaCount": {"type": "integer", "minimum": 0, "default": 1},
            "maxReplicaCount": {"type": "integer", "minimum": 0, "default": 5},
            "pollingInterval": {"type": "integer", "minimum": 0},
            "cooldownPeriod": {"type": "integer", "minimum": 0},
            "cloudWatchTrigger": _obj(),
            "prometheusTrigger": _obj(),
        }
    }
)
_TLS_CONFIG = _obj({"properties": {"tlsCertificateOutputS3Uri": {"type": "string", "pattern": "^s3://([^/]+)/?(.*)$"}}})
_V1_ONLY = {"kvCacheSpec": _KV_CACHE_SPEC, "intelligentRoutingSpec": _ROUTING_SPEC, "maxDeployTimeInSeconds": _INT}
"""Fields the v1 schema declares and v1alpha1 does not (the operator's v1 added caching, routing and a deadline)."""


def _inference_endpoint_spec(require_instance_type: bool, v1: bool = True) -> dict[str, Any]:
    """InferenceEndpointConfig ``spec``: the fields and rules a caller meets first (the sandbox's own
    reduced schema; unknown fields are kept). ``v1``: with the fields only v1 declares (:data:`_V1_ONLY`)."""
    required = ["modelName", "modelSourceConfig", "worker"]
    if require_instance_type:
        required.insert(0, "instanceType")
    return {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "required": required,
        "properties": {
            "modelName": _NAME_63,
            "endpointName": {"type": "string", "maxLength": 63, "pattern": "^$|^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$"},
            "modelVersion": {"type": "string"},
            "instanceType": _ML_INSTANCE,
            "instanceTypes": {"type": "array", "items": _ML_INSTANCE},
            "replicas": {"type": "integer", "default": 1, "minimum": 0},
            "invocationEndpoint": {"type": "string", "default": "invocations"},
            "modelSourceConfig": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "required": ["modelSourceType"],
                "properties": {
                    "modelSourceType": {"type": "string", "enum": ["fsx", "s3", "huggingface", "kubernetesVolume"]},
                    "modelLocation": {"type": "string"},
                    "s3Storage": _obj({"required": ["bucketName", "region"]}),
                    "fsxStorage": _obj({"required": ["fileSystemId"]}),
                    "huggingFaceModel": _obj({"required": ["modelId"]}),
                    "prefetchEnabled": {"type": "boolean", "default": False},
                },
            },
            "worker": _obj(
                {
                    "required": ["image", "modelInvocationPort", "modelVolumeMount", "resources"],
                    "properties": {
                        "image": {"type": "string"},
                        "modelInvocationPort": _obj({"required": ["containerPort"]}),
                        "modelVolumeMount": _obj({"required": ["name"]}),
                        "resources": _obj(),
                        "environmentVariables": {"type": "array", "items": _obj()},
                    },
                }
            ),
            "tlsConfig": _TLS_CONFIG,
            "autoScalingSpec": _AUTOSCALING_SPEC,
            **(_V1_ONLY if v1 else {}),
        },
    }


_JUMPSTART_SPEC: dict[str, Any] = {
    "type": "object",
    "x-kubernetes-preserve-unknown-fields": True,
    "required": ["model", "server"],
    "properties": {
        "model": _obj(
            {
                "required": ["acceptEula", "modelId"],
                "properties": {
                    "acceptEula": {"type": "boolean", "default": False},
                    "modelId": _NAME_63,
                    "modelHubName": {"type": "string", "default": "SageMakerPublicHub"},
                    "modelVersion": {"type": "string", "pattern": "^\\d{1,4}.\\d{1,4}.\\d{1,4}$"},
                },
            }
        ),
        "server": _obj({"required": ["instanceType"], "properties": {"instanceType": _ML_INSTANCE}}),
        "replicas": {"type": "integer", "default": 1, "minimum": 0},
        "sageMakerEndpoint": _obj({"properties": {"name": {"type": "string", "maxLength": 63}}}),
        "tlsConfig": _TLS_CONFIG,
        "autoScalingSpec": _AUTOSCALING_SPEC,
        **_V1_ONLY,
    },
}

_INFERENCE_CONDITION = {
    "type": "object",
    "required": ["lastTransitionTime", "message", "reason", "status", "type"],
    "properties": {
        "type": {"type": "string"},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "reason": {"type": "string", "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
        "message": {"type": "string"},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "observedGeneration": {"type": "integer", "format": "int64"},
    },
}
_SAGEMAKER_ARN = "(arn:aws[a-z\\-]*:sagemaker:[a-z0-9\\-]*:[0-9]{12}:%s/.*|^$)"
_INFERENCE_STATUS: dict[str, Any] = {
    # InferenceEndpointConfig / JumpStartModel status (the sandbox's reduced schema: the fields its operator writes)
    "type": "object",
    "properties": {
        "state": {
            "type": "string",
            "enum": [
                "DeploymentPending",
                "DeploymentInProgress",
                "DeploymentFailed",
                "DeploymentComplete",
                "DeletionPending",
                "DeletionInProgress",
                "DeletionFailed",
                "DeletionComplete",
            ],
        },
        "conditions": {"type": "array", "items": _INFERENCE_CONDITION},
        "deploymentStatus": {
            "type": "object",
            "required": ["lastUpdated", "name"],
            "properties": {
                "name": {"type": "string"},
                "deploymentObjectOverallState": {"type": "string"},
                "lastUpdated": {"type": "string", "format": "date-time"},
                "reason": {"type": "string"},
                "message": {"type": "string"},
                "status": _obj(),
            },
        },
        "endpoints": {
            "type": "object",
            "properties": {
                "sagemaker": {
                    "type": "object",
                    "required": ["state"],
                    "properties": {
                        "state": {"type": "string"},
                        "endpointArn": {"type": "string", "pattern": _SAGEMAKER_ARN % "endpoint"},
                        "configArn": {"type": "string", "pattern": _SAGEMAKER_ARN % "endpoint-config"},
                        "modelArn": {"type": "string", "pattern": _SAGEMAKER_ARN % "model"},
                    },
                }
            },
        },
        "observedGeneration": {"type": "integer", "format": "int64"},
        "replicas": {"type": "integer", "format": "int32"},
        "selector": {"type": "string"},
    },
}
_REGISTRATION_SPEC: dict[str, Any] = _obj(
    {
        "required": ["name", "imageUri", "instanceType"],
        "properties": {
            "name": _NAME_63,
            "imageUri": {"type": "string", "maxLength": 255},
            "instanceType": {"type": "string"},
            "invocationEndpoint": {"type": "string", "default": "invocations"},
            "eksClusterDetails": _obj(),
        },
    }
)
_REGISTRATION_STATUS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "state": {
            "type": "string",
            "enum": [
                "CreationInProgress",
                "CreationFailed",
                "CreationCompleted",
                "DeletionInProgress",
                "DeletionFailed",
                "DeletionCompleted",
                "UpdateInProgress",
                "UpdateFailed",
                "UpdateCompleted",
            ],
        },
        "conditions": {"type": "array", "items": _INFERENCE_CONDITION},
        "endpoint": {
            "type": "object",
            "required": ["arn", "configArn", "modelArn"],
            "properties": {
                "arn": {"type": "string", "pattern": _SAGEMAKER_ARN % "endpoint"},
                "configArn": {"type": "string", "pattern": _SAGEMAKER_ARN % "endpoint-config"},
                "modelArn": {"type": "string", "pattern": _SAGEMAKER_ARN % "model"},
                "lastModifiedTime": {"type": "string", "format": "date-time"},
            },
        },
        "observedGeneration": {"type": "integer", "format": "int64"},
    },
}

_KUEUE_RESOURCE_GROUPS: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["coveredResources", "flavors"],
        "properties": {
            "coveredResources": {"type": "array", "items": {"type": "string"}},
            "flavors": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "resources"],
                    "properties": {
                        "name": {"type": "string"},
                        "resources": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["name", "nominalQuota"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "nominalQuota": {"x-kubernetes-int-or-string": True},
                                    "borrowingLimit": {"x-kubernetes-int-or-string": True},
                                    "lendingLimit": {"x-kubernetes-int-or-string": True},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}

_CLUSTER_QUEUE_SPEC: dict[str, Any] = _obj(
    {
        "properties": {
            "cohort": {"type": "string"},
            "namespaceSelector": _obj(),
            "queueingStrategy": {"type": "string", "enum": ["StrictFIFO", "BestEffortFIFO"]},
            "resourceGroups": _KUEUE_RESOURCE_GROUPS,
            "preemption": _obj(),
            "fairSharing": _obj({"properties": {"weight": {"x-kubernetes-int-or-string": True}}}),
        }
    }
)

CATALOG: dict[str, AddonSpec] = {
    spec.name: spec
    for spec in (
        AddonSpec(
            name="vpc-cni",
            type="networking",
            versions=("v1.19.2-eksbuild.1", "v1.18.6-eksbuild.1"),
            namespace="kube-system",
            create_seconds=75,
            pod_identity_service_accounts=("aws-node",),
            workloads=(Workload("DaemonSet", "aws-node", "amazon-k8s-cni", service_account="aws-node"),),
        ),
        AddonSpec(
            name="kube-proxy",
            type="networking",
            versions=("v{k8s}.3-eksbuild.2", "v{k8s}.0-eksbuild.2"),
            namespace="kube-system",
            create_seconds=60,
            workloads=(Workload("DaemonSet", "kube-proxy", "eks/kube-proxy"),),
        ),
        AddonSpec(
            name="coredns",
            type="networking",
            versions=("v1.11.4-eksbuild.2", "v1.11.3-eksbuild.1"),
            namespace="kube-system",
            create_seconds=80,
            workloads=(Workload("Deployment", "coredns", "eks/coredns", service_account="coredns"),),
            labels={"k8s-app": "kube-dns"},
        ),
        AddonSpec(
            name="eks-pod-identity-agent",
            type="security",
            versions=("v1.3.4-eksbuild.1", "v1.3.2-eksbuild.2"),
            namespace="kube-system",
            create_seconds=65,
            workloads=(Workload("DaemonSet", "eks-pod-identity-agent", "eks/eks-pod-identity-agent"),),
        ),
        AddonSpec(
            name="cert-manager",
            type="security",
            versions=("v1.17.2-eksbuild.1", "v1.16.3-eksbuild.1"),
            compatible={"v1.16.3-eksbuild.1": ("1.28", "1.32")},
            namespace="cert-manager",
            owner="community",
            owns_namespace=True,
            create_seconds=120,
            workloads=(
                Workload("Deployment", "cert-manager", "cert-manager/cert-manager-controller", 1, "cert-manager"),
                Workload(
                    "Deployment",
                    "cert-manager-cainjector",
                    "cert-manager/cert-manager-cainjector",
                    1,
                    "cert-manager-cainjector",
                ),
                Workload(
                    "Deployment",
                    "cert-manager-webhook",
                    "cert-manager/cert-manager-webhook",
                    1,
                    "cert-manager-webhook",
                ),
            ),
            crds=(
                Crd("cert-manager.io", "Certificate", "certificates"),
                Crd("cert-manager.io", "CertificateRequest", "certificaterequests"),
                Crd("cert-manager.io", "Issuer", "issuers"),
                Crd("cert-manager.io", "ClusterIssuer", "clusterissuers", scope="Cluster"),
            ),
        ),
        AddonSpec(
            name="metrics-server",
            type="observability",
            versions=("v0.7.2-eksbuild.3", "v0.7.2-eksbuild.1"),
            namespace="kube-system",
            owner="community",
            create_seconds=70,
            workloads=(Workload("Deployment", "metrics-server", "eks/metrics-server", 2, "metrics-server"),),
        ),
        # v2 (the default since 2025) adds a controller Deployment that creates the Mountpoint pods
        AddonSpec(
            name="aws-mountpoint-s3-csi-driver",
            type="storage",
            versions=("v2.1.0-eksbuild.1", "v2.0.0-eksbuild.1"),
            namespace="kube-system",
            create_seconds=100,
            requires_iam_permissions=True,
            pod_identity_service_accounts=("s3-csi-driver-sa",),
            workloads=(
                Workload(
                    "Deployment",
                    "s3-csi-controller",
                    "mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver",
                    1,
                    "s3-csi-driver-controller-sa",
                ),
                Workload(
                    "DaemonSet",
                    "s3-csi-node",
                    "mountpoint-s3-csi-driver/aws-mountpoint-s3-csi-driver",
                    1,
                    "s3-csi-driver-sa",
                ),
            ),
            crds=(
                Crd(
                    "s3.csi.aws.com",
                    "MountpointS3PodAttachment",
                    "mountpoints3podattachments",
                    ("v2",),
                    "Cluster",
                ),
            ),
            csi_drivers=("s3.csi.aws.com",),
        ),
        AddonSpec(
            name="aws-fsx-csi-driver",
            type="storage",
            versions=("v1.5.0-eksbuild.1", "v1.4.0-eksbuild.1"),
            compatible={"v1.4.0-eksbuild.1": ("1.28", "1.32")},
            no_inline_pod_identity=("v1.4.0-eksbuild.1",),
            namespace="kube-system",
            create_seconds=110,
            requires_iam_permissions=True,
            pod_identity_service_accounts=("fsx-csi-controller-sa",),
            workloads=(
                Workload("Deployment", "fsx-csi-controller", "aws-fsx-csi-driver", 2, "fsx-csi-controller-sa"),
                Workload("DaemonSet", "fsx-csi-node", "aws-fsx-csi-driver", 1, "fsx-csi-node-sa"),
            ),
            csi_drivers=("fsx.csi.aws.com",),
        ),
        AddonSpec(
            name="amazon-cloudwatch-observability",
            type="observability",
            versions=("v4.1.0-eksbuild.1", "v3.6.0-eksbuild.2"),
            compatible={"v3.6.0-eksbuild.2": ("1.28", "1.32")},
            no_inline_pod_identity=("v3.6.0-eksbuild.2",),
            namespace="amazon-cloudwatch",
            owns_namespace=True,
            create_seconds=150,
            requires_iam_permissions=True,
            pod_identity_service_accounts=("cloudwatch-agent",),
            workloads=(
                Workload(
                    "Deployment",
                    "amazon-cloudwatch-observability-controller-manager",
                    "cloudwatch-agent/cloudwatch-agent-operator",
                    1,
                ),
                Workload(
                    "DaemonSet",
                    "cloudwatch-agent",
                    "cloudwatch-agent/cloudwatch-agent",
                    1,
                    "cloudwatch-agent",
                ),
                Workload("DaemonSet", "fluent-bit", "aws-for-fluent-bit", 1, "cloudwatch-agent"),
            ),
            crds=(
                Crd(
                    "cloudwatch.aws.amazon.com",
                    "AmazonCloudWatchAgent",
                    "amazoncloudwatchagents",
                    ("v1alpha1",),
                ),
            ),
        ),
        AddonSpec(
            name="amazon-sagemaker-hyperpod-training-operator",
            type="machine-learning",
            versions=("v1.2.0-eksbuild.1", "v1.1.0-eksbuild.1", "v1.0.0-eksbuild.1"),
            compatible={"v1.0.0-eksbuild.1": ("1.28", "1.31"), "v1.1.0-eksbuild.1": ("1.28", "1.33")},
            no_inline_pod_identity=("v1.0.0-eksbuild.1",),
            namespace="aws-hyperpod",
            owns_namespace=True,
            create_seconds=150,
            requires=("cert-manager", "eks-pod-identity-agent"),
            requires_iam_permissions=True,
            pod_identity_service_accounts=("hp-training-operator-controller-manager",),
            workloads=(
                Workload(
                    "Deployment",
                    "hp-training-operator-controller-manager",
                    "hyperpod-training-operator",
                    1,
                    "hp-training-operator-controller-manager",
                ),
            ),
            crds=(
                Crd(
                    "sagemaker.amazonaws.com",
                    "HyperPodPyTorchJob",
                    "hyperpodpytorchjobs",
                    ("v1",),
                    "Namespaced",
                    _PYTORCHJOB_SPEC,
                    status_schema=_PYTORCHJOB_STATUS,
                ),
            ),
        ),
        AddonSpec(
            name="amazon-sagemaker-hyperpod-inference",
            type="machine-learning",
            versions=("v1.1.0-eksbuild.1", "v1.0.0-eksbuild.1"),
            compatible={"v1.1.0-eksbuild.1": ("1.30", "1.34"), "v1.0.0-eksbuild.1": ("1.30", "1.32")},
            no_inline_pod_identity=("v1.0.0-eksbuild.1",),
            namespace="hyperpod-inference-system",
            owns_namespace=True,
            create_seconds=180,
            requires=("cert-manager", "eks-pod-identity-agent"),
            requires_iam_permissions=True,
            pod_identity_service_accounts=("hyperpod-inference-operator-controller-manager",),
            workloads=(
                Workload(
                    "Deployment",
                    "hyperpod-inference-operator-controller-manager",
                    "hyperpod-inference-operator",
                    1,
                    "hyperpod-inference-operator-controller-manager",
                ),
            ),
            crds=(
                Crd(
                    "inference.sagemaker.aws.amazon.com",
                    "InferenceEndpointConfig",
                    "inferenceendpointconfigs",
                    ("v1", "v1alpha1"),
                    spec_schema=_inference_endpoint_spec(require_instance_type=False),
                    version_schemas={"v1alpha1": _inference_endpoint_spec(require_instance_type=True, v1=False)},
                    scale=True,
                    status_schema=_INFERENCE_STATUS,
                ),
                Crd(
                    "inference.sagemaker.aws.amazon.com",
                    "JumpStartModel",
                    "jumpstartmodels",
                    ("v1", "v1alpha1"),
                    spec_schema=_JUMPSTART_SPEC,
                    scale=True,
                    status_schema=_INFERENCE_STATUS,
                ),
                Crd(
                    "inference.sagemaker.aws.amazon.com",
                    "SageMakerEndpointRegistration",
                    "sagemakerendpointregistrations",
                    ("v1", "v1alpha1"),
                    spec_schema=_REGISTRATION_SPEC,
                    status_schema=_REGISTRATION_STATUS,
                ),
            ),
        ),
        AddonSpec(
            name="amazon-sagemaker-hyperpod-observability",
            type="observability",
            versions=("v1.0.1-eksbuild.1", "v1.0.0-eksbuild.1"),
            compatible={"v1.0.0-eksbuild.1": ("1.28", "1.32")},
            no_inline_pod_identity=("v1.0.0-eksbuild.1",),
            namespace="hyperpod-observability",
            owns_namespace=True,
            create_seconds=140,
            requires_iam_permissions=True,
            pod_identity_service_accounts=("hyperpod-observability-operator-otel-collector",),
            workloads=(
                Workload("Deployment", "hyperpod-observability-operator", "hyperpod-observability-operator", 1),
                Workload(
                    "DaemonSet",
                    "hyperpod-node-collector",
                    "hyperpod-observability-collector",
                    1,
                    "hyperpod-observability-operator-otel-collector",
                ),
            ),
        ),
        AddonSpec(
            name="amazon-sagemaker-hyperpod-taskgovernance",
            type="machine-learning",
            versions=("v1.2.0-eksbuild.1", "v1.1.0-eksbuild.1"),
            compatible={"v1.1.0-eksbuild.1": ("1.28", "1.32")},
            namespace="kueue-system",
            owns_namespace=True,
            create_seconds=130,
            workloads=(
                Workload("Deployment", "kueue-controller-manager", "kueue/kueue", 1, "kueue-controller-manager"),
            ),
            crds=(
                Crd("kueue.x-k8s.io", "ClusterQueue", "clusterqueues", ("v1beta1",), "Cluster", _CLUSTER_QUEUE_SPEC),
                Crd(
                    "kueue.x-k8s.io",
                    "LocalQueue",
                    "localqueues",
                    ("v1beta1",),
                    spec_schema=_obj(
                        {"required": ["clusterQueue"], "properties": {"clusterQueue": {"type": "string"}}}
                    ),
                ),
                Crd(
                    "kueue.x-k8s.io",
                    "ResourceFlavor",
                    "resourceflavors",
                    ("v1beta1",),
                    "Cluster",
                    _obj({"properties": {"nodeLabels": _obj(), "nodeTaints": {"type": "array", "items": _obj()}}}),
                ),
                Crd("kueue.x-k8s.io", "Workload", "workloads", ("v1beta1",)),
                Crd(
                    "kueue.x-k8s.io",
                    "WorkloadPriorityClass",
                    "workloadpriorityclasses",
                    ("v1beta1",),
                    "Cluster",
                    top_level={"value": {"type": "integer", "format": "int32"}, "description": {"type": "string"}},
                    top_level_required=("value",),
                ),
            ),
        ),
    )
}


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2] if part.isdigit())


def compatible(spec: AddonSpec, version: str, kubernetes_version: str) -> bool:
    """Whether add-on ``version`` of ``spec`` runs on Kubernetes ``kubernetes_version`` (e.g. ``"1.33"``)."""
    low, high = spec.compatible.get(version, (KUBERNETES_VERSIONS[0], KUBERNETES_VERSIONS[-1]))
    return _minor(low) <= _minor(kubernetes_version) <= _minor(high)


def versions_for(spec: AddonSpec, kubernetes_version: str) -> list[str]:
    """The add-on versions compatible with ``kubernetes_version``, newest (default) first."""
    return [v.replace("{k8s}", kubernetes_version) for v in spec.versions if compatible(spec, v, kubernetes_version)]


def all_versions(spec: AddonSpec) -> list[str]:
    """Every version of ``spec`` for any Kubernetes version (to tell "incompatible" from "unknown")."""
    return list(spec.versions)


def addon_version_info(spec: AddonSpec, kubernetes_versions: tuple[str, ...]) -> list[dict[str, Any]]:
    """``addonVersions`` of DescribeAddonVersions for ``spec`` across ``kubernetes_versions``."""
    by_version: dict[str, list[dict[str, Any]]] = {}
    for k8s in kubernetes_versions:
        for index, version in enumerate(versions_for(spec, k8s)):
            by_version.setdefault(version, []).append(
                {"clusterVersion": k8s, "platformVersions": ["*"], "defaultVersion": index == 0}
            )
    return [
        {
            "addonVersion": version,
            "architecture": ["amd64", "arm64"],
            "computeTypes": ["ec2", "hyperpod"],
            "compatibilities": compat,
            "requiresConfiguration": False,
            "requiresIamPermissions": spec.requires_iam_permissions,
        }
        for version, compat in by_version.items()
    ]


def _crd_object(crd: Crd) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{crd.plural}.{crd.group}"},
        "spec": {
            "group": crd.group,
            "names": {
                "kind": crd.kind,
                "listKind": f"{crd.kind}List",
                "plural": crd.plural,
                "singular": crd.kind.lower(),
            },
            "scope": crd.scope,
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": index == 0,
                    "subresources": _subresources(crd),
                    "schema": {"openAPIV3Schema": _root_schema(crd, version)},
                }
                for index, version in enumerate(crd.versions)
            ],
        },
    }


def _subresources(crd: Crd) -> dict[str, Any]:
    out: dict[str, Any] = {"status": {}}
    if crd.scale:
        out["scale"] = {
            "specReplicasPath": ".spec.replicas",
            "statusReplicasPath": ".status.replicas",
            "labelSelectorPath": ".status.selector",
        }
    return out


def _root_schema(crd: Crd, version: str) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": crd.version_schemas.get(version) or crd.spec_schema or _obj(),
            "status": crd.status_schema or _obj(),
            **crd.top_level,
        },
    }
    if crd.top_level_required:
        schema["required"] = list(crd.top_level_required)
    if crd.top_level and not crd.spec_schema:
        del schema["properties"]["spec"]
    return schema


def addon_objects(spec: AddonSpec, version: str, region: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """The Kubernetes objects add-on ``spec`` at ``version`` installs, in apply order.

    The namespace comes first (applying an existing one is harmless), then CRDs, CSIDrivers,
    ServiceAccounts and workloads.
    """
    ns = namespace or spec.namespace
    managed = {
        "app.kubernetes.io/managed-by": "EKS",
        "eks.amazonaws.com/addon": spec.name,
    }
    objects: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}]
    objects += [_crd_object(crd) for crd in spec.crds]
    for driver in spec.csi_drivers:
        objects.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSIDriver",
                "metadata": {"name": driver, "labels": dict(managed)},
                "spec": {"attachRequired": False, "podInfoOnMount": True, "fsGroupPolicy": "File"},
            }
        )
    service_accounts = sorted({w.service_account for w in spec.workloads if w.service_account})
    for sa in service_accounts:
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": sa, "namespace": ns, "labels": managed},
            }
        )
    for workload in spec.workloads:
        labels = {"app.kubernetes.io/name": workload.name, **spec.labels}
        pod_spec: dict[str, Any] = {
            "containers": [
                {
                    "name": workload.name,
                    "image": f"{ECR.format(region=region)}/{workload.image}:{version}",
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                }
            ],
        }
        if workload.service_account:
            pod_spec["serviceAccountName"] = workload.service_account
        body: dict[str, Any] = {
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        }
        if workload.kind == "Deployment":
            body["replicas"] = workload.replicas
        objects.append(
            {
                "apiVersion": "apps/v1",
                "kind": workload.kind,
                "metadata": {"name": workload.name, "namespace": ns, "labels": {**labels, **managed}},
                "spec": body,
            }
        )
    return objects
