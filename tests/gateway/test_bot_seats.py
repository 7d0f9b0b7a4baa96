"""Bots in seats over the API: the host gives a seat to a bot, the view says which seats are
bots, and a bot's move (a command on the stream with a ``bot:<name>:`` id) is recorded with the
bot as its actor; a bad bot name, a player's token or a bot moving for a seat it does not play is
refused and changes nothing."""

from __future__ import annotations

from shared.core.botnames import BOT_NAMES, bot_command_id, bot_of_command_id
from shared.infra.protocol import CommandEntry
from shared.infra.store.redis import RedisEventStore
from shared.play.bots import BOTS
from tests.gateway.api import check_error
from tests.gateway.conftest import Stack


def test_the_bot_names_are_the_bots_there_are() -> None:
    assert set(BOT_NAMES) == set(BOTS)


async def test_the_host_seats_a_bot_and_the_view_shows_it(stack: Stack) -> None:
    api = stack.api
    game_id, host = await api.create("robbers", 3, {"match": "single"})
    reply = await api.call("POST", f"/api/games/{game_id}/seats", {"bot": "greedy"}, token=host)
    assert reply.status == 201, reply
    assert reply.body["seat"] == 0 and reply.body["bot"] == "greedy"
    assert "token" not in reply.body  # nobody plays a bot's seat through the API
    named = {"bot": "solver", "name": "Deep Rummy"}
    reply = await api.call("POST", f"/api/games/{game_id}/seats", named, token=host)
    assert reply.status == 201, reply
    seat, _ = await api.sit(game_id, "ann")
    assert seat == 2
    seats = (await api.view(game_id))["seats"]
    assert [(s["name"], s["bot"]) for s in seats] == [
        ("greedy bot", "greedy"),
        ("Deep Rummy", "solver"),
        ("ann", None),
    ]
    truth = await stack.truth(game_id)
    assert truth.bots == ("greedy", "solver", None)


async def test_bad_bot_seats_are_refused_and_change_nothing(stack: Stack) -> None:
    api = stack.api
    game_id, host = await api.create("robbers", 2)
    _, token = await api.sit(game_id, "ann")
    before = await stack.event_count(game_id)
    path = f"/api/games/{game_id}/seats"
    reply = await api.call("POST", path, {"bot": "deep-blue"}, token=host)
    assert reply.status == 422
    check_error(reply.body, "bad_request")
    assert "bot" in reply.body["error"]["message"] and "'greedy'" in reply.body["error"]["message"]
    assert reply.body["option"] == "bot"
    reply = await api.call("POST", path, {"bot": "greedy"}, token=token)
    assert reply.status == 403
    check_error(reply.body, "forbidden")
    reply = await api.call("POST", path, {"bot": "greedy"})
    assert reply.status == 401
    check_error(reply.body, "unauthorized")
    reply = await api.call("POST", path, {"bot": 7}, token=host)
    assert reply.status == 422
    assert await stack.event_count(game_id) == before


async def test_a_bots_move_names_the_bot_as_its_actor(stack: Stack) -> None:
    api = stack.api
    game_id, host = await api.create("robbers", 2, {"match": "single"})
    await api.call("POST", f"/api/games/{game_id}/seats", {"bot": "random"}, token=host)
    _, token = await api.sit(game_id, "ann")
    await api.start(game_id, host)
    truth = await stack.truth(game_id)
    assert truth.turn is not None
    bot_seat, ann = 0, 1
    if truth.turn.seat == ann:
        reply = await api.command(game_id, token, {"id": "d1", "type": "draw"})
        assert reply.status == 200, reply
    # A bot may not move for a seat it does not play (ann's), nor under another bot's name.
    for cid, seat in (("bot:random:x1", ann), ("bot:greedy:x2", bot_seat)):
        entry = CommandEntry(game_id, "seat", cid, {"type": "draw"}, seat)
        refused = await stack.referee.execute(entry)
        assert (refused.status, refused.code) == ("refused", "not_bot_seat")
    before = await stack.event_count(game_id)
    cid = bot_command_id("random", f"{before}:x3")
    assert bot_of_command_id(cid) == "random" and bot_of_command_id(f"{ann}:x3") is None
    entry = CommandEntry(game_id, "seat", cid, {"type": "draw"}, bot_seat)
    outcome = await stack.referee.execute(entry)
    assert outcome.status == "accepted", outcome
    stored = await RedisEventStore(stack.redis, stack.settings.prefix).read(game_id)
    made = stored[before:]
    assert made and {e.actor for e in made} == {"bot:random"}
    assert made[0].type == "CardDrawn" and made[0].data["seat"] == bot_seat


async def test_bots_take_seats_at_the_games_creation(stack: Stack) -> None:
    api = stack.api
    game_id, host = await api.create("rummikub", 3, {}, bots=["greedy", "solver"])
    seats = (await api.view(game_id))["seats"]
    assert [s["bot"] for s in seats] == ["greedy", "solver", None]
    seat, _ = await api.sit(game_id, "ann")
    assert seat == 2
    await api.start(game_id, host)
    for bots in (["hal"], ["greedy", "greedy"], "greedy"):
        body = {"rules": "robbers", "seats": 2, "bots": bots}
        reply = await api.call("POST", "/api/games", body)
        assert reply.status == 422, (bots, reply)
        check_error(reply.body, "bad_request")
        assert "bots" in reply.body["error"]["message"]
