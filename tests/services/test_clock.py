"""Redis's time (shared/infra/clock.py): processes whose host clocks disagree read the same time,
Redis's, and a referee whose host clock runs 40 s ahead takes the same deadlines and fires them
no earlier than its peers. On fakeredis, and on the real Redis when REDIS_URL is set."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from shared.infra.bus import partition_of
from shared.infra.chain import verify_chain
from shared.infra.clock import RedisClock
from tests.clocks import Clock
from tests.services.conftest import Stack, redis_client
from tests.services.driver import create_game

SKEW = 40.0  # seconds a host clock runs ahead
TURN_SECONDS = 5


@pytest.fixture
async def redis() -> AsyncIterator[Any]:
    client = redis_client()
    try:
        yield client
    finally:
        await client.aclose()


def behind(client: Any, seconds: float) -> Any:
    """``client`` with Redis's time ``seconds`` behind every host's (so that agreeing with a
    host's clock and agreeing with Redis's are told apart)."""
    clock = Clock()
    clock.offset = -seconds
    return clock.redis(client)


async def test_skewed_host_clocks_read_the_same_time_from_redis(redis: Any) -> None:
    client = behind(redis, 100.0)
    right = RedisClock(client, time.time)
    ahead = RedisClock(client, lambda: time.time() + SKEW)
    steady = RedisClock(client)  # the monotonic clock, on a base of its own
    for clock in (right, ahead, steady):
        assert await clock.sync()
    assert right.error is not None and ahead.error is not None and steady.error is not None
    precision = right.error + ahead.error + steady.error + 0.05  # (the reads are not at once)
    readings = [right(), ahead(), steady()]
    assert max(readings) - min(readings) <= precision, readings
    assert abs(readings[0] - (time.time() - 100.0)) <= right.error + 0.05, "Redis's, not the host's"


async def test_the_last_offset_stays_while_redis_is_away(redis: Any) -> None:
    client = behind(redis, 100.0)
    ahead = RedisClock(client, lambda: time.time() + SKEW)
    assert abs(ahead() - time.time()) < 1, "before Redis answers: the host's wall clock"
    await ahead.sync()
    taken = ahead.offset

    class Away:
        async def time(self) -> tuple[int, int]:
            raise ConnectionError("Redis is away")

    ahead.client = Away()
    with pytest.raises(ConnectionError):
        await ahead.sync()
    assert ahead.offset == taken
    assert abs(ahead() - (time.time() - 100.0)) < 1


async def test_a_referee_whose_host_clock_runs_ahead_takes_redis_time_for_deadlines(
    stack: Stack,
) -> None:
    """A referee 40 s ahead alone decides the start (its deadline is Redis's time plus the turn,
    not 40 s later) and fires no timer before the deadline; its unskewed peer then agrees."""
    await stack.stop(stack.referee)
    ahead = stack.start_referee("referee-ahead", clock=lambda: time.time() + SKEW)
    await stack.until(lambda: _holds_all(stack, ahead))
    game_id = await create_game(stack.requester, "rummikub", 2, {"turn_seconds": TURN_SECONDS})
    state = (await stack.games.load(game_id, fresh=True)).state
    assert state.turn is not None and state.turn.deadline is not None
    redis_now = await _redis_time(stack)
    assert abs(state.turn.deadline - (redis_now + TURN_SECONDS)) < 2, "not in Redis's time"

    # Its "now" is Redis's, as an unskewed referee's: the deadline has not passed for either.
    right = stack.start_referee("referee-right", clock=time.time)
    await right.clock.sync()
    assert ahead.clock.error is not None and right.clock.error is not None
    assert abs(ahead.clock() - right.clock()) <= ahead.clock.error + right.clock.error + 0.05
    partition = partition_of(game_id, stack.settings.partitions)
    assert await ahead.fire_timers(partition) == 0, "a 40 s fast host fired a 5 s deadline"
    events = await stack.games.store.read(game_id)
    assert verify_chain(events) is None
    assert "TurnTimedOut" not in {e.type for e in events}


async def _holds_all(stack: Stack, referee: Any) -> bool:
    return len(referee.held) == stack.settings.partitions


async def _redis_time(stack: Stack) -> float:
    seconds, micros = await stack.client.time()
    return float(seconds) + float(micros) / 1_000_000
