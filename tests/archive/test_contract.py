"""The archive contract, run against every backend (SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses

import pytest

from shared.archive.base import (
    MAX_PAGE,
    Archive,
    ArchiveConflict,
    ArchiveError,
    Entry,
    Query,
    QueryError,
    entry_of,
    prepare,
)
from shared.archive.schema import LATEST
from shared.audit.record import GameRecord, build_record, dumps
from shared.audit.verify import audit_record
from shared.core.events import RematchOffered
from shared.infra.chain import chain
from shared.infra.gamelog import to_new
from shared.infra.stored import StoredEvent
from tests.audit.games import rechain, with_data


def newest_first(entries: list[Entry]) -> list[str]:
    return [e.game_id for e in sorted(entries, key=lambda e: (e.finished, e.game_id), reverse=True)]


def offered(record: GameRecord, *offers: tuple[int, str]) -> GameRecord:
    """``record`` with rematch offers (seat, rematch) appended after its end, each as the
    referee appends one."""
    events = list(record.events)
    for seat, rematch in offers:
        last = events[-1]
        offer = to_new(RematchOffered(seat, rematch), f"seat:{seat}")
        events += chain(
            record.game_id, [offer], last.version + 1, last.hash, f"r{seat}", last.time + 1.0
        )
    return build_record(events, exported=1.0)


async def store_all(archive: Archive, records: list[GameRecord]) -> list[Entry]:
    return [await archive.store(r, archived=1_800_000_000.0 + i) for i, r in enumerate(records)]


async def test_a_stored_record_reads_back_byte_for_byte_and_verifies(
    archive: Archive, records: list[GameRecord]
) -> None:
    record = records[0]
    entry = await archive.store(record, archived=1_800_000_000.0)
    fetched = await archive.fetch(record.game_id)
    assert fetched is not None
    assert dumps(fetched) == dumps(record)
    assert audit_record(fetched).ok
    assert entry == entry_of(record, 1_800_000_000.0)
    assert entry.events == len(record.events) and entry.head == record.events[-1].hash
    assert await archive.entry(record.game_id) == entry
    assert await archive.count() == 1


async def test_an_unknown_game_is_none(archive: Archive) -> None:
    assert await archive.fetch("nobody") is None
    assert await archive.entry("nobody") is None


async def test_storing_again_is_a_no_op_and_another_history_is_refused(
    archive: Archive, records: list[GameRecord]
) -> None:
    record = records[1]
    first = await archive.store(record, archived=1.0)
    again = await archive.store(record, archived=2.0)
    assert again == first  # the first row stays, archived time included
    # The same game with another history (an event changed, the chain recomputed).
    events = list(record.events)
    index = next(i for i, e in enumerate(events) if e.type == "RoundDealt")
    events[index] = with_data(events[index], starter=events[index].data.get("starter", 0))
    changed = rechain([dataclasses.replace(e) for e in events], 0)
    moved = [dataclasses.replace(e, time=e.time + 1.0) for e in changed]
    other = build_record(rechain(moved, 0), exported=1.0)
    assert other.events[-1].hash != record.events[-1].hash
    with pytest.raises(ArchiveConflict, match="left as it was"):
        await archive.store(other, archived=3.0)
    fetched = await archive.fetch(record.game_id)
    assert fetched is not None and dumps(fetched) == dumps(record)
    assert await archive.count() == 1


async def test_a_longer_log_of_the_archived_history_replaces_it(
    archive: Archive, records: list[GameRecord]
) -> None:
    record = records[2]
    first = await archive.store(record, archived=1.0)
    longer = offered(record, (1, "g" + "7" * 31))
    entry = await archive.store(longer, archived=2.0)
    assert entry == entry_of(longer, 2.0) == await archive.entry(record.game_id)
    assert (entry.events, entry.archived) == (first.events + 1, 2.0)
    assert (entry.players, entry.winners, entry.finished) == (
        first.players,
        first.winners,
        first.finished,
    )
    fetched = await archive.fetch(record.game_id)
    assert fetched is not None and dumps(fetched) == dumps(longer)
    assert audit_record(fetched).ok
    assert await archive.count() == 1
    mine = await archive.listing(Query(player=first.players[0]))
    assert mine.entries == (entry,)
    # Stored again: a no-op, as for any record.
    assert await archive.store(longer, archived=3.0) == entry


async def test_a_shorter_log_or_a_longer_other_history_is_refused(
    archive: Archive, records: list[GameRecord]
) -> None:
    record = records[3]
    archived = offered(record, (1, "g" + "7" * 31))
    entry = await archive.store(archived, archived=1.0)
    with pytest.raises(ArchiveConflict, match="left as it was"):
        await archive.store(record, archived=2.0)  # the archive never goes back
    # Longer, but another event where the archived history has its head.
    forked = offered(record, (0, "g" + "8" * 31), (1, "g" + "7" * 31))
    assert forked.events[: len(record.events)] == record.events
    with pytest.raises(ArchiveConflict, match="left as it was"):
        await archive.store(forked, archived=3.0)
    # Longer, with an earlier event changed and the chain recomputed.
    events = list(archived.events)
    events[5] = dataclasses.replace(events[5], time=events[5].time + 0.5)
    rewritten = offered(build_record(rechain(events, 5), exported=1.0), (0, "g" + "9" * 31))
    with pytest.raises(ArchiveConflict, match="left as it was"):
        await archive.store(rewritten, archived=4.0)
    assert await archive.entry(record.game_id) == entry
    fetched = await archive.fetch(record.game_id)
    assert fetched is not None and dumps(fetched) == dumps(archived)


async def test_a_replacement_is_made_only_over_the_row_it_extends(
    archive: Archive, records: list[GameRecord]
) -> None:
    record = records[4]
    first = await archive.store(record, archived=1.0)
    row = prepare(offered(record, (1, "g" + "7" * 31)), archived=2.0)
    moved = dataclasses.replace(first, head="0" * 64)  # another writer replaced it meanwhile
    assert not await archive._replace(moved, row.entry, row.blob, row.digest)
    assert await archive.entry(record.game_id) == first
    assert await archive._replace(first, row.entry, row.blob, row.digest)
    assert await archive.entry(record.game_id) == row.entry
    assert not await archive._replace(first, row.entry, row.blob, row.digest)


async def test_only_whole_finished_games_with_a_sound_chain_archive(
    archive: Archive, records: list[GameRecord]
) -> None:
    record = records[0]
    live = [e for e in record.events if e.type not in ("MatchEnded",)]
    live = rechain(live[: len(live) // 2])
    with pytest.raises(ArchiveError, match="has not ended"):
        await archive.store(build_record(live, exported=1.0), archived=1.0)
    events: list[StoredEvent] = list(record.events)
    events[3] = with_data(events[3], forged=True)
    with pytest.raises(ArchiveError, match="chain breaks at version 4"):
        await archive.store(build_record(events, exported=1.0), archived=1.0)
    assert await archive.count() == 0


async def test_listing_filters_and_pages_newest_first(
    archive: Archive, records: list[GameRecord]
) -> None:
    entries = await store_all(archive, records)
    everything = await archive.listing(Query())
    assert [e.game_id for e in everything.entries] == newest_first(entries)
    assert everything.next is None

    robbers = await archive.listing(Query(rules="robbers"))
    assert [e.game_id for e in robbers.entries] == newest_first(
        [e for e in entries if e.rules == "robbers"]
    )
    name = entries[0].players[0]
    mine = await archive.listing(Query(player=name))
    assert [e.game_id for e in mine.entries] == newest_first(
        [e for e in entries if name in e.players]
    )
    winner = entries[0].winners[0]
    won = await archive.listing(Query(winner=winner))
    assert [e.game_id for e in won.entries] == newest_first(
        [e for e in entries if winner in e.winners]
    )
    assert all(winner in e.players for e in won.entries)

    middle = sorted(e.finished for e in entries)[len(entries) // 2]
    late = await archive.listing(Query(since=middle))
    assert [e.game_id for e in late.entries] == newest_first(
        [e for e in entries if e.finished >= middle]
    )
    early = await archive.listing(Query(until=middle))
    assert [e.game_id for e in early.entries] == newest_first(
        [e for e in entries if e.finished < middle]
    )
    assert (await archive.listing(Query(player="nobody-at-all"))).entries == ()

    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await archive.listing(Query(limit=2, cursor=cursor))
        pages += 1
        seen += [e.game_id for e in page.entries]
        if page.next is None:
            break
        cursor = page.next
    assert seen == newest_first(entries)
    assert pages == 3
    skipped = await archive.listing(Query(limit=2, offset=3))
    assert [e.game_id for e in skipped.entries] == newest_first(entries)[3:5]


async def test_a_listing_gives_the_players_in_seat_order_and_the_winners(
    archive: Archive, records: list[GameRecord]
) -> None:
    await store_all(archive, records)
    page = await archive.listing(Query())
    by_id = {r.game_id: r for r in records}
    for entry in page.entries:
        record = by_id[entry.game_id]
        assert entry.players == record.header.players
        end = [e for e in record.events if e.type == "MatchEnded"][-1]
        assert entry.winners == tuple(record.header.players[s] for s in end.data["winners"])


@pytest.mark.parametrize(
    ("changes", "field_name"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": MAX_PAGE + 1}, "limit"),
        ({"limit": "5"}, "limit"),
        ({"since": float("nan")}, "since"),
        ({"until": "yesterday"}, "until"),
        ({"rules": ""}, "rules"),
        ({"player": "x" * 201}, "player"),
        ({"cursor": "not a cursor"}, "cursor"),
        ({"offset": -1}, "offset"),
        ({"offset": 1.5}, "offset"),
        ({"cursor": "12.5|bad id"}, "cursor"),
    ],
)
def test_a_bad_query_names_its_field(changes: dict[str, object], field_name: str) -> None:
    with pytest.raises(QueryError) as caught:
        Query(**changes)  # type: ignore[arg-type]
    assert caught.value.field == field_name
    assert str(caught.value).startswith(f"{field_name}: ")


async def test_the_schema_is_at_the_latest_version_and_opening_again_changes_nothing(
    archive: Archive, records: list[GameRecord]
) -> None:
    assert await archive.schema_version() == LATEST
    await archive.store(records[0], archived=1.0)
    await archive.close()
    await archive.open()
    assert await archive.schema_version() == LATEST
    assert await archive.count() == 1
