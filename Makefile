# One development environment (.venv) for the demo, the tests and the tools.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

CHROMIUM ?= /usr/bin/chromium

.PHONY: install demo test lint typecheck contract unit sandbox-tests integration console-tests browser fuzz load crash faults cold-start openapi asl clean

$(STAMP): pyproject.toml sandbox/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required (found %s)" % sys.version.split()[0])'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# one resolve: the sandbox distribution depends on this one (instantstart-serverless)
	$(BIN)/python -m pip install --quiet -e ./sandbox -e ".[dev]"
	touch $(STAMP)

install: $(STAMP) ## create .venv and install the project with its dev tools

demo: $(STAMP) ## start the sandbox and create a HyperPod cluster through the HTTP API
	$(BIN)/instantstart-sandbox demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/deptry .
	$(BIN)/deptry sandbox --config sandbox/pyproject.toml

typecheck: $(STAMP)
	$(BIN)/mypy

contract: $(STAMP)
	$(BIN)/cfn-lint template.yaml
	$(BIN)/python api_schema/generate.py --check
	$(BIN)/python statemachines/build.py --check

# Test suites run in separate processes: moto's backends are process-global.
unit: $(STAMP)
	$(BIN)/pytest tests/unit tests/contract $(PYTEST_ARGS)

sandbox-tests: $(STAMP)
	$(BIN)/pytest tests/sandbox $(PYTEST_ARGS)

integration: $(STAMP)
	$(BIN)/pytest tests/integration tests/mcp -n $${INSTANTSTART_TEST_WORKERS:-3} --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The console's browser tests drive Debian's Chromium through Playwright (never a browser download of its own):
# installed through apt when missing (as root, else through sudo).
browser:
	@test -x $(CHROMIUM) || { \
		SUDO=$$( [ "$$(id -u)" -eq 0 ] || echo sudo ); \
		echo "installing Debian's chromium for the console's browser tests"; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }
	@$(CHROMIUM) --version 2>/dev/null

console-tests: $(STAMP) browser
	$(BIN)/pytest tests/console $(PYTEST_ARGS)

# Every check, as parallel processes (tests/run_suites.py): the sandbox suites wait on the simulated
# clock, so they run beside the CPU-bound checks; per-suite wall times are printed at the end.
test: $(STAMP) browser ## lint, types, contracts and every test
	$(BIN)/python tests/run_suites.py

# Long runs with figures, not part of `make test`.
fuzz: $(STAMP) ## property-based fuzzing of the HTTP API from api_schema/openapi.json (prints figures)
	$(BIN)/pytest -q -p no:cacheprovider -s tests/fuzz $(PYTEST_ARGS)

load: $(STAMP) ## concurrent creates, deletes and retries over 10 tags: no lost or duplicated operations (prints figures)
	$(BIN)/pytest -q -p no:cacheprovider -s tests/load $(PYTEST_ARGS)

crash: $(STAMP) ## kill every workflow step after each of its AWS calls: converged, duplicates (prints figures)
	INSTANTSTART_TEST_TIME_SCALE=$${INSTANTSTART_TEST_TIME_SCALE:-300} $(BIN)/pytest -q -p no:cacheprovider -s tests/crash $(PYTEST_ARGS)

# Budget: 35 minutes of wall time on a 2-core machine (enforced: the run fails past it). Clusters run at once in one
# sandbox at INSTANTSTART_TEST_TIME_SCALE (default here 360) with INSTANTSTART_FAULT_WORKERS in flight (default 12);
# INSTANTSTART_FAULT_BUDGET (default 1800 s): no new cluster after it, the matrix printed, the run fails if cells are left.
faults: $(STAMP) ## fault matrix: each AWS operation of the create/delete workflows x {throttling, 5xx, timeout, documented error} x {1, 3}; fails on a BAD cell
	INSTANTSTART_TEST_TIME_SCALE=$${INSTANTSTART_TEST_TIME_SCALE:-360} INSTANTSTART_FAULT_WORKERS=$${INSTANTSTART_FAULT_WORKERS:-12} timeout --signal=INT 2100 \
		$(BIN)/pytest -q -p no:cacheprovider -s tests/faults $(PYTEST_ARGS)

# The artifacts of `make build-host` (.aws-sam/host) when they exist, else assembled from this checkout
# (pip install --target with .venv's interpreter, checked-hash bytecode); COLD_START_ARGS, e.g. --runs 9.
COLD_START_DIR ?= .aws-sam/host
cold-start: $(STAMP) ## import time of each Lambda handler from zipped, read-only artifacts, x import boto3; fails past a target
	$(BIN)/python benchmarks/cold_start.py $(COLD_START_DIR) $$(test -d $(COLD_START_DIR)/CoreLayer || echo --assemble) $(COLD_START_ARGS)

openapi: $(STAMP) ## regenerate api_schema/openapi.json from the routes
	$(BIN)/python api_schema/generate.py

asl: $(STAMP) ## regenerate statemachines/*.asl.json
	$(BIN)/python statemachines/build.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .test-logs
