"""Departed consumers (shared/infra/departed.py): a dead referee's (scorer's, tournament
service's) consumer leaves the groups once its lease has run out and its pending entries are
claimed by a survivor, never before; on a stepped clock."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.referee.referee import Referee
from services.scoring.scoring import Scoring
from services.tournament.service import GROUP as TOURNAMENTS
from services.tournament.service import TournamentService
from shared.infra.bus import REFEREES, SCORING
from shared.infra.keys import Keys
from shared.infra.leases import PartitionLeases
from shared.infra.members import Members
from shared.infra.settings import Settings
from tests.services.conftest import delete_prefixed, redis_client

LEASE_MS = 3000


class SteppedTime:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def setup() -> AsyncIterator[tuple[Any, Settings]]:
    client = redis_client()
    settings = Settings(
        prefix=f"t{uuid.uuid4().hex[:10]}:", partitions=2, claim_idle_ms=0, lease_ms=LEASE_MS
    )
    try:
        yield client, settings
    finally:
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


async def consumers(client: Any, stream: str, group: str) -> dict[str, int]:
    return {
        (c["name"].decode() if isinstance(c["name"], bytes) else c["name"]): int(c["pending"])
        for c in await client.xinfo_consumers(stream, group)
    }


async def read_and_acknowledge(client: Any, stream: str, group: str, consumer: str) -> None:
    """Make ``consumer`` known to the group with nothing pending: Redis creates a consumer
    only when it reads an entry (reading an empty stream leaves it unknown)."""
    entry = await client.xadd(stream, {"x": "1"})
    assert await client.xreadgroup(group, consumer, {stream: ">"}, count=1)
    await client.xack(stream, group, entry)
    assert (await consumers(client, stream, group))[consumer] == 0


async def test_a_dead_referee_leaves_the_groups_after_expiry_and_once_claimed(
    setup: tuple[Any, Settings],
) -> None:
    client, settings = setup
    keys = Keys(settings.prefix)
    clock = SteppedTime()
    alive = Referee(client, Settings(**{**settings.__dict__, "consumer": "a"}), lease_time=clock)
    assert await alive.reader.join(asyncio.Event())
    # The dead one: a member holding a lease, with an entry read and never acknowledged.
    dead = PartitionLeases(client, keys, "z", settings.partitions, LEASE_MS, clock)
    await dead.refresh()
    stream = keys.command_stream(0)
    await client.xadd(stream, {"x": "1"})
    await client.xreadgroup(REFEREES, "z", {stream: ">"})
    await alive.leases.refresh()
    assert await alive.forget_departed() == []  # alive as far as anyone knows
    assert await consumers(client, stream, REFEREES) == {"z": 1}

    clock.now += LEASE_MS / 1000 + 1  # its lease runs out; it is no longer a member
    await alive.leases.refresh()
    assert "z" not in alive.leases.live and alive.leases.held == {0, 1}
    assert await alive.forget_departed() == [], "its entry is still pending: not yet"
    assert "z" in await consumers(client, stream, REFEREES)

    assert await alive.reader.claim(stream) == 1  # the survivor claims it (a dead letter)
    await asyncio.gather(*alive.reader.inflight)
    assert await alive.forget_departed() == [f"{stream} z"]
    assert "z" not in await consumers(client, stream, REFEREES)
    assert "a" in await consumers(client, stream, REFEREES)  # the claimer stays


async def test_only_the_first_live_referee_by_name_forgets(setup: tuple[Any, Settings]) -> None:
    client, settings = setup
    clock = SteppedTime()
    first, second = (
        Referee(client, Settings(**{**settings.__dict__, "consumer": n}), lease_time=clock)
        for n in ("a", "b")
    )
    for referee in (first, second):
        await referee.leases.refresh()
    await first.leases.refresh()
    stream = Keys(settings.prefix).command_stream(1)
    await client.xgroup_create(stream, REFEREES, id="0", mkstream=True)
    await read_and_acknowledge(client, stream, REFEREES, "gone")
    assert await second.forget_departed() == []
    assert await first.forget_departed() == [f"{stream} gone"]


async def test_a_departed_scorer_leaves_the_feed_groups(setup: tuple[Any, Settings]) -> None:
    client, settings = setup
    clock = SteppedTime()
    scorer = Scoring(
        client, Settings(**{**settings.__dict__, "consumer": "s-1"}), member_time=clock
    )
    assert await scorer.reader.join(asyncio.Event())
    feed = Keys(settings.prefix).feed(0)
    other = Members(client, Keys(settings.prefix).scorers(), "s-0", LEASE_MS, clock)
    await other.beat()
    await read_and_acknowledge(client, feed, SCORING, "s-0")
    assert await scorer.forget_departed(await scorer.beat()) == []  # s-0 lives, and is first
    clock.now += LEASE_MS / 1000 + 1
    live = await scorer.beat()
    assert live == ["s-1"]
    assert await scorer.forget_departed(live) == [f"{feed} s-0"]
    assert "s-0" not in await consumers(client, feed, SCORING)


async def test_a_departed_tournament_service_leaves_its_groups(
    setup: tuple[Any, Settings],
) -> None:
    client, settings = setup
    keys = Keys(settings.prefix)
    clock = SteppedTime()
    service = TournamentService(
        client, Settings(**{**settings.__dict__, "consumer": "t-1"}), member_time=clock
    )
    assert await service.commands.join(asyncio.Event())
    assert await service.feed.join(asyncio.Event())
    other = Members(client, keys.tournament_services(), "t-0", LEASE_MS, clock)
    await other.beat()
    commands, feed = keys.tournament_commands(), keys.feed(1)
    await read_and_acknowledge(client, commands, TOURNAMENTS, "t-0")
    await read_and_acknowledge(client, feed, TOURNAMENTS, "t-0")
    live = await service.beat()
    assert live == ["t-0", "t-1"]
    assert await service.forget_departed(live) == []  # t-0 lives, and is first by name
    clock.now += LEASE_MS / 1000 + 1
    live = await service.beat()
    assert live == ["t-1"]
    # Something still pending for a departed one keeps it until a survivor claims it.
    await client.xadd(commands, {"x": "2"})
    await client.xreadgroup(TOURNAMENTS, "t-0", {commands: ">"}, count=1)
    assert await service.forget_departed(live) == [f"{feed} t-0"]
    assert "t-0" in await consumers(client, commands, TOURNAMENTS)
    pending = await client.xpending_range(commands, TOURNAMENTS, "-", "+", 10)
    await client.xack(commands, TOURNAMENTS, *(p["message_id"] for p in pending))
    assert await service.forget_departed(live) == [f"{commands} t-0"]
    assert "t-0" not in await consumers(client, commands, TOURNAMENTS)
    assert "t-0" not in await consumers(client, feed, TOURNAMENTS)
