"""Readiness as last known: what a service's own loops found, read by ``/readyz`` without I/O.

Why: a probe that asked Redis itself waited behind everything else the process had in flight
(its pipelines, a busy event loop, the client's retries): under load ``/readyz`` took 6-21 s
against its 0.8 s. The loops a service runs anyway (a referee's lease heartbeats, a ping
every so often) already learn whether Redis answers; the probe only reads what they learned.

How: a loop reports each round trip's outcome (``reached``, ``failed``); ``answer`` says ready
unless the last one failed, none succeeded yet, or the last success is older than
``stale_after`` seconds (a loop stuck behind a Redis that does not answer reports nothing, and
so goes stale), each with its reason. ``clock`` is monotonic by default; tests step one.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

PING_SECONDS = 0.5  # how often ``follow`` pings
STALE_SECONDS = 2.0  # a last success older than this is not ready


class Readiness:
    """The last known state of one service's round trips to Redis."""

    def __init__(
        self,
        stale_after: float = STALE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        *,
        what: str = "Redis",
        tag: str = "redis",
    ) -> None:
        """``what``: what the round trips reach, as the reasons name it; ``tag``: the word a
        failure's reason starts with."""
        self.stale_after = stale_after
        self.clock = clock
        self.what = what
        self.tag = tag
        self.reached_at: float | None = None
        self.problem: str | None = None

    def reached(self) -> None:
        """A round trip succeeded now."""
        self.reached_at = self.clock()
        self.problem = None

    def failed(self, why: str) -> None:
        """A round trip failed (not ready until the next success)."""
        self.problem = why

    def answer(self, doing: str) -> tuple[bool, str]:
        """(ready, why): ``doing`` when the last round trip succeeded recently enough."""
        if self.problem is not None:
            return False, self.problem
        if self.reached_at is None:
            return False, f"no answer from {self.what} yet"
        age = self.clock() - self.reached_at
        if age > self.stale_after:
            return False, f"no answer from {self.what} for {age:.1f} s"
        return True, doing

    async def check(
        self, probe: Callable[[], Awaitable[object]], within: float | None = None
    ) -> None:
        """One round trip (``probe``, within ``within`` seconds, by default ``stale_after``),
        its outcome noted."""
        limit = self.stale_after if within is None else within
        try:
            await asyncio.wait_for(probe(), limit)
        except asyncio.CancelledError:
            raise
        except TimeoutError:
            self.failed(f"{self.tag}: no answer within {limit:g} s")
        except Exception as err:
            self.failed(f"{self.tag}: {err}")
        else:
            self.reached()

    async def follow(
        self,
        probe: Callable[[], Awaitable[object]],
        stopping: asyncio.Event,
        every: float = PING_SECONDS,
    ) -> None:
        """``check`` every ``every`` seconds until ``stopping`` is set."""
        while not stopping.is_set():
            await self.check(probe)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), every)
