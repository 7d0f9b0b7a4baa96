"""The lobby: games by status (waiting, playing, finished), newest first, paginated.

Sorted sets per status (score = creation time). Gateways move a game between them when they see
it start or end; a listing also checks each game's real status and mends an entry that lags.
"""

from __future__ import annotations

import time
from typing import Any

from shared.infra.client import RedisClient
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys

STATUSES = ("waiting", "playing", "finished")
PAGE = 50


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

    async def page(self, status: str, cursor: int, limit: int = PAGE) -> dict[str, Any]:
        """Up to ``limit`` games of ``status`` from position ``cursor``, and the next cursor."""
        ids = await self.client.zrevrange(self.keys.lobby(status), cursor, cursor + limit - 1)
        games = []
        for raw in ids:
            game_id = raw.decode() if isinstance(raw, bytes) else str(raw)
            state = (await self.games.load(game_id, fresh=True)).state
            actual = "waiting" if state.status in ("new", "waiting") else state.status
            if actual != status:
                await self.move(game_id, actual)
            games.append(
                {
                    "game_id": game_id,
                    "rules": state.rules.name,
                    "options": state.rules.options(),
                    "status": actual,
                    "seats": state.seats,
                    "seated": state.seated(),
                    "names": list(state.names),
                    "round": state.round,
                }
            )
        more = len(ids) == limit
        return {"games": games, "next": str(cursor + limit) if more else None}
