"""Jobs the worker-pool tests send to real worker processes (importable by a spawned child)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any


class Refused(ValueError):
    """An error a job raises on purpose: it must come back to the caller as itself."""


class Stubborn(Exception):
    """An exception that pickles but cannot be rebuilt (its constructor wants two arguments)."""

    def __init__(self, a: str, b: str) -> None:
        super().__init__(f"{a}/{b}")


def echo(value: Any) -> Any:
    return value


def pid() -> int:
    return os.getpid()


def stall(marker: str) -> None:
    """Say that it started (a file named ``marker``), then hold the worker: a job that would run
    for hours, so only its budget ends it."""
    Path(marker).write_text(str(os.getpid()))
    time.sleep(3600)


def spin(marker: str) -> None:
    """Like ``stall`` but busy in Python the whole time (holding its process's GIL)."""
    Path(marker).write_text(str(os.getpid()))
    while True:
        pass


def wait_for(marker: str) -> str:
    """Wait until a file named ``marker`` exists (the test creates it when it has seen what it
    wanted while the job ran), then answer."""
    path = Path(marker)
    while not path.exists():
        time.sleep(0.01)
    return path.read_text()


def slow_start() -> None:
    """A worker's set-up that takes a second (an initializer)."""
    time.sleep(1.0)


def crash() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def refuse(text: str) -> None:
    raise Refused(text)


def stubborn() -> None:
    raise Stubborn("a", "b")


def unpicklable() -> Any:
    return threading.Lock()


def boom_at_start() -> None:
    """An initializer that fails: no worker can start."""
    raise RuntimeError("this worker cannot start")


def niceness() -> int:
    """The worker's CPU niceness."""
    return os.nice(0)


def hint_held_for_fewest_cards(*args: Any) -> Any:
    """The gateway's hint job, except that a hint for the fewest cards never comes (its worker
    held until killed): a question the solver takes minutes on, without hunting for a deal that
    is slow enough (those take from seconds to minutes, and one quick enough ends a test early)."""
    from services.gateway import jobs

    if args[4] == "cards":  # its goal
        time.sleep(3600)
    return jobs.hint(*args)
