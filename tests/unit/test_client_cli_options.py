"""The CLI's options tell the truth: a repeated single-value option is refused (issue 34)."""

from __future__ import annotations

import functools

import pytest
import typer
from inprocess_api import InProcessApi
from typer.testing import CliRunner

import instantstart_client.cli
from instantstart_client.api import InstantStartClient
from instantstart_client.cli import app
from instantstart_client.cli.repeats import repeated_option
from instantstart_client.operations import document

CREATE = ["clusters", "create", "--tag", "demo", "--az", "us-west-2c"]


@pytest.fixture
def api(inprocess_api: InProcessApi, monkeypatch: pytest.MonkeyPatch) -> InProcessApi:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(
        instantstart_client.cli,
        "InstantStartClient",
        functools.partial(InstantStartClient, transport=inprocess_api, sleep=lambda s: None),
    )
    return inprocess_api


@pytest.mark.parametrize(
    ("args", "named"),
    [
        ([*CREATE, "--instance-type", "ml.g6.4xlarge", "--instance-type", "ml.g6.8xlarge"], "--instance-type"),
        ([*CREATE, "--instance-type=ml.g6.4xlarge", "--instance-type", "ml.g6.8xlarge"], "--instance-type"),
        (["--region", "us-west-2", "--region", "us-east-1", "clusters", "list"], "--region"),
        (["clusters", "list", "--max-results", "1", "--max-results", "2"], "--max-results"),
        (["groups", "add", "demo", "--group-name", "a", "--group-name", "b"], "--group-name"),
    ],
)
def test_a_repeated_single_value_option_exits_2_naming_it_and_sends_nothing(
    api: InProcessApi, args: list[str], named: str
) -> None:
    """Given a command line with one single-value option twice (root, group or command level),
    when the CLI runs,
    then it exits 2 with a usage error naming the option, and no cluster was created."""
    result = CliRunner().invoke(app, ["--api-url", api.url, *args])

    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{named}': given more than once" in result.output
    listed = CliRunner().invoke(app, ["--api-url", api.url, "--json", "clusters", "list"])
    assert '"demo"' not in listed.stdout


def test_an_option_given_once_and_a_repeatable_option_still_work(api: InProcessApi) -> None:
    """Given `clusters create` with --instance-type once,
    when it runs, then the cluster is created (exit 0) with that type."""
    result = CliRunner().invoke(app, ["--api-url", api.url, *CREATE, "--instance-type", "ml.g6.8xlarge"])

    assert result.exit_code == 0, result.output
    got = CliRunner().invoke(app, ["--api-url", api.url, "--json", "clusters", "get", "demo"])
    assert "ml.g6.8xlarge" in got.stdout


def test_a_repeatable_option_and_a_value_that_looks_like_an_option_are_not_repeats() -> None:
    """`features set --enable a --enable b` (a list option) and a repeated name given as another option's value
    are not refused."""
    command = typer.main.get_command(app)
    with typer.Context(command) as ctx:
        assert repeated_option(command, ctx, ["features", "set", "demo", "--enable", "a", "--enable", "b"]) is None
        assert repeated_option(command, ctx, ["groups", "add", "demo", "--group-name", "--group-name"]) is None
        assert repeated_option(command, ctx, ["jobs", "logs", "demo", "x", "--", "--name", "--name"]) is None


@pytest.mark.parametrize("command", [["groups", "add"], ["clusters", "create"], ["clusters", "import"]])
def test_capacity_type_help_states_every_value_the_api_accepts(
    command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Given the shipped OpenAPI document's CapacityType (OnDemand, Spot, TrainingPlan),
    when `--help` of a command with --capacity-type is shown,
    then its help names each of them (it once said OnDemand was all the API accepts)."""
    monkeypatch.setenv("COLUMNS", "400")
    allowed = document()["components"]["schemas"]["CapacityType"]["enum"]
    assert {"OnDemand", "Spot"} <= set(allowed)

    result = CliRunner().invoke(app, [*command, "--help"])

    assert result.exit_code == 0, result.output
    line = next(line for line in result.stdout.splitlines() if "--capacity-type" in line)
    assert all(value in line for value in allowed), line
    assert "what the API accepts" not in line
