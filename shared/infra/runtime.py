"""How a process runs: its event loop, its cyclic collector, and how the solver loads.

Every `rummy` command sets these up at its start from ``Settings``; a worker process spawned to
solve does too (with no settings given it reads them from the environment it inherits).
"""

from __future__ import annotations

import asyncio
import gc

from shared.infra import collector
from shared.infra.settings import Settings


def fast_event_loop(settings: Settings | None = None) -> None:
    """Run asyncio on uvloop (libuv; a well-kept drop-in loop) where it is installed: the
    services spend much of each turn in the loop's own socket and callback work, which uvloop
    does in C. ``RUMMY_EVENT_LOOP=asyncio`` keeps the standard loop. (``settings``: the
    process's; read from the environment when not given.)"""
    if (Settings.from_env() if settings is None else settings).event_loop == "asyncio":
        return
    try:
        import uvloop
    except ImportError:  # not on every platform (Windows): the standard loop then
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def quiet_gc(settings: Settings | None = None) -> None:
    """Collect cyclic garbage less often in the long-running networked commands.

    Every turn allocates thousands of short-lived dicts and tuples (decoded events, views,
    Redis replies) that reference counting frees at once; with the default threshold the
    collector still ran hundreds of times a second, walking the games cached in memory, and
    took about a tenth of the gateway's CPU (measured with ``perf``). What the process loaded
    before serving (modules, rule sets) is frozen out of the collector's walks for good.
    ``RUMMY_GC`` (default ``50000,20,20``: young-generation collections every 50,000 net
    allocations instead of 700) sets the thresholds; ``default`` keeps Python's settings.
    Each full collection's survivors are then frozen out of the next ones' walks too
    (``shared.infra.collector``), so no full collection walks a large heap's long-lived part.
    (``settings``: the process's; read from the environment when not given.)"""
    thresholds = (Settings.from_env() if settings is None else settings).gc_thresholds()
    if thresholds is None:
        return
    gc.collect()
    gc.freeze()
    gc.set_threshold(*thresholds)
    collector.install()


def configure_solver(settings: Settings | None = None) -> None:
    """Have the solver load its inner modules as the settings say, at its first use: compiled
    when they are built from these very sources (in ``RUMMY_SOLVER_BUILD``, else the tree's
    ``build/solver/``) unless ``RUMMY_SOLVER=python``. Every process that may solve does this at
    its start, before any search: a worker process spawned to solve too (``settings`` not
    given: read from the environment, which a spawned process inherits)."""
    from shared.solver import configure

    chosen = Settings.from_env() if settings is None else settings
    configure(chosen.solver, chosen.solver_build)
