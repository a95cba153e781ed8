# `make test` builds .venv from requirements-test.txt, then lints, type-checks and tests.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: test lint bench clean

test: lint
	$(BIN)/pytest

lint: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench:
	$(PYTHON) bench/run.py

$(VENV)/.installed: requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-test.txt
	touch $@

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
