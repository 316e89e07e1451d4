"""The Amazon Managed Service for Prometheus workspace of the ``observability`` feature.

The HyperPod observability add-on remote-writes its metrics to a Prometheus workspace given in its configuration
(``{"ampWorkspace": {"prometheusEndpoint": ..., "arn": ...}}``; an Amazon Managed Grafana workspace,
``amgWorkspace``, is optional and not created here: users connect their Grafana to the workspace). The workspace is
the cluster's: alias :func:`workspace_alias`, the cluster's ownership tags plus ``instantstart:feature=observability``;
only such a workspace is ever deleted.

APIs: ``ListWorkspaces`` (alias prefix), ``DescribeWorkspace``, ``CreateWorkspace``, ``DeleteWorkspace``
(https://docs.aws.amazon.com/prometheus/latest/APIReference/API_Operations.html).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from instantstart.aws.clients import error_code
from instantstart.naming import owned_by, ownership_tags

FEATURE = "observability"


@dataclass(frozen=True)
class WorkspaceObservation:
    """One workspace as DescribeWorkspace reports it (``status.statusCode``: CREATING, ACTIVE, UPDATING,
    DELETING, CREATION_FAILED, ...)."""

    workspace_id: str
    arn: str
    status: str
    prometheus_endpoint: str | None


def workspace_alias(tag: str) -> str:
    """Alias of the cluster's workspace: ``instantstart-<tag>-observability``."""
    return f"instantstart-{tag}-{FEATURE}"


def observe_workspaces(amp: Any, tag: str) -> list[WorkspaceObservation]:
    """The workspaces with the cluster's alias and ownership tags (DELETING ones included), oldest API order.

    Calls ``ListWorkspaces`` (every page) and ``DescribeWorkspace`` for each one found.
    """
    found: list[WorkspaceObservation] = []
    kwargs: dict[str, Any] = {"alias": workspace_alias(tag)}
    while True:
        out = amp.list_workspaces(**kwargs)
        for summary in out.get("workspaces", []):
            if summary.get("alias") != workspace_alias(tag):
                continue  # ListWorkspaces matches the alias as a prefix
            try:
                ws = amp.describe_workspace(workspaceId=summary["workspaceId"])["workspace"]
            except ClientError as exc:
                if error_code(exc) == "ResourceNotFoundException":
                    continue
                raise
            if not owned_by(ws.get("tags") or {}, tag):
                continue
            found.append(
                WorkspaceObservation(
                    workspace_id=str(ws["workspaceId"]),
                    arn=str(ws["arn"]),
                    status=str((ws.get("status") or {}).get("statusCode")),
                    prometheus_endpoint=ws.get("prometheusEndpoint"),
                )
            )
        if not out.get("nextToken"):
            return found
        kwargs["nextToken"] = out["nextToken"]


def live(workspaces: list[WorkspaceObservation]) -> WorkspaceObservation | None:
    """The workspace that is not being deleted, if any."""
    return next((w for w in workspaces if w.status not in ("DELETING", "CREATION_FAILED")), None)


def create_workspace(amp: Any, tag: str) -> str:
    """``CreateWorkspace`` with the cluster's alias and tags; returns the workspace id."""
    out = amp.create_workspace(
        alias=workspace_alias(tag), tags=ownership_tags(tag, **{"instantstart:feature": FEATURE})
    )
    return str(out["workspaceId"])


def delete_workspaces(amp: Any, workspaces: list[WorkspaceObservation]) -> list[str]:
    """``DeleteWorkspace`` each observed (owned) workspace not already DELETING; returns the ids deleted."""
    deleted = []
    for ws in workspaces:
        if ws.status == "DELETING":
            continue
        try:
            amp.delete_workspace(workspaceId=ws.workspace_id)
        except ClientError as exc:
            if error_code(exc) != "ResourceNotFoundException":
                raise
            continue
        deleted.append(ws.workspace_id)
    return deleted


def configuration_values(ws: WorkspaceObservation) -> str:
    """The HyperPod observability add-on's ``configurationValues`` naming the workspace (JSON)."""
    return json.dumps({"ampWorkspace": {"prometheusEndpoint": ws.prometheus_endpoint, "arn": ws.arn}})


def references(configuration: str | None, ws: WorkspaceObservation) -> bool:
    """The add-on's configuration names this workspace (its ARN and endpoint)."""
    try:
        loaded = json.loads(configuration or "{}")
    except ValueError:
        return False
    amp_ws = loaded.get("ampWorkspace") if isinstance(loaded, dict) else None
    return (
        isinstance(amp_ws, dict)
        and amp_ws.get("arn") == ws.arn
        and amp_ws.get("prometheusEndpoint") == ws.prometheus_endpoint
    )


def teardown(amp: Any, tag: str) -> list[str]:
    """Delete the cluster's workspaces (cluster deletion); returns ``DeleteWorkspace <id>`` for each."""
    return [f"DeleteWorkspace {i}" for i in delete_workspaces(amp, observe_workspaces(amp, tag))]
