"""Fixtures for the service tests: an in-process referee and scoring on fakeredis."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import fakeredis
import pytest

from services.referee.referee import Referee
from services.scoring.scoring import Scoring
from shared.infra.bus import Bus, Requester
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore


@dataclass
class Stack:
    """The services of one test, and a client's view of them."""

    client: Any
    settings: Settings
    referee: Referee
    scoring: Scoring
    requester: Requester
    games: GameLog
    keys: Keys


@pytest.fixture
async def stack() -> AsyncIterator[Stack]:
    """A referee and a scoring service on a fresh fakeredis, running until the test ends."""
    client = fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())
    settings = Settings(
        prefix=f"t{uuid.uuid4().hex[:6]}:", partitions=2, claim_idle_ms=300, max_deliveries=3
    )
    referee = Referee(client, settings)
    scoring = Scoring(client, settings)
    keys = Keys(settings.prefix)
    requester = Requester(Bus(client, keys, settings.partitions), "test")
    tasks = [asyncio.create_task(referee.run()), asyncio.create_task(scoring.run())]
    games = GameLog(RedisEventStore(client, settings.prefix))
    yield Stack(client, settings, referee, scoring, requester, games, keys)
    referee.stop()
    scoring.stop()
    await requester.close()
    await asyncio.gather(*tasks)
    await client.aclose()
