"""Seats that belong to players: the account's id in PlayerSeated (a guest's seat stored as
before), its name shown whatever the body says, its games listed and resumed from another
device, and a client that cannot claim an account's id."""

from __future__ import annotations

import asyncio
import json

from services.gateway.accounts import pseudonym
from shared.core.events import PlayerSeated, to_data
from tests.gateway.api import check_error
from tests.gateway.conftest import Stack
from tests.players.conftest import forget_cookies, register


async def test_a_logged_in_seat_records_the_account(stack: Stack) -> None:
    api = stack.api
    player_id, session = await register(api, "Jade")
    forget_cookies(stack)
    game_id, _host = await api.create("robbers", 2)
    sat = await api.call(
        "POST", f"/api/games/{game_id}/seats", {"name": "Someone Else"}, token=session
    )
    assert sat.status == 201, sat
    guest_seat, _ = await api.sit(game_id, "Guest")
    seated = [e for e in await stack.log(game_id) if isinstance(e, PlayerSeated)]
    mine = next(e for e in seated if e.seat == sat.body["seat"])
    guest = next(e for e in seated if e.seat == guest_seat)
    assert mine.player == player_id and mine.name == "Jade"
    assert guest.player == "" and "player" not in to_data(guest)


async def test_a_guest_seat_is_stored_as_before() -> None:
    """An event without an account encodes as events did before the field existed."""
    old = {"seat": 1, "name": "Kim", "seed": "ab"}
    assert to_data(PlayerSeated(1, "Kim", "ab")) == old
    assert json.dumps(to_data(PlayerSeated(1, "Kim", "ab", None, ""))) == json.dumps(old)


async def test_a_client_cannot_name_an_account_in_the_body(stack: Stack) -> None:
    api = stack.api
    victim, _ = await register(api, "Lena")
    forget_cookies(stack)
    game_id, _ = await api.create("robbers", 2)
    reply = await api.call(
        "POST", f"/api/games/{game_id}/seats", {"name": "Lena", "player": victim}
    )
    assert reply.status == 422
    check_error(reply.body, "bad_request")
    assert all(not (isinstance(e, PlayerSeated) and e.player) for e in await stack.log(game_id))


async def test_games_are_listed_and_resumed_from_another_device(stack: Stack) -> None:
    api = stack.api
    _, laptop = await register(api, "Mona", "a long password")
    forget_cookies(stack)
    game_id, host = await api.create("robbers", 2)
    sat = await api.call("POST", f"/api/games/{game_id}/seats", {}, token=laptop)
    assert sat.status == 201, sat
    await api.sit(game_id, "Guest")
    await api.start(game_id, host)
    phone = (
        await api.call("POST", "/api/sessions", {"name": "mona", "password": "a long password"})
    ).body["token"]
    forget_cookies(stack)
    listed = await api.call("GET", "/api/me/games", token=phone)
    assert listed.status == 200
    assert [(g["game_id"], g["seat"], g["status"]) for g in listed.body["games"]] == [
        (game_id, sat.body["seat"], "playing")
    ]
    resumed = await api.call("POST", f"/api/me/games/{game_id}/token", {}, token=phone)
    assert resumed.status == 201 and resumed.body["seat"] == sat.body["seat"]
    view = await api.view(game_id, resumed.body["token"])
    assert view["you"] == sat.body["seat"] and "hand" in view


async def test_no_seat_token_for_a_game_the_account_is_not_in(stack: Stack) -> None:
    api = stack.api
    _, session = await register(api, "Nina")
    forget_cookies(stack)
    game_id, _ = await api.create("robbers", 2)
    await api.sit(game_id, "Nina")  # a guest of the same name is not the account
    reply = await api.call("POST", f"/api/me/games/{game_id}/token", {}, token=session)
    assert reply.status == 404
    check_error(reply.body, "not_found")
    unauth = await api.call("GET", "/api/me/games")
    assert unauth.status == 401


def test_a_pseudonym_says_nothing_of_the_name() -> None:
    assert pseudonym("abc") == pseudonym("abc") != pseudonym("abd")
    assert pseudonym("abc").startswith("player-")


async def test_a_rematch_seat_stays_the_accounts(stack: Stack) -> None:
    api = stack.api
    ids, sessions, tokens = {}, {}, {}
    for name in ("Pia", "Rex"):
        ids[name], sessions[name] = await register(api, name)
        forget_cookies(stack)
    game_id, host = await api.create("robbers", 2, {"match": "single"})
    for name in ("Pia", "Rex"):
        sat = await api.call("POST", f"/api/games/{game_id}/seats", {}, token=sessions[name])
        tokens[name] = sat.body["token"]
    await api.start(game_id, host)
    resigned = await api.command(game_id, tokens["Pia"], {"id": "r1", "type": "resign"})
    assert resigned.status == 200, resigned
    for _ in range(200):  # the scoring service records the round, then the match ends
        if (await api.view(game_id))["status"] == "finished":
            break
        await asyncio.sleep(0.05)
    offered = await api.call("POST", f"/api/games/{game_id}/rematch", {}, token=tokens["Pia"])
    assert offered.status == 201, offered
    joined = await api.call("POST", f"/api/games/{game_id}/rematch/seat", {}, token=tokens["Rex"])
    assert joined.status == 201, joined
    rematch = offered.body["game_id"]
    seated = {e.name: e.player for e in await stack.log(rematch) if isinstance(e, PlayerSeated)}
    assert seated == {"Pia": ids["Pia"], "Rex": ids["Rex"]}
    listed = await api.call("GET", "/api/me/games", token=sessions["Rex"])
    assert [g["game_id"] for g in listed.body["games"]] == [rematch, game_id]
