"""Every function of the template gets the settings its handler requires at cold start."""

from __future__ import annotations

from typing import Any

import pytest

from instantstart.config import API_SETTINGS, EVENT_SETTINGS, STEP_SETTINGS, SWEEP_SETTINGS

REQUIRED = {
    "ApiFunction": API_SETTINGS,
    "ClusterStepsFunction": STEP_SETTINGS,
    "HyperPodEventsFunction": EVENT_SETTINGS,
    "ExecutionEventsFunction": EVENT_SETTINGS,
    "ReconcileSweepFunction": SWEEP_SETTINGS,
    # the console's custom resource reads no core settings: the bucket and config.json come as its properties
    "ConsolePublisherFunction": (),
}


@pytest.mark.parametrize("function", sorted(REQUIRED))
def test_given_a_function_when_deployed_then_its_environment_has_every_required_setting(
    template: dict[str, Any], function: str
) -> None:
    globals_env = template["Globals"]["Function"]["Environment"]["Variables"]
    own = template["Resources"][function]["Properties"].get("Environment", {}).get("Variables", {})

    missing = set(REQUIRED[function]) - set(globals_env) - set(own)

    assert not missing, f"{function} would stop at cold start: {sorted(missing)} not in its environment"


def test_given_the_template_when_listing_functions_then_every_function_has_its_required_settings_declared(
    template: dict[str, Any],
) -> None:
    functions = {k for k, v in template["Resources"].items() if v["Type"] == "AWS::Serverless::Function"}

    assert functions == set(REQUIRED)
