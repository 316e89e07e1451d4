"""SageMaker managed MLflow models of ``/clusters/{clusterTag}/mlflow``.

A cluster connects to one MLflow tracking server or MLflow app: an existing one by ARN, or one created for it
(``CreateMlflowTrackingServer`` / ``CreateMlflowApp``, artifact store ``s3://<cluster bucket>/mlflow/``). Training pods
log to it through a pod identity (an IAM role for a service account of one namespace). Patterns are botocore's
``sagemaker`` shapes (``TrackingServerArn``, ``MlflowAppArn``, ``MlflowVersion``).

API reference: https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateMlflowTrackingServer.html,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_CreateMlflowApp.html
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from instantstart.models.cluster import TIMESTAMP_EXAMPLE
from instantstart.models.common import ApiModel
from instantstart.models.errors import pattern_rule

TRACKING_SERVER_ARN_PATTERN = (
    r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:[0-9]{12}:mlflow-tracking-server/[a-zA-Z0-9](-*[a-zA-Z0-9]){0,255}$"
)
"""botocore ``TrackingServerArn`` (anchored, with a server name)."""
TRACKING_SERVER_ARN_RULE = "arn:aws:sagemaker:<region>:<account>:mlflow-tracking-server/<name>"
MLFLOW_APP_ARN_PATTERN = r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]+:[0-9]{12}:mlflow-app/[a-zA-Z0-9\-]{1,256}$"
"""botocore ``MlflowAppArn`` (anchored)."""
MLFLOW_APP_ARN_RULE = "arn:aws:sagemaker:<region>:<account>:mlflow-app/<id>"
MLFLOW_VERSION_PATTERN = r"^[0-9]+\.[0-9]+\.[0-9]+$"
NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
NAMESPACE_RULE = "a Kubernetes namespace name: 1-63 lowercase letters, digits or hyphens"
DEFAULT_NAMESPACE = "default"
"""The training namespace whose service account gets the MLflow pod identity when the request names none."""


class MlflowKind(StrEnum):
    """What the cluster is connected to: a tracking server or an MLflow app."""

    TRACKING_SERVER = "trackingServer"
    APP = "app"


class TrackingServerSize(StrEnum):
    """``TrackingServerSize`` of CreateMlflowTrackingServer."""

    SMALL = "Small"
    MEDIUM = "Medium"
    LARGE = "Large"


class MlflowCreate(ApiModel):
    """Create a tracking server or an MLflow app for the cluster (named ``instantstart-<clusterTag>``)."""

    kind: MlflowKind = Field(description="trackingServer (CreateMlflowTrackingServer) or app (CreateMlflowApp).")
    size: TrackingServerSize | None = Field(
        default=None, description="Tracking servers only: TrackingServerSize (default Small)."
    )
    mlflow_version: str | None = Field(
        default=None,
        pattern=MLFLOW_VERSION_PATTERN,
        max_length=16,
        description="Tracking servers only: MlflowVersion, e.g. 3.0.0 (default: SageMaker's).",
        examples=["3.0.0"],
        json_schema_extra=pattern_rule("an MLflow version such as 3.0.0"),
    )

    @model_validator(mode="after")
    def _server_fields_only_for_servers(self) -> MlflowCreate:
        if self.kind is MlflowKind.APP and (self.size is not None or self.mlflow_version is not None):
            raise ValueError("create.size and create.mlflowVersion are for kind trackingServer only")
        return self


class UpdateMlflowRequest(ApiModel):
    """Body of ``PUT /clusters/{clusterTag}/mlflow``.

    Connect (``enabled`` true, the default): exactly one of ``trackingServerArn``, ``mlflowAppArn`` (an existing one in
    this account and Region) or ``create``. Disconnect: ``{"enabled": false}`` and nothing else; what the connection
    created is removed (a server or app only when it was created here).
    """

    enabled: bool = Field(default=True, strict=True, description="true: connect; false: disconnect.")
    tracking_server_arn: str | None = Field(
        default=None,
        pattern=TRACKING_SERVER_ARN_PATTERN,
        max_length=2048,
        description="An existing tracking server of this account and Region to connect (DescribeMlflowTrackingServer).",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/team-mlflow"],
        json_schema_extra=pattern_rule(TRACKING_SERVER_ARN_RULE),
    )
    mlflow_app_arn: str | None = Field(
        default=None,
        pattern=MLFLOW_APP_ARN_PATTERN,
        max_length=2048,
        description="An existing MLflow app of this account and Region to connect (DescribeMlflowApp).",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:mlflow-app/app-ABCDEF123456"],
        json_schema_extra=pattern_rule(MLFLOW_APP_ARN_RULE),
    )
    create: MlflowCreate | None = Field(default=None, description="Create one for the cluster instead.")
    namespace: str | None = Field(
        default=None,
        pattern=NAMESPACE_PATTERN,
        max_length=63,
        description="The training namespace whose service account gets the pod identity "
        f"(default {DEFAULT_NAMESPACE}).",
        examples=["default"],
        json_schema_extra=pattern_rule(NAMESPACE_RULE),
    )

    @model_validator(mode="after")
    def _exactly_one_target(self) -> UpdateMlflowRequest:
        given = [
            k
            for k, v in (
                ("trackingServerArn", self.tracking_server_arn),
                ("mlflowAppArn", self.mlflow_app_arn),
                ("create", self.create),
            )
            if v is not None
        ]
        if not self.enabled:
            if given or self.namespace is not None:
                raise ValueError("enabled: false disconnects and takes no other field")
            return self
        if len(given) != 1:
            raise ValueError(
                "give exactly one of trackingServerArn, mlflowAppArn or create"
                + (f" (got {', '.join(given)})" if given else "")
            )
        return self


class MlflowChange(ApiModel):
    """What an ``UPDATE_MLFLOW`` operation changes (stored on the operation record, read by its steps)."""

    enabled: bool
    kind: MlflowKind | None = None
    arn: str | None = Field(default=None, description="Connect: the existing resource; create: set once created.")
    create: MlflowCreate | None = None
    namespace: str = DEFAULT_NAMESPACE


class MlflowConnection(ApiModel):
    """The cluster's MLflow connection (recorded on the cluster record by the ``UPDATE_MLFLOW`` operation).

    ``environment`` is what training pods need (the ``sagemaker-mlflow`` plugin takes the ARN as
    ``MLFLOW_TRACKING_URI``); pods get AWS credentials from the pod identity of ``serviceAccountName`` in
    ``namespace``.
    """

    kind: MlflowKind
    arn: str = Field(description="The tracking server's or app's ARN.")
    name: str = Field(description="Its name.")
    created: bool = Field(description="True when this control plane created it (disconnect and delete remove it).")
    artifact_store_uri: str | None = None
    namespace: str = DEFAULT_NAMESPACE
    service_account_name: str = Field(description="The service account training pods run as to log to MLflow.")
    pod_role_arn: str = Field(description="The IAM role of that service account (EKS Pod Identity).")
    operation_id: str | None = None
    connected_at: str | None = None

    @property
    def environment(self) -> dict[str, str]:
        """The environment of a training container: ``MLFLOW_TRACKING_URI`` (the ARN, resolved by the
        ``sagemaker-mlflow`` plugin), ``MLFLOW_TRACKING_SERVER_ARN`` or ``MLFLOW_APP_ARN``."""
        key = "MLFLOW_TRACKING_SERVER_ARN" if self.kind is MlflowKind.TRACKING_SERVER else "MLFLOW_APP_ARN"
        return {"MLFLOW_TRACKING_URI": self.arn, key: self.arn}


class MlflowView(ApiModel):
    """Body of ``GET /clusters/{clusterTag}/mlflow`` (and of a PUT that changes nothing)."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    connected: bool = Field(description="True when the cluster has an MLflow connection.", examples=[True])
    kind: MlflowKind | None = Field(
        default=None, description="trackingServer or app; null when not connected.", examples=["trackingServer"]
    )
    arn: str | None = Field(
        default=None,
        description="The tracking server's or app's ARN.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/instantstart-demo"],
    )
    name: str | None = Field(
        default=None, description="The tracking server's or app's name.", examples=["instantstart-demo"]
    )
    created: bool | None = Field(default=None, description="True when this control plane created it.")
    status: str | None = Field(
        default=None,
        description="Its status read from SageMaker now (TrackingServerStatus / Status), or NotFound when it is gone.",
        examples=["Created"],
    )
    tracking_server_url: str | None = Field(
        default=None,
        description="TrackingServerUrl (tracking servers).",
        examples=["https://t-abc.us-west-2.experiments.sagemaker.aws"],
    )
    mlflow_version: str | None = Field(default=None, description="MlflowVersion SageMaker reports.", examples=["3.0.0"])
    artifact_store_uri: str | None = Field(
        default=None,
        description="ArtifactStoreUri: where artifacts go in S3.",
        examples=["s3://instantstart-demo-123456789012-us-west-2/mlflow/"],
    )
    namespace: str | None = Field(
        default=None, description="The training namespace of the pod identity.", examples=["default"]
    )
    service_account_name: str | None = Field(
        default=None,
        description="The service account training pods run as to log to MLflow.",
        examples=["instantstart-mlflow"],
    )
    pod_role_arn: str | None = Field(
        default=None,
        description="The IAM role of that service account (EKS Pod Identity).",
        examples=["arn:aws:iam::123456789012:role/instantstart/instantstart-demo-mlflow"],
    )
    environment: dict[str, str] = Field(
        default_factory=dict, description="Environment variables a training container gets to log to it."
    )
    operation_id: str | None = Field(
        default=None,
        description="The UPDATE_MLFLOW operation that connected it.",
        examples=["op-0123456789abcdef0123456789abcdef"],
    )
    connected_at: str | None = Field(
        default=None,
        description="When that operation recorded the connection (ISO 8601).",
        examples=[TIMESTAMP_EXAMPLE],
    )


class MlflowRunView(ApiModel):
    """One MLflow run of a training job: ids, status, times, params and the latest value of each metric."""

    run_id: str = Field(description="MLflow run id.", examples=["5f1c9c0a7e0d4f0e9d2b1a3c4e5f6a7b"])
    run_name: str | None = Field(default=None, description="MLflow run name.", examples=["llama-sft-rank0"])
    status: str | None = Field(
        default=None, description="RUNNING, SCHEDULED, FINISHED, FAILED or KILLED.", examples=["FINISHED"]
    )
    start_time: int | None = Field(default=None, description="Start, epoch milliseconds.")
    end_time: int | None = Field(default=None, description="End, epoch milliseconds (null while running).")
    params: dict[str, str] = Field(default_factory=dict, description="Logged parameters.")
    metrics: dict[str, float] = Field(default_factory=dict, description="The latest value of each metric.")
    tags: dict[str, str] = Field(default_factory=dict, description="Run tags (MLflow's own mlflow.* left out).")


class MlflowRunList(ApiModel):
    """The MLflow runs of one training job (experiment = cluster tag, run tag ``instantstart.job`` = job name)."""

    cluster_tag: str = Field(description="Cluster tag.", examples=["demo"])
    job_name: str = Field(description="The training job.", examples=["llama-sft"])
    experiment_name: str = Field(description="The MLflow experiment searched (the cluster tag).", examples=["demo"])
    mlflow_arn: str = Field(
        description="The tracking server or app searched.",
        examples=["arn:aws:sagemaker:us-west-2:123456789012:mlflow-tracking-server/instantstart-demo"],
    )
    runs: list[MlflowRunView] = Field(default_factory=list, description="Newest first.")
