"""On a process's ``PYTHONPATH`` (Python imports ``sitecustomize`` at start-up): the exact solver
never finishes, in that process and in every worker process it starts, which inherit the path.

A process test that needs a hint past its budget gets one on any machine, however fast, where a
hostile deal is slow on most machines only."""

from __future__ import annotations

import threading
from typing import Any

import shared.solver


def _never_finishes(*args: Any, **kwargs: Any) -> Any:
    threading.Event().wait()


shared.solver.solve = _never_finishes
