"""Moving finished tournaments out of Redis: archived once their audit holds (their table games
read from Redis or the archive), kept for the retention, then forgotten whole (log, index entry,
listing rows); a crash between any two steps is finished by the next pass; a tournament that
fails its audit stays whole in Redis; a ruling after the archiving archives it again. On
fakeredis, or the real Redis at REDIS_URL (a key prefix of the test's own), into SQLite (the
contract suite covers both archives)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from shared.archive.mover import ALREADY, ARCHIVED, GONE, LIVE, REFUSED, RETRY_SECONDS
from shared.archive.sqlite import SqliteArchive
from shared.archive.tournament_mover import TournamentMover
from shared.archive.tournaments import dumps, tournament_record
from shared.audit.record import build_record
from shared.audit.source import import_record
from shared.infra.keys import Keys
from shared.infra.store.redis import RedisEventStore
from shared.infra.stored import NewEvent, StoredEvent
from shared.infra.tournaments import ALL, STATUSES, TournamentIndex, summary
from shared.tournament.events import to_data
from tests.clocks import Clock
from tests.services.conftest import delete_prefixed, redis_client
from tests.tournament.desk import DIRECTOR, TOURNAMENT
from tests.tournament.played import Played, played, rewritten

RETAIN = 600.0


@dataclass
class Place:
    client: Any
    keys: Keys
    logs: RedisEventStore
    archive: SqliteArchive
    clock: Clock
    mover: TournamentMover

    async def put(self, tournament: Played, log: list[StoredEvent] | None = None) -> None:
        """The tournament as the service leaves it: its log (appended as the service appends
        it, hashes unchanged), listed as finished with its row; its tables' games all in Redis
        but the last, which has left it for the archive."""
        for stored in log or tournament.log():
            new = NewEvent(stored.type, stored.data, stored.schema, stored.actor)
            result = await self.logs.append(
                TOURNAMENT,
                [new],
                stored.version - 1,
                command_id=stored.command_id,
                time=stored.time,
            )
            assert result.head == stored.hash
        row = summary(tournament.desk.state)
        await TournamentIndex(self.client, self.keys).place(TOURNAMENT, "finished", 1.0, row)
        *kept, gone = tournament.games.values()
        store = RedisEventStore(self.client, self.keys.prefix)
        for game in kept:
            await import_record(store, build_record(game.events, 1.0))
        await self.archive.store(build_record(gone.events, 1.0), 2.0)

    async def rule_after_the_finish(self, tournament: Played) -> int:
        """The director records a verdict on the finished tournament, appended as the service
        appends it: the log grows by three; its new version."""
        version, head = await self.logs.version(TOURNAMENT)
        rule = {
            "kind": "verdict",
            "round": 1,
            "table": 1,
            "reason": "disputed",
            "turn": 2,
            "verdict": "the play stands",
        }
        events = tournament.desk.send("rule", rule, DIRECTOR)
        new = [NewEvent(e.TYPE, to_data(e), e.SCHEMA, DIRECTOR) for e in events]
        result = await self.logs.append(
            TOURNAMENT, new, version, command_id="rule-1", expected_head=head
        )
        return result.last_version

    async def in_redis(self) -> list[str]:
        """Which of the tournament's keys and index and listing entries Redis still holds."""
        logs = self.logs.keys
        held = [k for k in logs.game_keys(TOURNAMENT) if await self.client.exists(k)]
        if await self.client.sismember(logs.games(), TOURNAMENT):
            held.append("index")
        for status in (*STATUSES, ALL):
            if await self.client.zscore(self.keys.tournaments(status), TOURNAMENT) is not None:
                held.append(status)
        if await self.client.hexists(self.keys.tournament_summaries(), TOURNAMENT):
            held.append("row")
        return held


@pytest.fixture
async def place(tmp_path: Any) -> AsyncIterator[Place]:
    client = redis_client()
    keys = Keys(f"wtt{uuid.uuid4().hex[:10]}:")
    archive = SqliteArchive(tmp_path / "archive.db")
    await archive.open()
    clock = Clock()
    mover = TournamentMover(client, keys, archive, RETAIN, clock)
    logs = RedisEventStore(client, keys.tournament_logs())
    try:
        yield Place(client, keys, logs, archive, clock, mover)
    finally:
        await archive.close()
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


@pytest.fixture
def tournament() -> Played:
    return played()


WHOLE = ["events", "head", "commands", "index", "finished", "all", "row"]


def named(held: list[str]) -> list[str]:
    return [h.rsplit(":", 1)[-1] if "{" in h else h for h in held]


async def test_a_finished_tournament_is_archived_kept_then_forgotten_whole(
    place: Place, tournament: Played
) -> None:
    await place.put(tournament)
    assert await place.mover.sweep() == 1
    assert await place.mover.archive_due() == {ARCHIVED: 1}
    fetched = await place.archive.fetch_tournament(TOURNAMENT)
    expected = tournament_record(tournament.log(), 0.0)
    assert fetched is not None and fetched.events == expected.events
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 1}
    assert await place.mover.sweep() == 0  # kept: not noted again
    place.clock.advance(RETAIN - 1)
    assert await place.mover.forget_expired() == 0
    assert named(await place.in_redis()) == WHOLE
    place.clock.advance(2)
    assert await place.mover.forget_expired() == 1
    assert await place.in_redis() == []
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 0}
    assert await place.mover.sweep() == 0
    again = await place.archive.fetch_tournament(TOURNAMENT)
    assert again is not None and dumps(again) == dumps(fetched)
    # Gone from Redis: a pass that finds it due has nothing to do.
    await place.mover.retention.note_due([TOURNAMENT], place.clock())
    assert await place.mover.archive_due() == {GONE: 1}


async def test_a_crash_between_any_two_steps_is_finished_by_the_next_pass(
    place: Place, tournament: Played
) -> None:
    await place.put(tournament)
    await place.mover.retention.note_due([TOURNAMENT], place.clock())
    # Killed after the archive row was committed, before the tournament was noted kept.
    await place.archive.store_tournament(tournament_record(tournament.log(), 1.0), place.clock())
    assert await place.mover.archive_due() == {ALREADY: 1}
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 1}
    # Killed after the log's keys were deleted, before the index and the listing were tidied.
    place.clock.advance(RETAIN + 1)
    entry = await place.archive.tournament_entry(TOURNAMENT)
    assert entry is not None
    assert await place.mover.retention.drop_own_keys(TOURNAMENT, entry.head) == 3
    assert named(await place.in_redis()) == ["index", "finished", "all", "row"]
    assert await place.mover.forget_expired() == 1
    assert await place.in_redis() == []
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 0}


async def test_one_that_fails_its_audit_stays_whole_in_redis(
    place: Place, tournament: Played
) -> None:
    log = tournament.log()
    version = next(e.version for e in log if e.type == "TableFinished")
    results = [dict(r) for r in log[version - 1].data["results"]]
    results[0]["total"] += 7
    await place.put(tournament, rewritten(log, version, results=results))
    assert await place.mover.sweep() == 1
    assert await place.mover.archive_due() == {REFUSED: 1}
    assert await place.archive.fetch_tournament(TOURNAMENT) is None
    assert named(await place.in_redis()) == WHOLE
    # Tried again after RETRY_SECONDS (refused again), never forgotten.
    assert await place.mover.archive_due() == {}
    place.clock.advance(RETRY_SECONDS + 1)
    assert await place.mover.archive_due() == {REFUSED: 1}
    place.clock.advance(RETAIN * 10)
    assert await place.mover.forget_expired() == 0
    assert named(await place.in_redis()) == WHOLE


async def test_a_table_game_found_nowhere_keeps_it_in_redis(
    place: Place, tournament: Played
) -> None:
    await place.put(tournament)
    game_id = next(iter(tournament.games))
    await place.client.delete(*Keys(place.keys.prefix).game_keys(game_id))
    await place.mover.retention.note_due([TOURNAMENT], place.clock())
    assert await place.mover.archive_due() == {REFUSED: 1}
    assert await place.archive.tournament_entry(TOURNAMENT) is None
    assert named(await place.in_redis()) == WHOLE


async def test_a_live_tournament_is_not_archived(place: Place, tournament: Played) -> None:
    log = tournament.log()
    last_round = max(i for i, e in enumerate(log) if e.type == "RoundPaired")
    await place.put(tournament, log[: last_round + 1])
    assert await place.mover.sweep() == 0
    await place.mover.retention.note_due([TOURNAMENT], place.clock())
    assert await place.mover.archive_due() == {LIVE: 1}
    assert await place.mover.retention.sizes() == {"due": 0, "kept": 0}


async def test_a_ruling_after_the_archiving_archives_it_again_then_it_leaves(
    place: Place, tournament: Played
) -> None:
    await place.put(tournament)
    await place.mover.sweep()
    assert await place.mover.archive_due() == {ARCHIVED: 1}
    first = await place.archive.tournament_entry(TOURNAMENT)
    assert first is not None
    longer = await place.rule_after_the_finish(tournament)
    assert longer == first.events + 3
    # Its retention up: not forgotten (its head moved), due again at once.
    place.clock.advance(RETAIN + 1)
    assert await place.mover.forget_expired() == 0
    assert named(await place.in_redis()) == WHOLE
    assert await place.mover.retention.sizes() == {"due": 1, "kept": 0}
    assert await place.mover.archive_due() == {ARCHIVED: 1}
    entry = await place.archive.tournament_entry(TOURNAMENT)
    assert entry is not None and entry.events == longer
    fetched = await place.archive.fetch_tournament(TOURNAMENT)
    assert fetched is not None and [e.type for e in fetched.events[-3:]] == [
        "RulingRecorded",
        "StandingsRecorded",
        "TournamentFinished",
    ]
    place.clock.advance(RETAIN + 1)
    assert await place.mover.forget_expired() == 1
    assert await place.in_redis() == []
