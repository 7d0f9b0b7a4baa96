"""The backend wrapper the store tests share (imported by conftest and the tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import uuid4

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from shared.infra.keys import Keys
from shared.infra.store import EventStore, MemoryEventStore, RedisEventStore

REDIS_BACKENDS = ["fakeredis", "redis", "cluster"]
ALL_BACKENDS = ["memory", *REDIS_BACKENDS]


@dataclass
class Backend:
    """A store under test, with what a test needs to create games and inspect the backend."""

    name: str
    prefix: str
    client: Redis | RedisCluster | None
    cluster_port: int | None = None
    games: list[str] = field(default_factory=list)
    store: EventStore = field(init=False)

    def __post_init__(self) -> None:
        if self.client is None:
            self.store = MemoryEventStore()
        else:
            self.store = RedisEventStore(self.client, prefix=self.prefix, block_ms=2000)

    @property
    def keys(self) -> Keys:
        return Keys(self.prefix)

    def game(self) -> str:
        """A fresh game id, remembered so that its keys are deleted after the test."""
        game_id = f"g-{uuid4().hex[:12]}"
        self.games.append(game_id)
        return game_id

    async def cleanup(self) -> None:
        if self.client is None:
            return
        for game_id in self.games:
            for key in self.keys.game_keys(game_id):
                await self.client.delete(key)
        await self.client.delete(self.keys.games())
