"""Build the Lambda artifacts of ``template.yaml`` from the locked requirements: the core layer and each function.

One build for both destinations, in SAM's layout (``DIR/<LogicalId>/`` holds a function's code,
``DIR/CoreLayer/python/`` the layer's packages):

- ``--platform lambda`` is what ``sam build`` ships (``BuildMethod: makefile``: the Makefile next to each ``CodeUri``
  calls this script with ``ARTIFACTS_DIR``): wheels for ``manylinux2014_aarch64`` / CPython 3.13 only (the build fails
  when a locked package has no such wheel), and checked-hash ``.pyc`` compiled by Python 3.13. Lambda's code
  directories are read-only and SAM dates every zip entry 1980-01-01, so a timestamp-checked ``.pyc`` never validates
  there and every cold start would compile the sources again (aws/aws-lambda-builders #924); a checked-hash one
  validates against the source's hash.
- ``--platform host`` is the same lock for this machine's interpreter: what the offline sandbox runs
  (``make build-host`` writes ``.aws-sam/host``).

Every package comes from ``layers/core/requirements.txt`` (``make lock``; hashes required, no dependency resolution at
build time), minus what :data:`PRUNE` names. ``--omit DIST`` leaves a locked distribution out (tests prove a missing
dependency fails the way Lambda fails).

Usage::

    python tools/lambda_build.py all --platform host --out .aws-sam/host
    python tools/lambda_build.py layer --platform lambda --out "$ARTIFACTS_DIR"      # from layers/core/Makefile
    python tools/lambda_build.py function --source functions/api --out "$ARTIFACTS_DIR"
    python tools/lambda_build.py sizes .aws-sam/build                               # unzipped size per function
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "layers" / "core" / "requirements.txt"
CORE_PACKAGE = ROOT / "layers" / "core" / "instantstart"
DEV_LOCK = ROOT / "requirements-dev.txt"
LAYER_ID = "CoreLayer"
RUNTIME_ID = "Runtime"
RUNTIME_DISTRIBUTIONS = ("awslambdaric", "simplejson", "snapshot-restore-py")
"""The sandbox's ``/var/runtime``: what ``awslambdaric`` needs (``make build-host`` writes it to ``DIR/Runtime``)."""
LAMBDA_PLATFORM = "aarch64-manylinux2014"
LAMBDA_PYTHON = "3.13"

PRUNE = ("kubernetes/aio",)
"""Paths under the layer's ``python/`` that are never imported: the kubernetes client's asyncio twin (about 40 MB
unzipped; its own dependencies, aiohttp and the rest, are left out of the lock by ``make lock``)."""

FUNCTIONS = {
    "ApiFunction": "functions/api",
    "ClusterStepsFunction": "functions/steps",
    "HyperPodEventsFunction": "functions/events",
    "ExecutionEventsFunction": "functions/events",
    "ReconcileSweepFunction": "functions/events",
    "ConsolePublisherFunction": "console",
}
"""Each function of ``template.yaml`` and its ``CodeUri`` (checked against the template by tests/contract)."""

SKIP = re.compile(r"(^|/)(__pycache__|Makefile|\.[^/]*)$")
"""Source entries that are not part of a function's code."""

UNZIPPED_LIMIT = 262_144_000
"""Lambda's quota on a function's unzipped deployment package, its layers included (bytes)."""
UNZIPPED_TARGET = UNZIPPED_LIMIT // 2
"""This project's budget: half of Lambda's quota (125 MiB), so the layer can grow without meeting the limit."""


class BuildError(RuntimeError):
    """A build that cannot produce what Lambda would run (missing interpreter, missing wheel, bad argument)."""


@dataclass(frozen=True)
class Target:
    """Where the artifacts run: ``python`` compiles the ``.pyc``; ``platform``/``version`` select the wheels (``None``
    for this machine's interpreter)."""

    python: str
    platform: str | None
    version: str | None


PYODIDE = "pyodide"
"""The compiler of last resort: Pyodide's CPython 3.13 (WebAssembly) under Node.js (``tools/pyodide``)."""
PYODIDE_DIR = ROOT / "tools" / "pyodide"


def find_python(version: str) -> str:
    """The compiler of the Lambda bytecode: a CPython ``version`` (``"3.13"``) interpreter (``$LAMBDA_PYTHON`` when
    set, ``python3.13`` on ``PATH``, a pyenv installation), else :data:`PYODIDE` when Node.js is there (bytecode
    depends only on the minor version, so any Python 3.11+ machine can build). ``LAMBDA_PYTHON=pyodide`` chooses
    Pyodide. Raises :class:`BuildError` when there is neither."""
    chosen = os.environ.get("LAMBDA_PYTHON")
    if chosen == PYODIDE:
        return PYODIDE
    candidates = [chosen, shutil.which(f"python{version}")]
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates += [str(path) for path in sorted(pyenv.glob(f"{version}.*/bin/python{version}"), reverse=True)]
    for candidate in candidates:
        if candidate and Path(candidate).is_file() and _runs(candidate, version):
            return candidate
    if version == LAMBDA_PYTHON and shutil.which("node") and shutil.which("npm"):
        return PYODIDE
    raise BuildError(
        f"compiling the Lambda bytecode needs Python {version} (on PATH, from pyenv, or LAMBDA_PYTHON=/path) or "
        f"Node.js with npm (Pyodide's CPython {version})"
    )


def _runs(python: str, version: str) -> bool:
    """Whether ``python`` starts and is CPython ``version`` (a pyenv shim on PATH may not be)."""
    found = "'%d.%d' % sys.version_info[:2]"
    check = f"import sys; sys.exit(sys.implementation.name != 'cpython' or {found} != {version!r})"
    return subprocess.run([python, "-c", check], capture_output=True).returncode == 0


def target(platform: str) -> Target:
    """The :class:`Target` of ``platform`` (``"lambda"`` or ``"host"``)."""
    if platform == "lambda":
        return Target(find_python(LAMBDA_PYTHON), LAMBDA_PLATFORM, LAMBDA_PYTHON)
    if platform == "host":
        return Target(sys.executable, None, None)
    raise BuildError(f"platform must be one of lambda, host (got {platform!r})")


def uv() -> list[str]:
    """The command of uv (installed in the development environment from requirements-dev.txt)."""
    beside = Path(sys.executable).with_name("uv")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("uv")
    if found:
        return [found]
    return [sys.executable, "-m", "uv"]


def locked_requirements(omit: tuple[str, ...] = (), lock: Path = LOCK, only: tuple[str, ...] = ()) -> str:
    """The text of ``lock`` without the distributions named in ``omit`` (or with only those in ``only``), names
    compared as PEP 503 normalises them. Raises :class:`BuildError` when a name is not in the lock."""
    blocks: list[list[str]] = []
    for line in lock.read_text().splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)

    def name(block: list[str]) -> str:
        return _normalise(re.split(r"[=<>!~;\[ ]", block[0], maxsplit=1)[0])

    wanted = {_normalise(name) for name in omit}
    chosen = {_normalise(name) for name in only}
    unknown = (wanted | chosen) - {name(block) for block in blocks}
    if unknown:
        raise BuildError(f"no locked distribution {', '.join(sorted(unknown))} in {lock.name}")
    kept = [block for block in blocks if name(block) not in wanted and (not chosen or name(block) in chosen)]
    return "\n".join(line for block in kept for line in block) + "\n"


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _install(requirements: str, site: Path, where: Target) -> None:
    """Install the pinned, hashed ``requirements`` (no resolution, wheels only) for ``where`` into ``site``."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write(requirements)
    command = [*uv(), "pip", "install", "--quiet", "--target", str(site), "--no-deps", "--require-hashes"]
    command += ["--only-binary", ":all:", "--no-compile", "--link-mode", "copy", "-r", handle.name]
    if where.platform:
        command += ["--python-platform", where.platform, "--python-version", str(where.version)]
    else:
        command += ["--python", where.python]
    try:
        subprocess.run(command, check=True)
    finally:
        os.unlink(handle.name)
    shutil.rmtree(site / "bin", ignore_errors=True)


def _unchanged(site: Path, key: str) -> bool:
    """Whether ``site`` was built from ``key`` (its stamp says so); else it is emptied and the stamp is due."""
    stamp = site / ".lock-sha256"
    digest = hashlib.sha256(key.encode()).hexdigest()
    if stamp.is_file() and stamp.read_text() == digest:
        return True
    shutil.rmtree(site, ignore_errors=True)
    site.mkdir(parents=True)
    return False


def _stamp(site: Path, key: str) -> None:
    (site / ".lock-sha256").write_text(hashlib.sha256(key.encode()).hexdigest())


def build_layer(out: Path, where: Target, omit: tuple[str, ...] = ()) -> None:
    """Write the core layer to ``out/python``: the locked wheels for ``where`` (hash-checked, no resolution, binary
    only), :data:`PRUNE` removed, the ``instantstart`` package, all compiled to checked-hash ``.pyc``. The third-party
    part is kept when the lock, ``omit`` and the target are those of the last build (a stamp records them). Raises
    :class:`BuildError` (or :class:`subprocess.CalledProcessError` from uv) when a wheel is missing."""
    site = out / "python"
    requirements = locked_requirements(omit)
    key = f"{where}\n{requirements}"
    if not _unchanged(site, key):
        _install(requirements, site, where)
        for relative in PRUNE:
            shutil.rmtree(site / relative, ignore_errors=True)
        compile_tree(site, where.python)
        _stamp(site, key)
    shutil.rmtree(site / "instantstart", ignore_errors=True)
    copy_tree(CORE_PACKAGE, site / "instantstart")
    compile_tree(site / "instantstart", where.python)


def build_runtime(out: Path, where: Target) -> None:
    """Write the offline sandbox's Lambda runtime directory (its ``/var/runtime``): AWS's runtime interface client
    (``awslambdaric``) and its dependencies at the versions of ``requirements-dev.txt``. Not part of any deploy."""
    requirements = locked_requirements(lock=DEV_LOCK, only=RUNTIME_DISTRIBUTIONS)
    key = f"{where}\n{requirements}"
    if not _unchanged(out, key):
        _install(requirements, out, where)
        compile_tree(out, where.python)
        _stamp(out, key)


def build_function(source: Path, out: Path, where: Target) -> None:
    """Write a function's code (``source``: its ``CodeUri``) to ``out``, compiled to checked-hash ``.pyc``."""
    if out.exists():
        shutil.rmtree(out)
    copy_tree(source, out)
    compile_tree(out, where.python)


def copy_tree(source: Path, out: Path) -> None:
    """Copy ``source`` to ``out`` without caches, Makefiles and dotfiles."""
    out.mkdir(parents=True, exist_ok=True)
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source).as_posix()
        if SKIP.search(relative) or any(SKIP.search(part) for part in relative.split("/")):
            continue
        destination = out / relative
        if path.is_dir():
            destination.mkdir(parents=True, exist_ok=True)
        else:
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)


def compile_tree(path: Path, python: str) -> None:
    """Compile every ``.py`` under ``path`` with ``python`` (or :data:`PYODIDE`) to checked-hash ``.pyc`` (valid
    whatever the file times). Raises :class:`subprocess.CalledProcessError` when a source does not compile."""
    if python == PYODIDE:
        if not (PYODIDE_DIR / "node_modules" / "pyodide").is_dir():  # the locked package (package-lock.json)
            npm = ["npm", "ci", "--prefix", str(PYODIDE_DIR), "--no-audit", "--no-fund", "--silent"]
            subprocess.run(npm, check=True)
        subprocess.run(["node", str(PYODIDE_DIR / "compile.mjs"), str(path)], check=True, stdout=subprocess.DEVNULL)
        return
    command = [python, "-m", "compileall", "-q", "-q", "-j", "0", "--invalidation-mode", "checked-hash", str(path)]
    subprocess.run(command, check=True)


def build_all(out: Path, where: Target, omit: tuple[str, ...] = (), only: tuple[str, ...] = ()) -> None:
    """Build the layer and every function of :data:`FUNCTIONS` (or those named in ``only``) into ``out``; for the host,
    the sandbox's runtime directory too (:func:`build_runtime`)."""
    read_only = where.platform is None  # the sandbox's copy, read-only as Lambda's /var/task and /opt are
    if read_only and out.is_dir():
        set_writable(out, True)
    if not only or LAYER_ID in only:
        build_layer(out / LAYER_ID, where, omit)
    for logical_id, code_uri in FUNCTIONS.items():
        if not only or logical_id in only:
            build_function(ROOT / code_uri, out / logical_id, where)
    if where.platform is None and (not only or RUNTIME_ID in only):
        build_runtime(out / RUNTIME_ID, where)
    if read_only:
        for built in out.iterdir():
            if built.is_dir():
                set_writable(built, False)


def set_writable(path: Path, writable: bool) -> None:
    """Give (``writable``) or take away everyone's write permission on ``path`` and everything under it."""
    for entry in [path, *path.rglob("*")]:
        if entry.is_symlink():
            continue
        mode = entry.stat().st_mode
        entry.chmod(mode | 0o200 if writable else mode & ~0o222)


def tree_size(path: Path) -> int:
    """Bytes of the regular files under ``path`` (what Lambda counts as unzipped size)."""
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file() and not entry.is_symlink())


def sizes(build: Path) -> list[tuple[str, int, int]]:
    """``(logical id, function bytes, function + layer bytes)`` of each built function under ``build``."""
    layer = tree_size(build / LAYER_ID) if (build / LAYER_ID).is_dir() else 0
    rows = []
    for logical_id in FUNCTIONS:
        if (build / logical_id).is_dir():
            code = tree_size(build / logical_id)
            rows.append((logical_id, code, code + layer))
    return rows


def print_sizes(build: Path) -> bool:
    """Print each function's unzipped size with its layer against :data:`UNZIPPED_TARGET` and the quota; ``True``
    when every function is within the target."""
    within = True
    print(f"{'function':28} {'code':>12} {'with layers':>14}  target {UNZIPPED_TARGET:,} B, quota {UNZIPPED_LIMIT:,} B")
    for logical_id, code, total in sizes(build):
        verdict = "ok" if total <= UNZIPPED_TARGET else "OVER TARGET"
        within &= total <= UNZIPPED_TARGET
        print(f"{logical_id:28} {code:>12,} {total:>14,}  {total / UNZIPPED_LIMIT:6.1%} of quota  {verdict}")
    return within


def main(argv: list[str] | None = None) -> int:
    """The command line (see the module's docstring). Exit status 1 on a build error or a size over the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("all", "layer", "function"):
        command = commands.add_parser(name)
        command.add_argument("--platform", choices=("lambda", "host"), default="lambda")
        command.add_argument("--out", type=Path, required=True)
        if name != "function":
            command.add_argument("--omit", action="append", default=[], metavar="DIST")
        if name == "all":
            command.add_argument("--only", action="append", default=[], metavar="LOGICAL_ID")
        if name == "function":
            command.add_argument("--source", type=Path, required=True)
    commands.add_parser("sizes").add_argument("build", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "sizes":
            return 0 if print_sizes(args.build) else 1
        where = target(args.platform)
        out = args.out.resolve()
        if args.command == "all":
            build_all(out, where, tuple(args.omit), tuple(args.only))
        elif args.command == "layer":
            build_layer(out, where, tuple(args.omit))
        else:
            build_function(args.source.resolve(), out, where)
    except (BuildError, subprocess.CalledProcessError) as error:
        print(f"lambda_build: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
