"""The CLI's `features set` body: what each flag sends (the API validates keys, fields and values)."""

from __future__ import annotations

import pytest
import typer

from instantstart_client.cli import FEATURE_KEYS, _feature_body


def test_every_feature_the_api_knows_is_offered_by_the_cli() -> None:
    from instantstart.models.features import UpdateFeaturesRequest

    api_keys = {field.alias or name for name, field in UpdateFeaturesRequest.model_fields.items()}
    assert set(FEATURE_KEYS) == api_keys


def test_flags_and_options_build_one_explicit_diff() -> None:
    body = _feature_body(
        enable=["kubeRay"],
        disable=["trainingOperator"],
        version=["inferenceOperator=v1.0.0-eksbuild.1"],
        memory_percentage=20,
        options=[
            "observability.cloudWatch=true",
            'fsx.fileSystem={"storageCapacity": 1200, "deploymentType": "PERSISTENT_2"}',
            "observability.version=v1.0.1-eksbuild.1",
        ],
    )

    assert body == {
        "kubeRay": {"enabled": True},
        "trainingOperator": {"enabled": False},
        "inferenceOperator": {"enabled": True, "version": "v1.0.0-eksbuild.1"},
        "tieredCheckpointing": {"enabled": True, "instanceMemoryAllocationPercentage": 20},
        "observability": {"enabled": True, "cloudWatch": True, "version": "v1.0.1-eksbuild.1"},
        "fsx": {"enabled": True, "fileSystem": {"storageCapacity": 1200, "deploymentType": "PERSISTENT_2"}},
    }


@pytest.mark.parametrize("bad", ["observability", "cloudWatch=true", "observability.=true", ".cloudWatch=true"])
def test_an_option_without_key_field_and_value_is_refused_before_any_call(bad: str) -> None:
    with pytest.raises(typer.BadParameter) as refused:
        _feature_body([], [], [], None, [bad])
    assert "KEY.FIELD=VALUE" in str(refused.value)
