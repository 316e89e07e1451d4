"""The routes of training jobs and managed MLflow."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from instantstart_client.api.operations import OperationsApi


class TrainingApi(OperationsApi):
    """``/clusters/{clusterTag}/training-jobs`` (and their MLflow runs) and ``/clusters/{clusterTag}/mlflow``."""

    # -- training jobs ---------------------------------------------------------------------------------

    def create_training_job(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``POST /clusters/{clusterTag}/training-jobs``: create a job from a recipe (202).

        Args:
            body: ``{"recipe": "pytorch"|"script"|"llamafactory"|"msswift"|"verl", "name", "instanceType",
                "image", "nodes", ...}`` (the recipe's shape in the OpenAPI document).

        Returns:
            ``{"name", "namespace", "kind", "operation": Operation}``: poll the operation, then follow the job.

        Raises:
            ApiError: 409 ``FeatureNotEnabled`` (trainingOperator) or an operation running; 422 a field (unpinned
                image, name, more GPUs or nodes than the cluster has: ``details`` carry the numbers).
        """
        arguments = {"clusterTag": cluster_tag}
        return dict(
            self.call_operation("CreateTrainingJob", arguments, body=dict(body), idempotency_key=idempotency_key)
        )

    def list_training_jobs(
        self,
        cluster_tag: str,
        *,
        namespace: str | None = None,
        max_results: int | None = None,
        next_token: str | None = None,
    ) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/training-jobs``: ``{"trainingJobs": [...], "nextToken"}`` newest first."""
        arguments = {
            "clusterTag": cluster_tag,
            "namespace": namespace,
            "maxResults": max_results,
            "nextToken": next_token,
        }
        return dict(self.call_operation("ListTrainingJobs", arguments))

    def get_training_job(self, cluster_tag: str, name: str, *, namespace: str = "default") -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/training-jobs/{name}``: status, conditions, restart history, pods."""
        return dict(
            self.call_operation("GetTrainingJob", {"clusterTag": cluster_tag, "name": name, "namespace": namespace})
        )

    def get_training_job_logs(
        self,
        cluster_tag: str,
        name: str,
        *,
        namespace: str = "default",
        pod: str | None = None,
        container: str | None = None,
        tail_lines: int | None = None,
        since_seconds: int | None = None,
    ) -> dict[str, Any]:
        """``GET .../training-jobs/{name}/logs``: ``{"pod", "container", "text", "truncated"}`` (rank 0 by default)."""
        arguments = {
            "clusterTag": cluster_tag,
            "name": name,
            "namespace": namespace,
            "pod": pod,
            "container": container,
            "tailLines": tail_lines,
            "sinceSeconds": since_seconds,
        }
        return dict(self.call_operation("GetTrainingJobLogs", arguments))

    def delete_training_job(
        self, cluster_tag: str, name: str, *, namespace: str = "default", idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``DELETE /clusters/{clusterTag}/training-jobs/{name}``: ``{"name", "namespace", "kind", "operation"}``."""
        arguments = {"clusterTag": cluster_tag, "name": name, "namespace": namespace}
        return dict(self.call_operation("DeleteTrainingJob", arguments, idempotency_key=idempotency_key))

    # -- managed MLflow ---------------------------------------------------------------------------------
    def get_mlflow(self, cluster_tag: str) -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/mlflow``: the cluster's SageMaker managed MLflow connection.

        Returns:
            ``{"clusterTag", "connected", "kind", "arn", "name", "created", "status", "trackingServerUrl",
            "artifactStoreUri", "namespace", "serviceAccountName", "podRoleArn", "environment", ...}``; ``status`` is
            read from SageMaker now (``NotFound`` when the server is gone).

        Raises:
            ApiError: 404 ``ClusterNotFound``.
        """
        return dict(self.call_operation("GetMlflow", {"clusterTag": cluster_tag}))

    def update_mlflow(
        self, cluster_tag: str, body: Mapping[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """``PUT /clusters/{clusterTag}/mlflow``: connect, create or disconnect.

        Args:
            body: ``{"trackingServerArn": ...}``, ``{"mlflowAppArn": ...}``, ``{"create": {"kind": "trackingServer" |
                "app", "size"?, "mlflowVersion"?}}`` (each with an optional ``namespace``), or ``{"enabled": false}``.

        Returns:
            The ``UPDATE_MLFLOW`` Operation (202), or the connection view (200) when the request is already so.

        Raises:
            ApiError: 404 unknown cluster or ARN; 409 an operation runs, another connection, a failed server, a name
                taken; 422 an ARN of another Region or account or a malformed body (``details[0]["field"]``).
        """
        arguments = {"clusterTag": cluster_tag}
        return dict(self.call_operation("UpdateMlflow", arguments, body=dict(body), idempotency_key=idempotency_key))

    def delete_mlflow(self, cluster_tag: str, *, idempotency_key: str | None = None) -> dict[str, Any]:
        """``DELETE /clusters/{clusterTag}/mlflow``: disconnect (the server only goes when it was created here).

        Returns:
            The ``UPDATE_MLFLOW`` Operation (202), or ``{"connected": false, ...}`` (200) when not connected.
        """
        return dict(self.call_operation("DeleteMlflow", {"clusterTag": cluster_tag}, idempotency_key=idempotency_key))

    def list_training_job_runs(self, cluster_tag: str, job_name: str, *, namespace: str = "default") -> dict[str, Any]:
        """``GET /clusters/{clusterTag}/training-jobs/{name}/runs``: the MLflow runs of job ``namespace/job_name``.

        Returns:
            ``{"clusterTag", "jobName", "experimentName", "mlflowArn", "runs": [{"runId", "runName", "status",
            "startTime", "endTime", "params", "metrics", "tags"}]}`` (newest first; ``metrics`` holds latest values).

        Raises:
            ApiError: 404 unknown cluster or ``TrainingJobNotFound`` (no such job in the namespace); 409
                ``MlflowNotConnected`` / ``MlflowNotReady``; 503 MLflow or Kubernetes did not answer.
        """
        arguments = {"clusterTag": cluster_tag, "name": job_name, "namespace": namespace}
        return dict(self.call_operation("ListTrainingJobRuns", arguments))
