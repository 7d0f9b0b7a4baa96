"""Fixtures for the service tests: in-process referees and scoring on one Redis.

The Redis is a private fakeredis server per test, or the real Redis at ``REDIS_URL`` when it is
set (CI sets it). On a real Redis every test uses its own key prefix and deletes, at the end,
exactly the keys under that prefix: never a FLUSH, never another test's keys.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import fakeredis
import pytest

from services.referee.referee import Referee
from services.scoring.scoring import Scoring
from shared.infra.bus import Bus, Requester
from shared.infra.connection import connect
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from tests.clocks import Clock
from tests.servers import until


def redis_client() -> Any:
    """A client of the test's Redis: the real one at REDIS_URL (made as the services make
    theirs, so with its wire), else a private fakeredis."""
    url = os.environ.get("REDIS_URL")
    if url:
        return connect(Settings(redis_url=url))
    return fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())


async def delete_prefixed(client: Any, prefix: str) -> None:
    """Delete every key under ``prefix`` (the test's own), on a real Redis."""
    if isinstance(client, fakeredis.aioredis.FakeRedis):
        return
    keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
    for start in range(0, len(keys), 500):
        await client.delete(*keys[start : start + 500])


async def settled(client: Any, stream: str, group: str) -> bool:
    """Whether ``group`` has read every entry of ``stream`` and acknowledged them all."""
    if int((await client.xpending(stream, group))["pending"]):
        return False
    groups = await client.xinfo_groups(stream)
    mine = [g for g in groups if g["name"] in (group, group.encode())]
    if not mine:
        return False
    info = await client.xinfo_stream(stream)
    return bool(info["last-generated-id"] == mine[0]["last-delivered-id"])


@dataclass
class Stack:
    """The services of one test, and a client's view of them."""

    client: Any
    settings: Settings
    clock: Clock
    requester: Requester
    games: GameLog
    keys: Keys
    referee: Referee = field(init=False)
    scoring: Scoring = field(init=False)
    running: dict[int, tuple[Referee | Scoring, asyncio.Task[None]]] = field(default_factory=dict)

    def start_referee(
        self, consumer: str = "referee-1", clock: Callable[[], float] | None = None
    ) -> Referee:
        """A referee on the stack's Redis, running until stopped (or the test ends). Its time
        is the stack's ``clock`` (Redis's, moved by the test); ``clock``: a host clock of its
        own instead, against Redis's unmoved time (a host whose clock is wrong)."""
        if clock is None:
            client, clock = self.clock.redis(self.client), self.clock
        else:
            client = self.client
        referee = Referee(client, self.settings_for(consumer), clock=clock)
        self.running[id(referee)] = (referee, asyncio.create_task(referee.run()))
        return referee

    def start_scoring(self, consumer: str = "scoring-1", sweep_seconds: float = 5.0) -> Scoring:
        """A scoring service on the stack's Redis, running until stopped."""
        scoring = Scoring(self.client, self.settings_for(consumer))
        scoring.sweep_seconds = sweep_seconds
        self.running[id(scoring)] = (scoring, asyncio.create_task(scoring.run()))
        return scoring

    async def stop(self, service: Referee | Scoring) -> None:
        """Stop a service and wait until its run returned (drained)."""
        service.stop()
        _, task = self.running.pop(id(service), (service, None))
        if task is not None:
            await task

    def settings_for(self, consumer: str) -> Settings:
        return Settings(**{**self.settings.__dict__, "consumer": consumer})

    async def until(self, what: Any, timeout: float = 10.0, every: float = 0.02) -> Any:
        """Poll the coroutine function ``what`` until it returns something true."""
        return await until(what, timeout, every)


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    """A referee and a scoring service on a fresh Redis (key prefix), until the test ends."""
    client = redis_client()
    settings = Settings(
        prefix=f"t{uuid.uuid4().hex[:10]}:",
        partitions=2,
        claim_idle_ms=300,
        lease_ms=600,
        max_deliveries=3,
        drain_seconds=5.0,
    )
    keys = Keys(settings.prefix)
    requester = Requester(Bus(client, keys, settings.partitions), "test")
    games = GameLog(RedisEventStore(client, settings.prefix))
    built = Stack(client, settings, Clock(), requester, games, keys)
    built.referee = built.start_referee("referee-1")
    built.scoring = built.start_scoring("scoring-1")
    try:
        yield built
    finally:
        for service, _ in built.running.values():
            service.stop()
        tasks = [task for _, task in built.running.values()]
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
        await requester.close()
        await delete_prefixed(client, settings.prefix)
        await client.aclose()
