"""The messages between processes, as typed values with their wire form: a command (what a sender
adds to a command stream for the referees), an answer (what the referee adds to the sender's
reply stream) and news (what the referee and scoring add to the feed for gateways and scoring).

Each is one JSON document in the entry's field ``c`` (readable with redis-cli); news also carries
what the new events changed, in fields ``d1``, ``d2`` ... (or, from older appenders, the events
as stored, in fields ``e1``, ``e2`` ...). ``decode`` refuses anything else with
``MalformedEntry`` naming what is wrong, so a reader never acts on half a message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from shared.infra import jsontext
from shared.infra.keys import check_game_id

FIELD = b"c"
MAX_ENTRY_BYTES = 256 * 1024
COMMAND_KINDS = ("create", "sit", "start", "seat", "timeout", "continue", "cancel", "expire")
ANSWER_STATUSES = ("accepted", "rejected", "refused")
MAX_COMMAND_ID = 200
MAX_SEAT = 63
_HEX = frozenset("0123456789abcdef")


class MalformedEntry(ValueError):
    """A stream entry that is not a message of this protocol; the message says why."""


@dataclass(frozen=True)
class CommandEntry:
    """One command on a command stream."""

    game: str
    kind: str  # one of COMMAND_KINDS
    cid: str  # command id, unique per game (the gateway scopes the client's id by seat)
    body: dict[str, Any] = field(default_factory=dict)
    seat: int | None = None
    reply: str = ""  # reply stream key, or "" when nobody waits
    rid: str = ""  # request id the reply carries back
    at: float = 0.0  # when the sender sent it, by its clock: for logs; nothing may judge by it

    def waited_on(self, reply: str, rid: str) -> CommandEntry:
        """This command with the reply stream and the request id its sender waits on (built
        directly: ``dataclasses.replace`` walks the fields on every command)."""
        return CommandEntry(
            self.game, self.kind, self.cid, self.body, self.seat, reply, rid, self.at
        )

    def encode(self) -> dict[bytes, bytes]:
        """The stream entry's fields."""
        doc = {
            "game": self.game,
            "kind": self.kind,
            "cid": self.cid,
            "body": self.body,
            "seat": self.seat,
            "reply": self.reply,
            "rid": self.rid,
            "at": self.at,
        }
        return {FIELD: jsontext.dumps_bytes(doc)}

    @classmethod
    def decode(cls, fields: dict[Any, Any], kinds: tuple[str, ...] = COMMAND_KINDS) -> CommandEntry:
        """Parse an entry, or raise ``MalformedEntry`` naming what is wrong. ``kinds``: the
        kinds its reader takes (the referees' by default; the tournament service has its own)."""
        doc = _document(fields, "command")
        _check_fields(
            doc,
            {
                "game": (str,),
                "kind": (str,),
                "cid": (str,),
                "body": (dict,),
                "seat": (int, type(None)),
                "reply": (str,),
                "rid": (str,),
                "at": (int, float),
            },
            optional={"body", "seat", "reply", "rid", "at"},
        )
        if doc["kind"] not in kinds:
            raise MalformedEntry(f"kind {doc['kind']!r} is unknown; allowed: {', '.join(kinds)}")
        _check_game(doc["game"])
        if not 0 < len(doc["cid"]) <= MAX_COMMAND_ID:
            raise MalformedEntry(f"field 'cid' must be 1-{MAX_COMMAND_ID} characters")
        seat = doc.get("seat")
        if seat is not None and not 0 <= seat <= MAX_SEAT:
            raise MalformedEntry(f"field 'seat' must be 0-{MAX_SEAT} or null, got {seat}")
        return cls(**doc)


@dataclass(frozen=True)
class Answer:
    """The referee's answer to a command that named a reply stream: what its sender learns (the
    gateway turns it into the HTTP answer)."""

    rid: str  # the command's request id
    game: str
    status: str  # "accepted", "rejected" (recorded attempt) or "refused" (nothing appended)
    version: int
    head: str
    code: str | None = None
    message: str | None = None
    seat: int | None = None  # the seat a sit took
    duplicate: bool = False  # the answer of a command id seen before
    field: str | None = None  # the command's field at fault (tournament answers name it)

    def to_json(self) -> dict[str, Any]:
        """The answer as the JSON document senders read (``field`` only when it names one)."""
        doc: dict[str, Any] = {
            "rid": self.rid,
            "game": self.game,
            "status": self.status,
            "version": self.version,
            "head": self.head,
            "code": self.code,
            "message": self.message,
            "seat": self.seat,
            "duplicate": self.duplicate,
        }
        if self.field is not None:
            doc["field"] = self.field
        return doc

    def encode(self) -> dict[bytes, bytes]:
        """The reply stream entry's fields."""
        return {FIELD: jsontext.dumps_bytes(self.to_json())}

    @classmethod
    def decode(cls, fields: dict[Any, Any]) -> Answer:
        """Parse a reply entry, or raise ``MalformedEntry`` naming what is wrong."""
        doc = _document(fields, "answer")
        _check_fields(
            doc,
            {
                "rid": (str,),
                "game": (str,),
                "status": (str,),
                "version": (int,),
                "head": (str,),
                "code": (str, type(None)),
                "message": (str, type(None)),
                "seat": (int, type(None)),
                "duplicate": (bool,),
                "field": (str, type(None)),
            },
            optional={"code", "message", "seat", "duplicate", "field"},
        )
        if doc["status"] not in ANSWER_STATUSES:
            raise MalformedEntry(
                f"status {doc['status']!r} is unknown; allowed: {', '.join(ANSWER_STATUSES)}"
            )
        return cls(**doc)


@dataclass(frozen=True)
class Change:
    """What a follower folds of an append, and no more: the chain head before and after it and
    each new event's schema and data (packed as in its record). The events are chained and
    checked by their appender; a follower whose cached state stands at ``prev`` folds the data
    and stands at ``head``, with no read of the log and no record to check again."""

    prev: str
    head: str
    schemas: tuple[int, ...]
    data: tuple[bytes, ...]


@dataclass(frozen=True)
class News:
    """A feed entry: a game's log reached ``version`` with events of these ``types``. ``change``
    says what changed (see :class:`Change`: fields ``d1``, ``d2`` ... hold the events' data);
    ``records`` are whole stored events, as older appenders sent them (fields ``e1`` ...)."""

    game: str
    version: int
    types: tuple[str, ...]
    records: tuple[bytes, ...] = ()
    change: Change | None = None

    def encode(self) -> dict[bytes, bytes]:
        """The feed entry's fields. The change has fields of its own beside the document, so a
        reader that does not know them still reads the news (and reads the log instead)."""
        doc = {"game": self.game, "version": self.version, "types": list(self.types)}
        fields = {FIELD: jsontext.dumps_bytes(doc)}
        for number, record in enumerate(self.records, 1):
            fields[b"e%d" % number] = record
        change = self.change
        if change is not None:
            fields[b"p"] = change.prev.encode()
            fields[b"h"] = change.head.encode()
            fields[b"s"] = b",".join(b"%d" % schema for schema in change.schemas)
            for number, data in enumerate(change.data, 1):
                fields[b"d%d" % number] = data
        return fields

    @classmethod
    def decode(cls, fields: dict[Any, Any]) -> News:
        """Parse a feed entry, or raise ``MalformedEntry`` naming what is wrong. A missing
        ``version`` reads as 0 (the news says only that the game changed)."""
        doc = _document(fields, "news")
        _check_fields(
            doc, {"game": (str,), "version": (int,), "types": (list,)}, optional={"version"}
        )
        types = doc["types"]
        if not all(isinstance(kind, str) for kind in types):
            raise MalformedEntry("field 'types' must be a list of event type names")
        _check_game(doc["game"])
        version = doc.get("version", 0)
        if version < 0:
            raise MalformedEntry(f"field 'version' must be 0 or more, got {version}")
        records = _numbered(fields, b"e")
        change = _change(fields, len(types))
        return cls(doc["game"], version, tuple(types), records, change)


def _numbered(fields: dict[Any, Any], letter: bytes) -> tuple[bytes, ...]:
    """The values of fields ``<letter>1``, ``<letter>2`` ... up to the first missing one."""
    out: list[bytes] = []
    while isinstance(value := fields.get(letter + b"%d" % (len(out) + 1)), bytes):
        out.append(value)
    return tuple(out)


def _change(fields: dict[Any, Any], count: int) -> Change | None:
    """The news' :class:`Change`, if it has one: fields ``p``, ``h`` and ``s`` together, and one
    schema and one data field per event type."""
    prev, head, schemas = (fields.get(name) for name in (b"p", b"h", b"s"))
    if prev is None and head is None and schemas is None:
        return None
    if not (isinstance(prev, bytes) and isinstance(head, bytes) and isinstance(schemas, bytes)):
        raise MalformedEntry("fields 'p', 'h' and 's' of a news come together or not at all")
    heads = []
    for name, value in (("p", prev), ("h", head)):
        text = value.decode(errors="replace")
        if len(text) != 64 or not _HEX.issuperset(text):
            raise MalformedEntry(f"field {name!r} must be 64 lower-case hex digits")
        heads.append(text)
    listed = schemas.split(b",") if schemas else []
    if not all(part.isdigit() and int(part) >= 1 for part in listed):
        raise MalformedEntry("field 's' must be the events' schemas: ints >= 1, comma-separated")
    data = _numbered(fields, b"d")
    if len(listed) != count or len(data) != count:
        raise MalformedEntry(
            f"the news names {count} events but carries {len(listed)} schemas "
            f"and {len(data)} data fields"
        )
    return Change(heads[0], heads[1], tuple(int(part) for part in listed), data)


def _document(fields: dict[Any, Any], what: str) -> dict[str, Any]:
    """The JSON object in an entry's field ``c``."""
    if not isinstance(fields, dict):
        raise MalformedEntry("the entry has no fields")
    raw = fields.get(FIELD, fields.get(FIELD.decode()))
    if not isinstance(raw, bytes | str):
        raise MalformedEntry(f"the entry has no {what} field 'c'")
    if len(raw) > MAX_ENTRY_BYTES:
        raise MalformedEntry(f"the entry is {len(raw)} bytes; at most {MAX_ENTRY_BYTES}")
    try:
        doc = jsontext.loads(raw)
    except ValueError as err:
        if jsontext.too_deep(err):
            raise MalformedEntry(f"the {what} is nested too deeply") from None
        raise MalformedEntry(f"the {what} is not JSON: {err}") from None
    if not isinstance(doc, dict):
        raise MalformedEntry(f"the {what} is not a JSON object")
    return doc


def _check_fields(
    doc: dict[str, Any], checks: dict[str, tuple[type, ...]], optional: set[str]
) -> None:
    """Every field known, present unless optional, and of its type (a bool is no number)."""
    for name, types in checks.items():
        if name in optional and name not in doc:
            continue
        value = doc.get(name)
        wrong = isinstance(value, bool) and bool not in types
        if name not in doc or not isinstance(value, types) or wrong:
            raise MalformedEntry(f"field {name!r} is missing or of the wrong type")
    unknown = set(doc) - set(checks)
    if unknown:
        raise MalformedEntry(f"unknown fields {sorted(unknown)}")


def _check_game(game: str) -> None:
    try:
        check_game_id(game)
    except ValueError as err:
        raise MalformedEntry(str(err)) from None
