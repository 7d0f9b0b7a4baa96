"""The stream consumer's promises (``shared/infra/consumer.py``), step by step on a fakeredis: a
test reads and claims by hand (``read``, ``claim``) and waits for the handlers it started, so no
step depends on how fast the machine is. ``claim_idle_ms=0`` makes every pending entry idle
enough to claim."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import fakeredis
import pytest
from prometheus_client import CollectorRegistry, Counter
from redis.exceptions import OutOfMemoryError

from shared.infra.client import CommandGroup
from shared.infra.consumer import (
    DEAD_LETTER_ENTRY_BYTES,
    FAILED_TOO_OFTEN,
    ConsumerMetrics,
    DeadLetter,
    Delivery,
    Reading,
    StreamConsumer,
)

STREAM = "t:commands:0"
GROUP = "workers"
DEAD = "t:deadletters"
MAX_DELIVERIES = 3


class Counts:
    """The metrics of one consumer, on a registry of their own."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.failures = Counter("t_failures_total", "", registry=self.registry)
        self.dead = Counter("t_dead_letters_total", "", ["reason"], registry=self.registry)
        self.claimed = Counter("t_claimed_total", "", registry=self.registry)
        self.handled = Counter("t_handled_total", "", registry=self.registry)

    def metrics(self) -> ConsumerMetrics:
        return ConsumerMetrics(self.failures, self.dead, self.claimed, self.handled)

    def value(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0


class Recorder:
    """A handler that records what it was given and does what the test tells it to."""

    def __init__(self) -> None:
        self.seen: list[tuple[bytes, int]] = []
        self.failing: BaseException | None = None

    async def __call__(self, delivery: Delivery) -> None:
        self.seen.append((delivery.fields[b"c"], delivery.deliveries))
        if self.failing is not None:
            raise self.failing


@pytest.fixture
async def client() -> AsyncIterator[Any]:
    redis = fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())
    yield redis
    await redis.aclose()


def consumer_of(client: Any, handler: Any, counts: Counts, name: str = "c1", **options: Any) -> Any:
    reading = Reading(
        GROUP,
        name,
        (STREAM,),
        options.pop("dead_letters", DEAD),
        claim_idle_ms=options.pop("claim_idle_ms", 0),
        max_deliveries=MAX_DELIVERIES,
        drain_seconds=options.pop("drain_seconds", 5.0),
        block_ms=50,
    )
    return StreamConsumer(client, reading, handler, counts.metrics(), **options)


async def joined(consumer: StreamConsumer) -> StreamConsumer:
    assert await consumer.join(asyncio.Event())
    return consumer


async def settle(consumer: StreamConsumer) -> None:
    """Wait for every handler the consumer started."""
    while consumer.inflight:
        await asyncio.gather(*consumer.inflight)


async def read_new(consumer: StreamConsumer) -> int:
    """One read of new entries (past the consumer's own history), handled."""
    count = await consumer.read([STREAM], {STREAM: ">"})
    await settle(consumer)
    return count


async def claim(consumer: StreamConsumer) -> int:
    count = await consumer.claim(STREAM)
    await settle(consumer)
    return count


async def pending(client: Any) -> int:
    return int((await client.xpending(STREAM, GROUP))["pending"])


async def dead_letters(client: Any) -> list[dict[str, bytes]]:
    return [{k.decode(): v for k, v in f.items()} for _, f in await client.xrange(DEAD)]


async def test_an_entry_is_handled_max_deliveries_times_and_dead_lettered_at_the_next(
    client: Any,
) -> None:
    counts, handler = Counts(), Recorder()
    handler.failing = RuntimeError("poisoned")
    consumer = await joined(consumer_of(client, handler, counts))
    entry_id = await client.xadd(STREAM, {b"c": b'{"n": 1}'})
    assert await read_new(consumer) == 1
    for _ in range(MAX_DELIVERIES - 1):
        assert await claim(consumer) == 1
    # Handled on each of its first max_deliveries deliveries, and still pending: not one before.
    assert [count for _, count in handler.seen] == list(range(1, MAX_DELIVERIES + 1))
    assert await dead_letters(client) == []
    assert await pending(client) == 1
    # The next delivery dead-letters it without handling it.
    assert await claim(consumer) == 1
    assert len(handler.seen) == MAX_DELIVERIES
    letters = await dead_letters(client)
    assert [letter["reason"] for letter in letters] == [FAILED_TOO_OFTEN.encode()]
    assert letters[0]["id"] == entry_id and letters[0]["stream"] == STREAM.encode()
    assert await pending(client) == 0
    assert counts.value("t_failures_total") == MAX_DELIVERIES
    assert counts.value("t_dead_letters_total", reason=FAILED_TOO_OFTEN) == 1
    assert counts.value("t_claimed_total") == MAX_DELIVERIES


async def test_failures_for_redis_reasons_are_not_counted(client: Any) -> None:
    counts, handler = Counts(), Recorder()
    handler.failing = OutOfMemoryError("OOM command not allowed")
    consumer = await joined(consumer_of(client, handler, counts))
    await client.xadd(STREAM, {b"c": b"{}"})
    await read_new(consumer)
    for _ in range(MAX_DELIVERIES * 2):
        assert await claim(consumer) == 1
    # Every delivery was taken back: each one counts as the first.
    assert [count for _, count in handler.seen] == [1] * (1 + MAX_DELIVERIES * 2)
    assert await dead_letters(client) == []
    handler.failing = None  # Redis has room again
    await claim(consumer)
    assert await pending(client) == 0
    assert await dead_letters(client) == []
    assert counts.value("t_failures_total") == 1 + MAX_DELIVERIES * 2
    assert counts.value("t_handled_total") == 1


async def test_a_dead_consumers_entries_are_claimed_and_handled(client: Any) -> None:
    await client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    await client.xadd(STREAM, {b"c": b"held"})
    # A consumer that read the entry and died before handling it.
    await client.xreadgroup(GROUP, "dead", {STREAM: ">"}, count=10)
    counts, handler = Counts(), Recorder()
    patient = consumer_of(client, handler, Counts(), name="c2", claim_idle_ms=3_600_000)
    assert await claim(patient) == 0  # not idle long enough yet
    consumer = consumer_of(client, handler, counts, name="c2")
    assert await claim(consumer) == 1
    assert handler.seen == [(b"held", 2)]
    assert await pending(client) == 0


async def test_a_restarted_consumer_reads_its_own_history_first(client: Any) -> None:
    counts, handler = Counts(), Recorder()
    handler.failing = RuntimeError("crashed")
    first = await joined(consumer_of(client, handler, counts))
    await client.xadd(STREAM, {b"c": b"one"})
    await read_new(first)
    handler.failing = None
    again = consumer_of(client, handler, counts)  # the same name, after a restart
    starts = {STREAM: "0"}
    assert await again.read([STREAM], starts) == 1
    await settle(again)
    assert handler.seen == [(b"one", 1), (b"one", 2)]
    assert starts[STREAM] != ">"  # the history goes on after what it returned ...
    assert await again.read([STREAM], starts) == 0
    assert starts[STREAM] == ">"  # ... until it is read
    assert await pending(client) == 0


async def test_a_malformed_entry_is_dead_lettered_at_once_with_its_reason(client: Any) -> None:
    told: list[str] = []

    async def handler(delivery: Delivery) -> None:
        raise DeadLetter(f"malformed: {delivery.fields.get(b'why', b'').decode()}")

    async def tell(delivery: Delivery, reason: str, writes: CommandGroup) -> None:
        told.append(reason)
        writes.xadd("t:replies:x", {b"c": reason.encode()})

    counts = Counts()
    consumer = await joined(consumer_of(client, handler, counts, on_dead_letter=tell))
    big = b"x" * (DEAD_LETTER_ENTRY_BYTES * 2)
    await client.xadd(STREAM, {b"c": big, b"why": b"too big"})
    await client.xadd(STREAM, {b"other": b"1", b"why": b"no c"})
    await read_new(consumer)
    letters = await dead_letters(client)
    assert [letter["reason"] for letter in letters] == [b"malformed: too big", b"malformed: no c"]
    assert letters[0]["size"] == str(len(big)).encode()
    assert letters[0]["entry"] == big[:DEAD_LETTER_ENTRY_BYTES]
    assert json.loads(letters[1]["entry"]) == {"fields": ["other", "why"]}
    assert told == ["malformed: too big", "malformed: no c"]
    assert await client.xlen("t:replies:x") == 2
    assert await pending(client) == 0
    assert counts.value("t_dead_letters_total", reason="malformed") == 2
    assert counts.value("t_failures_total") == 0


async def test_a_dead_letter_whose_writes_are_refused_stays_pending(client: Any) -> None:
    async def handler(delivery: Delivery) -> None:
        raise DeadLetter("malformed: always")

    async def tell(delivery: Delivery, reason: str, writes: CommandGroup) -> None:
        writes.xadd("t:not-a-stream", {b"c": b"1"})  # a string key: WRONGTYPE

    await client.set("t:not-a-stream", "1")
    counts = Counts()
    consumer = await joined(consumer_of(client, handler, counts, on_dead_letter=tell))
    await client.xadd(STREAM, {b"c": b"1"})
    await read_new(consumer)
    assert await pending(client) == 1
    assert counts.value("t_failures_total") == 1
    assert counts.value("t_dead_letters_total", reason="malformed") == 0


async def test_without_a_dead_letter_stream_an_entry_is_given_up(client: Any) -> None:
    registry = CollectorRegistry()
    given_up = Counter("t_given_up_total", "", registry=registry)
    failures = Counter("t_failures_total", "", registry=registry)
    handler = Recorder()
    handler.failing = RuntimeError("poisoned")
    reading = Reading(GROUP, "c1", (STREAM,), None, claim_idle_ms=0, max_deliveries=1)
    metrics = ConsumerMetrics(failures, given_up, by_reason=False)
    consumer = await joined(StreamConsumer(client, reading, handler, metrics))
    await client.xadd(STREAM, {b"c": b"1"})
    await read_new(consumer)
    await claim(consumer)
    assert len(handler.seen) == 1
    assert await pending(client) == 0
    assert not await client.exists(DEAD)
    assert registry.get_sample_value("t_given_up_total") == 1


async def test_entries_it_does_not_want_are_acknowledged_unhandled(client: Any) -> None:
    counts, handler = Counts(), Recorder()
    consumer = await joined(
        consumer_of(client, handler, counts, wants=lambda d: d.fields[b"c"] != b"skip")
    )
    for text in (b"skip", b"keep", b"skip"):
        await client.xadd(STREAM, {b"c": text})
    assert await read_new(consumer) == 3
    assert handler.seen == [(b"keep", 1)]
    assert await pending(client) == 0
    assert counts.value("t_handled_total") == 3


async def test_a_handler_may_acknowledge_with_its_own_writes(client: Any) -> None:
    async def handler(delivery: Delivery) -> None:
        pipe = client.pipeline(transaction=False)
        pipe.xadd("t:out", {b"c": b"done"})
        delivery.ack(pipe)  # queued, not sent: the consumer must not acknowledge it itself

    consumer = await joined(consumer_of(client, handler, Counts()))
    await client.xadd(STREAM, {b"c": b"1"})
    await read_new(consumer)
    assert await pending(client) == 1


async def test_drain_lets_the_handler_in_flight_finish_and_reads_no_more(client: Any) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    finished: list[bytes] = []

    async def handler(delivery: Delivery) -> None:
        started.set()
        await release.wait()
        finished.append(delivery.fields[b"c"])

    consumer = consumer_of(client, handler, Counts())
    stopping = asyncio.Event()
    await client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    first = await client.xadd(STREAM, {b"c": b"first"})
    running = asyncio.create_task(consumer.run(stopping))
    await asyncio.wait_for(started.wait(), 10)
    stopping.set()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not running.done()  # waiting for the handler in flight
    await client.xadd(STREAM, {b"c": b"second"})
    release.set()
    await asyncio.wait_for(running, 10)
    # The first finished and was acknowledged; the second was not handled (a read that was
    # under way as the drain began may have taken it: then it is pending, for a claim).
    assert finished == [b"first"]
    left = await client.xpending_range(STREAM, GROUP, min="-", max="+", count=10)
    assert first not in [entry["message_id"] for entry in left]


async def test_drain_cancels_what_does_not_finish_within_its_deadline(client: Any) -> None:
    started = asyncio.Event()

    async def handler(delivery: Delivery) -> None:
        started.set()
        await asyncio.Event().wait()  # never finishes

    consumer = await joined(consumer_of(client, handler, Counts(), drain_seconds=0.01))
    consumer.start()
    await client.xadd(STREAM, {b"c": b"stuck"})
    await asyncio.wait_for(started.wait(), 10)
    assert await asyncio.wait_for(consumer.drain(), 10) == 1
    assert await pending(client) == 1  # delivered again later


class BlockRecorder:
    """A client whose group reads record how long they were asked to block (and bring
    nothing, after a moment)."""

    def __init__(self) -> None:
        self.blocks: list[int | None] = []

    async def xgroup_create(self, *args: Any, **kwargs: Any) -> None:
        return None

    async def xreadgroup(self, *args: Any, block: int | None = None, **kwargs: Any) -> Any:
        self.blocks.append(block)
        await asyncio.sleep(0.001)
        return []

    async def xautoclaim(self, *args: Any, **kwargs: Any) -> Any:
        return [b"0-0", [], []]


@pytest.mark.parametrize(("reads", "expected"), [(1, 250), (3, 4000)])
async def test_reads_of_one_stream_each_wait_their_own_longer_block(
    monkeypatch: pytest.MonkeyPatch, reads: int, expected: int
) -> None:
    """One read for all streams keeps ``block_ms`` (it must end to take in a stream that becomes
    readable); a cluster's plan of one read per stream waits ``alone_block_ms``."""
    streams = [f"t:commands:{n}" for n in range(3)]
    plan = [streams] if reads == 1 else [[s] for s in streams]
    monkeypatch.setattr("shared.infra.consumer.read_plan", lambda client, names: plan)
    client = BlockRecorder()
    reading = Reading(GROUP, "c1", tuple(streams), None, block_ms=250, alone_block_ms=4000)
    consumer = StreamConsumer(client, reading, Recorder(), Counts().metrics())  # type: ignore[arg-type]
    consumer.start()
    while len(client.blocks) < 2 * reads:
        await asyncio.sleep(0.001)
    await consumer.drain()
    assert set(client.blocks) == {expected}


class Handled:
    """A handler that notes what it handled and says when ``wanted`` is among it."""

    def __init__(self, wanted: bytes) -> None:
        self.wanted = wanted
        self.seen: list[bytes] = []
        self.arrived = asyncio.Event()

    async def __call__(self, delivery: Delivery) -> None:
        self.seen.append(delivery.fields[b"c"])
        if delivery.fields[b"c"] == self.wanted:
            self.arrived.set()


async def groups_of(client: Any) -> list[bytes]:
    try:
        return [g["name"] for g in await client.xinfo_groups(STREAM)]
    except Exception:  # no such stream
        return []


async def test_a_group_lost_with_redis_data_is_created_again_and_read_on(client: Any) -> None:
    """Redis came back empty (no stream, no group) and a sender wrote a new entry, which made
    the stream again without the group: the consumer's reads were refused ``NOGROUP`` for ever
    while it looked healthy. It creates the group again and the new entry is handled."""
    handler = Handled(b"after")
    consumer = await joined(consumer_of(client, handler, Counts()))
    consumer.start()
    try:
        await client.xadd(STREAM, {b"c": b"before"})
        await client.delete(STREAM)  # the data lost: the stream and its group
        await client.xadd(STREAM, {b"c": b"after"})
        await asyncio.wait_for(handler.arrived.wait(), 30)
    finally:
        await consumer.drain()
    assert handler.seen[-1] == b"after"
    assert await groups_of(client) == [GROUP.encode()]
    assert await pending(client) == 0


async def test_a_claim_that_finds_the_group_gone_creates_it_again(client: Any) -> None:
    """Claims run on every stream, read or not (a referee claims what it does not lease)."""
    consumer = await joined(consumer_of(client, Recorder(), Counts(), readable=lambda s: False))
    await client.delete(STREAM)
    await client.xadd(STREAM, {b"c": b"after"})
    assert await groups_of(client) == []
    consumer.start()
    try:
        async with asyncio.timeout(30):
            while await groups_of(client) != [GROUP.encode()]:
                await asyncio.sleep(0.01)
    finally:
        await consumer.drain()
