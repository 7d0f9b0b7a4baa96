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

# The solver's inner modules compiled with mypyc (shared/core/compiled.py) when a C compiler is
# at hand, again whenever one of them changes; without one the solver runs as plain Python.
SOLVER := build/.solver-attempted
$(SOLVER): $(STAMP) shared/core/compiled.py $(wildcard shared/core/solver_*.py)
	@mkdir -p build
	@$(BIN)/python -c "from shared.core.compiled import build; print(build())" \
		> build/solver.log 2>&1; tail -n 1 build/solver.log
	@touch $@

install: $(STAMP) $(SOLVER)

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
	$(BIN)/python tests/bench/edge.py --seconds 8

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
