"""Given steps that die right after an AWS write and before they record it (and one that times out), Step Functions
runs them again and the cluster ends READY, then DELETED, exactly as a clean run leaves it: same records, same AWS
resources, no duplicate. A representative set of ``make crash``'s sweep (``tests/crash``), one fault of each kind
that once found a bug."""

from __future__ import annotations

from instantstart_client.api import InstantStartClient
from instantstart_sandbox.runner import Sandbox
from tests.crash.sweep import STEPS_FUNCTION, Aws, judge, run_all, store_of

CREATE, DELETE = "CREATE_CLUSTER", "DELETE_CLUSTER"
TAG = "crashrep"

FAULTS: list[tuple[str, dict[str, str], str, str]] = [
    # (kind, the step, after the first call of, error name): each of these once left a difference behind
    ("crash", {"action": "ensure_network"}, "CreateVpc", "Runtime.ExitError"),  # DNS hostnames never turned on
    ("crash", {"action": "ensure_network"}, "CreateSecurityGroup", "Lambda.Unknown"),  # group without its rule
    ("crash", {"action": "create_addons"}, "CreateRole", "Runtime.ExitError"),  # storage role without its policy
    ("crash", {"action": "complete_stage", "stage": "network"}, "UpdateItem", "Runtime.ExitError"),  # stage FAILED
    ("crash", {"action": "complete_create"}, "TransactWriteItems", "Lambda.Unknown"),  # execution FAILED
    ("crash", {"action": "check_eks_cluster"}, "SendTaskSuccess", "Runtime.ExitError"),  # a wait's own answer lost
    ("timeout", {"action": "grant_access"}, "CreateAccessEntry", "Sandbox.Timedout"),
]


def test_given_steps_killed_after_aws_writes_and_a_timed_out_step_then_create_and_delete_converge_like_a_clean_run(
    sandbox: Sandbox, api: InstantStartClient
) -> None:
    function = sandbox.function_name(STEPS_FUNCTION)
    faults = sandbox.lambda_faults
    armed = []
    for kind, step, operation, error in FAULTS:
        when = {**step, "clusterTag": TAG, "operationType": CREATE}
        if kind == "timeout":
            armed.append(faults.timeout(function, after_calls=0, after_operation=operation, when=when))
        else:
            armed.append(faults.crash(function, after_calls=0, after_operation=operation, when=when, error_type=error))
    for step, operation in (
        ({"action": "delete_addons"}, "DeleteRole"),
        ({"action": "delete_network"}, "DetachInternetGateway"),
        ({"action": "complete_delete"}, "TransactWriteItems"),
    ):
        when = {**step, "clusterTag": TAG, "operationType": DELETE}
        armed.append(faults.crash(function, after_calls=0, after_operation=operation, when=when))

    aws, store = Aws(sandbox), store_of(sandbox)
    crashed, clean = run_all(sandbox, api, store, aws, {TAG: [], "crashref": []}, workers=2)

    assert (clean.create, clean.delete) == ("SUCCEEDED", "SUCCEEDED"), clean.error
    assert [f.remaining for f in armed] == [0] * len(armed), "every fault killed one invocation"
    assert (crashed.create, crashed.delete) == ("SUCCEEDED", "SUCCEEDED"), crashed.ready_records.get("operations")
    verdict = judge(crashed, clean)
    assert verdict.extra == {}, f"duplicates: {verdict.extra}"
    assert verdict.problems == [], "\n".join(verdict.problems)
    assert crashed.ready_aws["dns"] == [True, True]
    assert ["instantstart-<tag>-cluster", [["-1", 1, 0]]] in crashed.ready_aws["security_groups"]
    assert crashed.deleted_aws["vpcs"] == 0 and crashed.deleted_aws["iam_roles"] == []
