"""The in-process stack of the gateway tests: the gateway app (``make_app``) in an aiohttp test
server, with a referee and a scoring task, all on one fakeredis server of the test's own."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import fakeredis
import pytest
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.app import make_app
from services.referee.referee import Referee
from services.scoring.scoring import Scoring
from shared.core.events import Event, event_from
from shared.core.state import GameState
from shared.infra.gamelog import GameLog, fold_stored
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from tests.clocks import Clock
from tests.gateway.api import Api


class LimitClock:
    """The rate limits' clock in a test: still until the test moves it (so a test counts what
    passes a limit, never how fast the machine sends)."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Stack:
    """One running gateway + referee + scoring, and what a test needs to look behind the API."""

    api: Api
    client: TestClient[Any, Any]
    server: TestServer
    redis: Any
    settings: Settings
    referee: Referee
    scoring: Scoring
    tasks: list[asyncio.Task[None]]
    clock: Clock

    async def truth(self, game_id: str) -> GameState:
        """The game's whole state from its log (what no viewer sees)."""
        games = GameLog(RedisEventStore(self.redis, self.settings.prefix))
        return (await games.load(game_id, fresh=True)).state

    async def truth_at(self, game_id: str, version: int) -> GameState:
        """The game's whole state as it was at ``version``."""
        store = RedisEventStore(self.redis, self.settings.prefix)
        events = await store.read(game_id, limit=version)
        assert len(events) == version
        return fold_stored(events).state

    async def log(self, game_id: str) -> list[Event]:
        """The game's events as the log holds them (unfiltered)."""
        store = RedisEventStore(self.redis, self.settings.prefix)
        return [event_from(s.type, s.data) for s in await store.read(game_id)]

    async def event_count(self, game_id: str) -> int:
        store = RedisEventStore(self.redis, self.settings.prefix)
        return len(await store.read(game_id))

    async def stop(self) -> None:
        await self.client.close()
        self.referee.stop()
        self.scoring.stop()
        await asyncio.gather(*self.tasks)
        await self.redis.aclose()


MakeStack = Callable[..., Awaitable[Stack]]


@pytest.fixture
async def make_stack() -> AsyncIterator[MakeStack]:
    """``await make_stack(**settings)``: a fresh stack with those Settings; stopped at the end.
    ``limit_clock``: the rate limits' clock (default: Redis's own)."""
    stacks: list[Stack] = []

    async def make(limit_clock: LimitClock | None = None, **overrides: Any) -> Stack:
        redis = fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())
        values: dict[str, Any] = {
            "prefix": f"gw{uuid.uuid4().hex[:8]}:",
            "partitions": 2,
            "claim_idle_ms": 300,  # (scoring's feed reads block this long: quick teardowns)
            "lease_ms": 600,  # a stopped referee's partitions pass on quickly
            # Every test's requests come from one address, as fast as the machine goes: the
            # limits per address are off (the limit tests turn them on, with a clock). Those per
            # token, seat and socket keep their defaults.
            "limit_address_per_second": 0,
            "limit_create_per_minute": 0,
            "limit_seat_per_minute": 0,
            "limit_replay_per_minute": 0,
            "limit_read_per_second": 0,
            # Refusals are answered at once (the hold before a 429 has a test of its own).
            "refusal_delay": 0,
        }
        settings = Settings(**(values | overrides))
        clock = Clock()
        referee = Referee(clock.redis(redis), settings, clock=clock)  # time moved for both
        scoring = Scoring(redis, settings)
        tasks = [asyncio.create_task(referee.run()), asyncio.create_task(scoring.run())]
        # A short shutdown timeout: a handler left running at shutdown fails the test quickly.
        server = TestServer(make_app(redis, settings, clock=limit_clock), shutdown_timeout=3)
        client: TestClient[Any, Any] = TestClient(server)
        await client.start_server()
        stack = Stack(Api(client), client, server, redis, settings, referee, scoring, tasks, clock)
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        await stack.stop()


@pytest.fixture
async def stack(make_stack: MakeStack) -> Stack:
    """A stack with the default settings (but a unique prefix and two partitions)."""
    return await make_stack()
