"""Configuration of the control plane, read once per process (Lambda cold start) into a model.

Domain code never reads ``os.environ``: handlers call :func:`get_settings` and pass values down.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Environment of every function (names are the template's ``Environment.Variables``)."""

    model_config = SettingsConfigDict(case_sensitive=True, extra="ignore", frozen=True)

    AWS_REGION: str = "us-west-2"
    TABLE_NAME: str = "instantstart"
    CREATE_CLUSTER_STATE_MACHINE_ARN: str = ""
    DELETE_CLUSTER_STATE_MACHINE_ARN: str = ""
    EVENT_BUS_NAME: str = "default"
    LIFECYCLE_BUCKET: str = ""
    EKS_CLUSTER_ROLE_ARN: str = ""
    HYPERPOD_EXECUTION_ROLE_ARN: str = ""
    CONTROL_PLANE_ROLE_ARN: str = ""
    STORAGE_ROLE_PATH: str = "/instantstart/"
    STORAGE_PERMISSIONS_BOUNDARY_ARN: str = ""
    KUBERNETES_VERSION: str = "1.32"
    POWERTOOLS_SERVICE_NAME: str = "instantstart"
    DEFAULT_PAGE_SIZE: int = Field(default=20, ge=1, le=100)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached: read once at cold start)."""
    return Settings()
