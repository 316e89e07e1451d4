"""Which SAM template the sandbox deploys: ``Sandbox(template_path=...)`` and ``--template PATH``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from instantstart_sandbox import cli, runner
from instantstart_sandbox.runner import Sandbox, TemplateNotFoundError, resolve_template

ROOT = Path(__file__).resolve().parents[2]


def test_given_no_template_when_installed_from_the_checkout_then_the_checkout_template_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # found next to the installed source, not in the working directory
    assert resolve_template() == ROOT / "template.yaml"
    assert Sandbox().template_path == ROOT / "template.yaml"


def test_given_a_template_path_when_creating_the_sandbox_then_that_file_is_deployed(tmp_path: Path) -> None:
    template = tmp_path / "stack" / "my-template.yaml"
    template.parent.mkdir()
    template.write_text((ROOT / "template.yaml").read_text())
    assert Sandbox(template_path=template).template_path == template.resolve()
    assert Sandbox(template_path=str(template)).template_path == template.resolve()


def test_given_a_missing_template_path_when_creating_the_sandbox_then_the_error_names_the_file_and_option(
    tmp_path: Path,
) -> None:
    with pytest.raises(TemplateNotFoundError, match=r"nosuch\.yaml does not exist"):
        Sandbox(template_path=tmp_path / "nosuch.yaml")


def test_given_an_installed_wheel_without_a_checkout_when_no_template_is_given_then_the_error_asks_for_one(
    tmp_path: Path,
) -> None:
    package_dir = tmp_path / "lib" / "python3.11" / "site-packages" / "instantstart_sandbox"
    package_dir.mkdir(parents=True)
    with pytest.raises(TemplateNotFoundError, match=r"--template PATH"):
        resolve_template(package_dir=package_dir)


def test_given_the_template_option_when_serving_then_the_sandbox_gets_that_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template = tmp_path / "template.yaml"
    template.write_text((ROOT / "template.yaml").read_text())
    started: list[Path] = []

    def fake_start(self: Sandbox) -> Sandbox:
        started.append(self.template_path)
        raise RuntimeError("stop before starting servers")

    monkeypatch.setattr(runner.Sandbox, "start", fake_start)
    result = CliRunner().invoke(cli.app, ["serve", "--template", str(template)])
    assert started == [template.resolve()]
    assert isinstance(result.exception, RuntimeError)


@pytest.mark.parametrize("command", ["serve", "demo"])
def test_given_a_missing_template_when_running_the_cli_then_it_exits_2_naming_the_option(
    command: str, tmp_path: Path
) -> None:
    wide = CliRunner(env={"COLUMNS": "400"})  # the error box would wrap the path at 80 columns
    result = wide.invoke(cli.app, [command, "--template", str(tmp_path / "nosuch.yaml")])
    assert result.exit_code == 2
    assert "--template" in result.output and "nosuch.yaml does not exist" in result.output
