"""Read models the scoring service keeps: standings per game, and the ratings across games
(``shared.infra.ratings``: its accounts' and bots' figures, boards and pages). Derived from the
logs only, so they can be dropped and rebuilt.

Idempotent under redelivery: a game's standings are written only when newer than what is stored
(the version is kept beside them); a finished game's result counts once in the ratings.

An earlier layout also kept figures across games by the names typed at the seats (a set of the
games counted, a board and counts per name): nothing read them, and they grew with every name
and every game for ever. A rebuild deletes what a deployment still holds of them.
"""

from __future__ import annotations

import json
from typing import Any

from shared.core.state import GameState
from shared.core.views import standings
from shared.infra.client import RedisClient
from shared.infra.keys import Keys
from shared.infra.ratings import Ratings, result_of
from shared.infra.stored import StoredEvent

EARLIER_LAYOUT = ("applied", "leaderboard", "players")  # {scoring} keys by name (see above)

STANDINGS_SCRIPT = """
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if current >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'standings', ARGV[2])
return 1
"""


def game_standings(state: GameState) -> dict[str, Any]:
    """The standings of one game as the projection stores them."""
    totals = standings(state)
    outs = [0] * state.seats
    wins = [0] * state.seats
    for result in state.rounds:
        if result.recorded and result.winner is not None:
            wins[result.winner] += 1
            if result.went_out:
                outs[result.winner] += 1
    return {
        "game_id": state.game_id,
        "rules": state.rules.name,
        "status": state.status,
        "rounds": sum(1 for r in state.rounds if r.recorded),
        "winners": list(state.winners),
        "seats": [
            {
                "seat": s,
                "name": state.names[s],
                "score": totals[s],
                "outs": outs[s],
                "round_wins": wins[s],
            }
            for s in range(min(state.seats, len(state.names)))
        ],
    }


class Projections:
    """Writes the read models to Redis."""

    def __init__(self, client: RedisClient, keys: Keys) -> None:
        self.client = client
        self.keys = keys
        self._standings = client.register_script(STANDINGS_SCRIPT)
        self.ratings = Ratings(client, keys.prefix)

    async def apply(self, state: GameState) -> bool:
        """Bring the projections up to ``state``; True if anything changed."""
        doc = json.dumps(game_standings(state), separators=(",", ":"))
        return bool(
            await self._standings(
                keys=[self.keys.standings(state.game_id)], args=[state.version, doc]
            )
        )

    async def rate(self, game_id: str, events: list[StoredEvent], *, refold: bool = True) -> bool:
        """Count a finished game's log in the ratings (once); True if it was not yet."""
        result = result_of(game_id, events)
        return result is not None and await self.ratings.record(result, refold=refold)

    async def drop(self, game_ids: list[str]) -> None:
        """Delete every projection key (for a rebuild), and the earlier layout's by names."""
        for part in EARLIER_LAYOUT:
            await self.client.delete(f"{self.keys.prefix}{{scoring}}:{part}")
        await self.ratings.drop()
        for game_id in game_ids:
            await self.client.delete(self.keys.standings(game_id))

    async def snapshot(self, game_ids: list[str]) -> dict[str, Any]:
        """Everything the projections hold, comparable between a live and a rebuilt copy."""
        games = {}
        for game_id in game_ids:
            raw = await self.client.hget(self.keys.standings(game_id), "standings")
            games[game_id] = json.loads(raw) if raw else None
        return {"games": games, "ratings": await self.ratings.table()}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
