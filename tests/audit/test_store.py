"""Games in and out of a Redis store (fakeredis): export -> verify -> import keeps every hash, and
tampering with the stream in Redis is found and located by the audit."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import fakeredis
import pytest

from shared.audit.record import build_record, dumps, loads
from shared.audit.source import SourceError, export_game, import_record, load_game
from shared.audit.verify import audit_log, audit_record
from shared.infra import codec
from shared.infra.store.memory import MemoryEventStore
from shared.infra.store.redis import EVENT_FIELD, RedisEventStore
from shared.infra.stored import GENESIS_HASH
from tests.audit.games import Game, with_data


@pytest.fixture
async def redis() -> AsyncIterator[Any]:
    client = fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())
    yield client
    await client.aclose()


def _store(redis: Any) -> RedisEventStore:
    return RedisEventStore(redis, f"t{uuid.uuid4().hex[:8]}:")


async def _audit(store: Any, game_id: str) -> Any:
    game = await load_game(store, game_id)
    return audit_log(game.events, game_id=game_id, head=game.head, defects=game.defects)


async def test_export_verify_import_keeps_every_hash(redis: Any, games: list[Game]) -> None:
    first, second = _store(redis), _store(redis)
    for game in (games[1], games[6]):
        record = build_record(game.events, exported=0.0)
        head = await import_record(first, record)
        assert head == (game.events[-1].version, game.events[-1].hash)
        stored = await first.read(game.game_id)
        assert [e.hash for e in stored] == [e.hash for e in game.events]
        assert stored == [e.stored_form() for e in game.events]
        # Commands are appended as they were: one append per command id.
        assert (await first.outcome(game.game_id, "c0")) is not None
        exported = await export_game(first, game.game_id)
        text = dumps(exported)
        assert text.splitlines()[1:] == dumps(record).splitlines()[1:]
        assert audit_record(loads(text)).ok
        again = await import_record(second, loads(text))
        assert again == head
        assert (await _audit(second, game.game_id)).ok
    assert sorted(await second.list_games()) == sorted(g.game_id for g in (games[1], games[6]))


async def test_import_refuses_a_game_that_exists(redis: Any, game: Game) -> None:
    store = _store(redis)
    record = build_record(game.events, exported=0.0)
    await import_record(store, record)
    with pytest.raises(SourceError, match="already exists"):
        await import_record(store, record)


async def test_import_refuses_a_record_whose_chain_breaks(redis: Any, game: Game) -> None:
    store = _store(redis)
    events = list(game.events)
    events[30] = with_data(events[30], extra=1)
    record = build_record(events, exported=0.0)
    with pytest.raises(SourceError, match=f"breaks at version {events[30].version}"):
        await import_record(store, record)
    assert await store.version(game.game_id) == (0, GENESIS_HASH)
    assert await store.list_games() == []


async def test_a_memory_store_round_trips_too(game: Game) -> None:
    store = MemoryEventStore()
    record = build_record(game.events, exported=0.0)
    await import_record(store, record)
    assert (
        dumps(await export_game(store, game.game_id)).splitlines()[1:]
        == (dumps(record).splitlines()[1:])
    )


async def test_an_unknown_game(redis: Any) -> None:
    store = _store(redis)
    with pytest.raises(SourceError, match="no game"):
        await load_game(store, "nope")
    with pytest.raises(SourceError):
        await load_game(store, "bad id")


async def _rewrite_stream(store: RedisEventStore, game_id: str, edit: Any) -> None:
    """What an operator with Redis access would do: read every entry of the stream, edit the
    list of (id, record), write the stream again (entries cannot be edited in place)."""
    key = store.keys.events(game_id)
    entries = [(i, f[EVENT_FIELD]) for i, f in await store.client.xrange(key)]
    entries = edit(entries)
    await store.client.delete(key)
    for entry_id, raw in entries:
        await store.client.xadd(key, {EVENT_FIELD: raw}, id=entry_id)


async def test_an_event_edited_in_redis_is_located(redis: Any, game: Game) -> None:
    store = _store(redis)
    await import_record(store, build_record(game.events, exported=0.0))

    def edit(entries: list[Any]) -> list[Any]:
        event = codec.decode_stored(entries[99][1])
        entries[99] = (entries[99][0], codec.encode(with_data(event, round=7)))
        return entries

    await _rewrite_stream(store, game.game_id, edit)
    audit = await _audit(store, game.game_id)
    bad = audit.first_bad()
    assert bad is not None and (bad.check, bad.version) == ("chain", 100)


async def test_an_event_deleted_in_redis_is_located(redis: Any, game: Game) -> None:
    store = _store(redis)
    await import_record(store, build_record(game.events, exported=0.0))
    await store.client.xdel(store.keys.events(game.game_id), "57-0")
    bad = (await _audit(store, game.game_id)).first_bad()
    assert bad is not None and (bad.check, bad.version) == ("chain", 57)


async def test_garbage_in_a_stream_entry_is_located(redis: Any, game: Game) -> None:
    store = _store(redis)
    await import_record(store, build_record(game.events, exported=0.0))

    def edit(entries: list[Any]) -> list[Any]:
        entries[41] = (entries[41][0], b"\x93not an event")
        return entries

    await _rewrite_stream(store, game.game_id, edit)
    loaded = await load_game(store, game.game_id)
    assert loaded.defects and loaded.defects[0][0] == 42
    bad = (await _audit(store, game.game_id)).first_bad()
    assert bad is not None and (bad.check, bad.version) == ("chain", 42)
    assert "cannot be decoded" in bad.message
    with pytest.raises(SourceError, match="version 42"):
        await export_game(store, game.game_id)


async def test_a_head_moved_back_in_redis_is_located(redis: Any, game: Game) -> None:
    store = _store(redis)
    await import_record(store, build_record(game.events, exported=0.0))
    keep = game.events[199]
    await store.client.hset(
        store.keys.head(game.game_id), mapping={"version": keep.version, "hash": keep.hash}
    )
    bad = (await _audit(store, game.game_id)).first_bad()
    assert bad is not None and (bad.check, bad.version) == ("head", 201)
