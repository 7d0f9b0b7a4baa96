"""Trimming the streams: below what every group still needs, never a pending or undelivered
entry; reply streams given a time to live. On fakeredis, or the real Redis at REDIS_URL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from services.archiver.archiver import Archiver
from shared.archive.sqlite import SqliteArchive
from shared.infra.bus import Bus, Requester
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from shared.infra.trimming import ORPHAN_GRACE_SECONDS, REPLY_TTL_MS, Trimmer
from tests.services.conftest import delete_prefixed, redis_client


@pytest.fixture
async def place() -> AsyncIterator[tuple[Any, Keys]]:
    client = redis_client()
    keys = Keys(f"wt{uuid.uuid4().hex[:10]}:")
    try:
        yield client, keys
    finally:
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


async def ids(client: Any, stream: str) -> list[str]:
    return [i.decode() for i, _ in await client.xrange(stream)]


async def read(client: Any, stream: str, group: str, count: int) -> list[bytes]:
    reply = await client.xreadgroup(group, "c1", {stream: ">"}, count=count)
    return [entry_id for _, entries in reply for entry_id, _ in entries]


async def test_only_entries_every_group_acknowledged_are_trimmed(
    place: tuple[Any, Keys],
) -> None:
    client, keys = place
    stream = keys.command_stream(0)
    added = [(await client.xadd(stream, {b"c": b"%d" % n})).decode() for n in range(10)]
    trimmer = Trimmer(client, keys)
    assert await trimmer.trim(stream) == 0  # no group reads it yet: nothing is known done
    await client.xgroup_create(stream, "referees", id="0")
    await client.xgroup_create(stream, "audit", id="0")
    got = await read(client, stream, "referees", 6)
    await client.xack(stream, "referees", *got[:4])  # 5 and 6 stay pending
    await read(client, stream, "audit", 8)
    await client.xack(stream, "audit", *(await ids(client, stream))[:8])
    assert await trimmer.trim(stream) == 4
    assert await ids(client, stream) == added[4:]  # the oldest pending of "referees" stays
    await client.xack(stream, "referees", *got[4:])
    assert await trimmer.trim(stream) == 1  # its last delivered one stays: the group's mark
    assert await ids(client, stream) == added[5:]
    # Entries no group has been given are never trimmed.
    await read(client, stream, "referees", 10)
    await client.xack(stream, "referees", *added[6:])
    assert await trimmer.trim(stream) == 2  # "audit" was given up to the 8th
    assert await ids(client, stream) == added[7:]


async def test_the_last_entries_of_a_followed_stream_stay(place: tuple[Any, Keys]) -> None:
    client, keys = place
    stream = keys.feed(0)
    added = [(await client.xadd(stream, {b"c": b"%d" % n})).decode() for n in range(10)]
    await client.xgroup_create(stream, "scoring", id="0")
    got = await read(client, stream, "scoring", 10)
    await client.xack(stream, "scoring", *got)
    trimmer = Trimmer(client, keys)
    assert await trimmer.trim(stream, keep=3) == 7
    assert await ids(client, stream) == added[7:]
    assert await trimmer.trim(stream, keep=5) == 0


async def test_the_archiver_trims_every_command_stream_its_groups_are_done_with(
    place: tuple[Any, Keys], tmp_path: Path
) -> None:
    client, keys = place
    settings = Settings(prefix=keys.prefix, partitions=2)
    archiver = Archiver(client, settings, SqliteArchive(tmp_path / "archive.db"))
    streams = {"referees": keys.command_stream(1), "tournaments": keys.tournament_commands()}
    for group, stream in streams.items():
        for n in range(6):
            await client.xadd(stream, {b"c": b"%d" % n})
        await client.xgroup_create(stream, group, id="0")
        got = await read(client, stream, group, 4)
        await client.xack(stream, group, *got[:3])  # the 4th stays pending
    assert await archiver.trim() == 3 + 3
    for stream in streams.values():
        assert await client.xlen(stream) == 3  # the pending one and the two never delivered


class Clock:
    """Seconds that move when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_reply_streams_long_without_a_time_to_live_get_one(
    place: tuple[Any, Keys],
) -> None:
    """A reply stream without a TTL gets one once it has gone without for the grace; one its
    sender gave a TTL meanwhile (it made the stream again) is left alone, and its count of time
    starts again should it lose it once more."""
    client, keys = place
    live, orphan, remade = (keys.replies(n) for n in ("gw-live", "gw-gone", "gw-remade"))
    await client.xadd(live, {b"c": b"{}"})
    await client.pexpire(live, 5000)
    for bare in (orphan, remade):
        await client.xadd(bare, {b"c": b"{}"})
    other = keys.command_stream(1)
    await client.xadd(other, {b"c": b"{}"})
    clock = Clock()
    trimmer = Trimmer(client, keys, clock)
    assert await trimmer.expire_orphans() == 0  # seen without, for no time yet
    await client.pexpire(remade, 5000)  # its sender made it again
    clock.now += ORPHAN_GRACE_SECONDS - 1
    assert await trimmer.expire_orphans() == 0
    await client.persist(remade)  # lost once more
    clock.now += 1
    assert await trimmer.expire_orphans() == 1
    assert 0 < await client.pttl(orphan) <= REPLY_TTL_MS
    assert await client.pttl(remade) == -1  # seen without for no time yet
    assert 0 < await client.pttl(live) <= 5000
    assert await client.pttl(other) == -1  # not a reply stream: not touched


async def test_a_running_sender_finds_its_stream_lost_before_the_trimmer_gives_it_a_ttl(
    place: tuple[Any, Keys],
) -> None:
    """Redis lost its data and an answer made a running sender's stream again, without a TTL:
    the trimmer leaves it so, and the sender's next refresh finds the loss."""
    client, keys = place
    requester = Requester(Bus(client, keys, 2), "gw-lost")
    await requester.start()
    try:
        await client.delete(requester.stream)  # Redis lost its data
        await client.xadd(requester.stream, {b"a": b"an answer"})
        assert await Trimmer(client, keys).expire_orphans() == 0
        assert not await requester.keep()
    finally:
        await requester.close()


async def test_a_running_sender_keeps_a_time_to_live_on_its_reply_stream(
    place: tuple[Any, Keys],
) -> None:
    client, keys = place
    requester = Requester(Bus(client, keys, 2), "gw-test")
    await requester.start()
    try:
        ttl = await client.pttl(keys.replies("gw-test"))
        assert 0 < ttl <= REPLY_TTL_MS  # gone with its sender, unless refreshed
        assert await Trimmer(client, keys).expire_orphans() == 0
    finally:
        await requester.close()
