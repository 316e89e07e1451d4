"""Benchmark: the cold-start import time of each Lambda handler, as a multiple of ``import boto3``.

Reads the artifacts of a build in SAM's layout (``DIR/<FunctionLogicalId>/`` = a function's code,
``DIR/CoreLayer/python/`` = the layer's site-packages; default ``.aws-sam/host``, built by ``make build-host``),
zips each one with every entry dated 1980-01-01 as SAM does, unpacks the zips into a temporary directory (file
times from the zip, then ``chmod a-w``), and runs each handler module in fresh interpreters as Lambda would:
``python -I -S -B`` (no site-packages of this environment, no bytecode written: Lambda's file system is read-only)
with ``sys.path`` = [the function's directory, the layer's ``python``] + the standard library, and the
template's environment variables (placeholders for references). A child times ``importlib.import_module`` of the
handler module with ``time.perf_counter()``; ``import boto3`` is timed the same way from the same directories.
Runs are interleaved (one of each target per round, after an unreported warm-up round); medians are compared.

Prints a table (handler, median ms, ratio to boto3, target, PASS/FAIL) and how many ``.pyc`` of each artifact
validate for the interpreter that runs the handlers (with 1980 file times only hash-based ``.pyc`` do). Exit
status 1 when a target is missed.

``--assemble`` first builds ``DIR`` as ``make build-host`` does, for the interpreter given by ``--python``
(``tools/lambda_build.py``: the lock's wheels, checked-hash bytecode; the third-party part kept while the lock is
unchanged).

Run: ``.venv/bin/python benchmarks/cold_start.py [--assemble] [DIR] [--runs 7] [--python PATH]``
(``make cold-start``).
"""

from __future__ import annotations

import argparse
import calendar
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
sys.path.insert(0, str(ROOT / "tools"))
import lambda_build  # noqa: E402  (tools/lambda_build.py: the one build of the artifacts)

LAYER_ID = "CoreLayer"
DEFAULT_DIR = ROOT / ".aws-sam" / "host"
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
REGION = "us-west-2"
ACCOUNT = "123456789012"
TARGETS = {"functions/api": 2.0, "functions/steps": 2.0, "functions/events": 1.5}
"""The largest ratio to ``import boto3`` allowed, by ``CodeUri`` (issue 26, item 5); others are only reported."""
BASELINE = "boto3"

# Run in the child interpreter: argv = module, then the directories put in front of the standard library.
IMPORT_CHILD = """
import importlib, json, sys, time
module, *paths = sys.argv[1:]
sys.path[:0] = paths
start = time.perf_counter()
for name in module.split(","):
    importlib.import_module(name)
elapsed = time.perf_counter() - start
print(json.dumps({"seconds": elapsed, "modules": len(sys.modules)}))
"""

# Run in the child interpreter: argv = roots; counts the .pyc of its own cache tag by how they validate.
PYC_CHILD = """
import importlib.util, json, os, sys
magic, tag = importlib.util.MAGIC_NUMBER, sys.implementation.cache_tag
result = {}
for root in sys.argv[1:]:
    counts = {"sources": 0, "timestamp": 0, "checked-hash": 0, "unchecked-hash": 0, "invalid": 0}
    for dirpath, _dirs, files in os.walk(root):
        if os.path.basename(dirpath) != "__pycache__":
            counts["sources"] += sum(name.endswith(".py") for name in files)
            continue
        for name in files:
            parts = name.split(".")
            source = os.path.join(os.path.dirname(dirpath), parts[0] + ".py")
            if len(parts) != 3 or parts[1] != tag or parts[2] != "pyc" or not os.path.exists(source):
                continue
            with open(os.path.join(dirpath, name), "rb") as f:
                header = f.read(16)
            flags = int.from_bytes(header[4:8], "little")
            if header[:4] != magic:
                kind = "invalid"
            elif flags == 0:
                st = os.stat(source)
                ok = header[8:12] == (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, "little") and header[
                    12:16
                ] == (st.st_size & 0xFFFFFFFF).to_bytes(4, "little")
                kind = "timestamp" if ok else "invalid"
            elif flags & 2:
                with open(source, "rb") as f:
                    ok = importlib.util.source_hash(f.read()) == header[8:16]
                kind = "checked-hash" if ok else "invalid"
            else:
                kind = "unchecked-hash"
            counts[kind] += 1
    result[root] = counts
print(json.dumps(result))
"""


@dataclass(frozen=True)
class Function:
    """A function of the template: its logical id, code directory and handler module."""

    logical_id: str
    code_uri: str
    handler: str
    environment: dict[str, str]

    @property
    def module(self) -> str:
        """The handler's module (``Handler`` without the function name)."""
        return self.handler.rsplit(".", 1)[0]

    @property
    def target(self) -> float | None:
        """The largest ratio to ``import boto3`` allowed for this function (``None``: reported only)."""
        return TARGETS.get(self.code_uri)


class _TemplateLoader(yaml.SafeLoader):
    """YAML loader that reads CloudFormation's short-form tags (``!Ref``, ``!GetAtt``, ...) as ``{"Tag": value}``."""


def _tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {suffix: value}


_TemplateLoader.add_multi_constructor("!", _tag)


def placeholder(name: str, value: Any) -> str:
    """The value a child gets for an environment variable: the template's literal, or a placeholder of its kind."""
    if isinstance(value, str | int | float):
        return str(value)
    if "STATE_MACHINE" in name:
        return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:placeholder-{name.lower()}"
    if name.endswith("_ARN"):
        return f"arn:aws:iam::{ACCOUNT}:role/placeholder-{name.lower()}"
    return f"placeholder-{name.lower().replace('_', '-')}"


def read_functions(template: Path = TEMPLATE) -> list[Function]:
    """The template's ``AWS::Serverless::Function`` resources, with Globals' environment merged into theirs."""
    document = yaml.load(template.read_text(), Loader=_TemplateLoader)
    globals_env = document.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
    functions = []
    for logical_id, resource in document["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::Function":
            continue
        props = resource["Properties"]
        variables = {**globals_env, **props.get("Environment", {}).get("Variables", {})}
        environment = {name: placeholder(name, value) for name, value in variables.items()}
        functions.append(Function(logical_id, props["CodeUri"].rstrip("/"), props["Handler"], environment))
    return functions


def lambda_environment(function: Function | None, task_root: Path) -> dict[str, str]:
    """The environment of a child: Lambda's own variables, then the function's (from the template).

    ``LAMBDA_TASK_ROOT`` is what Powertools' Tracer and the X-Ray SDK take for "running on Lambda".
    """
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "en_US.UTF-8",
        "TZ": ":UTC",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "LAMBDA_TASK_ROOT": str(task_root),
        "_HANDLER": function.handler if function else "boto3.client",
        "AWS_LAMBDA_FUNCTION_NAME": function.logical_id if function else "Baseline",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
        "AWS_ACCESS_KEY_ID": "ASIAPLACEHOLDER00000",
        "AWS_SECRET_ACCESS_KEY": "placeholder-secret",
        "AWS_SESSION_TOKEN": "placeholder-token",
        "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
        "AWS_XRAY_DAEMON_ADDRESS": "169.254.79.129:2000",
        "POWERTOOLS_SERVICE_NAME": "instantstart",
    }
    if function is not None:
        env.update(function.environment)
    return env


# ---------------------------------------------------------------- --assemble


def assemble(out: Path, python: str) -> None:
    """Build ``out`` in SAM's layout from this checkout for ``python``: what ``make build-host`` builds
    (``tools/lambda_build.py``: the lock's wheels, ``PRUNE``, checked-hash bytecode compiled by ``python``)."""
    lambda_build.build_all(out, lambda_build.Target(python, None, None))


# ---------------------------------------------------------------- zip, unpack, read-only


def zip_dir(source: Path, archive: Path, prefix: str = "") -> int:
    """Zip ``source`` (entries under ``prefix``) with every entry dated 1980-01-01, as SAM does; the file count."""
    count = 0
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for path in sorted(source.rglob("*")):
            if not path.is_file():
                continue
            info = zipfile.ZipInfo(prefix + path.relative_to(source).as_posix(), date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, path.read_bytes(), compresslevel=1)
            count += 1
    return count


def unpack(archive: Path, target: Path) -> None:
    """Extract ``archive`` into ``target`` with each file's time from the zip (UTC, as Lambda runs)."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            path = Path(zf.extract(info, target))
            stamp = calendar.timegm((*info.date_time, 0, 0, 0))
            os.utime(path, (stamp, stamp))


# ---------------------------------------------------------------- measure


def import_seconds(python: str, module: str, paths: list[Path], env: dict[str, str]) -> float:
    """Seconds one fresh interpreter takes to import ``module`` with ``paths`` in front of the standard library."""
    command = [python, "-I", "-S", "-B", "-c", IMPORT_CHILD, module, *map(str, paths)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=paths[0], check=False)
    if done.returncode != 0:
        raise SystemExit(f"importing {module} failed:\n{done.stderr}")
    return float(json.loads(done.stdout.splitlines()[-1])["seconds"])


def pyc_counts(python: str, roots: list[Path]) -> dict[str, dict[str, int]]:
    """``.pyc`` of ``python``'s cache tag under each root, by how they validate (and the ``.py`` count)."""
    done = subprocess.run([python, "-I", "-S", "-c", PYC_CHILD, *map(str, roots)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"counting .pyc failed:\n{done.stderr}")
    return dict(json.loads(done.stdout))


def measure(python: str, functions: list[Function], task_root: Path, layer: Path, runs: int) -> dict[str, list[float]]:
    """Interleaved rounds (a warm-up round first, not kept): one import of each handler and of boto3 per round."""
    samples: dict[str, list[float]] = {BASELINE: []}
    for f in functions:
        samples[f.logical_id] = []
        samples[f"{f.logical_id}+boto3"] = []
    first = task_root / functions[0].logical_id
    jobs = [(BASELINE, "boto3", [first, layer], lambda_environment(None, first))]
    for f in functions:
        code = task_root / f.logical_id
        jobs.append((f.logical_id, f.module, [code, layer], lambda_environment(f, code)))
        # what the first invocation pays at least: the handler defers boto3 to its first client
        jobs.append((f"{f.logical_id}+boto3", f"{f.module},boto3", [code, layer], lambda_environment(f, code)))
    for round_ in range(runs + 1):
        for key, module, paths, env in jobs:
            seconds = import_seconds(python, module, paths, env)
            if round_:
                samples[key].append(seconds)
    return samples


def report(functions: list[Function], samples: dict[str, list[float]]) -> bool:
    """Print the table; whether every target is met."""
    base = statistics.median(samples[BASELINE])
    print(f"\n{'handler':<52} {'median ms':>9} {'x boto3':>8} {'target':>7}  result  {'+ boto3 (first call)':>20}")
    print(f"{'import boto3 (baseline)':<52} {base * 1000:9.1f} {1.0:8.2f}")
    ok = True
    for f in functions:
        median = statistics.median(samples[f.logical_id])
        ratio = median / base
        target = f.target
        verdict = "-" if target is None else ("PASS" if ratio <= target else "FAIL")
        ok = ok and verdict != "FAIL"
        shown = "-" if target is None else f"<={target:.1f}"
        with_sdk = statistics.median(samples[f"{f.logical_id}+boto3"]) / base
        name = f.logical_id + " (" + f.module + ")"
        print(f"{name:<52} {median * 1000:9.1f} {ratio:8.2f} {shown:>7}  {verdict:6}  {with_sdk:19.2f}x")
    return ok


def main(argv: list[str] | None = None) -> int:
    """Assemble (optionally), pack, unpack, measure and print; 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", nargs="?", type=Path, default=DEFAULT_DIR, help="artifacts in SAM's build layout")
    parser.add_argument("--assemble", action="store_true", help="build DIR from this checkout first")
    parser.add_argument("--runs", type=int, default=7, help="measured imports per handler (at least 5)")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the children (and of --assemble)")
    args = parser.parse_args(argv)
    if args.runs < 5:
        parser.error("--runs must be at least 5")
    functions = read_functions()
    out: Path = args.dir.resolve()
    if args.assemble:
        assemble(out, args.python)
    missing = [name for name in [LAYER_ID, *(f.logical_id for f in functions)] if not (out / name).is_dir()]
    if missing:
        raise SystemExit(f"{out} lacks {', '.join(missing)}: run `make build-host`, or pass --assemble")

    work = Path(tempfile.mkdtemp(prefix="cold-start-"))
    try:
        task_root, layer_root = work / "task", work / "opt"
        zip_dir(out / LAYER_ID, work / f"{LAYER_ID}.zip")
        unpack(work / f"{LAYER_ID}.zip", layer_root)
        for f in functions:
            zip_dir(out / f.logical_id, work / f"{f.logical_id}.zip")
            unpack(work / f"{f.logical_id}.zip", task_root / f.logical_id)
        lambda_build.set_writable(work, False)
        version = subprocess.run([args.python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True)
        print(f"artifacts {out}; unpacked read-only in {work}; Python {version.stdout.decode().strip()}")
        roots = [layer_root / "python", *(task_root / f.logical_id for f in functions)]
        print("bytecode that validates (1980 file times: only hash-based .pyc do), per artifact:")
        for root, c in pyc_counts(args.python, roots).items():
            valid = c["checked-hash"] + c["unchecked-hash"] + c["timestamp"]
            name = Path(root).relative_to(work)
            print(
                f"  {name!s:<40} {valid:6d} valid .pyc for {c['sources']:6d} .py  (checked-hash {c['checked-hash']},"
                f" unchecked-hash {c['unchecked-hash']}, timestamp {c['timestamp']}, stale {c['invalid']})"
            )
        samples = measure(args.python, functions, task_root, layer_root / "python", args.runs)
        ok = report(functions, samples)
        print(f"\n{args.runs} runs each (after a warm-up round), interleaved; ratio = median / median of import boto3")
    finally:
        lambda_build.set_writable(work, True)
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
