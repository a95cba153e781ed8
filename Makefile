# `make test` builds .venv from requirements-test.txt, makes sure PostgreSQL's server
# programs, PgBouncer and promtool are installed (the tests start throwaway servers on
# loopback and check the alert rules), then lints, type-checks and tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test lint bench clean postgres dist

test: lint postgres
	$(BIN)/pytest

# Debian's postgresql, pgbouncer, prometheus (for promtool), prometheus-node-exporter,
# logrotate, faketime and python3-psycopg packages, when they are nowhere to be found and
# apt can install them (the tests start their own server and pooler on loopback, check the
# alert rules with promtool, serve a textfile with node_exporter, rotate logs with
# logrotate, run a host whose clock is off with faketime, and run the recipes' cron lines
# with /usr/bin/python3, which needs Debian's psycopg for a fleet).
postgres:
	@{ command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } && \
	{ command -v pgbouncer >/dev/null || test -x /usr/sbin/pgbouncer; } && \
	command -v promtool >/dev/null && \
	{ command -v logrotate >/dev/null || test -x /usr/sbin/logrotate; } && \
	command -v faketime >/dev/null && \
	command -v prometheus-node-exporter >/dev/null && \
	/usr/bin/python3 -c 'import psycopg' 2>/dev/null || \
	{ if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql pgbouncer prometheus prometheus-node-exporter logrotate faketime python3-psycopg >/dev/null; \
	  else echo "PostgreSQL, PgBouncer, promtool, node_exporter, logrotate, faketime or python3-psycopg is missing: their tests will skip (and fail under CI=true)"; fi; }

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: $(VENV)/.installed
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-bench.txt
	$(BIN)/python bench/run.py

# dist/runner.pyz: the standard-library runner as one file (the same bytes on every build).
# The zipapp holds the bytecode of the Python that builds it: build it with the one that
# will run it (the recipes' cron lines run /usr/bin/python3: make dist PYTHON=/usr/bin/python3).
DIST ?= dist
dist:
	$(PYTHON) packaging/build_zipapp.py $(DIST)/runner.pyz

$(VENV)/.installed: requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis dist build *.egg-info
