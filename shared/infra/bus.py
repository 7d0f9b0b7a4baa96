"""The command bus: how the gateway (and the scoring service, and the timers) hand commands to
the referees, and how the answers and the news come back.

- Command streams: ``partitions`` single keys; a game's commands always go to the partition its
  id hashes to, so one game's commands stay in order. Referees read them in one consumer group.
- Replies: each sender reads its own reply stream (trimmed); a command names it in ``reply``.
- Feed: after every append the referee (or scoring) adds ``(game, version, types)`` to the
  game's feed partition; gateways push views from it, scoring reacts to round ends.

Entries are JSON in one field: readable with redis-cli, and no msgpack outside the codec.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from redis.asyncio.cluster import RedisCluster

from shared.infra import jsontext
from shared.infra.autopipe import raw_client
from shared.infra.client import RedisClient
from shared.infra.keys import Keys, check_game_id

FIELD = b"c"
REFEREES = "referees"
SCORING = "scoring"
REPLY_MAXLEN = 10_000
FEED_MAXLEN = 100_000
MAX_ENTRY_BYTES = 256 * 1024
COMMAND_KINDS = ("create", "sit", "start", "seat", "timeout", "continue")
MAX_COMMAND_ID = 200
MAX_SEAT = 63


def partition_of(game_id: str, partitions: int) -> int:
    """The partition of a game's commands and news (stable across processes)."""
    return zlib.crc32(game_id.encode()) % partitions


def fingerprint(body: Any) -> str:
    """A short digest of a command body: a reused command id with another body differs here."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class MalformedEntry(ValueError):
    """A stream entry that is not a command of this protocol; the message says why."""


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
    def decode(cls, fields: dict[Any, Any]) -> CommandEntry:
        """Parse an entry, or raise ``MalformedEntry`` naming what is wrong."""
        raw = fields.get(FIELD, fields.get(FIELD.decode()))
        if not isinstance(raw, bytes | str):
            raise MalformedEntry("the entry has no command field 'c'")
        if len(raw) > MAX_ENTRY_BYTES:
            raise MalformedEntry(f"the entry is {len(raw)} bytes; at most {MAX_ENTRY_BYTES}")
        try:
            doc = jsontext.loads(raw)
        except ValueError as err:
            if jsontext.too_deep(err):
                raise MalformedEntry("the command is nested too deeply") from None
            raise MalformedEntry(f"the command is not JSON: {err}") from None
        if not isinstance(doc, dict):
            raise MalformedEntry("the command is not a JSON object")
        checks: dict[str, tuple[type, ...]] = {
            "game": (str,),
            "kind": (str,),
            "cid": (str,),
            "body": (dict,),
            "seat": (int, type(None)),
            "reply": (str,),
            "rid": (str,),
            "at": (int, float),
        }
        optional = {"body", "seat", "reply", "rid", "at"}
        for name, types in checks.items():
            if name in optional and name not in doc:
                continue
            value = doc.get(name)
            if name not in doc or not isinstance(value, types) or isinstance(value, bool):
                raise MalformedEntry(f"field {name!r} is missing or of the wrong type")
        if doc["kind"] not in COMMAND_KINDS:
            raise MalformedEntry(
                f"kind {doc['kind']!r} is unknown; allowed: {', '.join(COMMAND_KINDS)}"
            )
        unknown = set(doc) - set(checks)
        if unknown:
            raise MalformedEntry(f"unknown fields {sorted(unknown)}")
        try:
            check_game_id(doc["game"])
        except ValueError as err:
            raise MalformedEntry(str(err)) from None
        if not 0 < len(doc["cid"]) <= MAX_COMMAND_ID:
            raise MalformedEntry(f"field 'cid' must be 1-{MAX_COMMAND_ID} characters")
        seat = doc.get("seat")
        if seat is not None and not 0 <= seat <= MAX_SEAT:
            raise MalformedEntry(f"field 'seat' must be 0-{MAX_SEAT} or null, got {seat}")
        return cls(**doc)


class Bus:
    """Sending commands and news over one Redis client."""

    def __init__(self, client: RedisClient, keys: Keys, partitions: int) -> None:
        self.client = client
        self.keys = keys
        self.partitions = partitions

    def command_stream(self, game_id: str) -> str:
        """The command stream of a game's partition."""
        return self.keys.command_stream(partition_of(game_id, self.partitions))

    async def send(self, entry: CommandEntry) -> None:
        """Queue a command for the referees."""
        await self.client.xadd(self.command_stream(entry.game), entry.encode())

    async def ensure_groups(self, group: str, streams: list[str]) -> None:
        """Create the consumer group on every stream (idempotent)."""
        for stream in streams:
            try:
                await self.client.xgroup_create(stream, group, id="0", mkstream=True)
            except Exception as err:  # BUSYGROUP: it exists already
                if "BUSYGROUP" not in str(err):
                    raise

    def command_streams(self) -> list[str]:
        """Every command stream partition."""
        return [self.keys.command_stream(p) for p in range(self.partitions)]

    def feed_streams(self) -> list[str]:
        """Every feed partition."""
        return [self.keys.feed(p) for p in range(self.partitions)]

    def news(
        self, game_id: str, version: int, types: list[str], records: Sequence[bytes] = ()
    ) -> tuple[str, dict[bytes, bytes]]:
        """The feed entry announcing a game's new events (key, fields). ``records``: the new
        events as stored (fields ``e1``, ``e2`` ...), so a follower can fold them without
        reading the game's log back (one round trip less per change for every gateway)."""
        doc = {"game": game_id, "version": version, "types": types}
        key = self.keys.feed(partition_of(game_id, self.partitions))
        fields = {FIELD: jsontext.dumps_bytes(doc)}
        for number, record in enumerate(records, 1):
            fields[b"e%d" % number] = record
        return key, fields


def parse_json_field(fields: dict[Any, Any]) -> dict[str, Any] | None:
    """The JSON document of a feed or reply entry, or None if it is not one."""
    raw = fields.get(FIELD, fields.get(FIELD.decode()))
    try:
        doc = jsontext.loads(raw) if isinstance(raw, bytes | str) else None
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


class Requester:
    """Sends commands and awaits the referees' answers on a reply stream of its own.

    One reader task follows the reply stream and resolves the waiting futures by request id, so
    thousands of commands can be in flight over one connection.
    """

    def __init__(self, bus: Bus, name: str) -> None:
        self.bus = bus
        self.stream = bus.keys.replies(name)
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._closing = False
        self._last = "$"
        self._count = 0

    async def start(self) -> None:
        """Start following the reply stream (from now on)."""
        if self._reader is None:
            self._closing = False
            info = await self.bus.client.xadd(self.stream, {FIELD: b"{}"}, maxlen=REPLY_MAXLEN)
            self._last = info.decode() if isinstance(info, bytes) else str(info)
            self._reader = asyncio.create_task(self._read(), name="replies")

    async def close(self) -> None:
        """Stop following; waiting commands fail. (The reader also checks a flag: on Python
        3.11 a cancellation that meets a Redis command just as it completes can be lost.)"""
        self._closing = True
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
            self._reader = None
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionError("the requester closed"))

    async def request(self, entry: CommandEntry, timeout: float) -> dict[str, Any]:
        """Queue ``entry`` and wait for its answer (``TimeoutError`` after ``timeout``)."""
        await self.start()
        self._count += 1
        rid = f"{self._count}-{uuid.uuid4().hex[:8]}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        try:
            await self.bus.send(replace(entry, reply=self.stream, rid=rid))
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiting.pop(rid, None)

    async def _read(self) -> None:
        while not self._closing:
            try:
                reply = await self.bus.client.xread(
                    {self.stream: self._last}, count=500, block=1000
                )
            except asyncio.CancelledError:
                raise
            except Exception:
                await asyncio.sleep(0.2)
                continue
            for _, entries in stream_batches(reply):
                for entry_id, fields in entries:
                    self._last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                    doc = parse_json_field(fields)
                    future = self._waiting.get(str(doc.get("rid"))) if doc else None
                    if future is not None and not future.done():
                        future.set_result(doc)  # type: ignore[arg-type]


def news_records(fields: dict[Any, Any]) -> list[bytes]:
    """The event records a feed entry carries (``e1``, ``e2`` ..., in order; may be none)."""
    records: list[bytes] = []
    number = 1
    while True:
        record = fields.get(b"e%d" % number)
        if not isinstance(record, bytes):
            return records
        records.append(record)
        number += 1


def read_plan(client: RedisClient, streams: list[str]) -> list[list[str]]:
    """How to follow partitioned streams: on one Redis, all of them in one blocking read (under
    load each read brings the news of every partition at once); on a Redis Cluster, one read
    per stream, since one command's keys must share a slot."""
    if isinstance(raw_client(client), RedisCluster):
        return [[stream] for stream in streams]
    return [list(streams)]


def stream_batches(reply: Any) -> list[tuple[Any, list[tuple[Any, dict[Any, Any]]]]]:
    """An XREAD/XREADGROUP reply as (stream, entries) pairs, whatever the protocol's shape."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return list(reply.items())
    return [(stream, entries) for stream, entries in reply]
