# Synapse - thin wrappers. The README names two: `make run` and `make test`.
# Every target installs what it needs first, so a fresh clone needs only Python 3.13 and make.

ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))

# Python 3.13 (the Lambda runtime): on PATH, else pyenv's, else whatever python3 is.
# pyenv shims exist even when the version is not active, so each candidate is actually run.
ifndef PYTHON
PYTHON := $(shell for p in "$$(command -v python3.13)" $$(ls -d $$HOME/.pyenv/versions/3.13*/bin/python3.13 2>/dev/null | sort -rV) /usr/local/bin/python3.13 /usr/bin/python3.13; do \
	[ -n "$$p" ] && [ -x "$$p" ] && "$$p" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 13))' >/dev/null 2>&1 && { echo "$$p"; exit 0; }; \
	done; command -v python3)
endif

VENV ?= $(ROOT)/.venv
# aws-sam-cli pins its own boto3 and friends: it gets a virtual environment of its own.
SAM_VENV ?= $(ROOT)/.venv-sam
SAM_CLI_VERSION ?= 1.170.0
SAM := $(SAM_VENV)/bin/sam
# sam build looks for the runtime's python3.13 on PATH.
SAM_PATH := $(dir $(PYTHON)):$(PATH)
export SAM_CLI_TELEMETRY ?= 0

.PHONY: help venv sam-venv browser run invoke test screenshots lint build bench bench-locomo clean ts-types build-CommonLayer layer-deps layer-package

help:
	@echo "make run          serve the API on http://127.0.0.1:3000 (no AWS account needed)"
	@echo "make invoke FUNCTION=<logical id> EVENT=events/<file>.json   one function, once, like sam local invoke"
	@echo "make test         the whole test suite (unit, integration, e2e, the console in a browser)"
	@echo "make screenshots  the console's screenshots in docs/console/"
	@echo "make lint         ruff, ruff format --check, mypy, cfn-lint"
	@echo "make build        sam build (in its own virtual environment)"
	@echo "make bench        recall/ingest benchmarks;  make bench-locomo  LoCoMo retrieval"
	@echo "make ts-types     regenerate clients/typescript/src/schema.d.ts from GET /openapi.json"

# ---------------------------------------------------------------- environments
# The stamp depends on pyproject.toml: dependencies are re-installed only when it changes.
$(VENV)/.installed: $(ROOT)/pyproject.toml
	@echo ">> installing the dev dependency group into $(VENV) ($(PYTHON))"
	@test -x "$(VENV)/bin/python" || "$(PYTHON)" -m venv "$(VENV)"
	@# dependency groups need pip >= 25.1
	"$(VENV)/bin/python" -m pip install --quiet --upgrade "pip>=25.1"
	cd "$(ROOT)" && "$(VENV)/bin/python" -m pip install --quiet --group dev
	@touch "$@"

# The Python SDK (clients/python), installed as users get it: a non-editable install of the package,
# built with hatchling from the dev group (no build isolation: nothing is downloaded for the build).
# Re-installed whenever its pyproject.toml or a source file changes.
SDK_DIR := $(ROOT)/clients/python
SDK_FILES := $(SDK_DIR)/pyproject.toml $(SDK_DIR)/README.md $(wildcard $(SDK_DIR)/src/synapse_memory/*)

$(VENV)/.sdk-installed: $(VENV)/.installed $(SDK_FILES)
	@echo ">> installing the Python SDK (clients/python, synapse-memory) into $(VENV)"
	"$(VENV)/bin/python" -m pip install --quiet --no-build-isolation --force-reinstall --no-deps "$(SDK_DIR)"
	@touch "$@"

venv: $(VENV)/.installed $(VENV)/.sdk-installed

$(SAM_VENV)/.installed:
	@echo ">> installing aws-sam-cli $(SAM_CLI_VERSION) into $(SAM_VENV) ($(PYTHON))"
	@test -x "$(SAM_VENV)/bin/python" || "$(PYTHON)" -m venv "$(SAM_VENV)"
	"$(SAM_VENV)/bin/python" -m pip install --quiet --upgrade pip
	"$(SAM_VENV)/bin/python" -m pip install --quiet "aws-sam-cli==$(SAM_CLI_VERSION)"
	@touch "$@"

sam-venv: $(SAM_VENV)/.installed

# Debian's chromium (and a Thai font) for the console's browser tests, driven by Playwright for Python
# (the dev group) with executable_path: `playwright install` is never run. Installed when missing, as
# root or with sudo; when that cannot be done the browser tests skip and say why (in CI they fail).
CHROMIUM ?= /usr/bin/chromium
export CHROMIUM
BROWSER_PACKAGES := chromium fonts-thai-tlwg
browser:
	@if [ -x "$(CHROMIUM)" ]; then exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then \
		echo ">> no $(CHROMIUM) and no apt-get: the console's browser tests will be skipped (set CHROMIUM=/path/to/chromium)"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=""; \
	elif ! command -v sudo >/dev/null 2>&1; then \
		echo ">> no $(CHROMIUM), not root and no sudo: the console's browser tests will be skipped (apt-get install chromium)"; exit 0; \
	elif [ -t 0 ]; then SUDO="sudo"; else SUDO="sudo -n"; fi; \
	echo ">> installing Debian's chromium for the console's browser tests: apt-get install $(BROWSER_PACKAGES)"; \
	export DEBIAN_FRONTEND=noninteractive; \
	$$SUDO apt-get install -y -qq --no-install-recommends $(BROWSER_PACKAGES) >/dev/null 2>&1 \
		|| { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq --no-install-recommends $(BROWSER_PACKAGES); } \
		|| echo ">> could not install chromium: the console's browser tests will be skipped (in CI they fail)"

# ---------------------------------------------------------------- everyday targets
run: venv
	"$(VENV)/bin/python" -m local

# One function, once, with an event, as `sam local invoke` runs it but without Docker: the answer on
# stdout (nothing else: the recipe is silent), logs on stderr, against DATA_DIR's data (docs/local-run.md).
invoke: venv
	@if [ -z "$(FUNCTION)" ] || [ -z "$(EVENT)" ]; then \
		echo "usage: make invoke FUNCTION=<logical id> EVENT=events/<file>.json  (e.g. FUNCTION=HealthFunction EVENT=events/health.json)" >&2; \
		exit 2; fi
	@"$(VENV)/bin/python" -m local.invoke --template "$(ROOT)/template.yaml" "$(FUNCTION)" "$(EVENT)"

# The suite in parallel (pytest-xdist): one worker a core (at most 4), every test module whole on one
# worker (its servers start once, its tests run in order), modules handed out in collection order so
# the long e2e modules start first and the short unit modules fill the end; pytest's slowest 20
# durations are printed last (where the time goes). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ "$$n" -gt 4 ] && n=4; echo $$n)
PYTEST_ARGS ?= --durations=20
test: venv browser
	"$(VENV)/bin/pytest" -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder $(PYTEST_ARGS)

# the console's main views as PNGs in docs/console/ (committed; the browser tests otherwise write
# them to a temporary directory)
screenshots: venv browser
	CONSOLE_SCREENSHOTS="$(ROOT)/docs/console" "$(VENV)/bin/pytest" -q -p no:cacheprovider \
		tests/e2e/test_console_browser.py -k screenshots

lint: venv
	"$(VENV)/bin/ruff" check .
	"$(VENV)/bin/ruff" format --check .
	"$(VENV)/bin/mypy"
	"$(VENV)/bin/cfn-lint" template.yaml

build: sam-venv
	PATH="$(SAM_PATH)" "$(SAM)" validate --lint
	PATH="$(SAM_PATH)" "$(SAM)" build

bench: venv
	"$(VENV)/bin/python" -m bench

bench-locomo: venv
	"$(VENV)/bin/python" -m bench.locomo

# The TypeScript client's types, from the document GET /openapi.json serves (the docs function run
# once, offline), through openapi-typescript in Deno; tests/e2e/test_typescript_clients.py checks them.
ts-types: venv
	"$(VENV)/bin/python" clients/typescript/scripts/ts_types.py

clean:
	rm -rf "$(ROOT)/.aws-sam" "$(ROOT)/.pytest_cache" "$(ROOT)/.mypy_cache" "$(ROOT)/.ruff_cache"

# ---------------------------------------------------------------- sam build hook
# Called by `sam build` (template.yaml: CommonLayer Metadata BuildMethod makefile, ContextPath .),
# with ARTIFACTS_DIR set. BuildMethod python3.13 would copy layers/common/ *into* python/ and leave
# the package at /opt/python/python/synapse, where Lambda cannot import it; this lays the layer out
# as Lambda expects: /opt/python/synapse next to the dependencies, which are manylinux wheels for
# the python3.13 x86_64 runtime whatever the build machine runs.
# Lambda's python3.13 runs on Amazon Linux 2023 (glibc 2.34): any of these wheel tags loads there.
LAYER_PLATFORMS := $(foreach tag,manylinux_2_34 manylinux_2_28 manylinux_2_17 manylinux2014,--platform $(tag)_x86_64)
LAYER_PY ?= $(if $(wildcard $(SAM_VENV)/bin/python),$(SAM_VENV)/bin/python,$(PYTHON))

build-CommonLayer: layer-deps layer-package

# the runtime dependencies: manylinux wheels for python3.13
layer-deps:
	mkdir -p "$(ARTIFACTS_DIR)/python"
	"$(LAYER_PY)" -m pip install --quiet --disable-pip-version-check \
		--requirement "$(ROOT)/layers/common/requirements.txt" \
		--target "$(ARTIFACTS_DIR)/python" \
		$(LAYER_PLATFORMS) --implementation cp --python-version 3.13 --only-binary=:all:

# the synapse package, with its bytecode: /opt is read-only on Lambda, so without .pyc files in the
# layer every cold start would compile synapse again
layer-package:
	mkdir -p "$(ARTIFACTS_DIR)/python"
	rm -rf "$(ARTIFACTS_DIR)/python/synapse"
	cp -R "$(ROOT)/layers/common/python/synapse" "$(ARTIFACTS_DIR)/python/"
	find "$(ARTIFACTS_DIR)/python/synapse" -name __pycache__ -type d -prune -exec rm -rf {} +
	"$(LAYER_PY)" -m compileall -q --invalidation-mode unchecked-hash "$(ARTIFACTS_DIR)/python/synapse"
