"""Settings: a function without a required setting stops at cold start with the setting's name."""

from __future__ import annotations

import pytest

from instantstart.config import API_SETTINGS, EVENT_SETTINGS, STEP_SETTINGS, MissingSettings, Settings
from instantstart.runtime import Runtime

pytestmark = pytest.mark.usefixtures("no_network")


def test_given_no_state_machine_arns_when_the_api_runtime_is_built_then_the_cold_start_names_both() -> None:
    settings = Settings(TABLE_NAME="t", CREATE_CLUSTER_STATE_MACHINE_ARN="", DELETE_CLUSTER_STATE_MACHINE_ARN=" ")

    with pytest.raises(MissingSettings) as info:
        settings.require(API_SETTINGS)

    assert "CREATE_CLUSTER_STATE_MACHINE_ARN" in str(info.value)
    assert "DELETE_CLUSTER_STATE_MACHINE_ARN" in str(info.value)
    assert "TABLE_NAME" not in str(info.value)


@pytest.mark.parametrize("required", [API_SETTINGS, STEP_SETTINGS, EVENT_SETTINGS], ids=["api", "steps", "events"])
def test_given_no_table_name_when_any_function_starts_then_the_cold_start_names_it(
    monkeypatch: pytest.MonkeyPatch, required: tuple[str, ...]
) -> None:
    monkeypatch.delenv("TABLE_NAME", raising=False)
    others = {name: "set" for name in required if name != "TABLE_NAME"}
    settings = Settings(**others)

    with pytest.raises(MissingSettings) as info:
        settings.require(required)

    assert "TABLE_NAME" in str(info.value)
    assert settings.TABLE_NAME == ""


def test_given_every_required_setting_when_the_runtime_is_built_then_it_carries_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from instantstart.config import get_settings

    monkeypatch.setenv("TABLE_NAME", "table-1")
    monkeypatch.setenv("CREATE_CLUSTER_STATE_MACHINE_ARN", "arn:aws:states:us-west-2:123456789012:stateMachine:c")
    monkeypatch.setenv("DELETE_CLUSTER_STATE_MACHINE_ARN", "arn:aws:states:us-west-2:123456789012:stateMachine:d")
    monkeypatch.setenv("UPDATE_CLUSTER_STATE_MACHINE_ARN", "arn:aws:states:us-west-2:123456789012:stateMachine:u")
    get_settings.cache_clear()
    try:
        runtime = Runtime.from_env(API_SETTINGS)
    finally:
        get_settings.cache_clear()

    assert runtime.settings.TABLE_NAME == "table-1"
