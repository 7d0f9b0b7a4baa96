"""The command bus: how the gateway (and the scoring service, and the timers) hand commands to
the referees, and how the answers and the news come back.

- Command streams: ``partitions`` single keys; a game's commands always go to the partition its
  id hashes to, so one game's commands stay in order. Referees read them in one consumer group.
- Replies: each sender reads its own reply stream (trimmed); a command names it in ``reply``.
  The stream lives while its sender refreshes its time to live (``shared/infra/trimming.py``):
  the streams of gateways that are gone expire.
- Feed: after every append the referee (or scoring) adds ``(game, version, types)`` to the
  game's feed partition; gateways push views from it, scoring reacts to round ends.

The messages themselves (commands, answers, news) and their wire form are
``shared/infra/protocol.py``'s.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
import zlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from redis.asyncio.cluster import RedisCluster

from shared.infra.autopipe import raw_client
from shared.infra.client import RedisClient
from shared.infra.keys import Keys
from shared.infra.protocol import FIELD, Answer, Change, CommandEntry, MalformedEntry, News
from shared.infra.trimming import REPLY_REFRESH_SECONDS, REPLY_TTL_MS

REFEREES = "referees"
SCORING = "scoring"
REPLY_MAXLEN = 10_000
FEED_MAXLEN = 100_000


def partition_of(game_id: str, partitions: int) -> int:
    """The partition of a game's commands and news (stable across processes)."""
    return zlib.crc32(game_id.encode()) % partitions


# ``json.dumps(body, sort_keys=True, separators=(",", ":"))``, whose text the stored digests of
# every log were made from, without building an encoder per call as ``dumps`` does.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"))


def fingerprint(body: Any) -> str:
    """A short digest of a command body: a reused command id with another body differs here."""
    return hashlib.sha256(_CANONICAL.encode(body).encode()).hexdigest()[:32]


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

    def command_streams(self) -> list[str]:
        """Every command stream partition."""
        return [self.keys.command_stream(p) for p in range(self.partitions)]

    def feed_streams(self) -> list[str]:
        """Every feed partition."""
        return [self.keys.feed(p) for p in range(self.partitions)]

    def news(
        self,
        game_id: str,
        version: int,
        types: list[str],
        records: Sequence[bytes] = (),
        change: Change | None = None,
    ) -> tuple[str, dict[bytes, bytes]]:
        """The feed entry announcing a game's new events (key, fields). ``change`` (or, larger,
        ``records``: the new events as stored): what a follower folds without reading the
        game's log back (one round trip less per change for every gateway)."""
        key = self.keys.feed(partition_of(game_id, self.partitions))
        return key, News(game_id, version, tuple(types), tuple(records), change).encode()


class Requester:
    """Sends commands and awaits the referees' answers on a reply stream of its own.

    One reader task follows the reply stream and resolves the waiting futures by request id, so
    thousands of commands can be in flight over one connection.

    ``on_lost`` is awaited each time the stream is found lost with Redis's data (``keep``).
    """

    def __init__(
        self, bus: Bus, name: str, on_lost: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self.bus = bus
        self.stream = bus.keys.replies(name)
        self.on_lost = on_lost
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reader: asyncio.Task[None] | None = None
        self._closing = False
        self._last = "$"
        self._count = 0
        # Request ids are the count and this: an answer left on the stream for another
        # requester of the same name never matches one of ours.
        self._tag = uuid.uuid4().hex[:8]
        self._refreshed = 0.0  # loop time of the last refresh of the stream's time to live
        self._starting = asyncio.Lock()  # two first requests at once start one reader
        self._losing = asyncio.Lock()  # two refreshes finding one loss handle it once
        self._losses = 0  # losses found: a read under way across one is of the lost stream

    async def start(self) -> None:
        """Start following the reply stream (from now on)."""
        if self._reader is not None:
            return
        async with self._starting:
            if self._reader is None:
                self._closing = False
                self._last = await self.mark()
                self._reader = asyncio.create_task(self._read(), name="replies")

    @property
    def started(self) -> bool:
        """Whether the reply stream is followed (it then exists, with its time to live)."""
        return self._reader is not None

    async def mark(self) -> str:
        """Make the reply stream (an empty entry, which no request id matches) with its time to
        live; the entry's id."""
        info = await self.bus.client.xadd(self.stream, {FIELD: b"{}"}, maxlen=REPLY_MAXLEN)
        await self.bus.client.pexpire(self.stream, REPLY_TTL_MS)
        self._refreshed = asyncio.get_running_loop().time()
        return info.decode() if isinstance(info, bytes) else str(info)

    async def keep(self) -> bool:
        """Refresh the reply stream's time to live; whether it was kept. Once followed, the
        stream always has one: a stream without (gone, or made again by an answer written to
        it) says Redis came back without its data. It is then made again and followed from its
        start, since that Redis numbers entries by its own clock, which may be behind the last
        id followed here (a reader waiting after that id would miss every answer until that
        clock passed it); and ``on_lost`` is told, before the stream gets its time to live
        back (a refresh cut off in between finds the loss again rather than never)."""
        kept = await self.bus.client.pexpire(self.stream, REPLY_TTL_MS, xx=True)
        self._refreshed = asyncio.get_running_loop().time()
        if kept or not self.started:
            return bool(kept)
        async with self._losing:
            if await self.bus.client.pttl(self.stream) > 0:
                return False  # another refresh found this loss and made the stream again
            self._losses += 1
            self._last = "0-0"
            if self.on_lost is not None:
                await self.on_lost()
            await self.mark()
        return False

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
        rid = f"{self._count}-{self._tag}"
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._waiting[rid] = future
        try:
            await self.bus.send(entry.waited_on(self.stream, rid))
            # A timer on the future itself (``asyncio.wait_for`` costs a task's worth more).
            timer = loop.call_later(timeout, _time_out, future)
            try:
                return await future
            finally:
                timer.cancel()
        finally:
            self._waiting.pop(rid, None)

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        while not self._closing:
            try:
                if loop.time() - self._refreshed >= REPLY_REFRESH_SECONDS:
                    await self.keep()
                losses = self._losses
                reply = await self.bus.client.xread(
                    {self.stream: self._last}, count=500, block=1000
                )
            except asyncio.CancelledError:
                raise
            except Exception:
                await asyncio.sleep(0.2)
                continue
            # A loss found during the read: its entries may be the new stream's, above answers
            # below the lost stream's ids; the next read starts at "0-0" all the same.
            follow = losses == self._losses
            for _, entries in stream_batches(reply):
                for entry_id, fields in entries:
                    if follow:
                        self._last = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                    try:
                        answer = Answer.decode(fields)
                    except MalformedEntry:  # the reader's own first entry, or not an answer
                        continue
                    future = self._waiting.get(answer.rid)
                    if future is not None and not future.done():
                        future.set_result(answer.to_json())


def _time_out(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


def read_plan(client: RedisClient, streams: list[str]) -> list[list[str]]:
    """How to follow partitioned streams: on one Redis, all of them in one blocking read (under
    load each read brings the news of every partition at once); on a Redis Cluster, one read
    per slot, since one command's keys must share a slot. The command streams and feeds carry
    no hash tag, so that the partitions spread over the nodes: there each is read alone."""
    raw = raw_client(client)
    if isinstance(raw, RedisCluster):
        by_slot: dict[int, list[str]] = {}
        for stream in streams:
            by_slot.setdefault(raw.keyslot(stream), []).append(stream)
        return list(by_slot.values())
    return [list(streams)]


def stream_batches(reply: Any) -> list[tuple[Any, list[tuple[Any, dict[Any, Any]]]]]:
    """An XREAD/XREADGROUP reply as (stream, entries) pairs, whatever the protocol's shape."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return list(reply.items())
    return [(stream, entries) for stream, entries in reply]
