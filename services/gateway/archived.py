"""Finished games and tournaments the gateway reads from the archive once Redis has let them go.

Everything the gateway shows of a game goes through its event store (views fold its events,
replays and exports take its records, the events route pages through them), so the fallback is
one store: Redis first, and for a game whose log is no longer there, its archived record. A
finished game never changes, so records fetched are kept (a few, least recently used). The
lobby's finished list goes on, past the finished games Redis still holds, with the archived
ones it no longer does (they leave the lobby's Redis sets with their logs).

Tournaments the same way: their logs' store falls back to the archived record of a finished
tournament Redis no longer holds (its page, its log for audit), and the tournament lobby's
finished and all listings go on, past the rows Redis keeps, with the archived tournaments it
no longer does.

``attach(app)`` is the one call: it puts them in place on the app's gateway when an archive is
configured (``RUMMY_ARCHIVE_URL``), and opens and closes the archive with the app.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Collection
from typing import Any

from aiohttp import web

from services.gateway.lobby import PAGE, Lobby
from services.gateway.state import GATEWAY, Gateway
from shared.archive.base import Archive, ArchiveError, Query
from shared.archive.opening import open_archive
from shared.infra import codec
from shared.infra.client import RedisClient
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.store.base import StoreError
from shared.infra.store.redis import RedisEventStore
from shared.infra.stored import StoredEvent
from shared.infra.summary import summary_of
from shared.infra.tournaments import ALL

KEPT_RECORDS = 64  # archived games' events kept in memory


class ArchivedStore(RedisEventStore):
    """The Redis event store, falling back to the archive for a game Redis no longer holds."""

    def __init__(self, client: RedisClient, prefix: str, archive: Archive) -> None:
        super().__init__(client, prefix)
        self.archive = archive
        self._kept: OrderedDict[str, tuple[StoredEvent, ...]] = OrderedDict()

    async def archived(self, game_id: str) -> tuple[StoredEvent, ...] | None:
        """The archived game's events in their stored form, or None if it is not archived."""
        events = self._kept.get(game_id)
        if events is not None:
            self._kept.move_to_end(game_id)
            return events
        try:
            await self.archive.open()  # at once when open: it may have been away at start
            events = await self._fetch(game_id)
        except ArchiveError as err:
            raise StoreError(f"the archive cannot be read: {err}") from err
        if events is None:
            return None
        self._kept[game_id] = events
        while len(self._kept) > KEPT_RECORDS:
            self._kept.popitem(last=False)
        return events

    async def _fetch(self, game_id: str) -> tuple[StoredEvent, ...] | None:
        """The archived record's events."""
        record = await self.archive.fetch(game_id)
        return None if record is None else record.events

    async def _archived_head(self, game_id: str) -> tuple[int, str] | None:
        """The archived record's head."""
        entry = await self.archive.entry(game_id)
        return None if entry is None else (entry.events, entry.head)

    async def forgotten(self, game_id: str) -> bool:
        """Whether Redis has let the game go: what is left of it is in the archive, which takes
        no more events (no command can change it). A game that never was is not."""
        if (await super().version(game_id))[0]:
            return False
        return await self.archived(game_id) is not None

    async def _gone(self, game_id: str, after: int, found: list[Any]) -> bool:
        """Whether a read that found ``found`` should ask the archive: nothing found, and the
        game has no log in Redis (after 0 nothing found says so already)."""
        if found:
            return False
        if after == 0 or game_id in self._kept:
            return True
        return (await super().version(game_id))[0] == 0

    async def _slice(self, game_id: str, after: int, limit: int | None) -> list[StoredEvent]:
        events = await self.archived(game_id)
        if events is None:
            return []
        return list(events[after : None if limit is None else after + limit])

    async def _read(self, game_id: str, after: int, limit: int | None) -> list[StoredEvent]:
        found = await super()._read(game_id, after, limit)
        if not await self._gone(game_id, after, found):
            return found
        return [self.upcasters.upcast(e) for e in await self._slice(game_id, after, limit)]

    async def records(self, game_id: str, after: int = 0, limit: int | None = None) -> list[bytes]:
        found = await super().records(game_id, after, limit)
        if limit == 0 or not await self._gone(game_id, after, found):
            return found
        return [codec.encode(e) for e in await self._slice(game_id, after, limit)]

    async def read_types(self, game_id: str, types: Collection[str]) -> list[StoredEvent]:
        records = await super().records(game_id)
        if records or (await super().version(game_id))[0]:
            return codec.decode_of_types(records, types, self.upcasters)
        # Left for the archive, which holds the events decoded: none to pass over.
        events = await self._slice(game_id, 0, None)
        return [self.upcasters.upcast(e) for e in events if e.type in types]

    async def version(self, game_id: str) -> tuple[int, str]:
        head = await super().version(game_id)
        if head[0]:
            return head
        try:
            await self.archive.open()
            archived = await self._archived_head(game_id)
        except ArchiveError as err:
            raise StoreError(f"the archive cannot be read: {err}") from err
        return head if archived is None else archived


class ArchivedTournamentLogs(ArchivedStore):
    """The tournaments' logs (``Keys.tournament_logs``), falling back to the archived record of
    a finished tournament Redis no longer holds. Its record is final: once a tournament has left
    Redis, the tournament service refuses every command for it."""

    async def _fetch(self, game_id: str) -> tuple[StoredEvent, ...] | None:
        record = await self.archive.fetch_tournament(game_id)
        return None if record is None else record.events

    async def _archived_head(self, game_id: str) -> tuple[int, str] | None:
        entry = await self.archive.tournament_entry(game_id)
        return None if entry is None else (entry.events, entry.head)


class ArchivedTournaments:
    """The tournament lobby's finished and all listings past Redis's rows (``PastTournaments``):
    the archived tournaments Redis no longer lists, newest finished first, each as the row it
    had when it was archived."""

    def __init__(self, client: RedisClient, keys: Keys, archive: Archive) -> None:
        self.client = client
        self.keys = keys
        self.archive = archive

    async def rows(self, offset: int, limit: int) -> tuple[list[dict[str, Any]], int, bool]:
        try:
            await self.archive.open()
            entries, more = await self.archive.tournament_listing(limit, offset)
        except ArchiveError as err:
            raise StoreError(f"the archive cannot be read: {err}") from err
        listed = self.keys.tournaments(ALL)
        held = await asyncio.gather(
            *(self.client.zscore(listed, entry.tournament_id) for entry in entries)
        )
        rows = [  # (those Redis still lists are listed from its rows)
            dict(entry.summary) for entry, score in zip(entries, held, strict=True) if score is None
        ]
        return rows, len(entries), more


ARCHIVED_CURSOR = 500_000_000  # cursors from here on page through the archive's games


class ArchivedLobby(Lobby):
    """The lobby, its finished list continued from the archive: first the finished games
    Redis still holds (as before), then the archived ones it no longer does, newest finished
    first. A cursor below ``ARCHIVED_CURSOR`` is a place in Redis's list; from it on, that
    much plus a place in the archive's."""

    def __init__(self, client: RedisClient, keys: Keys, games: GameLog, archive: Archive) -> None:
        super().__init__(client, keys, games)
        self.archive = archive

    async def page(self, status: str, cursor: int, limit: int = PAGE) -> dict[str, Any]:
        if status != "finished":
            return await super().page(status, cursor, limit)
        games: list[dict[str, Any]] = []
        if cursor < ARCHIVED_CURSOR:
            held = await super().page(status, cursor, limit)
            if held["next"] is not None:
                return held
            games, cursor = held["games"], ARCHIVED_CURSOR
        offset = cursor - ARCHIVED_CURSOR
        try:
            await self.archive.open()
            listed = await self.archive.listing(Query(limit=limit - len(games), offset=offset))
        except ArchiveError as err:
            raise StoreError(f"the archive cannot be read: {err}") from err
        finished = self.keys.lobby("finished")
        held_too = await asyncio.gather(
            *(self.client.zscore(finished, entry.game_id) for entry in listed.entries)
        )
        archived = [  # (those still in Redis's list are listed above)
            e.game_id for e, score in zip(listed.entries, held_too, strict=True) if score is None
        ]
        kept = await self.summaries(archived)
        for game_id in archived:
            summary = kept.get(game_id)
            if summary is None:
                state = (await self.games.load(game_id, fresh=False)).state
                summary = summary_of(game_id, state)
                await self.keep(game_id, summary)
            games.append(summary)
        more = listed.next is not None
        after = cursor + len(listed.entries)
        return {"games": games, "next": str(after) if more else None}


def attach(app: web.Application) -> None:
    """Read finished games and tournaments from the archive, if one is configured: the
    gateway's stores and lobbies fall back to it (opening it on first use: it may be away when
    the gateway starts), and the app closes it."""
    gw: Gateway = app[GATEWAY]
    if not gw.settings.archive_url:
        return
    archive = open_archive(gw.settings.archive_url)
    store = ArchivedStore(gw.client, gw.settings.prefix, archive)
    gw.store = store
    gw.games.store = store
    gw.frames.store = store  # (sockets' catch-ups)
    gw.lobby = ArchivedLobby(gw.client, gw.keys, gw.games, archive)
    desk = gw.tournaments
    desk.log.store = ArchivedTournamentLogs(gw.client, gw.keys.tournament_logs(), archive)
    desk.past = ArchivedTournaments(gw.client, gw.keys, archive)

    async def closed(app: web.Application) -> None:
        await archive.close()

    app.on_cleanup.append(closed)
