# Two entry points for a fresh machine: `make demo` and `make test`. Both build .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test lint typecheck contracts pytest demo bench clean

venv: $(STAMP)

# Rebuilt only when pyproject.toml changes; the stamp keeps repeated runs fast.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: venv
	$(BIN)/mypy

contracts: venv
	$(BIN)/lint-imports

pytest: venv
	$(BIN)/python -m pytest

test: lint typecheck contracts pytest

demo: venv
	$(BIN)/kafka-balancer demo

bench: venv
	$(BIN)/python -m bench.run_all

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
