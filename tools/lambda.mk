# Shared by the Makefiles next to each CodeUri/ContentUri of template.yaml: `sam build` (BuildMethod: makefile) runs
# `make --makefile <that Makefile> build-<LogicalId>` in a scratch copy with ARTIFACTS_DIR set; the build itself is
# tools/lambda_build.py (locked wheels for arm64/python3.13, checked-hash .pyc), run by the development environment's
# interpreter (it carries uv).
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))..)
PYTHON ?= $(firstword $(wildcard $(ROOT)/.venv/bin/python) python3)
LAMBDA_BUILD = $(PYTHON) $(ROOT)/tools/lambda_build.py
