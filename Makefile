# One development environment (.venv) for the demo, the tests and the tools, installed from locks with hashes
# (requirements-dev.txt, under the core layer's layers/core/requirements.txt: the same versions the layer ships).
# The SAM CLI has an environment of its own (.sam-cli, tools/sam-cli.txt).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
SAM_VENV ?= .sam-cli
SAM := $(SAM_VENV)/bin/sam
SAM_STAMP := $(SAM_VENV)/.installed-stamp
PYTEST_ARGS ?=
export SAM_CLI_TELEMETRY := 0
# The artifacts the sandbox runs: the lock built for this machine's interpreter (tools/lambda_build.py)
HOST_BUILD := .aws-sam/host
HOST_STAMP := $(HOST_BUILD)/.built-stamp

CHROMIUM ?= /usr/bin/chromium

.PHONY: install lock build build-host sizes demo test lint typecheck contract unit sandbox-tests integration console-tests browser fuzz load crash faults cold-start openapi asl clean test-under-load

$(STAMP): requirements-dev.txt layers/core/requirements.txt pyproject.toml sandbox/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (found %s)" % sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# every package from the lock, hash-checked, nothing resolved here; then the two local distributions
	$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r requirements-dev.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e ./sandbox -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

install: $(STAMP) ## create .venv and install the project with its dev tools

# The locks: ranges in layers/core/requirements.in and pyproject.toml, versions and hashes in the .txt files. The
# layer's lock leaves out kubernetes' asyncio client's dependencies (kubernetes.aio is never imported and not shipped).
LOCK_FLAGS := --universal --python-version 3.11 --generate-hashes --quiet
NO_AIO := $(foreach dist,aiohttp aiohttp-retry aiohappyeyeballs aiosignal frozenlist multidict propcache yarl attrs,--no-emit-package $(dist))
lock: ## recompile the locks (layers/core/requirements.txt, requirements-dev.txt, tools/sam-cli.txt)
	@test -x $(BIN)/uv || { echo "uv comes with the development environment: run make install first"; exit 1; }
	$(BIN)/uv pip compile layers/core/requirements.in $(LOCK_FLAGS) $(NO_AIO) -o layers/core/requirements.txt
	$(BIN)/uv pip compile requirements-dev.in -c layers/core/requirements.txt $(LOCK_FLAGS) \
		--no-emit-package instantstart-serverless --no-emit-package instantstart-sandbox -o requirements-dev.txt
	$(BIN)/uv pip compile tools/sam-cli.in $(LOCK_FLAGS) -o tools/sam-cli.txt

$(SAM_STAMP): tools/sam-cli.txt
	test -x $(SAM_VENV)/bin/python || $(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --no-deps --require-hashes -r tools/sam-cli.txt
	touch $(SAM_STAMP)

# What `sam deploy` ships: sam build without Docker (BuildMethod: makefile, tools/lambda.mk), Python 3.13 on this
# machine compiles the .pyc (PATH, pyenv or LAMBDA_PYTHON); then each function's unzipped size with its layer.
build: $(STAMP) $(SAM_STAMP) ## sam build for Lambda (arm64, python3.13), sam validate --lint, sizes
	PATH="$(CURDIR)/$(BIN):$$PATH" $(SAM) build --template template.yaml
	$(SAM) validate --lint --template template.yaml
	$(BIN)/python tools/lambda_build.py sizes .aws-sam/build

# Always run: the tool keeps the layer's third-party part while the lock is unchanged and copies the sources again
# (about a second), so a moved or renamed file is never missed the way a timestamp check can miss it.
$(HOST_STAMP): $(STAMP) FORCE
	$(BIN)/python tools/lambda_build.py all --platform host --out $(HOST_BUILD)
	touch $(HOST_STAMP)

FORCE:

build-host: $(HOST_STAMP) ## the same lock and sources built for this machine: what the sandbox runs

demo: $(STAMP) $(HOST_STAMP) ## start the sandbox and create a HyperPod cluster through the HTTP API
	$(BIN)/instantstart-sandbox demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/deptry .
	$(BIN)/deptry sandbox --config sandbox/pyproject.toml
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

contract: $(STAMP)
	$(BIN)/cfn-lint template.yaml
	$(BIN)/python api_schema/generate.py --check
	$(BIN)/python statemachines/build.py --check

# Test suites run in separate processes: moto's backends are process-global.
unit: $(STAMP) $(HOST_STAMP)
	$(BIN)/pytest tests/unit tests/contract $(PYTEST_ARGS)

sandbox-tests: $(STAMP) $(HOST_STAMP)
	$(BIN)/pytest tests/sandbox $(PYTEST_ARGS)

integration: $(STAMP) $(HOST_STAMP)
	$(BIN)/pytest tests/integration tests/mcp -n $${INSTANTSTART_TEST_WORKERS:-4} --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The console's browser tests drive Debian's Chromium through Playwright (never a browser download of its own):
# installed through apt when missing (as root, else through sudo).
browser:
	@test -x $(CHROMIUM) || { \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		echo "installing Debian's chromium for the console's browser tests"; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@$(CHROMIUM) --version 2>/dev/null

console-tests: $(STAMP) $(HOST_STAMP) browser
	$(BIN)/pytest tests/console $(PYTEST_ARGS)

# Every check, as parallel processes (tests/run_suites.py): the sandbox suites wait on the simulated
# clock, so they run beside the CPU-bound checks; per-suite wall times are printed at the end.
test: $(STAMP) $(HOST_STAMP) browser ## lint, types, contracts and every test
	$(BIN)/python tests/run_suites.py

# make test three times in a row beside two busy processes (each one core of pure CPU): no test may depend on an idle
# machine (about 3 x 10 minutes on 2 cores).
test-under-load: $(STAMP) $(HOST_STAMP) browser ## make test 3 times beside 2 busy processes (prints each summary)
	$(BIN)/python tests/run_suites.py --under-load 2 --repeat 3

# Long runs with figures, not part of `make test`.
fuzz: $(STAMP) $(HOST_STAMP) ## property-based fuzzing of the HTTP API from api_schema/openapi.json (prints figures)
	$(BIN)/pytest -q -p no:cacheprovider -s tests/fuzz $(PYTEST_ARGS)

load: $(STAMP) $(HOST_STAMP) ## concurrent creates, deletes and retries over 10 tags: no lost or duplicated operations (prints figures)
	$(BIN)/pytest -q -p no:cacheprovider -s tests/load $(PYTEST_ARGS)

crash: $(STAMP) $(HOST_STAMP) ## kill every workflow step after each of its AWS calls: converged, duplicates (prints figures)
	INSTANTSTART_TEST_TIME_SCALE=$${INSTANTSTART_TEST_TIME_SCALE:-300} $(BIN)/pytest -q -p no:cacheprovider -s tests/crash $(PYTEST_ARGS)

# Budget: 35 minutes of wall time on a 2-core machine (enforced: the run fails past it). Clusters run at once in one
# sandbox at INSTANTSTART_TEST_TIME_SCALE (default here 360) with INSTANTSTART_FAULT_WORKERS in flight (default 12);
# INSTANTSTART_FAULT_BUDGET (default 1800 s): no new cluster after it, the matrix printed, the run fails if cells are left.
faults: $(STAMP) $(HOST_STAMP) ## fault matrix: each AWS operation of the create/delete workflows x {throttling, 5xx, timeout, documented error} x {1, 3}; fails on a BAD cell
	INSTANTSTART_TEST_TIME_SCALE=$${INSTANTSTART_TEST_TIME_SCALE:-360} INSTANTSTART_FAULT_WORKERS=$${INSTANTSTART_FAULT_WORKERS:-12} timeout --signal=INT 2100 \
		$(BIN)/pytest -q -p no:cacheprovider -s tests/faults $(PYTEST_ARGS)

# The artifacts of `make build-host` (.aws-sam/host) when they exist, else assembled from this checkout
# (pip install --target with .venv's interpreter, checked-hash bytecode); COLD_START_ARGS, e.g. --runs 9.
COLD_START_DIR ?= .aws-sam/host
cold-start: $(STAMP) $(HOST_STAMP) ## import time of each Lambda handler from zipped, read-only artifacts, x import boto3; fails past a target
	$(BIN)/python benchmarks/cold_start.py $(COLD_START_DIR) $(COLD_START_ARGS)

openapi: $(STAMP) ## regenerate api_schema/openapi.json (and the client package's copy) from the routes
	$(BIN)/python api_schema/generate.py

asl: $(STAMP) ## regenerate statemachines/*.asl.json
	$(BIN)/python statemachines/build.py

clean:
	rm -rf $(VENV) $(SAM_VENV) .aws-sam .pytest_cache .mypy_cache .ruff_cache .test-logs
