"""What every core entry point needs: settings, the store and AWS clients, built once per process."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from instantstart.aws.clients import client
from instantstart.config import Settings, load_settings
from instantstart.store.table import Store

CLUSTER_NAMES_KEPT = 1024
"""Cluster generations whose names a process keeps (a warm Lambda execution environment serves many)."""


@dataclass
class Runtime:
    """Dependencies of the core library (handlers build one at cold start; tests build their own)."""

    settings: Settings
    cluster_names: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict, repr=False, compare=False)
    """``(tag, generation)`` -> ``(EKS cluster name, HyperPod cluster name)``, fixed for a generation
    (:func:`instantstart.clusters.records.eks_name`); bounded by :data:`CLUSTER_NAMES_KEPT`."""

    @classmethod
    def from_env(cls, required: Iterable[str] = ()) -> Runtime:
        """The runtime of this process, from the environment read once into :class:`Settings`.

        Raises:
            MissingSettings: one of ``required`` is not set (the cold start stops with its name).
        """
        return cls(load_settings(required))

    def remember_cluster_names(self, tag: str, generation: int, names: tuple[str, str]) -> None:
        """Keep a generation's cluster names (the oldest half is forgotten past :data:`CLUSTER_NAMES_KEPT`)."""
        if len(self.cluster_names) >= CLUSTER_NAMES_KEPT:
            for key in list(self.cluster_names)[: CLUSTER_NAMES_KEPT // 2]:
                del self.cluster_names[key]
        self.cluster_names[(tag, generation)] = names

    @property
    def region(self) -> str:
        """The AWS Region of this deployment."""
        return self.settings.AWS_REGION

    def client(self, service: str) -> Any:
        """A cached boto3 client of ``service`` in this Region."""
        return client(service, self.region)

    @cached_property
    def store(self) -> Store:
        """The DynamoDB store of records."""
        return Store(self.client("dynamodb"), self.settings.TABLE_NAME)

    @cached_property
    def account_id(self) -> str:
        """The AWS account id (STS ``GetCallerIdentity``, once per process)."""
        return str(self.client("sts").get_caller_identity()["Account"])
