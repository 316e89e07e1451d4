"""The routes of models, self-managed inference deployments and managed inference endpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from instantstart_client.api.operations import OperationsApi


class InferenceApi(OperationsApi):
    """``/clusters/{clusterTag}/models``, ``.../inference/deployments`` and ``.../inference/endpoints``."""

    # -- models and self-managed inference ------------------------------------------------------------
    def download_model(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/models``: download a Hugging Face model into the cluster's storage (202).

        Args:
            body: ``{"source": "huggingface", "modelId", "revision"?, "destination": "s3"|"fsx", "hfTokenSecret"?:
                {"name", "key"}}`` (a Secret reference, never a token).

        Returns:
            ``{"modelId", "destination", "location", "modelPath", "jobName", "operation": Operation}``; the
            operation's ``result`` carries ``downloadedBytes``/``downloadedFiles`` while it runs.

        Raises:
            ApiError: 409 ``FeatureNotEnabled`` (fsx), ``ClusterNotReady``, or ``OperationInProgress`` (a download
                of the same model to the same destination runs; other operations of the cluster do not block it);
                422 a field.
        """
        arguments = {"clusterTag": cluster_tag}
        return dict(self.call_operation("DownloadModel", arguments, body=dict(body), idempotency_key=idempotency_key))

    def list_models(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/models``: ``{"bucket", "models": [{"modelId", "destination", "modelPath",
        "sizeBytes", "files", ...}], "fsx": {"listed", "reason", ...}}`` read from the bucket (``models/``, and the FSx
        file system's export under ``fsx/models/``)."""
        return dict(self.call_operation("ListModels", {"clusterTag": cluster_tag}))

    def create_inference_deployment(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/inference/deployments``: a vLLM or SGLang Deployment + Service (202).

        Args:
            body: ``{"name", "engine": "vllm"|"sglang", "modelPath", "servedModelName", "instanceType", "gpus",
                "maxModelLen"?, "replicas", "port"?, "image"?, "service"?: {"type", "exposure"}, "hfTokenSecret"?}``.

        Returns:
            ``{"name", "namespace", "operation": Operation}``.

        Raises:
            ApiError: 409 an operation running, the name taken, fsx off; 422 a field (``instanceType`` lists the
                cluster's types in ``details[0]["allowedValues"]``).
        """
        arguments = {"clusterTag": cluster_tag}
        out = self.call_operation(
            "CreateInferenceDeployment", arguments, body=dict(body), idempotency_key=idempotency_key
        )
        return dict(out)

    def list_inference_deployments(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/inference/deployments``: ``{"deployments": [...]}`` by name."""
        return dict(self.call_operation("ListInferenceDeployments", {"clusterTag": cluster_tag}))

    def get_inference_deployment(self, cluster_tag: str, name: str) -> dict[str, Any]:
        """``GET .../inference/deployments/{name}``: status, replicas, pods, Service, router."""
        return dict(self.call_operation("GetInferenceDeployment", {"clusterTag": cluster_tag, "name": name}))

    def scale_inference_deployment(
        self, cluster_tag: str, name: str, replicas: int, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``PATCH .../inference/deployments/{name}`` ``{"replicas"}`` (202); 409 ``BoundPodsWouldBeRemoved``."""
        arguments = {"clusterTag": cluster_tag, "name": name}
        body = {"replicas": replicas}
        return dict(
            self.call_operation("ScaleInferenceDeployment", arguments, body=body, idempotency_key=idempotency_key)
        )

    def delete_inference_deployment(
        self, cluster_tag: str, name: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``DELETE .../inference/deployments/{name}`` (202): the Deployment, Service and router go."""
        arguments = {"clusterTag": cluster_tag, "name": name}
        return dict(self.call_operation("DeleteInferenceDeployment", arguments, idempotency_key=idempotency_key))

    def create_inference_router(
        self, cluster_tag: str, name: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST .../inference/deployments/{name}/router`` (202): the SGLang router, optional KEDA autoscaling.

        Args:
            body: ``{"policy"?, "replicas"?, "autoscaling"?: {"minReplicas", "maxReplicas",
                "prometheusServerAddress", "queueThreshold"}}``.

        Raises:
            ApiError: 409 ``RouterNeedsSGLang`` or ``KedaNotInstalled``.
        """
        arguments = {"clusterTag": cluster_tag, "name": name}
        out = self.call_operation("CreateInferenceRouter", arguments, body=dict(body), idempotency_key=idempotency_key)
        return dict(out)

    def invoke_inference_deployment(
        self,
        cluster_tag: str,
        name: str,
        body: Mapping[str, Any],
        *,
        route: str | None = None,
        via: str | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        """``POST .../inference/deployments/{name}/invoke``: the engine's answer through the Kubernetes service proxy.

        Args:
            body: the JSON sent to the engine (``model`` defaults to the served model name).
            route: ``v1/completions`` (default) or ``v1/chat/completions``.
            via: ``router`` or ``service`` (default: the router when there is one).

        Returns:
            ``{"service", "port", "route", "contentType", "body", "text", "truncated"}``.

        Raises:
            ApiError: 413 ``body`` above 1 MiB; 409 ``InferenceDeploymentNotReady``; 502 ``ModelError`` (the
                engine's error verbatim); 503 Kubernetes refused the proxy or the engine did not answer in time.
        """
        payload: dict[str, Any] = {"body": dict(body)}
        if route is not None:
            payload["route"] = route
        if via is not None:
            payload["via"] = via
        arguments = {"clusterTag": cluster_tag, "name": name}
        out = self.call_operation("InvokeInferenceDeployment", arguments, body=payload, idempotency_key=idempotency_key)
        return dict(out)

    # -- managed inference endpoints (the HyperPod inference operator) --------------------------------------------
    def create_inference_endpoint(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/inference/endpoints``: a managed endpoint of the inference operator (202).

        Args:
            body: ``{"name", "instanceType", "replicas"?, "modelSource"?: {"type": "s3"|"fsx"|"huggingface", ...},
                "worker"?: {"image", "port"?, "volumeMountPath"?, "resources"?, "environment"?}, "jumpStart"?,
                "kvCacheSpec"?, "intelligentRoutingSpec"?, "tls"?, "autoscaling"?, "maxDeployTimeSeconds"?}``.

        Returns:
            ``{"name", "namespace", "kind", "apiVersion", "endpointName", "operation": Operation}``.

        Raises:
            ApiError: 409 ``FeatureNotEnabled`` (inferenceOperator, tieredCheckpointing), an operation running, the
                name taken; 422 a field (``instanceType`` lists the cluster's types; a field the served version
                does not know names it with ``servedVersion``).
        """
        arguments = {"clusterTag": cluster_tag}
        out = self.call_operation(
            "CreateInferenceEndpoint", arguments, body=dict(body), idempotency_key=idempotency_key
        )
        return dict(out)

    def list_inference_endpoints(self, cluster_tag: str) -> dict[str, Any]:
        """``GET .../inference/endpoints``: ``{"endpoints": [{"name", "kind", "state", "endpointName", ...}]}``."""
        return dict(self.call_operation("ListInferenceEndpoints", {"clusterTag": cluster_tag}))

    def get_inference_endpoint(self, cluster_tag: str, name: str) -> dict[str, Any]:
        """``GET .../inference/endpoints/{name}``: state, conditions, SageMaker endpoint, pods and their events."""
        return dict(self.call_operation("GetInferenceEndpoint", {"clusterTag": cluster_tag, "name": name}))

    def delete_inference_endpoint(
        self, cluster_tag: str, name: str, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``DELETE .../inference/endpoints/{name}`` (202): done once SageMaker no longer finds the endpoint."""
        arguments = {"clusterTag": cluster_tag, "name": name}
        return dict(self.call_operation("DeleteInferenceEndpoint", arguments, idempotency_key=idempotency_key))

    def invoke_inference_endpoint(
        self, cluster_tag: str, name: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST .../inference/endpoints/{name}/invoke`` ``{"body": {...}}``: the model's answer.

        Returns:
            ``{"endpointName", "contentType", "invokedProductionVariant", "body", "text", "truncated"}``.

        Raises:
            ApiError: 413 ``body`` above 1 MiB; 409/502 SageMaker's refusal verbatim. The answer is cut at 256 KiB
                (``truncated``); a repeated ``idempotency_key`` replays the first answer.
        """
        arguments = {"clusterTag": cluster_tag, "name": name}
        payload = {"body": dict(body)}
        out = self.call_operation("InvokeInferenceEndpoint", arguments, body=payload, idempotency_key=idempotency_key)
        return dict(out)
