"""Dispatch of Step Functions task payloads to the workflow steps.

A task payload is ``{"action": str, "operationId", "clusterTag", "generation", ...}``; the
action names are the ones the committed ASL uses. AWS errors are re-raised as exceptions named
after the AWS error code so ``Retry``/``Catch`` can match them and the failure path records the
code and message verbatim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError
from pydantic import BaseModel, ConfigDict, Field

from instantstart.aws.clients import error_code, error_message
from instantstart.clusters import provision, teardown, workflow
from instantstart.errors import StageFailed, aws_error
from instantstart.models.common import ClusterStatus, StageName
from instantstart.runtime import Runtime


class StepPayload(BaseModel):
    """The payload every task passes (built by the ASL from the execution input)."""

    model_config = ConfigDict(extra="ignore")

    action: str
    operation_id: str = Field(alias="operationId")
    cluster_tag: str = Field(alias="clusterTag")
    generation: int
    stage: StageName | None = None
    addon_name: str | None = Field(default=None, alias="addonName")
    task_token: str | None = Field(default=None, alias="taskToken")
    error: dict[str, Any] | None = None
    operation_type: str | None = Field(default=None, alias="operationType")


def _stage(p: StepPayload) -> StageName:
    if p.stage is None:
        raise StageFailed("InvalidStepPayload", f"action {p.action} needs a stage")
    return p.stage


Step = Callable[[Runtime, StepPayload], dict[str, Any]]

ACTIONS: dict[str, Step] = {
    "begin_stage": lambda rt, p: workflow.begin_stage(
        rt, operation_id=p.operation_id, tag=p.cluster_tag, generation=p.generation, stage=_stage(p)
    ),
    "complete_stage": lambda rt, p: workflow.complete_stage(
        rt,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=_stage(p),
        observed_status=provision.stage_summary(rt, p.cluster_tag, p.generation, _stage(p)),
    ),
    "record_failure": lambda rt, p: workflow.record_failure(
        rt,
        operation_id=p.operation_id,
        tag=p.cluster_tag,
        generation=p.generation,
        stage=p.stage if p.operation_type != "DELETE_CLUSTER" else None,
        error=p.error,
        cluster_status=ClusterStatus.FAILED,
    ),
    "ensure_network": lambda rt, p: provision.ensure_network(rt, p.cluster_tag, p.generation),
    "check_nat_gateway": lambda rt, p: provision.check_nat_gateway(rt, p.cluster_tag, p.generation),
    "create_eks_cluster": lambda rt, p: provision.create_eks_cluster(rt, p.cluster_tag, p.generation),
    "check_eks_cluster": lambda rt, p: provision.check_eks_cluster(rt, p.cluster_tag, p.generation),
    "grant_access": lambda rt, p: provision.grant_access(rt, p.cluster_tag, p.generation),
    "check_kubernetes_access": lambda rt, p: provision.check_kubernetes_access(rt, p.cluster_tag, p.generation),
    "plan_addons": lambda rt, p: provision.plan_addons(rt, p.cluster_tag, p.generation),
    "create_addon": lambda rt, p: provision.create_addon(rt, p.cluster_tag, p.generation, str(p.addon_name)),
    "check_addon": lambda rt, p: provision.check_addon(rt, p.cluster_tag, p.generation, str(p.addon_name)),
    "apply_hyperpod_prerequisites": lambda rt, p: provision.apply_hyperpod_prerequisites(
        rt, p.cluster_tag, p.generation
    ),
    "ensure_compute_subnet": lambda rt, p: provision.ensure_compute_subnet(rt, p.cluster_tag, p.generation),
    "clear_failed_hyperpod_cluster": lambda rt, p: provision.clear_failed_hyperpod_cluster(
        rt, p.cluster_tag, p.generation
    ),
    "create_hyperpod_cluster": lambda rt, p: provision.create_hyperpod_cluster(
        rt, p.cluster_tag, p.generation, str(p.task_token)
    ),
    "check_hyperpod_cluster": lambda rt, p: provision.check_hyperpod_cluster(rt, p.cluster_tag, p.generation),
    "ensure_storage": lambda rt, p: provision.ensure_storage(rt, p.cluster_tag, p.generation),
    "check_storage": lambda rt, p: provision.check_storage(rt, p.cluster_tag, p.generation),
    "verify_cluster": lambda rt, p: provision.verify_cluster(rt, p.cluster_tag, p.generation),
    "complete_create": lambda rt, p: provision.complete_create(rt, p.operation_id, p.cluster_tag),
    "begin_teardown": lambda rt, p: teardown.mark_teardown(rt, p.cluster_tag, p.generation, _stage(p), "RUNNING"),
    "complete_teardown": lambda rt, p: teardown.mark_teardown(rt, p.cluster_tag, p.generation, _stage(p), "SUCCEEDED"),
    "delete_storage": lambda rt, p: teardown.delete_storage(rt, p.cluster_tag, p.generation),
    "delete_hyperpod_cluster": lambda rt, p: teardown.delete_hyperpod_cluster(rt, p.cluster_tag, p.generation),
    "delete_addons": lambda rt, p: teardown.delete_addons(rt, p.cluster_tag, p.generation),
    "revoke_access": lambda rt, p: teardown.revoke_access(rt, p.cluster_tag, p.generation),
    "delete_eks_cluster": lambda rt, p: teardown.delete_eks_cluster(rt, p.cluster_tag, p.generation),
    "delete_network": lambda rt, p: teardown.delete_network(rt, p.cluster_tag, p.generation),
    "complete_delete": lambda rt, p: teardown.complete_delete(rt, p.operation_id, p.cluster_tag),
}
"""Every task action the state machines use; a contract test checks the ASL uses only these."""


def run_step(rt: Runtime, event: dict[str, Any]) -> dict[str, Any]:
    """Run the step named by ``event["action"]``.

    Raises:
        StageFailed: unknown action, or a step failure; AWS ``ClientError`` s become exceptions named
            after their AWS error code (message verbatim).
    """
    payload = StepPayload.model_validate(event)
    step = ACTIONS.get(payload.action)
    if step is None:
        raise StageFailed("UnknownAction", f"unknown step action {payload.action!r}")
    try:
        return step(rt, payload)
    except ClientError as exc:
        raise aws_error(error_code(exc) or "AwsError", error_message(exc)) from exc
    except BotoCoreError as exc:
        raise aws_error(type(exc).__name__, str(exc)) from exc
    except (ApiException, DynamicApiError) as exc:
        reason = str(getattr(exc, "reason", "") or "Error").replace(" ", "")
        raise aws_error(f"Kubernetes{reason}", f"Kubernetes API {getattr(exc, 'status', '')}: {exc}") from exc
