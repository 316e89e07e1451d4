"""The slice of the sandbox Kubernetes API (``instantstart_sandbox.kube``) the AWS side drives, as typing protocols."""

from __future__ import annotations

from typing import Any, Protocol


class KubeClusterLike(Protocol):
    """One emulated Kubernetes cluster (``instantstart_sandbox.kube.KubeCluster``)."""

    def create(self, obj: dict[str, Any]) -> Any:
        """Create ``obj`` (fails when it exists)."""

    def apply(self, obj: dict[str, Any], field_manager: str = "sandbox") -> Any:
        """Server-side apply ``obj`` (creates when absent)."""

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
        """The object, or an error when absent."""

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> Any:
        """Objects of a kind."""

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
        """Delete an object."""


class KubeApiServerLike(Protocol):
    """The sandbox Kubernetes API server (``instantstart_sandbox.kube.KubeApiServer``)."""

    ca_pem: str

    def add_cluster(self, name: str) -> str:
        """Register cluster ``name`` (idempotent); its endpoint URL."""

    def remove_cluster(self, name: str) -> None:
        """Forget cluster ``name`` and its objects."""

    def cluster(self, name: str) -> Any:
        """The :class:`KubeClusterLike` of ``name``."""
