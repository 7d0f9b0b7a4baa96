"""The leaderboards, player pages and tournament registrations read the ratings page by page and
entrant by entrant, and answer as the whole table answered: the same order (rating, then games,
then id, exact ties among them), the same figures, the same history."""

from __future__ import annotations

from typing import Any

from services.gateway.accounts import pseudonym
from services.gateway.routes.players import replay_link
from services.gateway.state import GATEWAY
from shared.infra.ratings import Entrant, GameResult, Ratings, fold, is_bot
from tests.gateway.conftest import Stack
from tests.players.conftest import Counted, cheapen
from tests.tournament.apitools import account, create, served, stack

__all__ = ["served", "stack"]  # a gateway stack with a tournament service: its fixtures


def _results() -> list[GameResult]:
    """Bots and accounts in two rule sets, with exact ties: losers sharing a place, and
    accounts whose only games were unrated (rating 0) in different numbers."""
    out = []
    for n in range(30):
        trio = (f"bot:b{n % 7}", f"bot:c{(n * 3) % 5}", f"acct-{n % 4}")
        entrants = tuple(Entrant(who, seat, seat == n % 3) for seat, who in enumerate(trio))
        rules = "rummikub" if n % 4 == 3 else "robbers"
        out.append(GameResult(f"t{n:03}", rules, 5000.0 + n, entrants))
    for n in range(9):
        alone = (Entrant(f"solo-{3 - n % 4}", 0, n % 2 == 0),)
        out.append(GameResult(f"u{n:03}", "robbers", 6000.0 + n, alone))
    return out


def _board(table: dict[str, Any], rules: str, pool: str, limit: int) -> dict[str, Any]:
    """The board as the whole table gave it."""
    held = [(w, f) for w, f in table.get(rules, {}).items() if is_bot(w) == (pool == "bots")]
    held.sort(key=lambda item: (-item[1]["rating"], -item[1]["games"], item[0]))
    entries = [
        {
            "rank": rank,
            "id": who,
            "name": who[4:] if is_bot(who) else pseudonym(who),
            "bot": is_bot(who),
            "rating": f["rating"],
            "mu": f["mu"],
            "sigma": f["sigma"],
            "games": f["games"],
            "wins": f["wins"],
        }
        for rank, (who, f) in enumerate(held[:limit], start=1)
    ]
    return {"rules": rules, "pool": pool, "entries": entries}


def _page(table: dict[str, Any], who: str) -> dict[str, Any]:
    """A player page as the whole table gave it."""
    rules = {
        name: {
            "rating": t[who]["rating"],
            "mu": t[who]["mu"],
            "sigma": t[who]["sigma"],
            "games": t[who]["games"],
            "wins": t[who]["wins"],
            "history": [
                {"game_id": g, "finished": f, "rating": r} for g, f, r in t[who]["history"]
            ],
            "recent": [
                {"game_id": g, "finished": f, "seat": s, "won": w, "replay": replay_link(g)}
                for g, f, s, w in t[who]["recent"]
            ],
        }
        for name, t in sorted(table.items())
        if who in t
    }
    name = who[4:] if is_bot(who) else pseudonym(who)
    return {"id": who, "name": name, "bot": is_bot(who), "rules": rules}


async def test_boards_and_pages_answer_as_the_whole_table_did(stack: Stack) -> None:
    results = _results()
    ratings = Ratings(stack.redis, stack.settings.prefix)
    for result in results:
        await ratings.record(result)
    table = fold(results)
    for rules in ("robbers", "rummikub"):
        for pool in ("players", "bots"):
            for limit in (1, 3, 50):
                query = f"rules={rules}&pool={pool}&limit={limit}"
                reply = await stack.api.call("GET", f"/api/leaderboard?{query}")
                assert reply.status == 200, reply
                assert reply.body == _board(table, rules, pool, limit), query
    for who in ("bot:b3", "acct-2", "solo-1"):
        reply = await stack.api.call("GET", f"/api/players/{who}")
        assert reply.status == 200, reply
        assert reply.body == _page(table, who), who
    assert (await stack.api.call("GET", "/api/players/bot:nobody")).status == 404
    # What they read: the entrants on the page asked for, the one entrant asked for.
    gateway = stack.server.app[GATEWAY]
    reads = gateway.client = Counted(gateway.client)
    try:
        board = await stack.api.call("GET", "/api/leaderboard?rules=robbers&pool=bots&limit=2")
        shown = [e["id"] for e in board.body["entries"]]
        assert _mentioned(reads, table) == set(shown) and len(shown) == 2
        reads.replies.clear()
        await stack.api.call("GET", "/api/players/acct-1")
        assert _mentioned(reads, table) <= {"acct-1"}
    finally:
        gateway.client = reads.client


def _mentioned(reads: Counted, table: dict[str, Any]) -> set[str]:
    """The entrants whose ids the replies read hold."""
    everyone = {who for t in table.values() for who in t}
    return {who for who in everyone if any(reads.mention(who, r) for r in reads.replies)}


async def test_a_registration_takes_the_entrants_rating(stack: Stack) -> None:
    cheapen(stack)
    pair = (Entrant("bot:greedy", 0, True), Entrant("bot:stubborn", 1, False))
    results = [*_results(), GameResult("g-bots", "robbers", 7000.0, pair)]
    ratings = Ratings(stack.redis, stack.settings.prefix)
    for result in results:
        await ratings.record(result)
    _, director = await account(stack, "Dana")
    tid = (await create(stack, director)).body["tournament_id"]
    opened = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/registration", {"open": True}, token=director
    )
    assert opened.status == 200, opened
    for who in ("bot:greedy", "bot:clumsy"):
        entered = await stack.api.call(
            "POST", f"/api/tournaments/{tid}/entrants", {"player": who}, token=director
        )
        assert entered.status == 201, entered
    rated, newcomer = entered.body["entrants"]
    assert rated["rating"] == fold(results)["robbers"]["bot:greedy"]["rating"] != 0.0
    assert newcomer["rating"] == 0.0
