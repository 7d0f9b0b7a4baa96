"""Readiness as last known (shared/infra/readiness.py): the referee's, scoring's and the
gateway's ``ready`` answer from what their loops last found, so they answer at once even when
every Redis call hangs, and say not ready, with the reason, once that is too old (a stepped
clock) or the last round trip failed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from redis._parsers import Encoder

from services.gateway.state import Gateway
from services.referee.referee import Referee
from services.scoring.scoring import Scoring
from shared.infra.readiness import Readiness
from shared.infra.settings import Settings

GENEROUS = 5.0  # seconds: ready never awaits Redis, so any bound would do


class Stepped:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Hanging:
    """A Redis client every call of which waits forever."""

    def __getattr__(self, name: str) -> Callable[..., Any]:
        async def forever(*args: Any, **kwargs: Any) -> Any:
            await asyncio.Event().wait()

        return forever

    def register_script(self, script: str) -> Callable[..., Awaitable[Any]]:
        return self.__getattr__("evalsha")

    def pipeline(self, transaction: bool = True) -> Any:
        return HangingGroup()

    def get_encoder(self) -> Encoder:
        return Encoder("utf-8", "strict", False)


class HangingGroup:
    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name == "execute":
            return Hanging().__getattr__(name)
        return lambda *args, **kwargs: self


def settings() -> Settings:
    return Settings(prefix="t-ready:", partitions=2, lease_ms=3000)


async def answer(ready: Callable[[], Awaitable[tuple[bool, str]]]) -> tuple[bool, str]:
    async with asyncio.timeout(GENEROUS):
        return await ready()


async def test_the_referee_answers_from_its_lease_loop_while_redis_hangs() -> None:
    clock = Stepped()
    referee = Referee(Hanging(), settings(), readiness=Readiness(2.0, clock))  # type: ignore[arg-type]
    assert await answer(referee.ready) == (False, "not consuming")
    referee.running = True
    assert await answer(referee.ready) == (False, "no answer from Redis yet")
    referee.readiness.reached()  # a lease heartbeat went through
    assert await answer(referee.ready) == (True, "consuming")
    # The next refresh hangs (Redis stalled): nothing is reported, and the state goes stale.
    refresh = asyncio.create_task(referee._refresh_leases())
    await asyncio.sleep(0)
    clock.now += 1.5
    assert await answer(referee.ready) == (True, "consuming")
    clock.now += 1.0
    assert await answer(referee.ready) == (False, "no answer from Redis for 2.5 s")
    refresh.cancel()
    referee.readiness.failed("redis: out of memory")
    assert await answer(referee.ready) == (False, "redis: out of memory")
    referee.readiness.reached()
    referee.stop()
    assert await answer(referee.ready) == (False, "draining")


async def test_scoring_answers_from_its_heartbeat_while_redis_hangs() -> None:
    clock = Stepped()
    scoring = Scoring(Hanging(), settings(), readiness=Readiness(2.0, clock))  # type: ignore[arg-type]
    scoring.running = True
    scoring.readiness.reached()
    assert await answer(scoring.ready) == (True, "following the feed")
    clock.now += 2.1
    assert await answer(scoring.ready) == (False, "no answer from Redis for 2.1 s")
    scoring.stop()
    assert await answer(scoring.ready) == (False, "draining")


async def test_the_gateway_answers_from_its_last_ping_while_redis_hangs() -> None:
    clock = Stepped()
    gateway = Gateway(Hanging(), settings())  # type: ignore[arg-type]
    gateway.readiness = Readiness(2.0, clock)
    assert await answer(gateway.ready) == (False, "no answer from Redis yet")
    gateway.readiness.reached()
    assert await answer(gateway.ready) == (True, "ok")
    # A ping that hangs reports nothing; the state goes stale, then the ping times out.
    check = asyncio.create_task(gateway.readiness.check(gateway.client.ping))
    clock.now += 3.0
    assert await answer(gateway.ready) == (False, "no answer from Redis for 3.0 s")
    check.cancel()
    await asyncio.gather(check, return_exceptions=True)


@pytest.mark.parametrize("outcome", ["answers", "fails"])
async def test_a_check_notes_the_round_trip(outcome: str) -> None:
    readiness = Readiness(2.0, Stepped())

    async def probe() -> None:
        if outcome == "fails":
            raise ConnectionError("Connection refused")

    await readiness.check(probe)
    expected = (True, "ok") if outcome == "answers" else (False, "redis: Connection refused")
    assert readiness.answer("ok") == expected
