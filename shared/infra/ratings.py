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
order the games ended (then by game id): the live read model and a rebuild from the logs and
the archive then come out the same, float for float, whatever order the results arrived in.
Folding every result again on each game's end would cost a site's whole past per game, so the
read model keeps, per rule set, the fold's state and where it stands:

- a result that ends after every one folded (the usual case) folds on from its entrants'
  figures: a game's worth of work, whatever the number of games;
- the newest ``CHECKPOINTS`` results each keep their entrants' figures from before them (a
  checkpoint): a result that arrives late, ending among them, folds from the state at its place
  (each entrant's figures before its first later game) and then those later results again;
- the first result of a rule set (or one held with no fold beside it) folds the rule set's
  results held, as a rebuild does;
- a result older than every checkpoint once the rule set has let results go (its ``horizon``:
  the newest let go) is not counted live: it is a redelivery of one counted long ago, or one
  late by more than ``CHECKPOINTS`` results of its rule set (scoring that far behind on one
  game), which ``on_late`` reports and a rebuild counts in its place.

A result is held (by game; one without a rated seat changes nothing and is not kept) while it
is among its rule set's checkpoints: it counts a redelivery once, and a late result folds the
results after it again from it. Everything is bounded by the rated entrants and the
checkpoints, never by the games played: per rule set the entrants' figures, their history and
recent games, and a board per pool sorted by rating, so a page reads that page and a player
page that entrant. A fold is written only if no other was written since it read (a count of
the folds written, per rule set, checked by the script that writes it): two scoring processes
racing never write an older fold over a newer one; the one overtaken folds again.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from openskill.models import PlackettLuce

from shared.infra.client import RedisClient
from shared.infra.stored import StoredEvent

BOT = "bot:"
HISTORY = 200  # points of a rating's history kept (the newest)
RECENT = 20  # recent games kept per entrant and rule set
CHECKPOINTS = 1000  # results per rule set (the newest) a late result can fold on from
MAX_CONFLICTS = 20  # folds in a row overtaken by another process's before giving up
GAMES_CEILING = 10**12 - 1  # above any entrant's number of games (a board member's sort key)

# KEYS: results hash. ARGV: game id, result JSON. Returns 1 if the result is new.
RECORD_SCRIPT = """
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
return 1
"""

# The keys of a rule set's fold, in FOLD_SCRIPT's order.
(RESULTS, FOLDS, RULES, WINDOW, CHECKPOINTED, FIGURES, PAGES, PLAYERS, BOTS, HORIZON) = range(1, 11)

# KEYS: as above. ARGV: the rule set, the folds written when this one read, the game id (''
# for a fold of the results held), its result JSON, the checkpoints kept, '1' to write the rule
# set afresh, then the changes: 'h' key field value (HSET), 'z' key score member (ZADD), 'r' key
# member (ZREM), 'd' key field (HDEL), 's' key value (SET), each key by its number. A result
# that leaves the checkpoints leaves the results too, and becomes the horizon. Returns 0 for a
# result already counted, -1 (nothing written) when another fold was written since this one
# read, 1 once written.
FOLD_SCRIPT = """
if ARGV[3] ~= '' and redis.call('HEXISTS', KEYS[1], ARGV[3]) == 1 then return 0 end
if tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') ~= tonumber(ARGV[2]) then
  return -1
end
if ARGV[6] == '1' then
  redis.call('DEL', KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10])
end
if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
local i = 7
while i <= #ARGV do
  local key = KEYS[tonumber(ARGV[i + 1])]
  if ARGV[i] == 'h' then
    redis.call('HSET', key, ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  elseif ARGV[i] == 'z' then
    redis.call('ZADD', key, ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  elseif ARGV[i] == 'r' then
    redis.call('ZREM', key, ARGV[i + 2])
    i = i + 3
  elseif ARGV[i] == 'd' then
    redis.call('HDEL', key, ARGV[i + 2])
    i = i + 3
  else
    redis.call('SET', key, ARGV[i + 2])
    i = i + 3
  end
end
local kept = tonumber(ARGV[5])
while redis.call('ZCARD', KEYS[4]) > kept do
  local oldest = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  redis.call('ZREM', KEYS[4], oldest[1])
  redis.call('HDEL', KEYS[5], oldest[1])
  redis.call('HDEL', KEYS[1], oldest[1])
  redis.call('SET', KEYS[10], oldest[2] .. ' ' .. oldest[1])
end
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1
"""

Position = tuple[float, str]
"""Where a result folds: (when the game ended, its id)."""


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

    @property
    def position(self) -> Position:
        """Where it folds among the results."""
        return (self.finished, self.game_id)

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

    def to_json(self) -> list[Any]:
        return [self.mu, self.sigma, self.games, self.wins, self.rated]

    @classmethod
    def from_json(cls, doc: list[Any]) -> Standing:
        mu, sigma, games, wins, rated = doc
        return cls(float(mu), float(sigma), int(games), int(wins), int(rated))


def _before(entry: list[Any], at: Position) -> bool:
    """Whether a history point or recent game (game id and end first) is of a game folded
    before ``at``."""
    return (float(entry[1]), str(entry[0])) < at


@dataclass
class Page:
    """One entrant's rating history (a point per rated game, oldest first) and recent games
    (newest first) in one rule set: what its player page shows besides the figures."""

    history: list[list[Any]] = field(default_factory=list)
    recent: list[list[Any]] = field(default_factory=list)

    def before(self, at: Position) -> Page:
        """The page as it was before the games from ``at`` on were folded."""
        return Page(
            [p for p in self.history if _before(p, at)],
            [g for g in self.recent if _before(g, at)],
        )

    def extended(self, points: list[list[Any]], games: list[list[Any]]) -> Page:
        """The page with the points and games (oldest first) of later games, the newest kept.
        Folding again from a place never adds fewer than it took away, so the points kept are
        the ones a whole fold keeps."""
        return Page((self.history + points)[-HISTORY:], (games[::-1] + self.recent)[:RECENT])

    def to_json(self) -> list[Any]:
        return [self.history, self.recent]

    @classmethod
    def from_json(cls, doc: list[Any]) -> Page:
        return cls(list(doc[0]), list(doc[1]))


def entry(standing: Standing, page: Page) -> dict[str, Any]:
    """An entrant's figures, history and recent games, as the table and the pages show them."""
    return {
        "mu": standing.mu,
        "sigma": standing.sigma,
        "rating": standing.rating,
        "games": standing.games,
        "wins": standing.wins,
        "rated_games": standing.rated,
        "history": page.history,
        "recent": page.recent,
    }


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


def _fresh(who: str) -> Standing | None:
    return None


class Fold:
    """Results of one rule set folded in order, on from a known state: ``start(who)`` gives an
    entrant's figures before the first of them (None: not rated yet). Holds the figures of the
    entrants it touched, and the history points and games (oldest first, the newest kept) each
    gained."""

    def __init__(self, start: Callable[[str], Standing | None] = _fresh) -> None:
        self.model = PlackettLuce()
        self.start = start
        self.standings: dict[str, Standing] = {}
        self.points: dict[str, list[list[Any]]] = {}
        self.games: dict[str, list[list[Any]]] = {}

    def add(self, result: GameResult) -> list[Standing]:
        """Fold one result (ending after every one folded so far); returns its entrants'
        figures before it (its checkpoint)."""
        table = self.standings
        for entrant in result.entrants:
            if entrant.who not in table:
                known = self.start(entrant.who)
                fresh = Standing(self.model.mu, self.model.sigma)
                table[entrant.who] = fresh if known is None else replace(known)
        befores = [replace(table[e.who]) for e in result.entrants]
        rated = len({e.who for e in result.entrants}) >= 2
        if rated:
            before = [(table[e.who].mu, table[e.who].sigma) for e in result.entrants]
            after = update(self.model, before, result.entrants)
        for index, entrant in enumerate(result.entrants):
            standing = table[entrant.who]
            standing.games += 1
            standing.wins += int(entrant.won)
            if rated:
                standing.mu, standing.sigma = after[index]
                standing.rated += 1
                points = self.points.setdefault(entrant.who, [])
                points.append([result.game_id, result.finished, round(standing.rating, 6)])
                del points[:-HISTORY]
            games = self.games.setdefault(entrant.who, [])
            games.append([result.game_id, result.finished, entrant.seat, entrant.won])
            del games[:-RECENT]
        return befores

    def page(self, who: str, before: Page | None = None) -> Page:
        """``who``'s page: ``before`` (the page up to this fold's first result) with what this
        fold added."""
        return (before or Page()).extended(self.points.get(who, []), self.games.get(who, []))


def fold(results: Iterable[GameResult]) -> dict[str, Any]:
    """The ratings table of ``results``, counted in the order the games ended: per rule set,
    per entrant, its figures, rating history and recent games (a game without a rated seat
    changes nothing). What the read model holds, whole."""
    folds: dict[str, Fold] = {}
    for result in sorted((r for r in results if r.entrants), key=lambda r: r.position):
        folds.setdefault(result.rules, Fold()).add(result)
    return {
        rules: {who: entry(s, f.page(who)) for who, s in sorted(f.standings.items())}
        for rules, f in sorted(folds.items())
    }


def _member(who: str, games: int) -> str:
    """``who``'s member on a board: a board sorts by rating (the score, negated), then by this,
    so by more games, then by id."""
    return f"{GAMES_CEILING - games:012d}:{who}"


def _who(member: str) -> str:
    return member.split(":", 1)[1]


def _dumps(doc: Any) -> str:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True)


class _Changes:
    """What a fold writes: FOLD_SCRIPT's changes."""

    def __init__(self) -> None:
        self.args: list[str | int | float] = []

    def hset(self, key: int, name: str, value: str) -> None:
        self.args += ["h", key, name, value]

    def zadd(self, key: int, score: float, member: str) -> None:
        self.args += ["z", key, repr(score), member]

    def zrem(self, key: int, member: str) -> None:
        self.args += ["r", key, member]

    def hdel(self, key: int, name: str) -> None:
        self.args += ["d", key, name]

    def set(self, key: int, value: str) -> None:
        self.args += ["s", key, value]

    def entrant(self, who: str, standing: Standing, page: Page, was: Standing | None) -> None:
        """An entrant's figures, page and place on its board (``was``: its figures before)."""
        board = BOTS if is_bot(who) else PLAYERS
        self.hset(FIGURES, who, _dumps(standing.to_json()))
        self.hset(PAGES, who, _dumps(page.to_json()))
        if was is not None and was.games != standing.games:
            self.zrem(board, _member(who, was.games))
        self.zadd(board, -standing.rating, _member(who, standing.games))

    def checkpoint(self, result: GameResult, befores: list[Standing]) -> None:
        """A result among the newest, with its entrants' figures before it."""
        self.zadd(WINDOW, result.finished, result.game_id)
        self.hset(CHECKPOINTED, result.game_id, _dumps([b.to_json() for b in befores]))


class Ratings:
    """The ratings read model in Redis, under the scoring projections' hash tag: the results
    of the checkpoints (by game), and per rule set the fold's state (see the module's
    docstring)."""

    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        checkpoints: int = CHECKPOINTS,
        on_late: Callable[[GameResult], None] | None = None,
    ) -> None:
        self.client = client
        self.on_late = on_late  # told of a result older than every checkpoint, not counted
        self.base = f"{prefix}{{scoring}}:ratings"
        self.results_key = f"{self.base}:results"
        self.folds_key = f"{self.base}:folds"  # per rule set, the folds written (never reset)
        self.rules_key = f"{self.base}:rules"  # the rule sets folded
        self.checkpoints = max(1, checkpoints)
        self._record = client.register_script(RECORD_SCRIPT)
        self._fold = client.register_script(FOLD_SCRIPT)

    def key(self, rules: str, part: str) -> str:
        """A rule set's key: ``window`` (its newest results, by end), ``checkpoints``,
        ``figures`` and ``pages`` (by entrant), ``board:players`` and ``board:bots``, and
        ``horizon`` (the newest result let go, as "end game-id")."""
        return f"{self.base}:{rules}:{part}"

    def _keys(self, rules: str) -> list[str]:
        parts = (
            "window",
            "checkpoints",
            "figures",
            "pages",
            "board:players",
            "board:bots",
            "horizon",
        )
        return [
            self.results_key,
            self.folds_key,
            self.rules_key,
            *(self.key(rules, p) for p in parts),
        ]

    async def known(self, game_id: str) -> bool:
        """Whether the game's result is counted and still held (a result let go since is
        found out by ``record``)."""
        return await self.client.hget(self.results_key, game_id) is not None

    async def record(self, result: GameResult, *, refold: bool = True) -> bool:
        """Count a result (once: a redelivery changes nothing); True if it was new. It is
        folded in unless ``refold`` is False (a rebuild folds once at the end). A game without
        a rated seat changes nothing and is not kept."""
        if not result.entrants:
            return False
        doc = _dumps(result.to_json())
        if not refold:
            return bool(await self._record(keys=[self.results_key], args=[result.game_id, doc]))
        for _ in range(MAX_CONFLICTS):
            written = await self._fold_in(result, doc)
            if written is not None:
                return written
        raise RuntimeError(f"ratings of {result.rules}: {MAX_CONFLICTS} folds overtaken")

    async def _fold_in(self, result: GameResult, doc: str) -> bool | None:
        """Fold one result in from the nearest state before it; None if another fold was
        written meanwhile (nothing is)."""
        rules, at = result.rules, result.position
        window = self.key(rules, "window")
        seen = int(await self.client.hget(self.folds_key, rules) or 0)  # before any other read
        known, folded, last, first, horizon = await asyncio.gather(
            self.client.hget(self.results_key, result.game_id),
            self.client.sismember(self.rules_key, rules),
            self.client.zrange(window, -1, -1, withscores=True),
            self.client.zrange(window, 0, 0, withscores=True),
            self.client.get(self.key(rules, "horizon")),
        )
        if known is not None:
            return False
        let_go = _horizon(horizon) if folded and horizon is not None else None
        if let_go is not None and _older_than_kept(at, let_go, first):
            return self._late(result)
        after = await self._after(rules, at, last, first) if folded else None
        if after is None and let_go is not None:  # what it would fold on from is gone
            return self._late(result)
        if after is None:
            return await self._fold_all(rules, seen, result, doc)
        later, stored = after
        # Each entrant as it stood at the result's place: before its first later game, else now.
        start: dict[str, Standing] = {}
        for result_later, standings in zip(later, stored, strict=True):
            for entrant, standing in zip(result_later.entrants, standings, strict=True):
                start.setdefault(entrant.who, standing)
        now = await self._figures(rules, [e.who for e in result.entrants if e.who not in start])
        start.update(now)
        again = Fold(start.get)
        changes = _Changes()
        changes.checkpoint(result, again.add(result))
        changed = {e.who for e in result.entrants}
        for result_later, standings in zip(later, stored, strict=True):
            befores_now = again.add(result_later)
            if befores_now != standings:  # else it and its entrants come out as they were
                changes.checkpoint(result_later, befores_now)
                changed.update(e.who for e in result_later.entrants)
        who = sorted(changed)
        was, pages = await asyncio.gather(self._figures(rules, who), self._pages(rules, who))
        for name in who:
            page = again.page(name, pages[name].before(at) if name in pages else None)
            changes.entrant(name, again.standings[name], page, was.get(name))
        return await self._write(rules, seen, result, doc, changes, afresh=False)

    def _late(self, result: GameResult) -> bool:
        """A result not counted live (see the module's docstring), reported."""
        if self.on_late is not None:
            self.on_late(result)
        return False

    async def _after(
        self, rules: str, at: Position, last: Any, first: Any
    ) -> tuple[list[GameResult], list[list[Standing]]] | None:
        """The results folded after ``at`` and their checkpoints (``last`` and ``first``: the
        window's ends), or None if some of them have none (``at`` is older than every one)."""
        if not last or at > _position(last[0]):
            return [], []
        if not first or at < _position(first[0]):
            return None
        window = await self.client.zrangebyscore(
            self.key(rules, "window"), at[0], "+inf", withscores=True
        )
        ids = [_text(m) for m, score in window if (float(score), _text(m)) > at]
        docs, befores = await asyncio.gather(
            self.client.hmget(self.results_key, ids),
            self.client.hmget(self.key(rules, "checkpoints"), ids),
        )
        if any(d is None for d in docs) or any(b is None for b in befores):
            return None
        later = [GameResult.from_json(json.loads(d)) for d in docs]
        return later, [[Standing.from_json(f) for f in json.loads(b)] for b in befores]

    async def _fold_all(
        self, rules: str, seen: int, result: GameResult | None, doc: str
    ) -> bool | None:
        """Fold every result of a rule set again (with ``result``, if not None) and write the
        rule set afresh; None if another fold was written since ``seen``."""
        held = await self.client.hgetall(self.results_key)
        results = [GameResult.from_json(json.loads(raw)) for raw in held.values()]
        mine = [r for r in results if r.rules == rules and r.entrants]
        if result is not None:
            mine.append(result)
        whole = Fold()
        newest: deque[tuple[GameResult, list[Standing]]] = deque(maxlen=self.checkpoints)
        changes = _Changes()
        gone: GameResult | None = None
        for one in sorted(mine, key=lambda r: r.position):
            if len(newest) == newest.maxlen:  # the oldest checkpoint goes: its result too
                gone = newest[0][0]
                changes.hdel(RESULTS, gone.game_id)
            newest.append((one, whole.add(one)))
        if gone is not None:
            changes.set(HORIZON, f"{gone.finished!r} {gone.game_id}")
        for one, befores in newest:
            changes.checkpoint(one, befores)
        for who, standing in sorted(whole.standings.items()):
            changes.entrant(who, standing, whole.page(who), None)
        return await self._write(rules, seen, result, doc, changes, afresh=True)

    async def _write(
        self,
        rules: str,
        seen: int,
        result: GameResult | None,
        doc: str,
        changes: _Changes,
        *,
        afresh: bool,
    ) -> bool | None:
        game_id = result.game_id if result is not None else ""
        head: list[str | int | float] = [rules, seen, game_id, doc, self.checkpoints]
        head.append("1" if afresh else "0")
        outcome = int(await self._fold(keys=self._keys(rules), args=[*head, *changes.args]))
        return None if outcome < 0 else bool(outcome)

    async def refold(self) -> None:
        """Fold every rule set again from all its results (a rebuild, once it recorded them)."""
        held = await self.client.hgetall(self.results_key)
        rule_sets = {GameResult.from_json(json.loads(raw)).rules for raw in held.values()}
        for rules in sorted(rule_sets):
            for _ in range(MAX_CONFLICTS):
                seen = int(await self.client.hget(self.folds_key, rules) or 0)
                if await self._fold_all(rules, seen, None, "") is not None:
                    break
            else:
                raise RuntimeError(f"ratings of {rules}: {MAX_CONFLICTS} folds overtaken")

    async def _figures(self, rules: str, who: list[str]) -> dict[str, Standing]:
        if not who:
            return {}
        raw = await self.client.hmget(self.key(rules, "figures"), who)
        return {w: Standing.from_json(json.loads(r)) for w, r in zip(who, raw, strict=True) if r}

    async def _pages(self, rules: str, who: list[str]) -> dict[str, Page]:
        if not who:
            return {}
        raw = await self.client.hmget(self.key(rules, "pages"), who)
        return {w: Page.from_json(json.loads(r)) for w, r in zip(who, raw, strict=True) if r}

    async def board(self, rules: str, *, bots: bool, limit: int) -> list[tuple[str, Standing]]:
        """The first ``limit`` of a rule set's board of accounts (or of bots), by rating, then
        games, then id: that page read, and no more."""
        key = self.key(rules, "board:bots" if bots else "board:players")
        who = [_who(_text(m)) for m in await self.client.zrange(key, 0, limit - 1)]
        figures = await self._figures(rules, who)
        return [(w, figures[w]) for w in who if w in figures]

    async def standing(self, rules: str, who: str) -> Standing | None:
        """``who``'s figures in a rule set (None before its first game there)."""
        return (await self._figures(rules, [who])).get(who)

    async def entrant(self, who: str) -> dict[str, dict[str, Any]]:
        """``who``'s figures, history and recent games in each rule set it played, by rule
        set (its own entries and no one else's)."""
        rule_sets = sorted(_text(r) for r in await self.client.smembers(self.rules_key))
        found = await asyncio.gather(
            *(asyncio.gather(self._figures(r, [who]), self._pages(r, [who])) for r in rule_sets)
        )
        return {
            rules: entry(figures[who], pages.get(who, Page()))
            for rules, (figures, pages) in zip(rule_sets, found, strict=True)
            if who in figures
        }

    async def table(self) -> dict[str, Any]:
        """The whole table, as ``fold`` gives it (empty before any result): for a rebuild's
        comparison, never for a request."""
        out: dict[str, Any] = {}
        for rules in sorted(_text(r) for r in await self.client.smembers(self.rules_key)):
            figures = await self.client.hgetall(self.key(rules, "figures"))
            pages = await self.client.hgetall(self.key(rules, "pages"))
            held = {_text(w): Standing.from_json(json.loads(f)) for w, f in figures.items()}
            kept = {_text(w): Page.from_json(json.loads(p)) for w, p in pages.items()}
            out[rules] = {w: entry(s, kept.get(w, Page())) for w, s in sorted(held.items())}
        return out

    async def drop(self) -> None:
        """Delete the read model (for a rebuild). The count of folds written stays, so a fold
        read before the drop is not written after it."""
        for raw in await self.client.smembers(self.rules_key):
            for key in self._keys(_text(raw))[WINDOW - 1 :]:
                await self.client.delete(key)
        await self.client.delete(self.results_key)
        await self.client.delete(self.rules_key)
        await self.client.delete(f"{self.base}:table")  # the whole table an older layout kept


def _horizon(raw: Any) -> Position:
    """The horizon as stored ("end game-id")."""
    finished, _, game_id = _text(raw).partition(" ")
    return (float(finished), game_id)


def _older_than_kept(at: Position, horizon: Position, first: Any) -> bool:
    """Whether a result at ``at`` is older than every checkpoint of a rule set that has let
    results go (``horizon``; ``first``: the oldest checkpoint): then what it would fold on from
    is gone."""
    return at <= horizon or (bool(first) and at < _position(first[0]))


def _position(held: Any) -> Position:
    """A window member (with its score) as a position."""
    member, score = held
    return (float(score), _text(member))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
