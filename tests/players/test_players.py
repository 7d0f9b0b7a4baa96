"""Leaderboards and player pages through the API, and privacy: a finished game between accounts
(a guest beside them) rates the accounts only; the pages show figures, history and replays,
nothing of an account's sessions; a deleted account's sessions end, its games still verify, and
its id shows as a pseudonym."""

from __future__ import annotations

import asyncio
from typing import Any

from services.gateway.accounts import pseudonym
from shared.audit.record import loads
from shared.audit.verify import audit_record
from tests.gateway.api import check_error, play_to_end
from tests.gateway.conftest import Stack
from tests.players.conftest import forget_cookies, register


async def _rated_game(stack: Stack) -> tuple[str, dict[str, str], dict[str, str]]:
    """A finished game of two accounts and a guest who took one's name: (game id, ids by name,
    sessions by name)."""
    api = stack.api
    ids: dict[str, str] = {}
    sessions: dict[str, str] = {}
    for name in ("Olga", "Pete"):
        ids[name], sessions[name] = await register(api, name)
        forget_cookies(stack)
    game_id, host = await api.create("robbers", 3, {"match_rounds": 1})
    tokens = [""] * 3
    for name in ("Olga", "Pete"):
        sat = await api.call("POST", f"/api/games/{game_id}/seats", {}, token=sessions[name])
        tokens[sat.body["seat"]] = sat.body["token"]
    seat, token = await api.sit(game_id, "Olga")  # a guest who types an account's name
    tokens[seat] = token
    await api.start(game_id, host)
    await play_to_end(api, game_id, tokens, ["greedy", "stubborn", "random"])
    return game_id, ids, sessions


async def _board(stack: Stack, **query: str) -> Any:
    text = "&".join(f"{k}={v}" for k, v in query.items())
    for _ in range(200):
        reply = await stack.api.call("GET", f"/api/leaderboard?{text}")
        assert reply.status == 200, reply
        if reply.body["entries"]:
            return reply.body
        await asyncio.sleep(0.05)  # the scoring service rates the game as it hears of its end
    raise AssertionError("the game was never rated")


async def test_a_finished_game_rates_its_accounts_only(stack: Stack) -> None:
    game_id, ids, _ = await _rated_game(stack)
    board = await _board(stack, rules="robbers")
    assert {e["id"] for e in board["entries"]} == set(ids.values())
    assert {e["name"] for e in board["entries"]} == {"Olga", "Pete"}
    assert [e["rank"] for e in board["entries"]] == [1, 2]
    ratings = [e["rating"] for e in board["entries"]]
    assert ratings == sorted(ratings, reverse=True)
    # A winner (the deal decides who) stands above a loser; winners tied share a rating.
    for a in board["entries"]:
        for b in board["entries"]:
            if a["wins"] > b["wins"]:
                assert a["rating"] > b["rating"], board
            if a["wins"] == b["wins"]:
                assert a["rating"] == b["rating"], board
    page = await stack.api.call("GET", f"/api/players/{ids['Olga']}")
    assert page.status == 200 and page.body["name"] == "Olga"
    record = page.body["rules"]["robbers"]
    assert record["games"] == 1 and record["history"][0]["game_id"] == game_id
    assert record["recent"][0]["replay"] == f"/#/game/{game_id}/replay/1"
    assert set(page.body) == {"id", "name", "bot", "rules"}  # nothing of the account itself
    bots = await stack.api.call("GET", "/api/leaderboard?rules=robbers&pool=bots")
    assert bots.status == 200 and bots.body["entries"] == []
    # Neither page says anything of an account's password or sessions.
    for shown in (str(board), str(page.body)):
        assert "argon2" not in shown and "rs_" not in shown and "password" not in shown


async def test_bad_queries_name_the_parameter(stack: Stack) -> None:
    for query, word in (("rules=poker", "rules"), ("pool=humans", "pool"), ("limit=0", "limit")):
        reply = await stack.api.call("GET", f"/api/leaderboard?{query}")
        assert reply.status == 422 and word in reply.body["error"]["message"], reply
    missing = await stack.api.call("GET", "/api/players/nobody")
    assert missing.status == 404
    check_error(missing.body, "not_found")


async def test_a_deleted_account_keeps_verifiable_games_under_a_pseudonym(stack: Stack) -> None:
    api = stack.api
    game_id, ids, sessions = await _rated_game(stack)
    await _board(stack, rules="robbers")
    olga = sessions["Olga"]
    wrong = await api.call("DELETE", "/api/me", {"password": "not hers!"}, token=olga)
    assert wrong.status == 401
    assert (await api.call("GET", "/api/me", token=olga)).status == 200  # nothing changed
    gone = await api.call("DELETE", "/api/me", {"password": "correct horse"}, token=olga)
    assert gone.status == 204
    assert (await api.call("GET", "/api/me", token=olga)).status == 401  # sessions revoked
    relog = await api.call("POST", "/api/sessions", {"name": "Olga", "password": "correct horse"})
    assert relog.status == 401
    board = await _board(stack, rules="robbers")
    names = {e["id"]: e["name"] for e in board["entries"]}
    assert names[ids["Olga"]] == pseudonym(ids["Olga"]) and names[ids["Pete"]] == "Pete"
    page = await api.call("GET", f"/api/players/{ids['Olga']}")
    assert page.status == 200 and page.body["name"] == pseudonym(ids["Olga"])
    # The name is free again, for a new account with a rating of its own.
    newcomer, _ = await register(api, "olga")
    assert newcomer != ids["Olga"]
    # The game's record is untouched and verifies.
    status, _, text = await _export(stack, game_id)
    assert status == 200
    audit = audit_record(loads(text))
    assert audit.ok, audit.to_json()


async def _export(stack: Stack, game_id: str) -> tuple[int, str, str]:
    async with stack.client.get(f"/api/games/{game_id}/export") as response:
        return response.status, response.content_type, await response.text()
