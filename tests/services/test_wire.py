"""The wire (shared/infra/wire.py): the auto-pipeline's batches on one shared connection answer
exactly as redis-py would, errors stay with their callers, it authenticates and selects its
database, and when its connection is lost the commands in flight are sent again the fallback
way. Runs on a redis-server of its own (a spare port; CI installs redis-server)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import AuthenticationError, BusyLoadingError, DataError, ResponseError

from shared.infra.autopipe import AutoPipeline, autopipe
from shared.infra.connection import WiredRedis, connect
from shared.infra.settings import Settings
from shared.infra.wire import NAME, Wire
from tests.ports import spare_port
from tests.servers import RedisServer

SECRET = "wire-test-secret"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    node = RedisServer(tmp_path / "redis")
    node.start()
    try:
        yield node
    finally:
        node.close()


@pytest.fixture
async def wired(server: RedisServer) -> AsyncIterator[tuple[AutoPipeline, Any]]:
    """An auto-pipeline with a wire, and a plain redis-py client of the same database."""
    client = connect(Settings(redis_url=server.url))
    assert isinstance(client, WiredRedis)
    plain = aioredis.Redis.from_url(server.url)
    try:
        yield autopipe(client), plain
    finally:
        await client.aclose()
        await plain.aclose()


async def _both(pipe: AutoPipeline, plain: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """Run one command through the wire and the same on redis-py; the answers must agree."""
    ours = await getattr(pipe, name)(*args, **kwargs)
    theirs = await getattr(plain, name)(*args, **kwargs)
    assert ours == theirs, (name, args, kwargs)
    return ours


async def test_answers_are_what_redis_py_gives(wired: tuple[AutoPipeline, Any]) -> None:
    pipe, plain = wired
    assert pipe.wire is not None
    k = f"t{uuid.uuid4().hex[:6]}:"
    await pipe.set(f"{k}s", "v")
    assert await _both(pipe, plain, "get", f"{k}s") == b"v"
    assert await _both(pipe, plain, "exists", f"{k}s", f"{k}none") == 1
    assert await pipe.incr(f"{k}n") == 1
    await pipe.hset(f"{k}h", mapping={"a": "1", "b": "2"})
    assert await _both(pipe, plain, "hgetall", f"{k}h") == {b"a": b"1", b"b": b"2"}
    assert await _both(pipe, plain, "hmget", f"{k}h", ["a", "zz"]) == [b"1", None]
    assert await _both(pipe, plain, "hget", f"{k}h", "b") == b"2"
    await pipe.sadd(f"{k}set", "x", "y")
    assert await _both(pipe, plain, "smembers", f"{k}set") == {b"x", b"y"}
    assert await _both(pipe, plain, "sismember", f"{k}set", "x")
    assert await pipe.zadd(f"{k}z", {"a": 1.5, "b": 3}) == 2
    assert await pipe.zadd(f"{k}z", {"a": 9}, xx=True, ch=True) == 1
    await _both(pipe, plain, "zrangebyscore", f"{k}z", "-inf", 5, withscores=True)
    assert await _both(pipe, plain, "zscore", f"{k}z", "a") == 9.0
    assert await _both(pipe, plain, "zcard", f"{k}z") == 2
    await _both(pipe, plain, "zrange", f"{k}z", 0, -1, withscores=True)
    first = await pipe.xadd(f"{k}x", {"f": "1"}, maxlen=100, approximate=True)
    await pipe.xadd(f"{k}x", {"f": "2"}, id="99999999999999-0")
    assert isinstance(first, bytes)
    entries = await _both(pipe, plain, "xrange", f"{k}x", min="-", max="+", count=10)
    assert [fields for _, fields in entries] == [{b"f": b"1"}, {b"f": b"2"}]
    await _both(pipe, plain, "xrevrange", f"{k}x", count=1)
    assert await _both(pipe, plain, "xlen", f"{k}x") == 2
    assert await pipe.pexpire(f"{k}s", 60_000) is True
    assert await pipe.ping() is True
    assert await pipe.zrem(f"{k}z", "a") == 1
    assert await pipe.delete(f"{k}s", f"{k}n") == 2
    assert pipe.wire.batches > 10  # the wire carried them, not redis-py's pipeline


async def test_concurrent_commands_share_one_write(wired: tuple[AutoPipeline, Any]) -> None:
    pipe, _ = wired
    assert pipe.wire is not None
    await pipe.ping()
    before = pipe.wire.batches
    values = await asyncio.gather(*(pipe.incr("counter") for _ in range(100)))
    assert sorted(values) == list(range(1, 101))
    assert pipe.wire.batches == before + 1


async def test_an_error_is_its_callers_alone(wired: tuple[AutoPipeline, Any]) -> None:
    pipe, _ = wired
    await pipe.set("text", "not a number")
    results = await asyncio.gather(
        pipe.incr("text"),
        pipe.set("bad", {"a": "dict"}),  # not a type Redis takes: a DataError
        pipe.incr("counter"),
        return_exceptions=True,
    )
    assert isinstance(results[0], ResponseError)
    assert isinstance(results[1], DataError)
    assert results[2] == 1


async def test_a_script_loads_itself_and_runs(wired: tuple[AutoPipeline, Any]) -> None:
    pipe, plain = wired
    script = pipe.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    assert await script(keys=["n"], args=[5]) == 5  # NOSCRIPT first: loaded, run again
    await plain.script_flush()
    assert await script(keys=["n"], args=[2]) == 7


async def test_it_authenticates_and_selects_its_database(server: RedisServer) -> None:
    admin = aioredis.Redis.from_url(server.url)
    await admin.config_set("requirepass", SECRET)
    url = f"redis://:{SECRET}@127.0.0.1:{server.port}/3"
    client = connect(Settings(redis_url=url))
    try:
        pipe = autopipe(client)
        assert await pipe.set("where", "db3") is True
        assert pipe.wire is not None and pipe.wire.batches == 1
        names = [c["name"] for c in await client.client_list()]
        assert NAME in names
        db3 = aioredis.Redis.from_url(url)
        assert await db3.get("where") == b"db3"
        await db3.aclose()
        wrong = connect(Settings(redis_url=f"redis://:nope@127.0.0.1:{server.port}/3"))
        with pytest.raises(AuthenticationError):
            await autopipe(wrong).get("where")  # the wire cannot open; redis-py says why
        assert not wrong.wire.ready()
        await wrong.aclose()
    finally:
        await client.aclose()
        await admin.execute_command("AUTH", SECRET)
        await admin.config_set("requirepass", "")
        await admin.aclose()


async def test_commands_in_flight_when_the_connection_drops_are_sent_again(
    wired: tuple[AutoPipeline, Any],
) -> None:
    pipe, plain = wired
    assert pipe.wire is not None
    await pipe.ping()
    wire_id = next(c["id"] for c in await plain.client_list() if c["name"] == NAME)
    await plain.client_pause(2000, all=False)  # writes wait: the SET is in flight
    pending = asyncio.ensure_future(pipe.set("k", "v"))
    await asyncio.sleep(0.1)
    assert not pending.done()
    await plain.client_kill_filter(_id=wire_id)
    await plain.client_unpause()
    assert await asyncio.wait_for(pending, 10) is True  # answered the fallback way
    assert await plain.get("k") == b"v"
    batches = pipe.wire.batches
    assert await pipe.get("k") == b"v"  # and the wire opens again
    assert pipe.wire.batches == batches + 1


async def test_a_wire_to_nowhere_rests() -> None:
    wire = Wire("127.0.0.1", spare_port())
    assert not await wire.open()
    assert wire.resting() and not wire.ready()
    await wire.aclose()


async def test_closing_the_client_closes_the_wire(server: RedisServer) -> None:
    client = connect(Settings(redis_url=server.url))
    await autopipe(client).ping()
    plain = aioredis.Redis.from_url(server.url)
    assert NAME in [c["name"] for c in await plain.client_list()]
    await client.aclose()
    for _ in range(50):
        if NAME not in [c["name"] for c in await plain.client_list()]:
            break
        await asyncio.sleep(0.02)
    assert NAME not in [c["name"] for c in await plain.client_list()]
    await plain.aclose()


async def test_blocking_reads_go_on_lent_connections(wired: tuple[AutoPipeline, Any]) -> None:
    pipe, plain = wired
    assert pipe.wire is not None
    await pipe.xadd("s", {"f": "1"}, id="1-0")
    await pipe.xgroup_create("s", "g", id="0")
    reply = await pipe.xread({"s": "0-0"}, count=10, block=100)
    assert reply == await plain.xread({"s": "0-0"}, count=10, block=100)
    assert await pipe.xread({"s": "1-0"}, count=10, block=50) == await plain.xread(
        {"s": "1-0"}, count=10, block=50
    )
    got = await pipe.xreadgroup("g", "c1", {"s": ">"}, count=10, block=100)
    assert [fields for _, fields in got[0][1]] == [{b"f": b"1"}]
    # Two reads block at once, on two connections; an XADD wakes both.
    waiting = [asyncio.ensure_future(pipe.xread({"s": "1-0"}, block=5000)) for _ in range(2)]
    await asyncio.sleep(0.1)
    await pipe.xadd("s", {"f": "2"}, id="2-0")
    for reply in await asyncio.wait_for(asyncio.gather(*waiting), 5):
        assert [fields for _, fields in reply[0][1]] == [{b"f": b"2"}]
    wires = [c for c in await plain.client_list() if c["name"] == NAME]
    assert len(wires) == 3  # the shared one and two lent, kept for the next reads


async def test_a_cancelled_blocking_read_does_not_answer_the_next(
    wired: tuple[AutoPipeline, Any],
) -> None:
    pipe, _ = wired
    blocked = asyncio.ensure_future(pipe.xread({"quiet": "$"}, block=3000))
    await asyncio.sleep(0.1)
    blocked.cancel()
    await asyncio.gather(blocked, return_exceptions=True)
    await pipe.xadd("loud", {"f": "1"}, id="5-0")
    reply = await asyncio.wait_for(pipe.xread({"loud": "0-0"}, block=100), 5)
    assert reply[0][0] == b"loud"  # not the cancelled read's (nil) answer


async def test_a_loading_reply_goes_the_retrying_way(wired: tuple[AutoPipeline, Any]) -> None:
    """A restarted Redis answers LOADING while it reads its AOF: redis-py would retry that
    with backoff, so the wire hands such a command to redis-py rather than to its caller."""
    pipe, plain = wired
    await pipe.ping()
    real = pipe.answered
    seen: list[Any] = []

    def loading_once(token: Any, reply: Any) -> None:
        if not seen:
            seen.append(reply)
            reply = BusyLoadingError("Redis is loading the dataset in memory")
        real(token, reply)

    pipe.answered = loading_once  # type: ignore[method-assign]
    assert await pipe.incr("n") in (1, 2)  # ran once on the wire, and again by redis-py
    assert seen and await plain.get("n") in (b"1", b"2")


async def test_callers_are_answered_when_redis_hangs_up_mid_flow(
    wired: tuple[AutoPipeline, Any],
) -> None:
    """Redis closing the shared connection (a restart, CLIENT KILL, an idle timeout) while
    commands keep coming: every caller still gets its answer (the ones caught in between go
    the redis-py way)."""
    pipe, plain = wired
    stop = asyncio.Event()

    async def counting(name: str) -> int:
        done = 0
        while not stop.is_set():
            await pipe.incr(name)
            done += 1
        return done

    workers = [asyncio.ensure_future(counting(f"n{i}")) for i in range(30)]
    for _ in range(20):
        await asyncio.sleep(0.01)
        await plain.client_kill_filter(_type="normal", skipme=True)
    stop.set()
    counts = await asyncio.wait_for(asyncio.gather(*workers), 20)
    for i, count in enumerate(counts):  # no command lost (a resent INCR may count twice)
        assert int(await plain.get(f"n{i}") or 0) >= count


async def test_batches_waiting_for_a_failing_connect_do_not_each_try_again() -> None:
    wire = Wire("127.0.0.1", spare_port())
    attempts = 0

    async def slow_refusal() -> Any:
        nonlocal attempts
        attempts += 1
        await asyncio.sleep(0.2)
        raise OSError("refused")

    wire._handshake = slow_refusal  # type: ignore[method-assign]
    results = await asyncio.gather(*(wire.open() for _ in range(5)))
    assert results == [False] * 5 and attempts == 1


async def test_a_false_reply_is_an_answer_not_the_end_of_the_data(
    wired: tuple[AutoPipeline, Any],
) -> None:
    pipe, _ = wired
    await pipe.set("k", "v")
    script = pipe.register_script("redis.setresp(3); return false")
    results = await asyncio.gather(script(), pipe.get("k"), pipe.get("k"))
    assert results == [False, b"v", b"v"]


async def test_a_closed_wire_stays_closed(server: RedisServer) -> None:
    client = connect(Settings(redis_url=server.url))
    await autopipe(client).ping()
    await client.wire.aclose()
    assert not await client.wire.open() and await client.wire.lend() is None
    await client.aclose()
