"""Builds the committed state machine definitions (``*.asl.json``) from one set of conventions.

Run ``python statemachines/build.py`` after changing a workflow; a contract test fails when the
committed JSON differs from what this produces. The stage list comes from the core's ``StageName``
(its order is the create order; teardown runs it in reverse). Conventions:
every Task has Retry (throttling, Lambda service errors, transient SDK errors, IAM role propagation,
S3 OperationAborted; in the create and delete workflows also a crashed or timed-out function; exponential
backoff with full jitter) and Catch to the single failure path; every
poll loop has a counter, a bound from the execution input and a failure branch; intervals are realistic
seconds from the input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from instantstart.aws.transient import TRANSIENT_ERROR_CODES
from instantstart.models.common import StageName

HERE = Path(__file__).resolve().parent
STEPS_FN = "${ClusterStepsFunctionArn}"
FAILURE = "Record Failure"

RETRY: list[dict[str, Any]] = [
    {
        "ErrorEquals": [
            "Lambda.ServiceException",
            "Lambda.AWSLambdaException",
            "Lambda.SdkClientException",
            "Lambda.TooManyRequestsException",
        ],
        "IntervalSeconds": 2,
        "MaxAttempts": 6,
        "BackoffRate": 2,
        "MaxDelaySeconds": 60,
        "JitterStrategy": "FULL",
    },
    {
        "ErrorEquals": list(TRANSIENT_ERROR_CODES),
        "IntervalSeconds": 5,
        # 8: once botocore's per-client retry quota is spent, each attempt meets a fault (the fault matrix)
        "MaxAttempts": 8,
        "BackoffRate": 2,
        "MaxDelaySeconds": 60,
        "JitterStrategy": "FULL",
    },
    # IAM is eventually consistent: a role created moments ago may not be assumable by EKS/SageMaker
    # yet (instantstart.clusters.steps.error_name). Bounded: at most 8 retries, waits capped at 120 s
    # (about 10 minutes in all before jitter); a role that never becomes assumable then fails verbatim.
    {
        "ErrorEquals": ["RolePropagationDelay"],
        "IntervalSeconds": 10,
        "MaxAttempts": 8,
        "BackoffRate": 2,
        "MaxDelaySeconds": 120,
        "JitterStrategy": "FULL",
    },
    # S3 OperationAborted ("A conflicting conditional operation is currently in progress against this
    # resource. Please try again."): e.g. CreateBucket of a name deleted moments ago. Same bound.
    {
        "ErrorEquals": ["OperationAborted"],
        "IntervalSeconds": 10,
        "MaxAttempts": 8,
        "BackoffRate": 2,
        "MaxDelaySeconds": 120,
        "JitterStrategy": "FULL",
    },
]

CRASH_RETRY: dict[str, Any] = {
    # The function died after some AWS call and before it answered: a crashed runtime ("Runtime.ExitError", out of
    # memory) or one killed at its Timeout ("Sandbox.Timedout"); Step Functions' documentation names these unhandled
    # errors "Lambda.Unknown", Lambda's invoke answer names them by errorType: both readings are matched. Every step
    # of the create and delete workflows inspects AWS and the records before it writes, so running it again
    # converges (checked by tests/crash: each step killed after each of its AWS calls). Not ``States.Timeout``: the
    # event-or-poll waits' own timeout is caught to re-enter the wait, and no other task has a TimeoutSeconds.
    "ErrorEquals": ["Lambda.Unknown", "Runtime.ExitError", "Sandbox.Timedout"],
    "IntervalSeconds": 2,
    "MaxAttempts": 3,
    "BackoffRate": 2,
    "MaxDelaySeconds": 30,
    "JitterStrategy": "FULL",
}
"""Retry of a crashed or timed-out step (create and delete workflows: :func:`with_crash_retry`)."""

COMMON = {
    "operationId.$": "$.operationId",
    "operationType.$": "$.operationType",
    "clusterTag.$": "$.clusterTag",
    "generation.$": "$.generation",
}


def task(
    action: str,
    next_state: str | None,
    *,
    result_path: str | None = "$.last",
    extra: dict[str, Any] | None = None,
    catch_to: str = FAILURE,
    wait_for_token: bool = False,
    timeout_path: str | None = None,
    timeout_next: str | None = None,
) -> dict[str, Any]:
    """A Lambda task of the steps function running ``action``."""
    payload = {"action": action, **COMMON, **(extra or {})}
    state: dict[str, Any] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke" + (".waitForTaskToken" if wait_for_token else ""),
        "Parameters": {"FunctionName": STEPS_FN, "Payload": payload},
    }
    if wait_for_token:
        payload["taskToken.$"] = "$$.Task.Token"
        state["TimeoutSecondsPath"] = timeout_path
    else:
        state["ResultSelector"] = {"result.$": "$.Payload"}
    state["ResultPath"] = result_path
    state["Retry"] = RETRY
    catches: list[dict[str, Any]] = []
    if timeout_next:
        catches.append({"ErrorEquals": ["States.Timeout"], "ResultPath": "$.timeout", "Next": timeout_next})
    catches.append({"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": catch_to})
    state["Catch"] = catches
    if next_state is None:
        state["End"] = True
    else:
        state["Next"] = next_state
    return state


def _counted_loop(
    name: str,
    *,
    key: str,
    start: str,
    check: dict[str, Any],
    count: str,
    done_next: str,
    between: tuple[str, dict[str, Any]],
    timed_out: str,
    unit: str,
    catch_to: str,
    add_timed_out: bool = True,
) -> dict[str, dict[str, Any]]:
    """The bounded loop both waits share: reset the counter, check, count, one Choice, a state between checks.

    ``check`` is the ``Check <name>`` task (it must go on to ``count``); ``between`` is the state that
    leads back to it (a Wait, or a task waiting for an event). The Choice tests done first, then the
    bound ``$.config.maxPolls.<key>`` (one Choice per round: state transitions are what Step Functions
    bills). At the bound the workflow goes to ``timed_out`` (a PollTimeout failure when ``add_timed_out``).
    """
    between_name, between_state = between
    states: dict[str, dict[str, Any]] = {
        start: {"Type": "Pass", "Result": {"value": 0}, "ResultPath": "$.pollCount", "Next": f"Check {name}"},
        f"Check {name}": check,
        count: {
            "Type": "Pass",
            "Parameters": {"value.$": "States.MathAdd($.pollCount.value, 1)"},
            "ResultPath": "$.pollCount",
            "Next": f"Is {name} Done",
        },
        f"Is {name} Done": {
            "Type": "Choice",
            "Choices": [
                {"Variable": "$.last.result.done", "BooleanEquals": True, "Next": done_next},
                {
                    "Variable": "$.pollCount.value",
                    "NumericGreaterThanEqualsPath": f"$.config.maxPolls.{key}",
                    "Next": timed_out,
                },
            ],
            "Default": between_name,
        },
        between_name: between_state,
    }
    if add_timed_out:
        states[timed_out] = {
            "Type": "Pass",
            "Parameters": {
                "Error": "PollTimeout",
                "Cause.$": f"States.Format('{name} did not finish within {{}} {unit} of {{}} seconds', "
                f"$.config.maxPolls.{key}, $.config.pollSeconds.{key})",
            },
            "ResultPath": "$.error",
            "Next": catch_to,
        }
    return states


def poll_loop(
    name: str,
    action: str,
    key: str,
    done_next: str,
    *,
    extra: dict[str, Any] | None = None,
    catch_to: str = FAILURE,
) -> dict[str, dict[str, Any]]:
    """A bounded poll loop: reset counter, check, count, done or bound reached?, wait, check again.

    The entry state is ``Start Polling <name>``; ``$.config.pollSeconds.<key>`` is the interval and
    ``$.config.maxPolls.<key>`` the bound.
    """
    return _counted_loop(
        name,
        key=key,
        start=f"Start Polling {name}",
        check=task(action, f"Count {name} Poll", extra=extra, catch_to=catch_to),
        count=f"Count {name} Poll",
        done_next=done_next,
        between=(
            f"Wait Before Checking {name}",
            {"Type": "Wait", "SecondsPath": f"$.config.pollSeconds.{key}", "Next": f"Check {name}"},
        ),
        timed_out=f"{name} Timed Out",
        unit="polls",
        catch_to=catch_to,
    )


def wait_loop(
    name: str,
    action: str,
    key: str,
    done_next: str,
    *,
    stage: StageName | None,
    catch_to: str,
    exhausted_next: str | None = None,
) -> dict[str, dict[str, Any]]:
    """An event-or-poll wait (``instantstart.clusters.waits``): one task looping on itself, bounded.

    ``Check <name>`` is a ``.waitForTaskToken`` task whose Lambda checks AWS: when done it completes
    its own task (``{"done": true}``); otherwise it stores the token, which an EventBridge reconciler
    sends (``{"done": false}``: check again now), or the task times out after
    ``$.config.pollSeconds.<key>`` and its ``States.Timeout`` Catch enters it again. ``Is <name> Done``
    leaves the loop. A timed-out round is one state transition, a woken one two. The Lambda counts
    timed-out rounds on the stage record (``stage`` None: on the operation's record, a day-2 change) and
    fails the task with ``PollTimeout`` at
    ``$.config.maxPolls.<key>``: that goes to ``exhausted_next`` when given, else to the failure path.
    """
    check = f"Check {name}"
    state = task(
        action,
        f"Is {name} Done",
        extra={**({"stage": stage.value} if stage else {}), "waitName": key, "config.$": "$.config"},
        catch_to=catch_to,
        wait_for_token=True,
        timeout_path=f"$.config.pollSeconds.{key}",
        timeout_next=check,
    )
    state["ResultSelector"] = {"result.$": "$"}
    if exhausted_next:
        state["Catch"].insert(1, {"ErrorEquals": ["PollTimeout"], "ResultPath": "$.error", "Next": exhausted_next})
    return {
        check: state,
        f"Is {name} Done": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.last.result.done", "BooleanEquals": True, "Next": done_next}],
            "Default": check,
        },
    }


def stage_edges(
    stage: StageName, title: str, first: str, last_next: str, *, catch_to: str
) -> dict[str, dict[str, Any]]:
    """``Begin <Title> Stage`` (then ``first``) and ``Complete <Title> Stage`` (then ``last_next``).

    ``Begin`` failing (its record cannot be written) goes through ``Begin <Title> Stage Failed``, which names this
    stage as ``$.currentStage`` for the failure path: it still holds the stage before, which already SUCCEEDED, and
    the error would otherwise be recorded on no stage at all.
    """
    return {
        f"Begin {title} Stage": {
            **task(
                "begin_stage",
                f"Is {title} Stage Needed",
                extra={"stage": stage.value},
                result_path="$.currentStage",
                catch_to=f"Begin {title} Stage Failed",
            ),
            "ResultSelector": {"stage.$": "$.Payload.stage", "skip.$": "$.Payload.skip"},
        },
        f"Begin {title} Stage Failed": {
            "Type": "Pass",
            "Result": {"stage": stage.value, "skip": False},
            "ResultPath": "$.currentStage",
            "Next": catch_to,
        },
        # A retry walks the graph from the retried stage's step: a stage that already SUCCEEDED is skipped.
        f"Is {title} Stage Needed": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.currentStage.skip", "BooleanEquals": True, "Next": last_next}],
            "Default": first,
        },
        f"Complete {title} Stage": task("complete_stage", last_next, extra={"stage": stage.value}, catch_to=catch_to),
    }


def failure_path() -> dict[str, dict[str, Any]]:
    """The single failure path: record the error (stage, operation, cluster; events), then fail."""
    return {
        FAILURE: task(
            "record_failure",
            "Workflow Failed",
            extra={"stage.$": "$.currentStage.stage", "error.$": "$.error"},
            catch_to="Workflow Failed",
        ),
        "Workflow Failed": {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"},
    }


def branch_failure_path(branch: str) -> dict[str, dict[str, Any]]:
    """The failure path inside a Parallel branch: record the branch's failed stage, then fail the branch."""
    return {
        f"Record {branch} Failure": task(
            "record_failure",
            f"{branch} Failed",
            extra={"stage.$": "$.currentStage.stage", "error.$": "$.error"},
            catch_to=f"{branch} Failed",
        ),
        f"{branch} Failed": {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"},
    }


StageStates = Callable[[str, str], dict[str, dict[str, Any]]]
"""Builds a stage's states: ``(the state after the stage, the failure state) -> states``."""


def _network_states(after: str, fail: str) -> dict[str, dict[str, Any]]:
    """VPC and subnets, then CreateCluster of EKS at once: the NAT gateway and, once it is available, the
    HyperPod compute subnets (routed through it) come up while EKS creates, off the critical path."""
    states = {
        "Ensure Network": task("ensure_network", "Create EKS Cluster", catch_to=fail),
        "Create EKS Cluster": task("create_eks_cluster", "Check NAT Gateway", catch_to=fail),
    }
    states |= wait_loop(
        "NAT Gateway",
        "check_nat_gateway",
        "natGateway",
        "Ensure Compute Subnet",
        stage=StageName.NETWORK,
        catch_to=fail,
    )
    states["Ensure Compute Subnet"] = task("ensure_compute_subnet", "Check EKS Cluster", catch_to=fail)
    states |= wait_loop("EKS Cluster", "check_eks_cluster", "eksCluster", after, stage=StageName.NETWORK, catch_to=fail)
    return states


def _access_states(after: str, fail: str) -> dict[str, dict[str, Any]]:
    states = {"Grant Access": task("grant_access", "Check Kubernetes Access", catch_to=fail)}
    states |= wait_loop(
        "Kubernetes Access", "check_kubernetes_access", "kubernetesAccess", after, stage=StageName.ACCESS, catch_to=fail
    )
    return states


def _dependencies_states(after: str, fail: str) -> dict[str, dict[str, Any]]:
    """Every add-on requested at once (EKS installs them in parallel), the Kubernetes objects, one wait.

    Only what HyperPod needs before nodes join is waited for here (the pod identity agent, the
    objects); add-ons whose workloads are Deployments only need to exist: ``verify`` checks them
    after nodes joined.
    """
    states = {
        "Create Add-ons": task("create_addons", "Apply HyperPod Prerequisites", catch_to=fail),
        "Apply HyperPod Prerequisites": task("apply_hyperpod_prerequisites", "Check Add-ons", catch_to=fail),
    }
    states |= wait_loop("Add-ons", "check_addons", "addon", after, stage=StageName.DEPENDENCIES, catch_to=fail)
    return states


def _hyperpod_states(after: str, fail: str) -> dict[str, dict[str, Any]]:
    """No Failed cluster in the way, CreateCluster, then an event-or-poll wait for InService (the State Change
    event wakes it). The compute subnets are the network stage's (an imported VPC's are made in the first check)."""
    states = wait_loop(
        "Failed HyperPod Cluster",
        "clear_failed_hyperpod_cluster",
        "hyperPodCluster",
        "Create HyperPod Cluster",
        stage=StageName.HYPERPOD,
        catch_to=fail,
    )
    states["Create HyperPod Cluster"] = task("create_hyperpod_cluster", "Check HyperPod Cluster", catch_to=fail)
    states |= wait_loop(
        "HyperPod Cluster", "check_hyperpod_cluster", "hyperPodCluster", after, stage=StageName.HYPERPOD, catch_to=fail
    )
    return states


def _storage_states(after: str, fail: str) -> dict[str, dict[str, Any]]:
    """The bucket at once; then wait for Kubernetes access (woken by the access stage), apply the PV and PVC,
    wait until Bound."""
    states = {"Ensure Bucket": task("ensure_bucket", "Check Storage Access", catch_to=fail)}
    states |= wait_loop(
        "Storage Access",
        "check_storage_access",
        "storageAccess",
        "Check Storage",
        stage=StageName.STORAGE,
        catch_to=fail,
    )
    states |= wait_loop("Storage", "check_storage", "storage", after, stage=StageName.STORAGE, catch_to=fail)
    return states


def _verify_states(after: str, fail: str) -> dict[str, dict[str, Any]]:
    """An event-or-poll wait for every group at target (cluster events wake it); its budget ends in a report."""
    states = wait_loop(
        "Cluster Verification",
        "check_cluster_verification",
        "nodes",
        after,
        stage=StageName.VERIFY,
        catch_to=fail,
        exhausted_next="Report Node Shortfall",
    )
    states["Report Node Shortfall"] = task("report_node_shortfall", after, catch_to=fail)
    return states


CREATE_STAGES: dict[StageName, tuple[str, StageStates]] = {
    StageName.NETWORK: ("Ensure Network", _network_states),
    StageName.ACCESS: ("Grant Access", _access_states),
    StageName.DEPENDENCIES: ("Create Add-ons", _dependencies_states),
    StageName.HYPERPOD: ("Check Failed HyperPod Cluster", _hyperpod_states),
    StageName.STORAGE: ("Ensure Bucket", _storage_states),
    StageName.VERIFY: ("Check Cluster Verification", _verify_states),
}
"""Each stage's first state and the builder of its states."""

CREATE_GRAPH: list[StageName | list[list[StageName]]] = [
    [[StageName.NETWORK, StageName.ACCESS, StageName.DEPENDENCIES, StageName.HYPERPOD], [StageName.STORAGE]],
    StageName.VERIFY,
]
"""The create workflow as a dependency graph: steps in order; a list of chains runs as parallel branches.

Only what HyperPod needs before nodes join (the pod identity agent, the Kubernetes objects) gates
CreateCluster. Storage needs nothing to create its bucket, so it starts with the network; its wait
then holds until the ``access`` stage let the control plane into the Kubernetes API, and it applies
the volume and claim. Verify needs all.
"""


SEQUENTIAL_GRAPH: list[StageName | list[list[StageName]]] = list(StageName)
"""Every stage after the one before it, in ``StageName`` order: the previous design's order, the baseline
``benchmarks/critical_path.py`` runs (``python statemachines/build.py --sequential FILE``). Never committed."""


def _entry(step: StageName | list[list[StageName]]) -> str:
    if isinstance(step, StageName):
        return f"Begin {step.display_name} Stage"
    return "Provision In Parallel"


def _chain(stages: list[StageName], after: str, fail: str) -> dict[str, dict[str, Any]]:
    """The states of stages run one after another, then ``after``."""
    states: dict[str, dict[str, Any]] = {}
    for i, stage in enumerate(stages):
        nxt = f"Begin {stages[i + 1].display_name} Stage" if i + 1 < len(stages) else after
        first, build = CREATE_STAGES[stage]
        states |= stage_edges(stage, stage.display_name, first, nxt, catch_to=fail)
        states |= build(f"Complete {stage.display_name} Stage", fail)
    return states


def _branch(chain: list[StageName]) -> dict[str, Any]:
    """One Parallel branch: a chain of stages with its own failure path (it records its own failed stage)."""
    name = " And ".join(s.display_name for s in chain)
    states = _chain(chain, f"{name} Done", f"Record {name} Failure")
    states[f"{name} Done"] = {"Type": "Succeed"}
    states |= branch_failure_path(name)
    return {"StartAt": f"Begin {chain[0].display_name} Stage", "States": states}


def with_crash_retry(definition: dict[str, Any]) -> dict[str, Any]:
    """``definition`` with :data:`CRASH_RETRY` after the common retries of every Task (inside Parallel branches too).

    Only for workflows whose every step is idempotent (create, delete); the day-2 workflow's changes are not swept
    by the crash suite, so a crash there ends the operation FAILED with the error verbatim.
    """
    for state in definition["States"].values():
        if state["Type"] == "Task":
            state["Retry"] = [*state["Retry"], CRASH_RETRY]
        for branch in state.get("Branches", []):
            with_crash_retry(branch)
    return definition


def create_cluster(graph: list[StageName | list[list[StageName]]] | None = None) -> dict[str, Any]:
    """The create-cluster (and retry-stage) workflow over ``graph`` (:data:`CREATE_GRAPH`), entered at
    ``$.startStage``.

    A retry enters at the FAILED stage's step of the graph: that stage, the stages after it and the
    stages beside it in the same parallel step run again (a SUCCEEDED stage is skipped by its own
    ``begin_stage``). ``SEQUENTIAL_GRAPH`` builds the benchmark's baseline.
    """
    graph = CREATE_GRAPH if graph is None else graph
    graph_stages = [
        s for step in graph for s in ([step] if isinstance(step, StageName) else [x for c in step for x in c])
    ]
    missing = set(StageName) - set(CREATE_STAGES)
    if missing or sorted(graph_stages) != sorted(StageName):
        raise SystemExit(f"every stage needs create states and one place in CREATE_GRAPH: {sorted(missing)}")

    def entry_of(stage: StageName) -> str:
        for step in graph:
            if step == stage or (not isinstance(step, StageName) and any(stage in c for c in step)):
                return _entry(step)
        raise SystemExit(f"stage {stage} is not in CREATE_GRAPH")

    states: dict[str, dict[str, Any]] = {
        "Initialize Workflow": {
            "Type": "Pass",
            "Parameters": {
                "operationId.$": "$.operationId",
                "operationType.$": "$.operationType",
                "clusterTag.$": "$.clusterTag",
                "generation.$": "$.generation",
                "startStage.$": "$.startStage",
                "config.$": "$.config",
                "currentStage": {"stage.$": "$.startStage", "skip": False},
                "pollCount": {"value": 0},
            },
            "Next": "Route To Start Stage",
        },
        "Route To Start Stage": {
            "Type": "Choice",
            "Choices": [{"Variable": "$.startStage", "StringEquals": s.value, "Next": entry_of(s)} for s in StageName],
            "Default": "Unknown Start Stage",
        },
        "Unknown Start Stage": {
            "Type": "Pass",
            "Parameters": {
                "Error": "InvalidStartStage",
                "Cause.$": "States.Format('unknown stage {}', $.startStage)",
            },
            "ResultPath": "$.error",
            "Next": FAILURE,
        },
    }
    for i, step in enumerate(graph):
        after = _entry(graph[i + 1]) if i + 1 < len(graph) else "Complete Operation"
        if isinstance(step, StageName):
            states |= _chain([step], after, FAILURE)
        else:
            states[_entry(step)] = {
                "Type": "Parallel",
                "Branches": [_branch(chain) for chain in step],
                "ResultPath": None,
                # Each branch recorded its own failure (stage, operation, cluster) before failing.
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Workflow Failed"}],
                "Next": after,
            }
    states["Complete Operation"] = task("complete_create", "Cluster Ready")
    states["Cluster Ready"] = {"Type": "Succeed"}
    states |= failure_path()
    return with_crash_retry(
        {
            "Comment": "Create (or retry from a stage) a HyperPod cluster orchestrated by EKS: network, access, then "
            "dependencies and hyperpod beside storage, then verify. Progress is recorded in DynamoDB by every step.",
            "StartAt": "Initialize Workflow",
            "States": states,
        }
    )


def _no_teardown(after: str) -> dict[str, dict[str, Any]]:
    """A stage that created nothing: its teardown is recorded so every stage shows its teardown status."""
    return {}


def _delete_network_states(after: str) -> dict[str, dict[str, Any]]:
    states = poll_loop("EKS Deletion", "delete_eks_cluster", "deletion", "Start Polling Network Deletion")
    states |= poll_loop("Network Deletion", "delete_network", "deletion", after)
    return states


TEARDOWN_STAGES: dict[StageName, tuple[str | None, Callable[[str], dict[str, dict[str, Any]]]]] = {
    StageName.VERIFY: (None, _no_teardown),
    StageName.STORAGE: ("Delete Storage", lambda after: {"Delete Storage": task("delete_storage", after)}),
    StageName.HYPERPOD: (
        "Start Polling HyperPod Deletion",
        lambda after: poll_loop("HyperPod Deletion", "delete_hyperpod_cluster", "deletion", after),
    ),
    StageName.DEPENDENCIES: (
        "Start Polling Add-on Deletion",
        lambda after: poll_loop("Add-on Deletion", "delete_addons", "deletion", after),
    ),
    StageName.ACCESS: ("Revoke Access", lambda after: {"Revoke Access": task("revoke_access", after)}),
    StageName.NETWORK: ("Start Polling EKS Deletion", _delete_network_states),
}
"""Each stage's first teardown state (None: nothing to delete) and the builder of its teardown states."""


def delete_cluster() -> dict[str, Any]:
    """The delete-cluster workflow: teardown in reverse stage order, each removal polled until gone."""
    states: dict[str, dict[str, Any]] = {
        "Initialize Workflow": {
            "Type": "Pass",
            "Parameters": {
                "operationId.$": "$.operationId",
                "operationType.$": "$.operationType",
                "clusterTag.$": "$.clusterTag",
                "generation.$": "$.generation",
                "config.$": "$.config",
                "currentStage": {"stage": StageName.STORAGE.value},
                "pollCount": {"value": 0},
            },
            "Next": f"Begin {next(reversed(StageName)).display_name} Teardown",
        },
    }

    stages = list(reversed(StageName))
    for i, stage in enumerate(stages):
        after = f"Begin {stages[i + 1].display_name} Teardown" if i + 1 < len(stages) else "Complete Operation"
        first, build = TEARDOWN_STAGES[stage]
        complete = f"Complete {stage.display_name} Teardown"
        states[f"Begin {stage.display_name} Teardown"] = task(
            "begin_teardown", first or complete, extra={"stage": stage.value}, result_path=None
        )
        states[complete] = task("complete_teardown", after, extra={"stage": stage.value}, result_path=None)
        states |= build(complete)
    states["Complete Operation"] = task("complete_delete", "Cluster Deleted")
    states["Cluster Deleted"] = {"Type": "Succeed"}
    states |= failure_path()
    return with_crash_retry(
        {
            "Comment": "Delete a cluster: " + ", ".join(s.value for s in reversed(StageName)) + ", in that order; "
            "only resources carrying the cluster's ownership tags are touched.",
            "StartAt": "Initialize Workflow",
            "States": states,
        }
    )


UPDATE_FAILURE = "Record Change Failure"


def update_cluster() -> dict[str, Any]:
    """The day-2 workflow: one change of a running cluster (``instantstart.clusters.changes``), then a wait.

    ``Apply Change`` makes the change once (the operation carries it; its type picks the handler);
    ``Check Change`` is an event-or-poll wait on the operation's own record (no stages), woken by "SageMaker
    HyperPod Cluster Event"s and State Change events; the operation then ends SUCCEEDED, or FAILED with the
    AWS error verbatim. The cluster's status is not changed.
    """
    states: dict[str, dict[str, Any]] = {
        "Initialize Workflow": {
            "Type": "Pass",
            "Parameters": {
                "operationId.$": "$.operationId",
                "operationType.$": "$.operationType",
                "clusterTag.$": "$.clusterTag",
                "generation.$": "$.generation",
                "config.$": "$.config",
            },
            "Next": "Apply Change",
        },
        "Apply Change": task("apply_change", "Check Change", catch_to=UPDATE_FAILURE),
    }
    states |= wait_loop(
        "Change", "check_change", "clusterChange", "Complete Operation", stage=None, catch_to=UPDATE_FAILURE
    )
    states["Complete Operation"] = task("complete_change", "Change Done", catch_to=UPDATE_FAILURE)
    states["Change Done"] = {"Type": "Succeed"}
    states[UPDATE_FAILURE] = task(
        "record_change_failure", "Workflow Failed", extra={"error.$": "$.error"}, catch_to="Workflow Failed"
    )
    states["Workflow Failed"] = {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}
    return {
        "Comment": "Change a running cluster (an instance group, autoscaling, nodes, software, health checks) and "
        "wait until AWS reports it done; the operation's record holds the wait.",
        "StartAt": "Initialize Workflow",
        "States": states,
    }


DEFINITIONS = {
    "create_cluster.asl.json": create_cluster,
    "delete_cluster.asl.json": delete_cluster,
    "update_cluster.asl.json": update_cluster,
}


def render(name: str) -> str:
    """The JSON text of one definition, as committed."""
    return json.dumps(DEFINITIONS[name](), indent=2) + "\n"


def main() -> int:
    """Write every definition next to this file (``--check`` only compares; ``--sequential FILE`` writes the
    create workflow over :data:`SEQUENTIAL_GRAPH` to FILE instead)."""
    if "--sequential" in sys.argv:
        Path(sys.argv[sys.argv.index("--sequential") + 1]).write_text(
            json.dumps(create_cluster(SEQUENTIAL_GRAPH), indent=2) + "\n"
        )
        return 0
    check = "--check" in sys.argv
    stale = []
    for name in DEFINITIONS:
        path = HERE / name
        text = render(name)
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(name)
        else:
            path.write_text(text)
    if stale:
        print("stale:", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
