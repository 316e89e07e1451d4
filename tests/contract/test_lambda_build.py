"""What `sam build` ships: every function built by its Makefile from one lock, the same versions in the development
environment, checked-hash bytecode, and a size within the project's budget."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import lambda_build  # noqa: E402

PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([^ ;\\]+)")


def _locked(path: Path) -> dict[str, str]:
    """``{normalised name: version}`` of a lock; every entry must be pinned and carry hashes."""
    text = path.read_text()
    pins: dict[str, str] = {}
    for block in re.split(r"\n(?=[^\s#])", text):
        first = block.splitlines()[0]
        if first.startswith("#") or not first.strip():
            continue
        match = PIN.match(first)
        assert match, f"{path.name}: {first!r} is not pinned with =="
        assert "--hash=sha256:" in block, f"{path.name}: {match.group(1)} has no hash"
        pins[lambda_build._normalise(match.group(1))] = match.group(2)
    return pins


def test_every_function_is_built_by_the_makefile_next_to_its_code_uri(template: dict[str, Any]) -> None:
    functions = {
        name: resource
        for name, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    assert {name: resource["Properties"]["CodeUri"] for name, resource in functions.items()} == lambda_build.FUNCTIONS
    layer = template["Resources"][lambda_build.LAYER_ID]
    for name, resource in [*functions.items(), (lambda_build.LAYER_ID, layer)]:
        assert resource["Metadata"]["BuildMethod"] == "makefile", name
        code_uri = resource["Properties"].get("CodeUri") or resource["Properties"]["ContentUri"]
        makefile = (ROOT / code_uri / "Makefile").read_text()
        assert re.search(rf"(^|\s)build-{name}[\s:]", makefile, re.MULTILINE), f"{code_uri}/Makefile lacks build-{name}"


def test_the_layer_lock_pins_every_runtime_dependency_and_the_dev_lock_agrees() -> None:
    core = _locked(ROOT / "layers" / "core" / "requirements.txt")
    dev = _locked(ROOT / "requirements-dev.txt")
    for name in ("aws-lambda-powertools", "boto3", "botocore", "kubernetes", "pydantic", "pydantic-core"):
        assert name in core
    assert {name: dev[name] for name in core} == core, "requirements-dev.txt differs from the layer's lock"
    assert "aiohttp" not in core, "kubernetes.aio's dependencies are not shipped"
    # the ranges the project declares are the layer's (pyproject.toml keeps the same list as requirements.in)
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    ranges = [
        line.strip()
        for line in (ROOT / "layers" / "core" / "requirements.in").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert set(ranges) <= set(declared)


def test_the_development_environment_runs_the_locked_versions() -> None:
    core = _locked(ROOT / "layers" / "core" / "requirements.txt")
    installed = {
        lambda_build._normalise(dist.metadata["Name"]): dist.version for dist in importlib.metadata.distributions()
    }
    assert {name: installed.get(name) for name in core} == core


def test_omitting_a_distribution_the_lock_does_not_hold_is_refused() -> None:
    with pytest.raises(lambda_build.BuildError, match="no-such-dist"):
        lambda_build.locked_requirements(("no-such-dist",))
    assert "pydantic==" not in lambda_build.locked_requirements(("pydantic",))
    assert "pydantic-core==" in lambda_build.locked_requirements(("pydantic",))


@pytest.fixture(scope="module")
def host_build() -> Path:
    """The whole build for this machine's interpreter: what `make build-host` wrote (``tools/lambda_build.py all
    --platform host``, the run's prerequisite), which tests/conftest.py checked is current with the sources before
    any test ran. Building it again here cost every run about 25 s of CPU for the same files."""
    from instantstart_sandbox import artifacts

    return artifacts.build_dir(ROOT / "template.yaml")


def test_the_build_ships_checked_hash_bytecode_for_every_source(host_build: Path) -> None:
    sources = list(host_build.rglob("*.py"))
    assert len(sources) > 1000
    tag = sys.implementation.cache_tag
    missing = [s for s in sources if not (s.parent / "__pycache__" / f"{s.stem}.{tag}.pyc").is_file()]
    assert not missing, missing[:5]
    for pyc in host_build.rglob("*.pyc"):
        header = pyc.read_bytes()[:8]
        assert header[:4] == importlib.util.MAGIC_NUMBER, pyc
        assert int.from_bytes(header[4:8], "little") == 0b11, f"{pyc} is not checked-hash bytecode"


def test_the_build_leaves_out_what_is_never_imported_and_fits_the_budget(host_build: Path) -> None:
    site = host_build / lambda_build.LAYER_ID / "python"
    assert (site / "kubernetes" / "client").is_dir()
    assert not (site / "kubernetes" / "aio").exists()
    assert (site / "instantstart" / "clusters" / "service.py").is_file()
    assert (host_build / "ConsolePublisherFunction" / "site" / "index.html").is_file()
    assert not list(host_build.rglob("Makefile"))
    rows = lambda_build.sizes(host_build)
    assert {row[0] for row in rows} == set(lambda_build.FUNCTIONS)
    for logical_id, _code, total in rows:
        print(f"{logical_id}: {total:,} bytes unzipped with its layer (budget {lambda_build.UNZIPPED_TARGET:,})")
        assert total <= lambda_build.UNZIPPED_TARGET, logical_id


def test_the_sam_cli_lock_pins_the_sam_cli() -> None:
    assert _locked(ROOT / "tools" / "sam-cli.txt")["aws-sam-cli"] == "1.170.0"


PYTHON_313_MAGIC = bytes.fromhex("f30d0d0a")
"""``importlib.util.MAGIC_NUMBER`` of every CPython 3.13 release (Lambda's python3.13 runtime)."""


def test_without_python_3_13_the_bytecode_is_compiled_by_pyodides_cpython_3_13(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAMBDA_PYTHON", "pyodide")
    where = lambda_build.target("lambda")
    assert where.python == lambda_build.PYODIDE
    lambda_build.build_function(ROOT / "functions" / "events", tmp_path / "events", where)
    compiled = sorted((tmp_path / "events" / "__pycache__").glob("*.pyc"))
    assert [pyc.name for pyc in compiled] == [
        "execution_events.cpython-313.pyc",
        "hyperpod_events.cpython-313.pyc",
        "reconcile_sweep.cpython-313.pyc",
    ]
    for pyc in compiled:
        header = pyc.read_bytes()[:8]
        assert header[:4] == PYTHON_313_MAGIC
        assert int.from_bytes(header[4:8], "little") == 0b11, "checked-hash"
