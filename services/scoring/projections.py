"""Read models the scoring service keeps: standings per game, a leaderboard and per-player
statistics across games, and the ratings (``shared.infra.ratings``). Derived from the logs only,
so they can be dropped and rebuilt.

Idempotent under redelivery: a game's standings are written only when newer than what is stored
(the version is kept beside them); a finished game counts once in the cross-game figures (an
``applied`` set in the same script). The cross-game keys share the hash tag ``{scoring}`` so that
script runs on one Redis Cluster slot.
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

STANDINGS_SCRIPT = """
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if current >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'standings', ARGV[2])
return 1
"""

# KEYS: applied set, leaderboard zset, stats hash; ARGV: game id, then name, won, score, outs
# for each seat.
FINISHED_SCRIPT = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
for i = 2, #ARGV, 4 do
  local name = ARGV[i]
  redis.call('HINCRBY', KEYS[3], name .. ':games', 1)
  redis.call('HINCRBY', KEYS[3], name .. ':wins', tonumber(ARGV[i + 1]))
  redis.call('HINCRBY', KEYS[3], name .. ':score', tonumber(ARGV[i + 2]))
  redis.call('HINCRBY', KEYS[3], name .. ':outs', tonumber(ARGV[i + 3]))
  redis.call('ZINCRBY', KEYS[2], tonumber(ARGV[i + 1]), name)
end
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
        self._finished = client.register_script(FINISHED_SCRIPT)
        self.ratings = Ratings(client, keys.prefix)

    async def apply(self, state: GameState) -> bool:
        """Bring the projections up to ``state``; True if anything changed."""
        doc = json.dumps(game_standings(state), separators=(",", ":"))
        changed = bool(
            await self._standings(
                keys=[self.keys.standings(state.game_id)], args=[state.version, doc]
            )
        )
        if state.status == "finished":
            changed = await self.count_finished(state) or changed
        return changed

    async def count_finished(self, state: GameState) -> bool:
        """Count a finished game in the cross-game figures (once); True if it was not yet.
        Alone for an archived game, whose own standings left Redis with its log."""
        table = game_standings(state)
        args: list[str | int] = [state.game_id]
        for seat in table["seats"]:
            won = 1 if seat["seat"] in state.winners else 0
            args += [seat["name"], won, seat["score"] or 0, seat["outs"]]
        keys = [self.keys.applied(), self.keys.leaderboard(), self.keys.player_stats()]
        return bool(await self._finished(keys=keys, args=args))

    async def rate(self, game_id: str, events: list[StoredEvent], *, refold: bool = True) -> bool:
        """Count a finished game's log in the ratings (once); True if it was not yet."""
        result = result_of(game_id, events)
        return result is not None and await self.ratings.record(result, refold=refold)

    async def drop(self, game_ids: list[str]) -> None:
        """Delete every projection key (for a rebuild)."""
        for key in (self.keys.applied(), self.keys.leaderboard(), self.keys.player_stats()):
            await self.client.delete(key)
        await self.ratings.drop()
        for game_id in game_ids:
            await self.client.delete(self.keys.standings(game_id))

    async def snapshot(self, game_ids: list[str]) -> dict[str, Any]:
        """Everything the projections hold, comparable between a live and a rebuilt copy."""
        stats = await self.client.hgetall(self.keys.player_stats())
        board = await self.client.zrange(self.keys.leaderboard(), 0, -1, withscores=True)
        games = {}
        for game_id in game_ids:
            raw = await self.client.hget(self.keys.standings(game_id), "standings")
            games[game_id] = json.loads(raw) if raw else None
        return {
            "players": {_text(k): int(v) for k, v in stats.items()},
            "leaderboard": [[_text(name), score] for name, score in board],
            "games": games,
            "ratings": await self.ratings.table(),
        }

    async def leaderboard(self, limit: int = 50) -> list[dict[str, Any]]:
        """The players with the most match wins, with their statistics."""
        board = await self.client.zrevrange(self.keys.leaderboard(), 0, limit - 1, withscores=True)
        stats = await self.client.hgetall(self.keys.player_stats())
        figures = {_text(k): int(v) for k, v in stats.items()}
        out = []
        for name, wins in board:
            player = _text(name)
            out.append(
                {
                    "name": player,
                    "wins": int(wins),
                    "games": figures.get(f"{player}:games", 0),
                    "score": figures.get(f"{player}:score", 0),
                    "outs": figures.get(f"{player}:outs", 0),
                }
            )
        return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
