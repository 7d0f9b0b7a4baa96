"""The time every process agrees on: Redis's ``TIME``, carried between readings by the host's
own clock.

Why: hosts' clocks differ (a referee 40 s ahead fired turn deadlines early and, as a lease
member, looked alive 40 s after it died). Whatever one process compares with what another wrote
(a turn's deadline, a timer's due time) must come from one clock, and the one every process
already shares is Redis's.

How: ``sync`` reads ``TIME`` and keeps the offset between Redis's time and the host clock
(``local``: the monotonic clock by default, which no wall-clock step moves); reading the time is
then ``local() + offset``, with no round trip. ``follow`` reads ``TIME`` again every ``every``
seconds. A reading is taken halfway through its round trip, so the offset is off by at most half
of it (``error``); a reading over a round trip longer than ``MAX_ERROR`` twice (a stalled Redis
or event loop) is less exact than the offset in hand and is dropped, unless there is none yet.
While Redis is away the last offset stays; until the first reading, the host's wall clock.
On a Redis Cluster the time is read from one node, the same for every process (the primary with
the lowest address), so that processes never follow two nodes' clocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

import structlog
from redis.asyncio.cluster import RedisCluster

from shared.infra.autopipe import raw_client
from shared.infra.client import RedisClient

SYNC_SECONDS = 5.0
MAX_ERROR = 0.5  # seconds: half the longest round trip whose reading replaces a good offset


class RedisClock:
    """Unix seconds as Redis counts them; call it for the time (no round trip)."""

    def __init__(
        self,
        client: RedisClient,
        local: Callable[[], float] = time.monotonic,
        every: float = SYNC_SECONDS,
    ) -> None:
        self.client = client
        self.local = local
        self.every = every
        self.offset = time.time() - local()  # until Redis answers: the host's wall clock
        self.error: float | None = None  # seconds the offset may be off; None: never read
        self.log = structlog.get_logger("clock")

    def __call__(self) -> float:
        return self.local() + self.offset

    async def sync(self) -> bool:
        """Read Redis's time and take the offset from it; whether it was taken (a reading
        less exact than the offset in hand is not). Raises if Redis does not answer."""
        before = self.local()
        seconds, micros = await self._read()
        after = self.local()
        error = max(after - before, 0.0) / 2
        if self.error is not None and error > MAX_ERROR and error > self.error:
            return False
        self.offset = seconds + micros / 1_000_000 - (before + after) / 2
        self.error = error
        return True

    async def _read(self) -> tuple[int, int]:
        client = raw_client(self.client)
        if isinstance(client, RedisCluster):
            if not client.get_primaries():
                await client.initialize()  # (it learns the nodes on its first command)
            node = min(client.get_primaries(), key=lambda n: n.name)
            reply = await client.time(target_nodes=node)
        else:
            reply = await self.client.time()
        if isinstance(reply, dict):  # a cluster's answer, keyed by node
            reply = next(iter(reply.values()))
        seconds, micros = reply
        return int(seconds), int(micros)

    async def follow(self, stopping: asyncio.Event) -> None:
        """Read Redis's time every ``every`` seconds until ``stopping`` is set."""
        while not stopping.is_set():
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception as err:  # Redis away: the last offset stays
                self.log.warning("reading Redis's time failed; keeping the offset", error=str(err))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.every)
