"""Ratings: a Weng-Lin (Plackett-Luce) rating per rule set for every account and every bot,
updated from each finished game's final ranking, and the read model that holds them.

Here rather than in a service: the scoring service writes the read model and the gateway reads
it, and the services do not import each other.

Who is rated is worked out from the log, never from a name: a seat taken by an account counts
under the account's id (``PlayerSeated.player``), a seat taken by a bot under ``bot:<name>``;
a guest's seat is left out of the rating (anyone may type any name). Accounts and bots are
rated in one match, so a game against a bot moves the player's rating, but they are listed
apart: the bots' board says how strong each bot is.

The ranking: the winners (``MatchEnded.winners``) share first place, every other rated seat
shares second. It is the one order every rule set decides (below the winners the rules break
no ties), and it is what a player sees at the end.

Ratings depend on the order games are counted in, so they are a fold of every result in the
order the games ended (then by game id), recomputed whole when a result arrives: the live read
model and a rebuild from the logs and the archive then come out the same, float for float,
whatever order the results arrived in. A club's thousands of games fold in tens of
milliseconds; a site with hundreds of thousands would need a checkpoint to fold on from.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from openskill.models import PlackettLuce

from shared.infra.client import RedisClient
from shared.infra.stored import StoredEvent

BOT = "bot:"
HISTORY = 200  # points of a rating's history kept (the newest)
RECENT = 20  # recent games kept per entrant and rule set

# KEYS: results hash, table key. ARGV: game id, result JSON. Returns 1 if the result is new.
RECORD_SCRIPT = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
return 1
"""

# KEYS: the table. ARGV: the number of results folded, the table JSON. A fold of fewer results
# than the stored one (a slower process's, racing a newer one) is not written.
TABLE_SCRIPT = """
local stored = tonumber(redis.call('HGET', KEYS[1], 'results') or '-1')
if stored > tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'results', ARGV[1], 'table', ARGV[2])
return 1
"""


@dataclass(frozen=True, slots=True)
class Entrant:
    """A rated seat of a finished game: who (an account id or ``bot:<name>``) and whether it
    won."""

    who: str
    seat: int
    won: bool


@dataclass(frozen=True, slots=True)
class GameResult:
    """What the ratings take from one finished game."""

    game_id: str
    rules: str
    finished: float  # the MatchEnded's time (unix seconds)
    entrants: tuple[Entrant, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "rules": self.rules,
            "finished": self.finished,
            "entrants": [[e.who, e.seat, e.won] for e in self.entrants],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> GameResult:
        entrants = tuple(Entrant(str(w), int(s), bool(won)) for w, s, won in doc["entrants"])
        return cls(str(doc["game_id"]), str(doc["rules"]), float(doc["finished"]), entrants)


def is_bot(who: str) -> bool:
    """Whether a rated entrant is a bot."""
    return who.startswith(BOT)


RESULT_TYPES = frozenset({"GameCreated", "PlayerSeated", "SeatLeft", "MatchEnded"})
"""The events ``result_of`` reads (the others of a log it passes over)."""


def result_of(game_id: str, events: Sequence[StoredEvent]) -> GameResult | None:
    """The result of a finished game's log (all of it, or its ``RESULT_TYPES`` events), or None
    while it is not finished (or was cancelled)."""
    rules = ""
    held: dict[int, str] = {}
    for stored in events:
        data = stored.data
        if stored.type == "GameCreated":
            rules = str(data["rules"])
        elif stored.type == "PlayerSeated":
            bot = data.get("bot")
            player = str(data.get("player", ""))
            held[int(data["seat"])] = player or (BOT + str(bot) if bot else "")
        elif stored.type == "SeatLeft":
            held.pop(int(data["seat"]), None)
        elif stored.type == "MatchEnded":
            winners = {int(s) for s in data["winners"]}
            first: dict[str, int] = {}  # one entrant holding two seats counts by its first
            for seat, who in sorted(held.items()):
                if who:
                    first.setdefault(who, seat)
            entrants = tuple(Entrant(who, seat, seat in winners) for who, seat in first.items())
            return GameResult(game_id, rules, stored.time, entrants)
    return None


@dataclass
class Standing:
    """One entrant's figures in one rule set."""

    mu: float
    sigma: float
    games: int = 0
    wins: int = 0
    rated: int = 0  # games that moved the rating (with another rated entrant)

    @property
    def rating(self) -> float:
        """The shown rating: mu - 3 sigma (what the player is at least, nearly surely), so a
        newcomer starts at 0 and climbs as the model grows sure."""
        return self.mu - 3 * self.sigma


def _ranks(entrants: Sequence[Entrant]) -> list[float]:
    return [1.0 if e.won else 2.0 for e in entrants]


def update(
    model: PlackettLuce, before: Sequence[tuple[float, float]], entrants: Sequence[Entrant]
) -> list[tuple[float, float]]:
    """Each entrant's (mu, sigma) after one game, from (mu, sigma) before: the library's
    Plackett-Luce update with every entrant a team of one."""
    teams = [[model.rating(mu=mu, sigma=sigma)] for mu, sigma in before]
    after = model.rate(teams, ranks=_ranks(entrants))
    return [(team[0].mu, team[0].sigma) for team in after]


def fold(results: Iterable[GameResult]) -> dict[str, Any]:
    """The ratings table of ``results``, counted in the order the games ended: per rule set,
    per entrant, its figures, rating history and recent games."""
    model = PlackettLuce()
    ordered = sorted(results, key=lambda r: (r.finished, r.game_id))
    standings: dict[str, dict[str, Standing]] = {}
    history: dict[str, dict[str, list[list[Any]]]] = {}
    recent: dict[str, dict[str, list[list[Any]]]] = {}
    for result in ordered:
        table = standings.setdefault(result.rules, {})
        for entrant in result.entrants:
            if entrant.who not in table:
                table[entrant.who] = Standing(model.mu, model.sigma)
        rated = len({e.who for e in result.entrants}) >= 2
        if rated:
            before = [(table[e.who].mu, table[e.who].sigma) for e in result.entrants]
            after = update(model, before, result.entrants)
        for index, entrant in enumerate(result.entrants):
            standing = table[entrant.who]
            standing.games += 1
            standing.wins += int(entrant.won)
            if rated:
                standing.mu, standing.sigma = after[index]
                standing.rated += 1
                points = history.setdefault(result.rules, {}).setdefault(entrant.who, [])
                points.append([result.game_id, result.finished, round(standing.rating, 6)])
                del points[:-HISTORY]
            games = recent.setdefault(result.rules, {}).setdefault(entrant.who, [])
            games.append([result.game_id, result.finished, entrant.seat, entrant.won])
            del games[:-RECENT]
    out: dict[str, Any] = {}
    for rules, table in sorted(standings.items()):
        out[rules] = {
            who: {
                "mu": s.mu,
                "sigma": s.sigma,
                "rating": s.rating,
                "games": s.games,
                "wins": s.wins,
                "rated_games": s.rated,
                "history": history.get(rules, {}).get(who, []),
                "recent": recent.get(rules, {}).get(who, [])[::-1],
            }
            for who, s in sorted(table.items())
        }
    return out


class Ratings:
    """The ratings read model in Redis: every result (by game) and the table folded from them,
    under the scoring projections' hash tag."""

    def __init__(self, client: RedisClient, prefix: str) -> None:
        self.client = client
        self.results_key = f"{prefix}{{scoring}}:ratings:results"
        self.table_key = f"{prefix}{{scoring}}:ratings:table"
        self._record = client.register_script(RECORD_SCRIPT)
        self._table = client.register_script(TABLE_SCRIPT)

    async def known(self, game_id: str) -> bool:
        """Whether the game's result is counted."""
        return await self.client.hget(self.results_key, game_id) is not None

    async def record(self, result: GameResult, *, refold: bool = True) -> bool:
        """Count a result (once: a redelivery changes nothing); True if it was new. The table
        is folded again unless ``refold`` is False (a rebuild folds once at the end)."""
        doc = json.dumps(result.to_json(), separators=(",", ":"), sort_keys=True)
        new = bool(await self._record(keys=[self.results_key], args=[result.game_id, doc]))
        if new and refold:
            await self.refold()
        return new

    async def refold(self) -> None:
        """Fold every result into the table."""
        held = await self.client.hgetall(self.results_key)
        results = [GameResult.from_json(json.loads(raw)) for raw in held.values()]
        table = json.dumps(fold(results), separators=(",", ":"), sort_keys=True)
        await self._table(keys=[self.table_key], args=[len(results), table])

    async def table(self) -> dict[str, Any]:
        """The folded table (empty before any result)."""
        raw = await self.client.hget(self.table_key, "table")
        return json.loads(raw) if raw else {}

    async def drop(self) -> None:
        """Delete the read model (for a rebuild)."""
        await self.client.delete(self.results_key)
        await self.client.delete(self.table_key)
