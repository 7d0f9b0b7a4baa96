"""The requester's promises (``shared/infra/bus.py``): a command's answer comes back to the
request that sent it, a command nobody answers fails with ``TimeoutError`` after its timeout,
and neither leaves the request waiting (a timer on the future, not ``asyncio.wait_for``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from shared.infra.bus import Bus, Requester, partition_of
from shared.infra.keys import Keys
from shared.infra.protocol import Answer, CommandEntry
from tests.servers import until
from tests.services.conftest import delete_prefixed, redis_client


@pytest.fixture
async def made() -> AsyncIterator[tuple[Requester, Keys]]:
    """A requester under a key prefix of the test's own, whose keys go at the end (on a real
    Redis, the machine's: nothing of the test's is left there)."""
    keys = Keys(f"t{uuid.uuid4().hex[:10]}:")
    client = redis_client()
    try:
        yield Requester(Bus(client, keys, 2), "req"), keys
    finally:
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


async def test_a_command_nobody_answers_times_out_and_is_forgotten(
    made: tuple[Requester, Keys],
) -> None:
    requester, _ = made
    try:
        entry = CommandEntry("g1", "seat", "c1", {"type": "draw"}, seat=0)
        request = asyncio.create_task(requester.request(entry, timeout=0.05))
        # (the bound only turns a request that never ends into a failure, not a timing)
        done, _ = await asyncio.wait({request}, timeout=60)
        assert request in done, "no answer came, and the request never gave up"
        assert isinstance(request.exception(), TimeoutError), request.exception()
        assert requester._waiting == {}
    finally:
        await requester.close()


def answered_later(command: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """``command`` done at once, its answer heard a moment later."""

    async def later(*args: Any, **kwargs: Any) -> Any:
        done = await command(*args, **kwargs)
        await asyncio.sleep(0.01)
        return done

    return later


async def referee(bus: Bus, keys: Keys, count: int) -> None:
    """Answers ``count`` commands on g1's partition, in turn (versions 1, 2, ...)."""
    stream = keys.command_stream(partition_of("g1", 2))
    last, answered = "0-0", 0
    while answered < count:
        reply = await bus.client.xread({stream: last}, count=10, block=100)
        for _, entries in reply or []:
            for entry_id, fields in entries:
                last = entry_id
                entry = CommandEntry.decode(fields)
                answer = Answer(entry.rid, entry.game, "accepted", answered + 1, "h")
                await bus.client.xadd(entry.reply, answer.encode())
                answered += 1


async def test_each_answer_reaches_its_own_request(made: tuple[Requester, Keys]) -> None:
    requester, keys = made
    bus = requester.bus
    try:
        await requester.start()
        answering = asyncio.create_task(referee(bus, keys, 3))
        entries = [CommandEntry("g1", "seat", f"c{i}", {"type": "draw"}, seat=0) for i in range(3)]
        answers = await asyncio.gather(*(requester.request(e, timeout=10) for e in entries))
        await answering
        assert sorted(a["version"] for a in answers) == [1, 2, 3]
        assert len({a["rid"] for a in answers}) == 3
        assert requester._waiting == {}
    finally:
        await requester.close()


async def test_answers_reach_their_requests_after_redis_came_back_without_its_data(
    made: tuple[Requester, Keys],
) -> None:
    """The reply stream was followed up to an id ahead of the clock of the Redis that comes
    back empty (another host, or a clock set back): once the stream is made again, answers
    numbered below that id still reach their requests. The stream is found lost even when an
    answer made it again before its time to live was next refreshed."""
    requester, keys = made
    bus = requester.bus
    lost: list[bool] = []

    async def on_lost() -> None:
        lost.append(True)

    requester.on_lost = on_lost
    try:
        await requester.start()
        ahead = "9000000000000-0"  # the year 2255: ahead of any Redis's clock
        await bus.client.xadd(requester.stream, {b"x": b"not an answer"}, id=ahead)
        await until(lambda: requester._last == ahead, timeout=30)
        await bus.client.delete(requester.stream)  # Redis lost its data
        answering = asyncio.create_task(referee(bus, keys, 1))
        entry = CommandEntry("g1", "seat", "c1", {"type": "draw"}, seat=0)
        request = asyncio.create_task(requester.request(entry, timeout=30))
        await answering  # its answer made the stream again, with no time to live
        assert lost == []
        assert not await requester.keep()
        assert lost == [True]
        answer = await request
        assert answer["version"] == 1
        assert await requester.keep()  # kept from then on
        assert lost == [True]
    finally:
        await requester.close()


async def test_an_answer_read_across_a_loss_does_not_hide_those_below_it(
    made: tuple[Requester, Keys],
) -> None:
    """The reader is waiting after an id ahead of the new Redis's clock when the loss is found;
    the first entry it then reads is above that id (that clock passed it). The answers below
    are read all the same: the next read starts at the new stream's start."""
    requester, keys = made
    bus = requester.bus
    try:
        await requester.start()
        ahead = "9000000000000-0"
        await bus.client.xadd(requester.stream, {b"x": b"not an answer"}, id=ahead)
        await until(lambda: requester._last == ahead, timeout=30)
        entry = CommandEntry("g1", "seat", "c1", {"type": "draw"}, seat=0)
        request = asyncio.create_task(requester.request(entry, timeout=30))
        await bus.client.delete(requester.stream)  # Redis lost its data
        await referee(bus, keys, 1)  # answered below ``ahead``
        assert not await requester.keep()
        await bus.client.xadd(requester.stream, {b"x": b"above"}, id="9000000000001-0")
        assert (await request)["version"] == 1
    finally:
        await requester.close()


async def test_two_refreshes_that_find_one_loss_tell_it_once(
    made: tuple[Requester, Keys],
) -> None:
    requester, _ = made
    told: list[bool] = []

    async def on_lost() -> None:
        told.append(True)

    requester.on_lost = on_lost
    client: Any = requester.bus.client  # (a command of it is slowed below)
    pexpire = client.pexpire
    try:
        await requester.start()
        await client.delete(requester.stream)
        client.pexpire = answered_later(pexpire)  # both refreshes write before either hears
        assert list(await asyncio.gather(requester.keep(), requester.keep())) == [False, False]
        assert told == [True]
        assert await requester.keep()
    finally:
        client.pexpire = pexpire
        await requester.close()


async def test_a_loss_whose_telling_failed_is_found_again(made: tuple[Requester, Keys]) -> None:
    """The owner is told before the stream gets its time to live back: a refresh cut off in
    between leaves the stream without one, and the next refresh finds the loss again."""
    requester, _ = made
    told: list[bool] = []

    async def on_lost() -> None:
        told.append(True)
        if len(told) == 1:
            raise ConnectionError("cut off")

    requester.on_lost = on_lost
    try:
        await requester.start()
        await requester.bus.client.delete(requester.stream)
        with pytest.raises(ConnectionError):
            await requester.keep()
        assert not await requester.keep()
        assert told == [True, True]
        assert await requester.keep()
    finally:
        await requester.close()


async def test_two_first_requests_at_once_start_one_reader(made: tuple[Requester, Keys]) -> None:
    requester, _ = made
    client: Any = requester.bus.client  # (a command of it is slowed below)
    xadd = client.xadd
    client.xadd = answered_later(xadd)  # both starts are under way at once
    try:
        await asyncio.gather(requester.start(), requester.start())
        readers = [t for t in asyncio.all_tasks() if t.get_name() == "replies" and not t.done()]
        assert readers == [requester._reader]
        assert await client.xlen(requester.stream) == 1  # one mark
    finally:
        client.xadd = xadd
        await requester.close()
