# `make test` builds .venv from requirements-test.txt, makes sure PostgreSQL's server
# programs are installed (the tests start a throwaway server on loopback), then lints,
# type-checks and tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test lint bench clean postgres dist

test: lint postgres
	$(BIN)/pytest

# Debian's postgresql package, when its initdb is nowhere to be found and apt can install it.
postgres:
	@command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	  else echo "PostgreSQL server programs are missing: the PostgreSQL tests will skip (and fail under CI=true)"; fi; }

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench:
	$(PYTHON) bench/run.py

# dist/runner.pyz: the standard-library runner as one file (the same bytes on every build).
dist:
	$(PYTHON) packaging/build_zipapp.py dist/runner.pyz

$(VENV)/.installed: requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis dist build *.egg-info
