"""Shared fixtures of the test suite."""

from hypothesis import settings

from shared.infra.runtime import configure_solver

# The test process starts as a `rummy` process does: the solver loaded as RUMMY_SOLVER and
# RUMMY_SOLVER_BUILD say (`RUMMY_SOLVER=python pytest ...` runs it as plain Python).
configure_solver()

# No property test has a deadline: an example slowed past one by the shared machine (a garbage
# collection, another process) would fail it as flaky, and no test here times the machine.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")
