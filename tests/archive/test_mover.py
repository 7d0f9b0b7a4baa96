"""Moving finished games out of Redis: archived (audited, stored, read back), kept for the
retention, then forgotten whole; a crash between any two steps is finished by the next pass.
On fakeredis, or the real Redis at REDIS_URL (a key prefix of the test's own), into SQLite
(the contract suite covers both archives)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from services.archiver.archiver import Archiver
from shared.archive.base import Archive
from shared.archive.mover import ALREADY, ARCHIVED, FAILED, GONE, LIVE, REFUSED, Mover
from shared.archive.sqlite import SqliteArchive
from shared.audit.record import GameRecord, build_record, dumps
from shared.audit.source import import_record
from shared.core.events import RematchOffered
from shared.infra.gamelog import to_new
from shared.infra.keys import Keys
from shared.infra.retention import TOKENS_GRACE_MS, game_data_keys
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from tests.audit.games import play_game, rechain, with_data
from tests.clocks import Clock
from tests.services.conftest import delete_prefixed, redis_client

RETAIN = 600.0


@dataclass
class Place:
    client: Any
    keys: Keys
    store: RedisEventStore
    archive: Archive
    clock: Clock
    mover: Mover

    async def put(self, record: GameRecord) -> None:
        """The game in Redis as the services leave it: log, seed, tokens, standings, lobby."""
        await import_record(self.store, record)
        game_id = record.game_id
        await self.client.set(self.keys.seed(game_id), "ab" * 32)
        await self.client.hset(self.keys.tokens(game_id), "t", "host")
        await self.client.hset(self.keys.standings(game_id), "version", "1")
        await self.client.zadd(self.keys.lobby("finished"), {game_id: 1.0})

    async def offer_rematch(self, game_id: str) -> int:
        """Seat 1 offers a rematch of the finished game, as the referee appends it: the log
        grows by one event; its new version."""
        version, head = await self.store.version(game_id)
        offer = to_new(RematchOffered(1, "g" + "5" * 31), "seat:1")
        result = await self.store.append(
            game_id, [offer], version, command_id="rematch-1", expected_head=head
        )
        return result.last_version

    async def in_redis(self, game_id: str) -> list[str]:
        """Which of the game's keys and index entries Redis still holds."""
        held = [k for k in game_data_keys(self.keys, game_id) if await self.client.exists(k)]
        if await self.client.pttl(self.keys.tokens(game_id)) == -1:  # kept, not expiring
            held.append("tokens")
        if await self.client.sismember(self.keys.games(), game_id):
            held.append("games")
        if await self.client.zscore(self.keys.lobby("finished"), game_id) is not None:
            held.append("lobby")
        return held


@pytest.fixture
async def place(tmp_path: Any) -> AsyncIterator[Place]:
    client = redis_client()
    keys = Keys(f"wt{uuid.uuid4().hex[:10]}:")
    archive = SqliteArchive(tmp_path / "archive.db")
    await archive.open()
    clock = Clock()
    writes: list[float] = []
    mover = Mover(client, keys, archive, RETAIN, clock, on_write=writes.append)
    try:
        yield Place(client, keys, RedisEventStore(client, keys.prefix), archive, clock, mover)
    finally:
        await archive.close()
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


@pytest.fixture(scope="module")
def finished() -> list[GameRecord]:
    out = []
    for number in range(3):
        game = play_game(700 + number, "robbers", {"match_rounds": 1}, ("clumsy", "greedy"))
        out.append(build_record(game.events, exported=1.0))
    return out


async def test_a_finished_game_is_archived_kept_then_forgotten_whole(
    place: Place, finished: list[GameRecord]
) -> None:
    record = finished[0]
    await place.put(record)
    assert await place.mover.sweep() == 1
    assert await place.mover.archive_due() == {ARCHIVED: 1}
    fetched = await place.archive.fetch(record.game_id)
    assert fetched is not None and fetched.events == record.events
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 1}
    # Kept for the retention: still whole in Redis.
    place.clock.advance(RETAIN - 1)
    assert await place.mover.forget_expired() == 0
    assert len(await place.in_redis(record.game_id)) == 8
    place.clock.advance(2)
    assert await place.mover.forget_expired() == 1
    assert await place.in_redis(record.game_id) == []
    assert 0 < await place.client.pttl(place.keys.tokens(record.game_id)) <= TOKENS_GRACE_MS
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 0}
    # A sweep after it finds nothing to do; the archive still has the game.
    assert await place.mover.sweep() == 0
    again = await place.archive.fetch(record.game_id)
    assert again is not None and dumps(again) == dumps(fetched)


async def test_a_crash_between_any_two_steps_is_finished_by_the_next_pass(
    place: Place, finished: list[GameRecord]
) -> None:
    record = finished[1]
    game_id = record.game_id
    await place.put(record)
    await place.mover.retention.note_due([game_id], place.clock())
    # Killed after the archive row was committed, before the game was noted kept.
    await place.archive.store(build_record(record.events, exported=1.0), archived=place.clock())
    assert await place.mover.archive_due() == {ALREADY: 1}
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 1}
    # Killed after the game's own keys were deleted, before the indexes were tidied.
    place.clock.advance(RETAIN + 1)
    entry = await place.archive.entry(game_id)
    assert entry is not None
    assert await place.mover.retention.drop_own_keys(game_id, entry.head) == 5
    assert await place.in_redis(game_id) == ["games", "lobby"]
    assert await place.mover.forget_expired() == 1
    assert await place.in_redis(game_id) == []
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 0}
    # A redelivered feed entry of the game after it was forgotten: nothing to do.
    await place.mover.retention.note_due([game_id], place.clock())
    assert await place.mover.archive_due() == {GONE: 1}
    assert await place.archive.entry(game_id) == entry


async def test_a_live_game_is_not_archived(place: Place, finished: list[GameRecord]) -> None:
    events = [e for e in finished[2].events if e.type not in ("MatchEnded", "SeedRevealed")]
    live = build_record(rechain(events[:40]), exported=1.0)
    await place.put(live)
    assert await place.mover.sweep() == 0
    await place.mover.retention.note_due([live.game_id], place.clock())
    assert await place.mover.archive_due() == {LIVE: 1}
    assert await place.archive.count() == 0
    assert len(await place.in_redis(live.game_id)) == 8


async def test_a_game_whose_audit_fails_stays_in_redis_and_is_tried_later(
    place: Place, finished: list[GameRecord]
) -> None:
    events = list(finished[2].events)
    dealt = next(i for i, e in enumerate(events) if e.type == "ScoresRecorded")
    scores = list(events[dealt].data["scores"])
    scores[0] += 5
    events[dealt] = with_data(events[dealt], scores=scores)
    forged = build_record(rechain(events, dealt), exported=1.0)  # a consistent chain, a lie
    await place.put(forged)
    await place.mover.sweep()
    assert await place.mover.archive_due() == {REFUSED: 1}
    assert await place.archive.count() == 0
    assert len(await place.in_redis(forged.game_id)) == 8
    assert await place.mover.archive_due() == {}  # not due again before its retry
    place.clock.advance(301)
    assert await place.mover.archive_due() == {REFUSED: 1}


async def test_an_archive_that_is_away_leaves_the_game_due(
    place: Place, finished: list[GameRecord]
) -> None:
    record = finished[0]
    await place.put(record)
    await place.mover.sweep()
    await place.archive.close()
    assert await place.mover.archive_due() == {FAILED: 1}
    assert await place.mover.retention.sizes() == {"due": 1, "kept": 0}
    place.clock.advance(RETAIN + 1)
    assert await place.mover.forget_expired() == 0
    assert len(await place.in_redis(record.game_id)) == 8
    await place.archive.open()
    assert await place.mover.archive_due() == {ARCHIVED: 1}


class Said:
    """A logger that keeps each line it is given: (level, event, fields)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def __getattr__(self, level: str) -> Any:
        def say(event: str, **fields: Any) -> None:
            self.lines.append((level, event, fields))

        return say

    def at(self, level: str) -> list[str]:
        return [event for said, event, _ in self.lines if said == level]


async def test_a_game_that_grew_after_it_was_archived_is_archived_again_then_forgotten(
    archive: Archive, finished: list[GameRecord]
) -> None:
    """A rematch offered after the archive took the game appends to its log: the archiver's
    passes replace the archived record by the longer one, then forget the game as usual."""
    client = redis_client()
    keys = Keys(f"wt{uuid.uuid4().hex[:10]}:")
    clock = Clock()
    settings = Settings(prefix=keys.prefix, partitions=2, retain_seconds=RETAIN)
    archiver = Archiver(client, settings, archive, clock)
    said = Said()
    archiver.mover.log = said
    place = Place(client, keys, archiver.mover.store, archive, clock, archiver.mover)
    record = finished[0]
    game_id = record.game_id
    try:
        await place.put(record)
        await place.mover.retention.note_due([game_id], clock())
        assert await archiver.one_pass() == {ARCHIVED: 1, "forgotten": 0}
        first = await archive.entry(game_id)
        assert first is not None and first.events == len(record.events)

        grown = await place.offer_rematch(game_id)
        assert grown == len(record.events) + 1
        clock.advance(RETAIN + 1)
        # Its head moved past the archived one: not forgotten, due again at once.
        assert await archiver.one_pass() == {"forgotten": 0}
        assert len(await place.in_redis(game_id)) == 8
        again = clock()
        assert await archiver.one_pass() == {ARCHIVED: 1, "forgotten": 0}
        entry = await archive.entry(game_id)
        assert entry is not None
        assert entry.events == grown and again <= entry.archived <= clock()
        assert entry.head == (await place.store.version(game_id))[1]
        assert (entry.players, entry.winners, entry.finished) == (
            first.players,
            first.winners,
            first.finished,
        )
        fetched = await archive.fetch(game_id)
        assert fetched is not None
        assert fetched.events[:-1] == record.events
        assert fetched.events[-1].type == "RematchOffered"
        assert await archive.count() == 1
        assert await place.mover.retention.sizes() == {"due": 0, "kept": 1}

        # Kept for the retention from its second archiving, then forgotten whole.
        clock.advance(RETAIN - 1)
        assert await archiver.one_pass() == {"forgotten": 0}
        clock.advance(2)
        assert await archiver.one_pass() == {"forgotten": 1}
        assert await place.in_redis(game_id) == []
        assert await place.mover.retention.sizes() == {"due": 0, "kept": 0}
        clock.advance(3600)
        assert await archiver.one_pass() == {"forgotten": 0}
        assert said.at("error") == [] and said.at("warning") == []
    finally:
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


async def test_a_finished_game_with_a_rematch_offered_is_found_by_the_sweep(
    place: Place, finished: list[GameRecord]
) -> None:
    record = finished[1]
    await place.put(record)
    await place.offer_rematch(record.game_id)
    assert await place.mover.sweep() == 1
    assert await place.mover.archive_due() == {ARCHIVED: 1}
    fetched = await place.archive.fetch(record.game_id)
    assert fetched is not None and fetched.events[-1].type == "RematchOffered"
