# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
HOST   ?= 127.0.0.1
PORT   ?= 8080
# What the service needs to run, and what the tests and lint need on top.
RUNTIME := $(VENV)/.runtime-stamp
STAMP   := $(VENV)/.installed-stamp

.PHONY: install run solver test test-fast lint bench clean

$(RUNTIME): pyproject.toml
	@echo "make: installing the service's packages into $(VENV) (once; about a minute)"
	@$(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install -q --upgrade pip
	@$(BIN)/python -m pip install -q -e .
	@touch $@

$(STAMP): $(RUNTIME)
	@echo "make: installing the test tools into $(VENV) (once)"
	@$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@

# The solver's inner modules (shared/solver/dp/) compiled with mypyc (shared/solver/compiled.py)
# when a C compiler is at hand, again whenever one of them changes; without one the solver runs
# as plain Python.
SOLVER := build/.solver-attempted
SOLVER_SOURCES := shared/solver/compiled.py $(wildcard shared/solver/dp/*.py)
$(SOLVER): $(SOLVER_SOURCES) | $(RUNTIME)
	@mkdir -p build
	@echo "make: compiling the solver (a few minutes; log in build/solver.log)"
	@$(BIN)/python -m pip install -q -e '.[solver]' > build/solver.log 2>&1
	@$(BIN)/python -c "from shared.solver.compiled import build; print(build())" \
		>> build/solver.log 2>&1; tail -n 1 build/solver.log
	@touch $@

solver: $(SOLVER)

install: $(STAMP) $(SOLVER)

# The service on the runtime packages alone: a page within a minute or two of a bare clone. The
# solver compiles in the background the first time (hints run as plain Python until it is built).
run: $(RUNTIME)
	@if [ ! -f $(SOLVER) ] || [ -n "$$(find $(SOLVER_SOURCES) -newer $(SOLVER) 2>/dev/null)" ]; then \
		echo "make: compiling the solver in the background (build/solver.log); until it is"; \
		echo "      built, hints run as plain Python (slower, the same answers)"; \
		($(MAKE) -s solver > /dev/null 2>&1 &); \
	fi
	$(BIN)/rummy serve --host $(HOST) --port $(PORT)

# The slowest tests are listed at the end, to keep the suite well within CI's time.
test: install
	$(BIN)/python -m pytest --durations=20

test-fast: install
	$(BIN)/python -m pytest -m "not slow"

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

bench: install
	$(BIN)/python tests/bench/core.py
	$(BIN)/python tests/bench/engine.py
	$(BIN)/python tests/bench/lobby.py --games 50 --rounds 5
	$(BIN)/python tests/bench/news.py
	$(BIN)/python tests/bench/load.py --closed 50,200 --open 1000 --serve 50 --duration 30
	$(BIN)/python tests/bench/load.py --closed "" --open "" --serve "" --live 100,1000,5000 --rate 150 --duration 20
	$(BIN)/python tests/bench/solver.py --positions 20 --games 0
	$(BIN)/python tests/bench/direction.py --positions 20
	$(BIN)/python tests/bench/arena.py --games 40
	$(BIN)/python tests/bench/edge.py --seconds 8
	$(BIN)/python tests/bench/cluster.py --games 40 --duration 10 --idle 20
	$(BIN)/python tests/bench/soak.py --games 200
	$(BIN)/python tests/bench/bots.py --games 20 --paced 100,400,1000 --duration 8
	$(BIN)/python tests/bench/tournament.py --entrants 256 --rounds 3
	$(BIN)/python tests/bench/ratings.py --games 5000

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache
