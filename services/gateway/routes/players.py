"""Leaderboards and player pages, read from the ratings the scoring service keeps
(``shared.infra.ratings``). An account shows as its name (a pseudonym once deleted), a bot as
its name; nothing else of an account is shown: no session, no credential, no contact."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from services.gateway.bodies import (
    Leaderboard,
    LeaderboardEntry,
    PlayerPage,
    RatedGame,
    RatingPoint,
    RulesRecord,
)
from services.gateway.errors import ApiError
from services.gateway.params import whole_number
from services.gateway.routes.accounts import ACCOUNTS
from services.gateway.state import GATEWAY
from shared.core.rulesets import ALIASES, PRESETS
from shared.infra.ratings import BOT, Ratings, is_bot

POOLS = ("players", "bots")
MAX_BOARD = 200


def replay_link(game_id: str) -> str:
    """Where the web client replays a game from its first turn."""
    return f"/#/game/{game_id}/replay/1"


def _ratings(request: web.Request) -> Ratings:
    gw = request.app[GATEWAY]
    return Ratings(gw.client, gw.settings.prefix)


async def _names(request: web.Request, who: list[str]) -> dict[str, str]:
    accounts = [w for w in who if not is_bot(w)]
    names = await request.app[ACCOUNTS].names(accounts)
    return {w: w[len(BOT) :] if is_bot(w) else names[w] for w in who}


def _rules_of(request: web.Request) -> str:
    rules = request.query.get("rules", "robbers")
    rules = ALIASES.get(rules, rules)
    if rules not in PRESETS:
        allowed = ", ".join(sorted(PRESETS))
        raise ApiError(422, "bad_request", f"rules is {rules!r}; allowed: {allowed}")
    return rules


async def leaderboard(request: web.Request) -> web.Response:
    """One rule set's board of accounts (or of bots, ``pool=bots``), by rating: the page asked
    for is all it reads."""
    request.app[GATEWAY].limits.read(request)
    rules = _rules_of(request)
    pool = request.query.get("pool", "players")
    if pool not in POOLS:
        raise ApiError(422, "bad_request", f"pool is {pool!r}; allowed: players, bots")
    limit = whole_number(request.query.get("limit", "50"), "limit", MAX_BOARD, 1)
    held = await _ratings(request).board(rules, bots=pool == "bots", limit=limit)
    names = await _names(request, [w for w, _ in held])
    entries = [
        LeaderboardEntry(
            rank=rank,
            id=who,
            name=names[who],
            bot=is_bot(who),
            rating=standing.rating,
            mu=standing.mu,
            sigma=standing.sigma,
            games=standing.games,
            wins=standing.wins,
        )
        for rank, (who, standing) in enumerate(held, start=1)
    ]
    doc: Leaderboard = {
        "rules": rules,
        "pool": "bots" if pool == "bots" else "players",
        "entries": entries,
    }
    return web.json_response(doc)


def _record(figures: dict[str, Any]) -> RulesRecord:
    return RulesRecord(
        rating=figures["rating"],
        mu=figures["mu"],
        sigma=figures["sigma"],
        games=figures["games"],
        wins=figures["wins"],
        history=[RatingPoint(game_id=g, finished=t, rating=r) for g, t, r in figures["history"]],
        recent=[
            RatedGame(game_id=g, finished=t, seat=s, won=w, replay=replay_link(g))
            for g, t, s, w in figures["recent"]
        ],
    )


async def player_page(request: web.Request) -> web.Response:
    """An account's (or a bot's, ``bot:<name>``) page: per rule set its rating, its history,
    games, wins and recent games with their replays."""
    request.app[GATEWAY].limits.read(request)
    who = request.match_info["player_id"]
    if len(who) > 80:
        raise ApiError(422, "bad_request", "player_id is at most 80 characters")
    records = {rules: _record(f) for rules, f in (await _ratings(request).entrant(who)).items()}
    if is_bot(who):
        name = who[len(BOT) :]
    else:
        account = await request.app[ACCOUNTS].player(who)
        if account is None and not records:
            raise ApiError(404, "not_found", f"no player {who!r}")
        name = (await request.app[ACCOUNTS].names([who]))[who]
    if not records and is_bot(who):
        raise ApiError(404, "not_found", f"no rated bot {who!r}")
    doc: PlayerPage = {"id": who, "name": name, "bot": is_bot(who), "rules": records}
    return web.json_response(doc)
