"""Games in and out of an event store, for the audit: a tolerant read, export and import.

The audit must be able to point at a damaged entry rather than fail on it, so ``load_game`` reads
a Redis store's stream entry by entry and keeps going past an entry the codec cannot decode
(noting its version as a defect). It returns each event in its stored form: the checks upcast
what they fold.

``import_record`` appends a record's events so that every hash stays what it was: consecutive
events that share a command id and a time are one append (as the referee made them), each
appended with its own type, schema, actor and data at the recorded time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from shared.audit.record import GameRecord, RecordError, build_record
from shared.audit.replay import command_spans
from shared.infra import codec
from shared.infra.chain import verify_chain
from shared.infra.store.base import EventStore
from shared.infra.store.redis import EVENT_FIELD, PAGE, RedisEventStore
from shared.infra.stored import GENESIS_HASH, NewEvent, StoredEvent


class SourceError(Exception):
    """A game that cannot be read, exported or imported as asked; the message says why."""


@dataclass(frozen=True)
class StoredGame:
    """A game's log as the store holds it: the events it could decode (stored forms), the head
    it claims, and (version, why) of the entries it could not decode."""

    game_id: str
    events: tuple[StoredEvent, ...]
    head: tuple[int, str]
    defects: tuple[tuple[int, str], ...] = ()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def _read_raw(
    store: RedisEventStore, game_id: str
) -> tuple[list[StoredEvent], list[tuple[int, str]]]:
    key = store.keys.events(game_id)
    events: list[StoredEvent] = []
    defects: list[tuple[int, str]] = []
    start = "-"
    while True:
        reply = await store.client.xrange(key, min=start, max="+", count=PAGE)
        entries = cast(list[tuple[bytes, dict[Any, Any]]], reply or [])
        for entry_id, fields in entries:
            ident = _text(entry_id)
            version = int(ident.split("-")[0]) if ident.split("-")[0].isdigit() else 0
            raw = fields.get(EVENT_FIELD)
            if not isinstance(raw, bytes):
                defects.append((version, f"stream entry {ident} holds no event record"))
                continue
            try:
                events.append(codec.decode_stored(raw))
            except codec.CodecError as err:
                defects.append((version, f"stream entry {ident} cannot be decoded: {err}"))
        if len(entries) < PAGE:
            return events, defects
        start = "(" + _text(entries[-1][0])


async def load_game(store: EventStore, game_id: str) -> StoredGame:
    """The game's log and head; :class:`SourceError` if the store has no such game."""
    try:
        head = await store.version(game_id)
    except ValueError as err:
        raise SourceError(str(err)) from None
    if isinstance(store, RedisEventStore):
        events, defects = await _read_raw(store, game_id)
    else:
        events = [e.stored_form() for e in await store.read(game_id)]
        defects = []
    if not events and not defects and head == (0, GENESIS_HASH):
        raise SourceError(f"there is no game {game_id!r} in this store")
    return StoredGame(game_id, tuple(events), head, tuple(defects))


async def export_game(store: EventStore, game_id: str) -> GameRecord:
    """The record of a stored game; :class:`SourceError` if it cannot be exported whole."""
    game = await load_game(store, game_id)
    if game.defects:
        version, why = game.defects[0]
        raise SourceError(f"version {version} cannot be exported: {why} (run rummy audit)")
    try:
        return build_record(game.events)
    except RecordError as err:
        raise SourceError(f"game {game_id}: {err}") from None


async def import_record(store: EventStore, record: GameRecord) -> tuple[int, str]:
    """Append the record's events to a store where the game does not exist yet; returns the new
    head. Raises :class:`SourceError` if the game exists, or if an append does not give the
    recorded hashes (the record's chain is broken there)."""
    game_id = record.game_id
    events = record.events
    broken = verify_chain(events, game_id=game_id)
    if broken is not None:
        raise SourceError(
            f"the record's chain breaks at version {broken + 1} (rummy verify tells why); "
            "nothing was imported"
        )
    last = events[-1]
    if record.head != (last.version, last.hash):
        raise SourceError(
            f"the record's head line {record.head} is not its last event (version "
            f"{last.version}); nothing was imported"
        )
    if await store.version(game_id) != (0, GENESIS_HASH) or game_id in await store.list_games():
        raise SourceError(f"game {game_id} already exists in this store; nothing was imported")
    seen: set[str] = set()
    version, head = 0, GENESIS_HASH
    for a, b in command_spans(events, 0, len(events)):
        first = events[a]
        if first.command_id is not None:
            if first.command_id in seen:
                raise SourceError(
                    f"version {first.version}: command id {first.command_id!r} was used by an "
                    "earlier append; the store would take it for a retry"
                )
            seen.add(first.command_id)
        batch = [NewEvent(e.type, e.data, e.schema, e.actor) for e in events[a:b]]
        result = await store.append(
            game_id,
            batch,
            expected_version=version,
            command_id=first.command_id,
            time=first.time,
            expected_head=head,
        )
        if result.duplicate or result.head != events[b - 1].hash:
            got = {e.version: e.hash for e in result.events}
            bad = next((e for e in events[a:b] if got.get(e.version) != e.hash), events[b - 1])
            raise SourceError(
                f"version {bad.version} got hash {got.get(bad.version, '?')[:12]}… in the store, "
                f"not the recorded {bad.hash[:12]}… (versions 1-{result.last_version} were "
                "imported)"
            )
        version, head = result.last_version, result.head
    return await store.version(game_id)
