"""Cold start: what a handler's import loads, checked without timing it (``make cold-start`` times it).

Each handler module is imported in a fresh interpreter with the template's environment, as Lambda does at cold
start; the heavy modules the handlers defer (the Kubernetes client, the AWS SDK, the route and stage modules, ...)
must not be in ``sys.modules`` afterwards. The tables that let a request or a step import only its own module are
checked against the modules themselves.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DEFERRED_BY_ALL = (
    "kubernetes",
    "boto3",
    "botocore.client",
    "s3transfer",
    "pydantic_settings",
    "requests",
    "sqlite3",
    "aws_lambda_powertools.utilities.idempotency",
)
"""Never imported by a handler's import: they come with the first call that needs them."""

DEFERRED = {
    "functions/api/api_app.py": (
        *DEFERRED_BY_ALL,
        "api_routes.clusters",
        "api_routes.training",
        "api_routes.inference",
        "instantstart.clusters.service",
        "instantstart.inference.service",
        "instantstart.training.service",
        "instantstart.models.training_jobs",
        "instantstart.models.inference",
    ),
    "functions/steps/cluster_steps.py": (
        *DEFERRED_BY_ALL,
        "instantstart.clusters.stages.network",
        "instantstart.clusters.stages.hyperpod",
        "instantstart.clusters.stages.dependencies",
        "instantstart.clusters.instance_groups",
        "instantstart.clusters.service",
        "instantstart.features.service",
        "instantstart.inference.service",
        "instantstart.training.service",
        "instantstart.mlflow.service",
    ),
    "functions/events/hyperpod_events.py": (
        *DEFERRED_BY_ALL,
        "aws_lambda_powertools.utilities.data_classes",
        "instantstart.clusters.stages.hyperpod",
        "instantstart.clusters.service",
    ),
    "functions/events/reconcile_sweep.py": (
        *DEFERRED_BY_ALL,
        "aws_lambda_powertools.utilities.data_classes",
        "instantstart.clusters.stages.hyperpod",
        "instantstart.clusters.stages.verify",
        "instantstart.clusters.service",
    ),
    "functions/events/execution_events.py": (
        *DEFERRED_BY_ALL,
        "aws_lambda_powertools.utilities.data_classes",
        "instantstart.clusters.stages.hyperpod",
        "instantstart.clusters.service",
    ),
}

_CHILD = """
import importlib, json, sys
module, *paths = sys.argv[1:]
sys.path[:0] = paths
importlib.import_module(module)
print(json.dumps(sorted(sys.modules)))
"""


def _lambda_environment(code_dir: Path) -> dict[str, str]:
    # What Lambda sets, and the template's variables of the functions (placeholders): enough for every handler.
    arn = "arn:aws:states:us-west-2:123456789012:stateMachine:placeholder"
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LAMBDA_TASK_ROOT": str(code_dir),
        "AWS_LAMBDA_FUNCTION_NAME": "ColdStartTest",
        "AWS_REGION": "us-west-2",
        "AWS_DEFAULT_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        "POWERTOOLS_SERVICE_NAME": "instantstart",
        "TABLE_NAME": "table",
        "EVENT_BUS_NAME": "bus",
        "CREATE_CLUSTER_STATE_MACHINE_ARN": arn,
        "DELETE_CLUSTER_STATE_MACHINE_ARN": arn,
        "UPDATE_CLUSTER_STATE_MACHINE_ARN": arn,
        "LIFECYCLE_BUCKET": "bucket",
        "EKS_CLUSTER_ROLE_ARN": "arn:aws:iam::123456789012:role/eks",
        "HYPERPOD_EXECUTION_ROLE_ARN": "arn:aws:iam::123456789012:role/hyperpod",
        "CONTROL_PLANE_ROLE_ARN": "arn:aws:iam::123456789012:role/steps",
    }


@pytest.mark.parametrize("handler", sorted(DEFERRED))
def test_given_a_handler_when_imported_at_cold_start_then_no_deferred_module_is_loaded(handler: str) -> None:
    path = ROOT / handler
    paths = [str(path.parent), str(ROOT / "layers" / "core")]
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, path.stem, *paths],
        capture_output=True,
        text=True,
        env=_lambda_environment(path.parent),
        cwd=path.parent,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.splitlines()[-1]))

    imported = sorted(name for name in DEFERRED[handler] if name in loaded)

    assert imported == [], f"{handler} imports at cold start what it should import on first use: {imported}"


def test_given_the_stage_modules_when_listing_their_steps_then_the_action_table_names_each_ones_stage() -> None:
    from instantstart.clusters.stages import STAGE_ACTIONS, STAGE_MODULES, stage_module

    defined = {
        action: stage
        for stage in STAGE_MODULES
        for action in {**stage_module(stage).CREATE_STEPS, **stage_module(stage).TEARDOWN_STEPS}
    }

    assert defined == STAGE_ACTIONS


def test_given_the_change_modules_when_listing_their_changes_then_the_table_names_each_ones_module() -> None:
    from instantstart.clusters.registry import REGISTRY
    from instantstart.steps import ACTIONS, AREAS

    registered = REGISTRY.change_modules()
    defined = {op_type: name for name in set(registered.values()) for op_type in importlib.import_module(name).CHANGES}

    assert defined == registered
    assert {name.rsplit(".", 2)[1] for name in registered.values()} == {m.__name__.split(".")[1] for m in AREAS}
    assert {"apply_change", "check_change", "complete_change", "record_change_failure"} <= set(ACTIONS)


_LOOKUP = """
import json, sys
sys.path[:0] = sys.argv[2:]
from instantstart.models.common import OperationType
from instantstart.steps import REGISTRY
REGISTRY.change(OperationType(sys.argv[1]))
print(json.dumps(sorted(sys.modules)))
"""

AREAS_ABOVE_CLUSTERS = ("features", "mlflow", "training", "inference")


@pytest.mark.parametrize(
    ("op_type", "area"),
    [("UPDATE_AUTOSCALING", "clusters"), ("UPDATE_FEATURES", "features"), ("UPDATE_MLFLOW", "mlflow")],
)
def test_given_a_day2_change_when_its_handler_is_looked_up_then_no_area_above_its_own_is_imported(
    op_type: str, area: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LOOKUP, op_type, str(ROOT / "layers" / "core")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.splitlines()[-1]))
    above = AREAS_ABOVE_CLUSTERS[AREAS_ABOVE_CLUSTERS.index(area) + 1 :] if area != "clusters" else AREAS_ABOVE_CLUSTERS

    imported = sorted(
        name
        for name in loaded
        for other in above
        if name.startswith(f"instantstart.{other}.") and not name.endswith(".steps")
    )

    assert imported == [], f"looking up the {op_type} handler imported another area's modules: {imported}"


def test_given_the_route_modules_when_listing_their_routes_then_each_path_names_its_own_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(ROOT / "functions" / "api"))
    import api_routes

    owners = {
        route[0]: name for name in api_routes.module_names() for route in importlib.import_module(name).router._routes
    }
    misplaced = {path: module for path, module in owners.items() if api_routes.module_of(path) != module}

    assert len(owners) > 40 and misplaced == {}
