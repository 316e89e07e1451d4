# One development environment (.venv) for the demo, the tests and the tools.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PYTEST_ARGS ?=

.PHONY: install demo test lint typecheck contract unit sandbox-tests integration openapi asl clean

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
	$(BIN)/pytest tests/integration tests/mcp $(PYTEST_ARGS)

test: lint typecheck contract unit sandbox-tests integration ## lint, types, contracts and every test

openapi: $(STAMP) ## regenerate api_schema/openapi.json from the routes
	$(BIN)/python api_schema/generate.py

asl: $(STAMP) ## regenerate statemachines/*.asl.json
	$(BIN)/python statemachines/build.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
