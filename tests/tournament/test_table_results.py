"""A table's ``FinishTable`` read from its game's log: over real self-played games of every rule
set (each family, timeouts, the pile variants), asked while in play and once ended, from Redis
and from the archive once the game left Redis, it is the one the whole log gives, and only the
records of the types it reads are decoded (a game's hundreds of turns are passed over). On
fakeredis, or the real Redis at REDIS_URL (a key prefix of the test's own), into SQLite."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

import pytest

from services.tournament.service import TournamentService
from shared.archive.sqlite import SqliteArchive
from shared.audit.record import build_record
from shared.core.events import GameCancelled, MatchEnded
from shared.core.events import event_from as game_event
from shared.infra import codec
from shared.infra.keys import Keys
from shared.infra.retention import game_data_keys
from shared.infra.settings import Settings
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent
from shared.tournament.commands import FinishTable
from shared.tournament.state import Table
from shared.tournament.tables import seated_players, table_result
from tests.audit.games import CONFIGS, play_game
from tests.services.conftest import delete_prefixed, redis_client

NEEDED = frozenset({"PlayerSeated", "SeatLeft", "MatchEnded", "GameCancelled"})


def whole_log_finish(table: Table, stored: Sequence[StoredEvent]) -> FinishTable | None:
    """The table's result as the service read it before: every event of the log decoded, the
    head its last event."""
    events = [game_event(s.type, s.data) for s in stored]
    ended = next((e for e in events if isinstance(e, MatchEnded)), None)
    if ended is None and not any(isinstance(e, GameCancelled) for e in events):
        return None
    last = stored[-1]
    results = () if ended is None else table_result(seated_players(events), ended)
    return FinishTable(table.round, table.table, table.game_id, results, (last.version, last.hash))


@dataclass
class Place:
    """A tournament service (its loops not run) on the test's Redis, with an archive."""

    service: TournamentService
    archive: SqliteArchive
    decoded: list[str]  # the types of the records decoded, in order

    async def put(self, batch: Sequence[StoredEvent]) -> None:
        """Append one command's events to their game as the referee did (same hashes)."""
        first = batch[0]
        new = [NewEvent(e.type, e.data, e.schema, e.actor) for e in batch]
        await self.service.games.append(
            first.game_id, new, first.version - 1, first.command_id, time=first.time
        )

    async def leave_redis(self, game_id: str, events: Sequence[StoredEvent]) -> None:
        """The game archived, then forgotten by Redis (as the archiver does)."""
        await self.archive.store(build_record(list(events), exported=1.0), 1.0)
        keys = Keys(self.service.settings.prefix)
        await self.service.client.delete(*game_data_keys(keys, game_id))


@pytest.fixture
async def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Place]:
    client = redis_client()
    settings = Settings(prefix=f"t{uuid.uuid4().hex[:10]}:", partitions=2)
    archive = SqliteArchive(tmp_path / "archive.db")
    await archive.open()
    decoded: list[str] = []
    plain = codec.decode

    def counted(raw: bytes, upcasters: codec.Upcasters = codec.UPCASTERS) -> StoredEvent:
        event = plain(raw, upcasters)
        decoded.append(event.type)
        return event

    monkeypatch.setattr(codec, "decode", counted)
    service = TournamentService(client, settings, archive=archive)
    try:
        yield Place(service, archive, decoded)
    finally:
        await service.referees.close()
        await archive.close()
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


def table_of(game_id: str, seats: int) -> Table:
    return Table(2, 3, game_id, tuple(f"bot:{n}" for n in range(seats)), "started")


def batches(events: list[StoredEvent]) -> list[list[StoredEvent]]:
    """The log's appends: one per command."""
    return [list(b) for _, b in groupby(events, key=lambda e: (e.command_id, e.time))]


@pytest.mark.parametrize(
    "config", CONFIGS, ids=[f"{rules}-{luck}" for rules, _, _, _, luck in CONFIGS]
)
async def test_a_finished_games_result_is_the_whole_logs_and_decodes_only_what_it_reads(
    place: Place, config: tuple[str, dict[str, Any], tuple[str, ...], float, int]
) -> None:
    rules, options, bots, timeouts, luck = config
    game = play_game(600 + luck, rules, options, bots, timeouts, luck)
    assert game.report.finished
    table = table_of(game.game_id, len(bots))
    expected = whole_log_finish(table, game.events)
    assert expected is not None and expected.results and len(game.events) > 30
    last = game.events[-1]
    service = place.service

    # Asked after every append while in play: nothing yet; then the end is in. Another
    # process asks once half way, and not again before the game left Redis (below).
    appends = batches(game.events)
    early = TournamentService(service.client, service.settings, place.archive)
    for number, batch in enumerate(appends[:-1]):
        await place.put(batch)
        assert await service.finished_table(table) is None
        if number == len(appends) // 2:
            assert await early.finished_table(table) is None
    await place.put(appends[-1])
    assert await service.games.version(game.game_id) == (last.version, last.hash)
    assert await service.finished_table(table) == expected
    needed = [e.type for e in game.events if e.type in NEEDED]
    assert set(place.decoded) <= NEEDED, sorted(set(place.decoded) - NEEDED)
    assert len(place.decoded) <= 2 * len(needed)

    # Asked first once it ended (a service started again): the needed records alone, once.
    place.decoded.clear()
    again = TournamentService(service.client, service.settings, place.archive)
    assert await again.finished_table(table) == expected
    assert place.decoded == needed

    # A game that left Redis for the archive is read there, also by the process that read
    # half of it from Redis.
    await place.leave_redis(game.game_id, game.events)
    assert await service.games.version(game.game_id) == (0, GENESIS_HASH)
    assert await again.finished_table(table) == expected
    assert await early.finished_table(table) == expected
    for process in (again, early):
        await process.referees.close()


def resat(events: list[StoredEvent]) -> list[NewEvent]:
    """The game's events with seat 0 left and taken again by another account before it began
    (``SeatLeft``, then a second ``PlayerSeated``)."""
    out: list[NewEvent] = []
    for event in events:
        out.append(NewEvent(event.type, event.data, event.schema, event.actor))
        if event.type == "PlayerSeated" and event.data["seat"] == 0:
            out.append(NewEvent("SeatLeft", {"seat": 0}, 1, event.actor))
            late = {**event.data, "name": "Late", "player": "late-account"}
            out.append(NewEvent("PlayerSeated", late, event.schema, event.actor))
    return out


@pytest.mark.parametrize("cancelled", [False, True], ids=["ended", "cancelled"])
async def test_a_seat_taken_again_and_a_cancelled_game_read_as_from_the_whole_log(
    place: Place, cancelled: bool
) -> None:
    """Who sat where follows a seat left and taken again; a game cancelled by its timers is
    over with no results."""
    game = play_game(640, "robbers", {"match_rounds": 1}, ("greedy", "clumsy"))
    events = resat(game.events)
    if cancelled:
        events = [e for e in events if e.type != "MatchEnded"][: len(events) // 2]
        events.append(NewEvent("GameCancelled", {"reason": "expired"}, 1, "service"))
    store = place.service.games
    for version, event in enumerate(events):
        await store.append(game.game_id, [event], version, f"c{version}", time=1.0 + version)
    whole = await store.read(game.game_id)
    table = table_of(game.game_id, 2)
    expected = whole_log_finish(table, whole)
    assert expected is not None
    assert [r.player for r in expected.results] == ([] if cancelled else ["late-account", ""])
    place.decoded.clear()
    assert await place.service.finished_table(table) == expected
    assert place.decoded == [e.type for e in whole if e.type in NEEDED]
