"""The lobby: games by status (waiting, playing, finished), newest first, paginated.

Sorted sets per status (score = creation time). Gateways move a game between them when they see
it start or end; a listing also checks each game's real status and mends an entry that lags;
finished games are listed from their kept summaries (``shared/infra/summary.py``). A
cancelled or expired game is listed nowhere (a listing that meets one drops it), and a rematch,
whose seats are reserved, is not listed while it waits.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from shared.infra.client import RedisClient
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.summary import (
    SUMMARY_SECONDS,
    decode_summary,
    encode_summary,
    summary_key,
    summary_of,
)

STATUSES = ("waiting", "playing", "finished")
PAGE = 50
MAX_PAGE = 200  # games on one page at most
MAX_CURSOR = 10**9


class Lobby:
    """Reads and keeps the lobby's sorted sets."""

    def __init__(self, client: RedisClient, keys: Keys, games: GameLog) -> None:
        self.client = client
        self.keys = keys
        self.games = games

    async def move(self, game_id: str, status: str, created: float | None = None) -> None:
        """File ``game_id`` under ``status`` (and under no other)."""
        score = created
        if score is None:
            for other in STATUSES:
                found = await self.client.zscore(self.keys.lobby(other), game_id)
                if found is not None:
                    score = float(found)
                    break
        pipe = self.client.pipeline(transaction=False)
        for other in STATUSES:
            if other != status:
                pipe.zrem(self.keys.lobby(other), game_id)
        pipe.zadd(self.keys.lobby(status), {game_id: score if score is not None else time.time()})
        await pipe.execute()

    async def remove(self, game_id: str) -> None:
        """List ``game_id`` under no status (a cancelled or expired game, Decision 18)."""
        pipe = self.client.pipeline(transaction=False)
        for status in STATUSES:
            pipe.zrem(self.keys.lobby(status), game_id)
        await pipe.execute()

    async def page(self, status: str, cursor: int, limit: int = PAGE) -> dict[str, Any]:
        """Up to ``limit`` games of ``status`` from position ``cursor``, and the next cursor.
        Finished games come from their kept summaries (no log is read for them)."""
        ids = await self.client.zrevrange(self.keys.lobby(status), cursor, cursor + limit - 1)
        game_ids = [raw.decode() if isinstance(raw, bytes) else str(raw) for raw in ids]
        kept = await self.summaries(game_ids) if status == "finished" else {}
        games = []
        left = 0  # games this page took out of the list: the positions after them move up
        for game_id in game_ids:
            summary = kept.get(game_id)
            if summary is None:
                summary, moved = await self._listed(game_id, status)
                left += moved
            if summary is not None:
                games.append(summary)
        more = len(ids) == limit
        return {"games": games, "next": str(cursor + limit - left) if more else None}

    async def _listed(self, game_id: str, status: str) -> tuple[dict[str, Any] | None, bool]:
        """A game's summary from its state, filed under its real status if it lags (None for
        a game listed nowhere: cancelled, or expired, since it was filed), and whether it left
        this list."""
        state = (await self.games.load(game_id, fresh=True)).state
        if state.status == "cancelled":
            await self.remove(game_id)
            return None, True
        summary = summary_of(game_id, state)
        moved = summary["status"] != status
        if moved:
            await self.move(game_id, summary["status"])
        await self.keep(game_id, summary)
        return summary, moved

    async def summaries(self, game_ids: list[str]) -> dict[str, dict[str, Any]]:
        """The kept summaries of those of ``game_ids`` that are finished (read concurrently:
        the gateway's auto-pipeline sends them together)."""
        keys = [summary_key(self.keys, game_id) for game_id in game_ids]
        found = {}
        replies = await asyncio.gather(*(self.client.get(key) for key in keys))
        for game_id, raw in zip(game_ids, replies, strict=True):
            summary = decode_summary(raw, game_id)
            if summary is not None and summary.get("status") == "finished":
                found[game_id] = summary
        return found

    async def keep(self, game_id: str, summary: dict[str, Any]) -> None:
        """Keep a finished game's summary for later listings (others change: not kept)."""
        if summary["status"] == "finished":
            key = summary_key(self.keys, game_id)
            await self.client.set(key, encode_summary(summary), ex=SUMMARY_SECONDS)
