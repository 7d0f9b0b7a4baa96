# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install run test test-fast lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

run: install
	$(BIN)/rummy serve

test: install
	$(BIN)/python -m pytest

test-fast: install
	$(BIN)/python -m pytest -m "not slow"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install
	$(BIN)/python tests/bench/core.py
	$(BIN)/python tests/bench/engine.py
	$(BIN)/python tests/bench/load.py --closed 50 --open 300 --serve 50 --duration 8
	$(BIN)/python tests/bench/solver.py --positions 20 --games 0
	$(BIN)/python tests/bench/direction.py --positions 20
	$(BIN)/python tests/bench/arena.py --games 40

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
