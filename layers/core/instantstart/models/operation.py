"""Operation models: one operation is one Step Functions execution (its name is the operation id)."""

from __future__ import annotations

from pydantic import Field

from instantstart.models.cluster import StageError
from instantstart.models.common import ApiModel, OperationStatus, OperationType


class OperationView(ApiModel):
    """Body of ``GET /operations/{operationId}`` and of every 202 answer."""

    operation_id: str
    type: OperationType
    status: OperationStatus
    cluster_tag: str
    status_url: str
    created_at: str
    updated_at: str
    started_at: str | None = None
    ended_at: str | None = None
    stage: str | None = Field(default=None, description="For RETRY_STAGE: the stage retried.")
    execution_arn: str | None = None
    error: StageError | None = None
