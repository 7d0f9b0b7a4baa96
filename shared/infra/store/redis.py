"""The event store on Redis Streams, for one Redis or a Redis Cluster.

Per game (keys in :mod:`shared.infra.keys`, all with the game's hash tag, so one cluster slot):

* ``events``: a stream with one entry per event, entry ID ``<version>-0`` and one field ``e``
  holding the codec's record. IDs derived from versions make ``read(after=n)`` an ``XRANGE`` from
  ``n+1`` and ``subscribe(after=n)`` an ``XREAD`` from ``n-0``, with no scan and no index. The
  stream is never trimmed.
* ``head``: a hash ``version``, ``hash``: the chain head.
* ``commands``: a hash command id -> outcome record (see ``AppendResult.to_record``).

Appending is one Lua script over exactly those three keys, passed in ``KEYS`` (so the cluster
client routes it to their slot and Redis checks they share it). In order, atomically:

1. a command id already in ``commands`` returns its remembered outcome (nothing is written), so
   a retry is answered even if the game has moved on;
2. the head must be at the expected version *and* hash (the chain was computed by the client
   from that head, since Lua has no SHA-256); otherwise it returns the actual head;
3. the stream length must equal the head version (a guard against a damaged game: a Lua error
   after a first ``XADD`` would leave a partial append, as scripts do not roll back);
4. ``XADD`` each record with ID ``<version>-0``, set the head, remember the command's outcome.

The set of game ids is a separate single key, added to *before* a game's first append (it cannot
be in the script: it is not in the game's slot), so every game with events is in it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection
from dataclasses import replace
from typing import Any, cast

from shared.infra import codec
from shared.infra.client import RedisClient
from shared.infra.keys import DEFAULT_PREFIX, Keys, check_game_id
from shared.infra.store.base import (
    AppendResult,
    EventStore,
    HeadMismatch,
    StoreError,
    VersionConflict,
)
from shared.infra.stored import GENESIS_HASH, StoredEvent

EVENT_FIELD = b"e"
"""The stream entry field holding an event's record."""

PAGE = 500
"""Entries fetched per XRANGE/XREAD call, so a long game is read in bounded replies."""

# KEYS: 1 events stream, 2 head hash, 3 commands hash (all of one game).
# ARGV: 1 expected version, 2 expected head hash, 3 command id ('' for none),
#       4 outcome record to remember, 5 new head hash, 6.. event records in version order.
# Returns {0} appended, {1, outcome record} duplicate, {2, version, head} conflict,
#         {3, stream length, version} damaged game.
APPEND_SCRIPT = """
local command = ARGV[3]
if command ~= '' then
  local seen = redis.call('HGET', KEYS[3], command)
  if seen then
    return {1, seen}
  end
end
local head = redis.call('HMGET', KEYS[2], 'version', 'hash')
local version = tonumber(head[1]) or 0
local hash = head[2] or '@GENESIS@'
if version ~= tonumber(ARGV[1]) or hash ~= ARGV[2] then
  return {2, version, hash}
end
local length = redis.call('XLEN', KEYS[1])
if length ~= version then
  return {3, length, version}
end
local count = #ARGV - 5
for i = 1, count do
  redis.call('XADD', KEYS[1], string.format('%d-0', version + i), 'e', ARGV[5 + i])
end
redis.call('HSET', KEYS[2], 'version', version + count, 'hash', ARGV[5])
if command ~= '' then
  redis.call('HSET', KEYS[3], command, ARGV[4])
end
return {0}
""".replace("@GENESIS@", GENESIS_HASH)


class RedisEventStore(EventStore):
    """The store over a Redis client (``Redis``, ``RedisCluster``, or the auto-pipeline over
    one) whose replies are bytes (``decode_responses=False``, the default).

    ``block_ms`` is how long one ``XREAD BLOCK`` of ``subscribe`` waits before asking again; keep
    it below the client's socket timeout, if it has one.
    """

    def __init__(
        self,
        client: RedisClient,
        prefix: str = DEFAULT_PREFIX,
        upcasters: codec.Upcasters = codec.UPCASTERS,
        block_ms: int = 5000,
    ) -> None:
        super().__init__(upcasters)
        if client.get_encoder().decode_responses:
            raise ValueError("the event store needs a Redis client with decode_responses=False")
        self.client = client
        self.keys = Keys(prefix)
        self.block_ms = block_ms
        self._append = client.register_script(APPEND_SCRIPT)

    async def _commit(
        self,
        game_id: str,
        events: list[StoredEvent],
        expected_version: int,
        expected_head: str,
        outcome: AppendResult,
    ) -> AppendResult:
        if expected_version == 0:
            # Before the first append (it may fail: then the index lists a game at version 0).
            await self.client.sadd(self.keys.games(), game_id)
        command_id = events[0].command_id
        records = list(outcome.records)  # packed with the hashes, once (``sealed_chain``)
        args: list[str | bytes | int] = [
            expected_version,
            expected_head,
            command_id or "",
            outcome.to_record(),
            outcome.head,
            *records,
        ]
        reply = await self._append(keys=list(self.keys.game_keys(game_id)), args=args)
        status = int(reply[0])
        if status == 0:
            return replace(outcome, records=tuple(records))
        if status == 1:
            return AppendResult.from_record(_text(reply[1]))
        if status == 2:
            version, head = int(reply[1]), _text(reply[2])
            if version != expected_version:
                raise VersionConflict(game_id, expected_version, version, head)
            raise HeadMismatch(game_id, version, expected_head, head)
        raise StoreError(
            f"game {game_id} is damaged: its stream holds {reply[1]} events, "
            f"its head says {reply[2]}"
        )

    async def _read(self, game_id: str, after: int, limit: int | None) -> list[StoredEvent]:
        entries = await self._entries(game_id, after, limit)
        return [self._decode(entry_id, fields) for entry_id, fields in entries]

    async def records(self, game_id: str, after: int = 0, limit: int | None = None) -> list[bytes]:
        """The stored records of ``game_id`` after ``after`` (at most ``limit``), not decoded:
        for a reader that decodes them elsewhere (``codec.decode``, in a worker process)."""
        check_game_id(game_id)
        if type(after) is not int or after < 0:
            raise ValueError(f"after must be an int >= 0, got {after!r}")
        if limit is not None and (type(limit) is not int or limit < 0):
            raise ValueError(f"limit must be an int >= 0 or None, got {limit!r}")
        if limit == 0:
            return []
        out: list[bytes] = []
        for entry_id, fields in await self._entries(game_id, after, limit):
            raw = fields.get(EVENT_FIELD)
            if not isinstance(raw, bytes):
                raise StoreError(f"stream entry {entry_id!r} has no event field")
            out.append(raw)
        return out

    async def read_types(self, game_id: str, types: Collection[str]) -> list[StoredEvent]:
        # Only the records that may be of ``types`` are decoded (``codec.decode_of_types``).
        return codec.decode_of_types(await self.records(game_id), types, self.upcasters)

    async def _entries(
        self, game_id: str, after: int, limit: int | None
    ) -> list[tuple[bytes, dict[Any, Any]]]:
        key = self.keys.events(game_id)
        out: list[tuple[bytes, dict[Any, Any]]] = []
        start = after + 1
        while limit is None or len(out) < limit:
            count = PAGE if limit is None else min(PAGE, limit - len(out))
            reply = await self.client.xrange(key, min=f"{start}-0", max="+", count=count)
            entries = cast(list[tuple[bytes, dict[Any, Any]]], reply or [])
            out.extend(entries)
            if not entries or len(entries) < count:
                break
            start = int(_text(entries[-1][0]).split("-")[0]) + 1  # IDs always move forward
        return out

    async def _outcome(self, game_id: str, command_id: str) -> AppendResult | None:
        record = await self.client.hget(self.keys.commands(game_id), command_id)
        return None if record is None else AppendResult.from_record(_text(record))

    async def version(self, game_id: str) -> tuple[int, str]:
        check_game_id(game_id)
        version, head = await self.client.hmget(self.keys.head(game_id), ["version", "hash"])
        if version is None or head is None:
            return (0, GENESIS_HASH)
        return (int(version), _text(head))

    async def forgotten(self, game_id: str) -> bool:
        """Whether the game's log has left Redis for an archive (it then takes no more events):
        never, for Redis alone (a store that reads an archive too says otherwise)."""
        return False

    async def subscribe(self, game_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        check_game_id(game_id)
        if type(after) is not int or after < 0:
            raise ValueError(f"after must be an int >= 0, got {after!r}")
        key = self.keys.events(game_id)
        last: bytes | str = f"{after}-0"
        while True:
            reply = await self.client.xread({key: last}, count=PAGE, block=self.block_ms)
            for entry_id, fields in _stream_entries(reply):
                yield self._decode(entry_id, fields)
                last = entry_id

    async def list_games(self) -> list[str]:
        members = await self.client.smembers(self.keys.games())
        return sorted(_text(member) for member in members)

    def _decode(self, entry_id: bytes | str, fields: dict[Any, Any]) -> StoredEvent:
        raw = fields.get(EVENT_FIELD)
        if not isinstance(raw, bytes):
            raise StoreError(f"stream entry {entry_id!r} has no event field")
        return codec.decode(raw, self.upcasters)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _stream_entries(reply: Any) -> list[tuple[bytes, dict[Any, Any]]]:
    """The entries of the one stream an XREAD asked for, whatever the reply's shape: RESP2
    ``[[key, entries]]``, RESP3 ``{key: [entries]}`` or redis-py's unified ``{key: entries}``."""
    if not reply:
        return []
    if isinstance(reply, dict):
        (entries,) = reply.values()
        # RESP3 wraps the entry list once more: [[(id, fields), ...]].
        if (
            entries
            and isinstance(entries[0], list)
            and entries[0]
            and isinstance(entries[0][0], list | tuple)
        ):
            (entries,) = entries
    else:
        ((_, entries),) = reply
    return cast(list[tuple[bytes, dict[Any, Any]]], entries)
