"""Configuration of the control plane, read once per process (Lambda cold start) into a model.

Domain code never reads ``os.environ``: handlers build a :class:`~instantstart.runtime.Runtime` at cold
start with the settings they require (:func:`load_settings`), and pass it down. A missing required
setting stops the cold start with a message naming it, instead of a 503 on the first request.

:class:`Settings` is a plain pydantic model filled from ``os.environ`` (exact names; keyword arguments first),
not ``pydantic-settings``: importing that costs every cold start about a third of ``import boto3``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class MissingSettings(RuntimeError):
    """Required settings are empty or absent from the function's environment."""


class Settings(BaseModel):
    """Environment of every function (names are the template's ``Environment.Variables``).

    A field not given as a keyword argument takes the environment variable of its exact name, else its default.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    AWS_REGION: str = "us-west-2"
    TABLE_NAME: str = ""
    """The control plane's DynamoDB table (required by every function: no default, a missing one stops the cold
    start)."""
    CREATE_CLUSTER_STATE_MACHINE_ARN: str = ""
    DELETE_CLUSTER_STATE_MACHINE_ARN: str = ""
    UPDATE_CLUSTER_STATE_MACHINE_ARN: str = ""
    EVENT_BUS_NAME: str = "default"
    LIFECYCLE_BUCKET: str = ""
    EKS_CLUSTER_ROLE_ARN: str = ""
    HYPERPOD_EXECUTION_ROLE_ARN: str = ""
    CONTROL_PLANE_ROLE_ARN: str = ""
    API_ROLE_ARN: str = ""
    """The API function's role: the access stage gives it a read-only EKS access entry (empty: none is made and
    the API's Kubernetes reads answer ``unknown``)."""
    STORAGE_ROLE_PATH: str = "/instantstart/"
    STORAGE_PERMISSIONS_BOUNDARY_ARN: str = ""
    KUBERNETES_VERSION: str = "1.32"
    POWERTOOLS_SERVICE_NAME: str = "instantstart"
    DEFAULT_PAGE_SIZE: int = Field(default=20, ge=1, le=100)

    @model_validator(mode="before")
    @classmethod
    def _from_environment(cls, data: Any) -> Any:
        # Keyword arguments win over the environment, which wins over the defaults (as pydantic-settings does).
        if not isinstance(data, dict):
            return data
        environment = {name: os.environ[name] for name in cls.model_fields if name in os.environ}
        return {**environment, **data}

    def require(self, names: Iterable[str]) -> Settings:
        """This settings object, after checking that every one of ``names`` is set (not empty).

        Raises:
            MissingSettings: names the empty settings and where they come from.
        """
        missing = [n for n in names if not str(getattr(self, n, "") or "").strip()]
        if missing:
            raise MissingSettings(
                f"required settings are not set: {', '.join(missing)}; they are the function's environment "
                "variables (template.yaml, Environment.Variables)"
            )
        return self


API_SETTINGS = (
    "TABLE_NAME",
    "CREATE_CLUSTER_STATE_MACHINE_ARN",
    "DELETE_CLUSTER_STATE_MACHINE_ARN",
    "UPDATE_CLUSTER_STATE_MACHINE_ARN",
)
"""What the API function cannot work without."""

STEP_SETTINGS = (
    "TABLE_NAME",
    "EVENT_BUS_NAME",
    "LIFECYCLE_BUCKET",
    "EKS_CLUSTER_ROLE_ARN",
    "HYPERPOD_EXECUTION_ROLE_ARN",
    "CONTROL_PLANE_ROLE_ARN",
)
"""What the workflow steps function cannot work without."""

EVENT_SETTINGS = ("TABLE_NAME", "EVENT_BUS_NAME")
"""What the event reconcilers cannot work without."""

SWEEP_SETTINGS = (
    "TABLE_NAME",
    "EVENT_BUS_NAME",
    "CREATE_CLUSTER_STATE_MACHINE_ARN",
    "DELETE_CLUSTER_STATE_MACHINE_ARN",
    "UPDATE_CLUSTER_STATE_MACHINE_ARN",
)
"""What the reconciliation sweep cannot work without (it reads and starts the operations' executions)."""


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached: read once at cold start)."""
    return Settings()


def load_settings(required: Iterable[str]) -> Settings:
    """The process-wide settings, checked for ``required`` names.

    Raises:
        MissingSettings: a required setting is empty.
    """
    return get_settings().require(required)
