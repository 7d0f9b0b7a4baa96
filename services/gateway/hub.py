"""Live updates: the gateway follows every feed partition and queues each connected viewer its
own view whenever its game changes (and the events it missed, filtered for it). Each socket's
frames go through its own bounded ``Outbox``: following the feed never waits for a socket."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from aiohttp import WSCloseCode

from services.gateway.outbox import Outbox
from shared.infra.bus import Bus, read_plan, stream_batches
from shared.infra.protocol import MalformedEntry, News

FOLLOW_BLOCK_MS = 1000  # how long the read of every feed partition waits (one Redis)
FOLLOW_ALONE_BLOCK_MS = 5000  # how long a cluster's read of one partition waits


@dataclass(eq=False)
class Watcher:
    """One WebSocket (its outbox) and who is watching through it."""

    outbox: Outbox
    game_id: str
    viewer: int | None
    # The version up to which this socket's frames are queued: what is queued is delivered in
    # order or the socket is closed (and its client reconnects with the version it last got).
    sent_version: int = 0
    catch_up: bool = False  # send the events missed since ``sent_version``, not only the view
    token: str = ""  # the token the viewer authenticated with (its commands count against it)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one push at a time
    behind: bool = False  # news came while a push held the lock: that push goes round again
    # Answers to this socket's commands that wait for the view of their version, to go in one
    # frame with it: (version, the answer frame's text up to its closing brace).
    answers: list[tuple[int, str]] = field(default_factory=list)
    in_flight: int = 0  # commands sent on this socket not answered yet
    held: bool = False  # a change's view held back for the answer in flight to bring it


Push = Callable[[Watcher], Awaitable[None]]
OnNews = Callable[[str, int, list[str], list[News]], Awaitable[None]]


class Hub:
    """Watchers by game, and the feed followers that wake them."""

    def __init__(self, bus: Bus, push: Push, on_news: OnNews) -> None:
        self.bus = bus
        self.push = push
        self.on_news = on_news
        self.watchers: dict[str, set[Watcher]] = {}
        self.outboxes: weakref.WeakSet[Outbox] = weakref.WeakSet()
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self._restarts = 0  # times the feed was to be read again from its start
        self.log = structlog.get_logger("gateway.hub")

    def add(self, watcher: Watcher) -> None:
        self.watchers.setdefault(watcher.game_id, set()).add(watcher)
        self.outboxes.add(watcher.outbox)

    def remove(self, watcher: Watcher) -> None:
        group = self.watchers.get(watcher.game_id)
        if group is not None:
            group.discard(watcher)
            if not group:
                del self.watchers[watcher.game_id]

    async def start(self) -> None:
        """Follow every feed partition from now on."""
        plan = read_plan(self.bus.client, self.bus.feed_streams())
        # One read of every partition (one Redis) or one per partition (a cluster, whose reads
        # take the keys of one slot): news wakes either at once, so the block only paces an
        # idle loop, and dozens of per-partition loops waking each second were most of an idle
        # gateway's work on a cluster.
        block = FOLLOW_BLOCK_MS if len(plan) == 1 else FOLLOW_ALONE_BLOCK_MS
        for streams in plan:
            self._tasks.append(asyncio.create_task(self._follow(streams, block)))

    async def close_sockets(self) -> None:
        """Close every socket with GOING_AWAY. Runs on the app's shutdown, before the server
        waits for its handlers: a socket's handler only returns once the socket is closed.
        (A socket that does not read is cut off after its outbox's ``close_seconds``.)"""
        outboxes = list(self.outboxes)
        for outbox in outboxes:
            outbox.close(WSCloseCode.GOING_AWAY, "server shutting down")
        await asyncio.gather(*(o.wait_closed() for o in outboxes), return_exceptions=True)

    async def stop(self) -> None:
        """Stop following (and close any socket still open with GOING_AWAY).

        The loops also check a flag: on Python 3.11 a cancellation that meets a Redis command
        just as it completes can be lost (``asyncio.wait_for`` in redis-py returns the result
        instead), and a loop that relied on it would go on for ever, and the process with it."""
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.close_sockets()

    def follow_from_start(self) -> None:
        """Read again from its start every feed partition made anew behind what was read.
        Redis may have come back without its data: it numbers a new feed's entries by its own
        clock, which may be behind the last ids followed here, and news below them would go
        unseen until that clock passed them. A partition whose newest entry is not behind
        what was read reads on: rereading a feed that was not lost would replay old news into
        the lobby. (Left unseen: news below the old ids once news above them has been read, the
        new clock having passed them before the loss was found: a clock behind by the outage's
        length, give or take half a second.)"""
        self._restarts += 1

    async def _made_anew(self, last: dict[str, str | bytes]) -> dict[str, str | bytes]:
        """``last`` with "0-0" for each stream now behind it (a stream gone is at "0-0")."""
        again = dict(last)
        for stream, seen in last.items():
            if _entry_id(await self._tail(stream)) < _entry_id(seen):
                again[stream] = "0-0"
        return again

    async def _tail(self, stream: str) -> str | bytes:
        """The id of the stream's latest entry ("0-0" if none): where following starts. (Not
        "$" in the loop: news added between two blocking reads would be skipped.)"""
        while not self._stopping:
            try:
                newest = await self.bus.client.xrevrange(stream, count=1)
                return newest[0][0] if newest else "0-0"
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.log.warning("reading the feed failed; retrying", error=str(err))
                await asyncio.sleep(0.5)
        return "0-0"

    async def _follow(self, streams: list[str], block: int) -> None:
        last = {stream: await self._tail(stream) for stream in streams}
        restarts = self._restarts
        while not self._stopping:
            if restarts != self._restarts:
                restarts = self._restarts
                last = await self._made_anew(last)
            try:
                reply = await self.bus.client.xread(last, count=500, block=block)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.log.warning("following the feed failed; retrying", error=str(err))
                await asyncio.sleep(0.5)
                continue
            latest: dict[str, list[News]] = {}
            for stream, entries in stream_batches(reply):
                name = stream.decode() if isinstance(stream, bytes) else str(stream)
                for entry_id, fields in entries:
                    last[name] = entry_id
                    try:
                        news = News.decode(fields)
                    except MalformedEntry:
                        continue
                    latest.setdefault(news.game, []).append(news)
            # Every game at once (their reads share pipelines); the next read waits for them.
            await asyncio.gather(*(self._news(game, items) for game, items in latest.items()))

    async def _news(self, game: str, items: list[News]) -> None:
        version = max(news.version for news in items)
        types = [kind for news in items for kind in news.types]
        # One game's trouble (say Redis hiccups while loading it) must not end the follower:
        # every later change would go unpushed.
        try:
            await self.on_news(game, version, types, items)
        except Exception as err:
            self.log.warning("keeping the lobby failed", game=game, error=str(err))
        await self.wake(game, version)

    async def wake(self, game_id: str, version: int) -> None:
        """Queue fresh views for every watcher of ``game_id`` that has not seen ``version``.
        (``push`` reads the log at most; it never waits for a socket or its lock.)"""
        for watcher in list(self.watchers.get(game_id, ())):
            if watcher.outbox.closing:
                self.remove(watcher)
            elif watcher.sent_version < version:
                if watcher.in_flight:  # the answer to its command brings the view with it
                    watcher.held = True
                    continue
                try:
                    await self.push(watcher)
                except Exception as err:  # e.g. Redis: the next change pushes again
                    self.log.warning("pushing a view failed", game=game_id, error=str(err))


def _entry_id(value: str | bytes) -> tuple[int, int]:
    """A stream entry id as numbers, to compare."""
    text = value.decode() if isinstance(value, bytes) else value
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def watcher_info(watcher: Watcher) -> dict[str, Any]:
    """For logs."""
    return {"game": watcher.game_id, "viewer": watcher.viewer}
