"""How a bot seat's move is worked out within its budget: a heuristic bot inline (milliseconds),
a solver bot in a worker process (``shared/infra/workpool.py``) within ``RUMMY_BOT_SECONDS``.

Why a pool: the exact solver can take seconds on a crowded table, and in the event loop's own
process it would hold every other game's moves (and the feed) for as long. Why a fallback: a
solver bot that runs out of time, finds every worker busy or loses its worker still moves, with
its cheaper bot's move (``shared/play/roster.py``), so a bot seat never stalls its game.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from shared.core.views import SeatView
from shared.infra.settings import Settings
from shared.infra.workpool import PoolError, WorkPool
from shared.play.roster import seatable, think


def prepare() -> None:
    """A worker's set-up before its first move: the solver (compiled when built) loaded and the
    collector at the networked commands' thresholds, so that no move's budget pays for them."""
    from shared.infra.runtime import configure_solver, quiet_gc

    configure_solver()  # RUMMY_SOLVER and RUMMY_SOLVER_BUILD, from the inherited environment
    import shared.solver.goals  # noqa: F401 - loaded here, not in a move's budget

    quiet_gc()


class Thinker:
    """Works out bot seats' moves: inline, or in the pool within the budget."""

    def __init__(self, settings: Settings, registry: CollectorRegistry | None) -> None:
        self.budget = settings.bot_seconds
        self.pool = WorkPool(
            settings.bot_workers,
            settings.bot_queue,
            initializer=prepare,
            niceness=settings.solver_nice,
            registry=registry,
            namespace="bots_pool",
        )
        self.seconds = Histogram(
            "bots_think_seconds",
            "Time to work out one bot move (the pool's wait included), by bot",
            ["bot"],
            buckets=(0.001, 0.005, 0.02, 0.1, 0.25, 0.5, 1, 2, 5, 10),
            registry=registry,
        )
        self.fallbacks = Counter(
            "bots_fallbacks_total",
            "Solver bots' moves taken from their cheaper bot instead, by bot and reason",
            ["bot", "reason"],
            registry=registry,
        )

    async def start(self) -> None:
        await self.pool.start()

    async def stop(self) -> None:
        await self.pool.stop()

    async def choose(self, bot: str, view: SeatView, seed: str) -> tuple[dict[str, Any], bool]:
        """The command ``bot`` chooses for ``view`` (as a seat's client sends it), and whether
        it is its fallback's instead (the budget ran out, or the pool could not take it).
        Raises ``ValueError`` for a bot there is none of."""
        kind = seatable(bot)
        started = time.perf_counter()
        try:
            if not kind.costly:
                return think(bot, view, seed), False
            try:
                body = await self.pool.run(bot, think, bot, view, seed, budget=self.budget)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # past the budget, no worker, or the bot itself failed
                reason = type(err).__name__ if isinstance(err, PoolError) else "failed"
                self.fallbacks.labels(bot, reason).inc()
            else:
                return body, False
            return think(kind.fallback, view, seed), True
        finally:
            self.seconds.labels(bot).observe(time.perf_counter() - started)
