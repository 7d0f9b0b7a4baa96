"""The archive contract for finished tournaments, run against every backend (SQLite and
PostgreSQL): one history per tournament, read back byte for byte, a longer log of it (a ruling
after the finish) replacing it, anything else refused; listed newest finished first."""

from __future__ import annotations

import dataclasses
import random

import pytest

from shared.archive.base import Archive, ArchiveConflict, ArchiveError
from shared.archive.tournaments import (
    TournamentRecord,
    dumps,
    entry_of,
    prepare,
    tournament_record,
)
from shared.infra.chain import chain
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent
from shared.tournament.commands import SERVICE
from shared.tournament.events import to_data
from tests.archive.test_schema import execute
from tests.audit.games import rechain
from tests.tournament.desk import Desk

START = 1_700_000_000.0


def finished_desk(luck: int = 1) -> Desk:
    """A Swiss of four at tables of two, two rounds of random results, finished."""
    desk = Desk().open(4, rules="robbers", seats=2, rounds=2)
    rng = random.Random(luck)
    for _ in range(2):
        desk.play_round(rng)
    if desk.state.status != "finished":
        desk.send("finish", {}, SERVICE)
    assert desk.state.status == "finished"
    return desk


def log_of(desk: Desk, tournament_id: str, start: float = START) -> list[StoredEvent]:
    """The desk's events as the service's store chains them, under ``tournament_id``, one
    append a second from ``start``."""
    out: list[StoredEvent] = []
    head = GENESIS_HASH
    for index, event in enumerate(desk.log):
        data = to_data(event)
        if "tournament_id" in data:
            data["tournament_id"] = tournament_id
        new = NewEvent(event.TYPE, data, event.SCHEMA, SERVICE)
        (stored,) = chain(tournament_id, [new], index + 1, head, f"c{index}", start + index)
        out.append(stored)
        head = stored.hash
    return out


def record_of(
    desk: Desk, tournament_id: str = "t" + "1" * 16, start: float = START
) -> TournamentRecord:
    return tournament_record(log_of(desk, tournament_id, start), exported=1.0)


def with_ruling(desk: Desk, verdict: str = "the play stands") -> Desk:
    """The finished tournament with a ruling after the finish (its log grows by three)."""
    later = Desk(desk.state, list(desk.log))
    later.send(
        "rule",
        {
            "kind": "verdict",
            "round": 1,
            "table": 1,
            "reason": "disputed",
            "turn": 3,
            "verdict": verdict,
        },
    )
    return later


async def test_a_finished_tournament_reads_back_byte_for_byte(archive: Archive) -> None:
    desk = finished_desk()
    record = record_of(desk)
    entry = await archive.store_tournament(record, archived=1_800_000_000.0)
    fetched = await archive.fetch_tournament(record.tournament_id)
    assert fetched is not None and dumps(fetched) == dumps(record)
    assert fetched.events == record.events and fetched.head == record.head
    assert entry == entry_of(record, 1_800_000_000.0)
    assert await archive.tournament_entry(record.tournament_id) == entry
    ended = next(e for e in record.events if e.type == "TournamentFinished")
    assert (entry.name, entry.rules, entry.format, entry.finished) == (
        "Club night",
        "robbers",
        "swiss",
        ended.time,
    )
    assert (entry.events, entry.head) == record.head
    assert entry.summary["status"] == "finished" and entry.summary["entrants"] == 4
    assert await archive.count_tournaments() == 1
    assert await archive.count() == 0  # (no game)


async def test_an_unknown_tournament_is_none_and_a_bad_id_refused(archive: Archive) -> None:
    assert await archive.fetch_tournament("t" + "9" * 16) is None
    assert await archive.tournament_entry("t" + "9" * 16) is None
    for bad in ("g123", "t{x}", ""):
        with pytest.raises(ValueError, match="tournament_id"):
            await archive.fetch_tournament(bad)


async def test_storing_again_is_a_no_op_and_another_history_is_refused(archive: Archive) -> None:
    desk = finished_desk()
    record = record_of(desk)
    first = await archive.store_tournament(record, archived=1.0)
    assert await archive.store_tournament(record, archived=2.0) == first
    events = list(record.events)
    events[3] = dataclasses.replace(events[3], data={**events[3].data, "name": "Someone else"})
    other = tournament_record(rechain(events, 3), exported=1.0)
    with pytest.raises(ArchiveConflict, match="left as it was"):
        await archive.store_tournament(other, archived=3.0)
    fetched = await archive.fetch_tournament(record.tournament_id)
    assert fetched is not None and dumps(fetched) == dumps(record)
    assert await archive.count_tournaments() == 1


async def test_a_ruling_after_the_finish_replaces_it_nothing_else_does(archive: Archive) -> None:
    desk = finished_desk()
    record = record_of(desk)
    first = await archive.store_tournament(record, archived=1.0)
    ruled = with_ruling(desk)
    longer = record_of(ruled)
    assert longer.events[: len(record.events)] == record.events
    entry = await archive.store_tournament(longer, archived=2.0)
    assert entry == entry_of(longer, 2.0) == await archive.tournament_entry(record.tournament_id)
    assert (entry.events, entry.finished) == (first.events + 3, first.finished)
    fetched = await archive.fetch_tournament(record.tournament_id)
    assert fetched is not None and dumps(fetched) == dumps(longer)
    assert await archive.store_tournament(longer, archived=3.0) == entry  # again: a no-op
    # Never back, nor another ruling where the archived history has its own.
    with pytest.raises(ArchiveConflict, match="left as it was"):
        await archive.store_tournament(record, archived=4.0)
    forked = record_of(with_ruling(desk, verdict="the play is undone"))
    with pytest.raises(ArchiveConflict, match="left as it was"):
        await archive.store_tournament(forked, archived=5.0)
    assert await archive.tournament_entry(record.tournament_id) == entry
    # A replacement is made only over the row it extends.
    row = prepare(record_of(with_ruling(with_ruling(desk), verdict="later")), archived=6.0)
    assert not await archive._replace_tournament(first, row.entry, row.blob, row.digest)
    assert await archive._replace_tournament(entry, row.entry, row.blob, row.digest)
    assert await archive.tournament_entry(record.tournament_id) == row.entry


async def test_only_whole_finished_tournaments_with_a_sound_chain_archive(
    archive: Archive,
) -> None:
    desk = finished_desk()
    log = log_of(desk, "t" + "1" * 16)
    running = [e for e in log if e.type not in ("TournamentFinished",)][:-3]
    with pytest.raises(ArchiveError, match="has not finished"):
        await archive.store_tournament(tournament_record(running, 1.0), archived=1.0)
    broken = list(log)
    broken[4] = dataclasses.replace(broken[4], data={**broken[4].data, "rating": 9999.0})
    with pytest.raises(ArchiveError, match="chain breaks at version 5"):
        await archive.store_tournament(tournament_record(broken, 1.0), archived=1.0)
    assert await archive.count_tournaments() == 0


async def test_listing_pages_newest_finished_first(archive: Archive) -> None:
    desk = finished_desk()
    # Finished in another order than made.
    starts = {f"t{n:016x}": START + 1000 * ((n * 3) % 5) for n in range(5)}
    for tournament_id, start in starts.items():
        await archive.store_tournament(record_of(desk, tournament_id, start), archived=1.0)
    newest = sorted(starts, key=starts.__getitem__, reverse=True)
    entries, more = await archive.tournament_listing(limit=5)
    assert [e.tournament_id for e in entries] == newest and not more
    first, more = await archive.tournament_listing(limit=2)
    assert [e.tournament_id for e in first] == newest[:2] and more
    last, more = await archive.tournament_listing(limit=2, offset=4)
    assert [e.tournament_id for e in last] == newest[4:] and not more
    assert all(e.summary["tournament_id"] == e.tournament_id for e in entries)


async def test_a_damaged_tournament_record_is_refused_on_read(archive: Archive) -> None:
    record = record_of(finished_desk())
    await archive.store_tournament(record, archived=1.0)
    execute(
        archive,
        "UPDATE tournaments SET digest = ? WHERE tournament_id = ?",
        ("0" * 64, record.tournament_id),
    )
    with pytest.raises(ArchiveError, match="not the one stored"):
        await archive.fetch_tournament(record.tournament_id)
