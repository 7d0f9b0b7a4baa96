"""Shared fixtures of the test suite."""

from shared.infra.runtime import configure_solver

# The test process starts as a `rummy` process does: the solver loaded as RUMMY_SOLVER and
# RUMMY_SOLVER_BUILD say (`RUMMY_SOLVER=python pytest ...` runs it as plain Python).
configure_solver()
