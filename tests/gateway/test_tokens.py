"""A seat's tokens withdrawn (the seat given up before the start) stop working on the gateway
that withdrew them at once, and on every other gateway once its cache of the role is older than
``CACHE_SECONDS``; a host's token is untouched."""

from __future__ import annotations

import fakeredis

from services.gateway.auth import CACHE_SECONDS, HOST, Tokens
from shared.infra.keys import Keys


class Steps:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_withdrawn_seat_tokens_stop_working_on_every_gateway() -> None:
    redis = fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())
    keys = Keys("wt-lifecycle-tokens:")
    here, there = Tokens(redis, keys), Tokens(redis, keys)
    clock = Steps()
    here.clock = there.clock = clock
    seat = await here.issue("g1", "0")
    other = await here.issue("g1", "1")
    host = await here.issue("g1", HOST)
    assert await here.role("g1", seat) == "0" and await there.role("g1", seat) == "0"
    assert await here.revoke("g1", "0") == 1
    assert await here.role("g1", seat) is None  # at once where it was withdrawn
    assert await there.role("g1", seat) == "0"  # another gateway's cache, for a while
    clock.now += CACHE_SECONDS
    assert await there.role("g1", seat) is None
    assert await there.role("g1", other) == "1" and await there.role("g1", host) == HOST
    assert await here.revoke("g1", "0") == 0
    await redis.aclose()
