"""`python -m tests.faults.rummy_main COMMAND`: `rummy COMMAND` as the fault tests run it, with
three additions: on SIGUSR1 the process prints the stack of every asyncio task to its output (a
process that does not stop when told shows where it waits); on SIGUSR2 a callback of its event
loop raises, as a library's bug would (the loop logs the traceback: the logs stay JSON); and with
``FAULTS_CLOCK_SKEW`` (seconds) the process runs on a host whose wall clock is that far off
(``time.time``; the monotonic clock, which no wall clock moves, is left alone)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Coroutine
from typing import Any

from services.main import main

_run = asyncio.run


def _dump_tasks() -> None:
    for task in asyncio.all_tasks():
        print(f"--- {task!r}", flush=True)
        awaited: Any = task.get_coro()
        while awaited is not None:  # the chain of awaits, outermost first
            frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "gi_frame", None)
            if frame is not None:
                print(f"  {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
            awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "gi_yieldfrom", None)
    sys.stdout.flush()


def _fail() -> None:
    raise RuntimeError("a fault injected by SIGUSR2")


def _run_with_dump(coro: Coroutine[Any, Any, Any], **kwargs: Any) -> Any:
    async def wrapped() -> Any:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGUSR1, _dump_tasks)
        loop.add_signal_handler(signal.SIGUSR2, lambda: loop.call_soon(_fail))
        return await coro

    return _run(wrapped(), **kwargs)


def _skew_the_wall_clock(seconds: float) -> None:
    real = time.time
    time.time = lambda: real() + seconds


if __name__ == "__main__":
    if os.environ.get("FAULTS_CLOCK_SKEW"):
        _skew_the_wall_clock(float(os.environ["FAULTS_CLOCK_SKEW"]))
    asyncio.run = _run_with_dump  # type: ignore[assignment]
    sys.exit(main(sys.argv[1:]))
