"""The gateway's feed followers: one read of every partition on one Redis, one per partition on
a cluster, each waiting as long as its plan allows (news wakes either at once)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from services.gateway.hub import FOLLOW_ALONE_BLOCK_MS, FOLLOW_BLOCK_MS, Hub
from shared.infra.bus import Bus
from shared.infra.keys import Keys
from tests.servers import until
from tests.services.conftest import delete_prefixed, redis_client


class ReadRecorder:
    """A client whose reads record the streams and block they were asked for."""

    def __init__(self) -> None:
        self.reads: list[tuple[tuple[str, ...], int | None]] = []

    async def xrevrange(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []

    async def xread(self, streams: dict[str, Any], count: int, block: int | None) -> list[Any]:
        self.reads.append((tuple(streams), block))
        await asyncio.sleep(0.001)
        return []


async def _nothing(*args: Any) -> None:
    return None


@pytest.mark.parametrize(
    ("alone", "block"), [(False, FOLLOW_BLOCK_MS), (True, FOLLOW_ALONE_BLOCK_MS)]
)
async def test_each_plan_of_reads_waits_its_own_block(
    monkeypatch: pytest.MonkeyPatch, alone: bool, block: int
) -> None:
    client = ReadRecorder()
    bus = Bus(client, Keys("t:"), 4)  # type: ignore[arg-type]
    streams = bus.feed_streams()
    plan = [[s] for s in streams] if alone else [streams]
    monkeypatch.setattr("services.gateway.hub.read_plan", lambda client, names: plan)
    hub = Hub(bus, _nothing, _nothing)
    await hub.start()
    while len({names for names, _ in client.reads}) < len(plan):
        await asyncio.sleep(0.001)
    await hub.stop()
    assert {names for names, _ in client.reads} == {tuple(group) for group in plan}
    assert {wait for _, wait in client.reads} == {block}


async def test_a_feed_made_anew_behind_the_last_id_read_is_read_from_its_start() -> None:
    """The feed was followed up to an id ahead of the clock of the Redis that comes back empty
    (another host, or a clock set back): told so, the follower reads the new feed from its
    start, and the news numbered below that id still wakes its game. A partition still ahead
    of what was read (the one followed all along) is not read again."""
    keys = Keys(f"t{uuid.uuid4().hex[:10]}:")
    client = redis_client()
    bus = Bus(client, keys, 2)
    heard: list[tuple[str, int]] = []

    async def on_news(game: str, version: int, types: list[str], items: list[Any]) -> None:
        heard.append((game, version))

    lost, kept = bus.feed_streams()
    ahead = "9000000000000-0"  # the year 2255: ahead of any Redis's clock
    await client.xadd(lost, {b"x": b"not news"}, id=ahead)
    hub = Hub(bus, _nothing, on_news)
    await hub.start()
    sent = 0

    async def kept_news() -> list[tuple[str, int]]:
        nonlocal sent
        sent += 1
        await client.xadd(kept, bus.news("g-kept", sent, ["Drawn"])[1])
        return heard

    try:
        await until(kept_news, timeout=30)  # news sent until the follower reads both feeds
        await client.delete(lost)  # Redis lost its data
        hub.follow_from_start()
        await client.xadd(lost, bus.news("g-new", 1, ["GameCreated"])[1])
        await until(lambda: ("g-new", 1) in heard, timeout=30)
        await kept_news()
        await until(lambda: ("g-kept", sent) in heard, timeout=30)  # still followed
        assert heard.count(("g-new", 1)) == 1
        kept_heard = [version for game, version in heard if game == "g-kept"]
        assert kept_heard == sorted(set(kept_heard)), "the kept feed was read again"
    finally:
        await hub.stop()
        await delete_prefixed(client, keys.prefix)
        await client.aclose()
