"""Auto-pipelining (shared/infra/autopipe.py): concurrent commands share one pipeline, each caller
gets its own answer or its own error, groups stay in order, scripts load themselves, and a lost
connection fails the callers of that batch (not later ones). Runs on fakeredis, and on the real
Redis when REDIS_URL is set (keys under a prefix of this test run, deleted at the end)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from shared.infra.autopipe import AutoPipeline, autopipe, raw_client
from shared.infra.bus import read_plan
from tests.services.conftest import delete_prefixed, redis_client


@pytest.fixture
async def fast() -> AsyncIterator[tuple[AutoPipeline, str]]:
    client = redis_client()
    prefix = f"test-autopipe-{uuid.uuid4().hex[:8]}:"
    wrapped = autopipe(client)
    assert isinstance(wrapped, AutoPipeline)
    try:
        yield wrapped, prefix
    finally:
        await delete_prefixed(client, prefix)
        await client.aclose()


async def test_concurrent_commands_travel_in_one_pipeline(fast: tuple[Any, str]) -> None:
    redis, prefix = fast
    await asyncio.gather(*(redis.set(f"{prefix}k{i}", str(i)) for i in range(50)))
    assert (redis.batches, redis.commands) == (1, 50)
    values = await asyncio.gather(*(redis.get(f"{prefix}k{i}") for i in range(50)))
    assert values == [str(i).encode() for i in range(50)]
    assert (redis.batches, redis.commands) == (2, 100)


async def test_one_callers_error_is_its_own(fast: tuple[Any, str]) -> None:
    redis, prefix = fast
    await redis.set(f"{prefix}text", "not a number")
    results = await asyncio.gather(
        redis.incr(f"{prefix}text"),
        redis.incr(f"{prefix}counter"),
        redis.xadd(f"{prefix}stream", {"a": "1"}),
        return_exceptions=True,
    )
    assert isinstance(results[0], ResponseError)
    assert results[1] == 1
    assert isinstance(results[2], bytes)
    assert await redis.get(f"{prefix}counter") == b"1"


async def test_a_group_keeps_its_order_and_answers_like_a_pipeline(fast: tuple[Any, str]) -> None:
    redis, prefix = fast
    group = redis.pipeline(transaction=False)
    group.set(f"{prefix}a", "1").incr(f"{prefix}a").get(f"{prefix}a")
    assert len(group) == 3
    other = redis.get(f"{prefix}a")  # queued in the same turn, after the group
    results, seen = await asyncio.gather(group.execute(), other)
    assert results == [True, 2, b"2"]
    assert seen == b"2"
    group.incr(f"{prefix}a").hset(f"{prefix}a", "x", "1")  # the second: the wrong type
    with pytest.raises(ResponseError):
        await group.execute()
    group.incr(f"{prefix}a").hset(f"{prefix}a", "x", "1")
    answers = await group.execute(raise_on_error=False)
    assert answers[0] == 4 and isinstance(answers[1], ResponseError)
    assert await group.execute() == []


async def test_a_group_refuses_blocking_commands(fast: tuple[Any, str]) -> None:
    redis, prefix = fast
    # A transaction is one of its own, as redis-py's pipeline() is by default.
    async with redis.pipeline() as multi:
        multi.set(f"{prefix}t", "1").incr(f"{prefix}t")
        assert await multi.execute() == [True, 2]
    assert redis.batches == 0
    with pytest.raises(AttributeError, match="xreadgroup"):
        redis.pipeline(transaction=False).xreadgroup("g", "c", {"s": ">"})


async def test_scripts_load_themselves_through_the_pipeline(fast: tuple[Any, str]) -> None:
    redis, prefix = fast
    script = redis.register_script(
        f"return redis.call('INCRBY', KEYS[1], ARGV[1]) -- {uuid.uuid4().hex}"
    )
    results = await asyncio.gather(*(script(keys=[f"{prefix}n"], args=[2]) for _ in range(5)))
    assert sorted(results) == [2, 4, 6, 8, 10]


async def test_blocking_reads_bypass_the_pipeline(fast: tuple[Any, str]) -> None:
    redis, prefix = fast
    stream = f"{prefix}feed"
    await redis.xadd(stream, {"a": "1"})
    before = redis.batches
    reply = await redis.xread({stream: "0-0"}, count=10, block=100)
    assert reply and redis.batches == before  # straight to the client
    assert raw_client(redis) is redis.client
    assert autopipe(redis) is redis
    assert read_plan(redis, ["s0", "s1", "s2"]) == [["s0", "s1", "s2"]]


class _Broken:
    """A pipeline whose connection is lost."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        raise RedisConnectionError("connection lost")


async def test_a_lost_connection_fails_that_batch_only(fast: tuple[Any, str]) -> None:
    """On the pipeline way (no wire: fakeredis, or a wire that is down; the wire's own
    failures are in test_wire.py)."""
    redis, prefix = fast
    redis.wire = None
    real_pipeline = redis.client.pipeline
    redis.client.pipeline = lambda transaction=False: _Broken()
    try:
        results = await asyncio.gather(
            redis.get(f"{prefix}a"), redis.set(f"{prefix}b", "1"), return_exceptions=True
        )
    finally:
        redis.client.pipeline = real_pipeline
    assert all(isinstance(r, RedisConnectionError) for r in results)
    assert await redis.set(f"{prefix}b", "2") is True  # the next batch goes through
    assert await redis.get(f"{prefix}b") == b"2"


async def test_a_cancelled_caller_does_not_disturb_the_others(fast: tuple[Any, str]) -> None:
    redis, prefix = fast
    doomed = asyncio.ensure_future(redis.set(f"{prefix}c", "1"))
    kept = asyncio.ensure_future(redis.set(f"{prefix}d", "1"))
    await asyncio.sleep(0)
    doomed.cancel()
    assert await kept is True
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert await redis.get(f"{prefix}c") == b"1"  # queued already: it ran all the same
