"""The portable game record (``.rrec``): a whole game in JSON Lines, checkable without a server.

Line 1 is the header, then one line per stored event, then the chain head::

    {"format": "rrec", "version": 1, "game_id": ..., "rules": ..., "options": {...},
     "players": [names in seat order], "commitment": ..., "seed": hex or null, "exported": unix}
    {"version": 1, "type": "GameCreated", "schema": 1, "time": ..., "command_id": ...,
     "actor": ..., "data": {...}, "prev_hash": "000...", "hash": "..."}
    ...
    {"head": {"version": n, "hash": "..."}}

Every event line holds the envelope exactly as stored (its stored form, before any upcasting), so
each hash recomputes from the file alone: the game id comes from the header, every other hashed
field from the line. JSON keeps what the hash covers: ints stay ints, floats are written with
``repr`` (exact), strings, lists, maps, booleans and null are themselves. A value JSON cannot
carry exactly (bytes, a NaN) is refused when the record is built, never written approximately.

The header is a convenience for readers (rule set, players, commitment, revealed seed) and is not
hashed: ``verify`` checks it against the events. See ``docs/record-format.md``.

A record holds every event whole, each under its hash, so nothing in it can be masked: by the
events' visibility rule (``shared.core.visibility``) it is only for a sight that sees everything,
anyone once the game has ended and the operator before. ``build_record`` refuses anyone else.
"""

from __future__ import annotations

import json
import math
import time as _time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from shared.core.visibility import EVERYONE, Sight
from shared.infra.keys import check_game_id
from shared.infra.stored import StoredEvent

FORMAT = "rrec"
VERSION = 1
MEDIA_TYPE = "application/x-ndjson"
EVENT_FIELDS = (
    "version",
    "type",
    "schema",
    "time",
    "command_id",
    "actor",
    "data",
    "prev_hash",
    "hash",
)
OPTIONAL_EVENT_FIELDS = ("salt",)  # events stored before salts, or by an unkeyed appender, lack it
HEADER_FIELDS = (
    "format",
    "version",
    "game_id",
    "rules",
    "options",
    "players",
    "commitment",
    "seed",
    "exported",
)


class RecordError(ValueError):
    """A record that cannot be built or read; the message names the line (or the event)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.line = line


class NotFinished(RecordError):
    """The record of a live game asked for by someone who may not see all of it yet."""


@dataclass(frozen=True)
class Header:
    """The first line of a record."""

    game_id: str
    rules: str
    options: dict[str, Any]
    players: tuple[str, ...]
    commitment: str
    seed: str | None
    exported: float

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "game_id": self.game_id,
            "rules": self.rules,
            "options": self.options,
            "players": list(self.players),
            "commitment": self.commitment,
            "seed": self.seed,
            "exported": self.exported,
        }


@dataclass(frozen=True)
class GameRecord:
    """A parsed or built record: header, the events in their stored form, the head line."""

    header: Header
    events: tuple[StoredEvent, ...]
    head: tuple[int, str] | None  # None only while a parse had no head line (never returned)

    @property
    def game_id(self) -> str:
        return self.header.game_id


# --- building ----------------------------------------------------------------------------------


def header_of(events: Sequence[StoredEvent], exported: float) -> Header:
    """The header the events imply (their current-schema data, as the views read it)."""
    if not events:
        raise RecordError("a record needs at least one event")
    first = events[0]
    if first.type != "GameCreated":
        raise RecordError(f"the first event is {first.type}, not GameCreated")
    created = first.data
    players = tuple(str(e.data.get("name", "")) for e in events if e.type == "PlayerSeated")
    seeds = [e.data.get("seed") for e in events if e.type == "SeedRevealed"]
    seed = seeds[-1] if seeds and isinstance(seeds[-1], str) else None
    options = created.get("options")
    return Header(
        game_id=first.game_id,
        rules=str(created.get("rules", "")),
        options=dict(options) if isinstance(options, dict) else {},
        players=players,
        commitment=str(created.get("commitment", "")),
        seed=seed,
        exported=float(exported),
    )


def event_line(event: StoredEvent) -> dict[str, Any]:
    """The record line of one event: its stored envelope without the game id."""
    stored = event.stored_form()
    return {
        "version": stored.version,
        "type": stored.type,
        "schema": stored.schema,
        "time": stored.time,
        "command_id": stored.command_id,
        "actor": stored.actor,
        "data": stored.data,
        "prev_hash": stored.prev_hash,
        "hash": stored.hash,
    } | ({"salt": stored.salt} if stored.salt is not None else {})


def ended(events: Sequence[StoredEvent]) -> bool:
    """Whether the log holds the end of its match (from then on it is public)."""
    return any(e.type == "MatchEnded" for e in events)


def build_record(
    events: Sequence[StoredEvent], exported: float | None = None, *, sight: Sight = EVERYONE
) -> GameRecord:
    """The record of a game's log (events as read from a store: upcast ones keep their stored
    form, which is what goes into the record), for ``sight`` (by default one that sees
    everything: the operator, or a tool reading the store itself). Raises :class:`NotFinished`
    when the game is live and ``sight`` may not see everything, :class:`RecordError` for a log
    that is not one game's or holds a value JSON cannot carry exactly."""
    if not sight.full and not ended(events):
        raise NotFinished(
            "the game record is available once the game has ended: it holds every hand and the "
            "stock order; until then keep the receipts (version and head) of your views"
        )
    stamp = _time.time() if exported is None else exported
    header = header_of(events, stamp)
    stored = tuple(e.stored_form() for e in events)
    for event in stored:
        if event.game_id != header.game_id:
            raise RecordError(
                f"event {event.version} belongs to game {event.game_id!r}, not {header.game_id!r}"
            )
        _check_round_trip(header.game_id, event)
    last = stored[-1]
    return GameRecord(header, stored, (last.version, last.hash))


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _check_round_trip(game_id: str, event: StoredEvent) -> None:
    """The event's line read back must be the very same values, kind for kind (ints stay ints,
    floats keep every bit), or the hash would not recompute from the file."""
    where = f"event {event.version} ({event.type})"
    line = event_line(event)
    try:
        text = _dump(line)
    except (TypeError, ValueError) as err:
        raise RecordError(f"{where} holds a value a JSON record cannot carry: {err}") from None
    if not _same(json.loads(text), line):
        raise RecordError(f"{where} does not survive JSON exactly (a NaN or bytes in its data?)")


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same kinds, all the way down (``1 == 1.0`` is not enough here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and not math.isinf(a)  # NaN is never equal, infinity is not JSON
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def record_lines(record: GameRecord) -> Iterator[str]:
    """The record's lines, each without its newline."""
    yield _dump(record.header.to_json())
    for event in record.events:
        yield _dump(event_line(event))
    if record.head is not None:
        version, digest = record.head
        yield _dump({"head": {"version": version, "hash": digest}})


def dumps(record: GameRecord) -> str:
    """The whole record as text (every line ends with a newline)."""
    return "".join(line + "\n" for line in record_lines(record))


def write_record(record: GameRecord, out: TextIO) -> None:
    """Write the record to a text stream."""
    for line in record_lines(record):
        out.write(line + "\n")


# --- reading -----------------------------------------------------------------------------------


def _kind(value: Any, kind: type | tuple[type, ...]) -> bool:
    """``isinstance`` without taking a bool for an int."""
    if isinstance(value, bool):
        return kind is bool or (isinstance(kind, tuple) and bool in kind)
    return isinstance(value, kind)


def _event_from_line(doc: Any, game_id: str, line: int | None) -> StoredEvent:
    if not isinstance(doc, dict):
        raise RecordError(f"an event line is a JSON object, got {type(doc).__name__}", line)
    missing = [f for f in EVENT_FIELDS if f not in doc]
    if missing:
        raise RecordError(f"the event line lacks {', '.join(missing)}", line)
    extra = sorted(set(doc) - set(EVENT_FIELDS) - set(OPTIONAL_EVENT_FIELDS))
    if extra:
        raise RecordError(f"the event line has unknown fields {', '.join(extra)}", line)
    checks: list[tuple[str, type | tuple[type, ...], str]] = [
        ("version", int, "an integer"),
        ("type", str, "a string"),
        ("schema", int, "an integer"),
        ("time", (int, float), "a number"),
        ("command_id", (str, type(None)), "a string or null"),
        ("actor", (str, type(None)), "a string or null"),
        ("data", dict, "an object"),
        ("prev_hash", str, "a string"),
        ("hash", str, "a string"),
    ]
    if "salt" in doc:
        checks.append(("salt", str, "a string"))
    for name, kind, what in checks:
        if not _kind(doc[name], kind):
            raise RecordError(f"event field {name} must be {what}, got {doc[name]!r}", line)
    return StoredEvent(
        game_id=game_id,
        version=doc["version"],
        type=doc["type"],
        schema=doc["schema"],
        time=doc["time"],
        command_id=doc["command_id"],
        actor=doc["actor"],
        data=doc["data"],
        prev_hash=doc["prev_hash"],
        hash=doc["hash"],
        salt=doc.get("salt"),
    )


def _header_from_line(doc: Any) -> Header:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RecordError(
            'this is not a game record: line 1 must be the header {"format": "rrec", ...}', 1
        )
    if doc.get("version") != VERSION or not _kind(doc.get("version"), int):
        raise RecordError(
            f"record version {doc.get('version')!r} is not supported (this reader knows "
            f"version {VERSION})",
            1,
        )
    missing = [f for f in HEADER_FIELDS if f not in doc]
    if missing:
        raise RecordError(f"the header lacks {', '.join(missing)}", 1)
    game_id = doc["game_id"]
    try:
        check_game_id(game_id)
    except ValueError as err:
        raise RecordError(f"header game_id: {err}", 1) from None
    players = doc["players"]
    shapes = [
        ("rules", _kind(doc["rules"], str), "a string"),
        ("options", isinstance(doc["options"], dict), "an object"),
        (
            "players",
            isinstance(players, list) and all(isinstance(p, str) for p in players),
            "a list of names",
        ),
        ("commitment", _kind(doc["commitment"], str), "a string"),
        ("seed", _kind(doc["seed"], (str, type(None))), "a hex string or null"),
        ("exported", _kind(doc["exported"], (int, float)), "a number of unix seconds"),
    ]
    for name, fine, what in shapes:
        if not fine:
            raise RecordError(f"header field {name} must be {what}, got {doc[name]!r}", 1)
    return Header(
        game_id=game_id,
        rules=doc["rules"],
        options=doc["options"],
        players=tuple(players),
        commitment=doc["commitment"],
        seed=doc["seed"],
        exported=float(doc["exported"]),
    )


def _head_from_line(doc: dict[str, Any], line: int) -> tuple[int, str]:
    head = doc["head"]
    if (
        len(doc) != 1
        or not isinstance(head, dict)
        or set(head) != {"version", "hash"}
        or not _kind(head["version"], int)
        or not isinstance(head["hash"], str)
    ):
        raise RecordError('the head line must be {"head": {"version": n, "hash": "..."}}', line)
    return head["version"], head["hash"]


def parse_record(lines: Iterable[str]) -> GameRecord:
    """Read a record from its lines (a text file, ``str.splitlines()``...). Blank lines are
    ignored; anything else that is not the header, an event line or the final head line is a
    :class:`RecordError` naming its line number."""
    header: Header | None = None
    events: list[StoredEvent] = []
    head: tuple[int, str] | None = None
    last_line = 0
    for number, raw in enumerate(lines, start=1):
        last_line = number
        text = raw.strip()
        if not text:
            continue
        if head is not None:
            raise RecordError("nothing may follow the head line", number)
        try:
            doc = json.loads(text)
        except ValueError as err:
            raise RecordError(f"not JSON ({err}): {text[:80]!r}", number) from None
        if header is None:
            if number != 1:
                raise RecordError("the header must be the first line", number)
            header = _header_from_line(doc)
            continue
        if isinstance(doc, dict) and "head" in doc:
            head = _head_from_line(doc, number)
            continue
        events.append(_event_from_line(doc, header.game_id, number))
    if header is None:
        raise RecordError("the record is empty")
    if head is None:
        raise RecordError(
            'the record ends without its head line {"head": {...}} (cut short?)', last_line + 1
        )
    if not events:
        raise RecordError("the record holds no events", last_line)
    return GameRecord(header, tuple(events), head)


def loads(text: str) -> GameRecord:
    """Parse a record held in a string."""
    return parse_record(text.splitlines())


def read_record(path: str) -> GameRecord:
    """Parse the record file at ``path`` (UTF-8). ``OSError`` if it cannot be read."""
    with open(path, encoding="utf-8") as handle:
        return parse_record(handle)
