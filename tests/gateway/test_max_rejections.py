"""Decision 14 over the API: a seat's fourth rejected layout in a turn (``max_rejections`` 3)
is answered 422 like the others, and the referee has ended the turn with the failed-turn draw;
the option is explained by ``/api/rules`` and the OpenAPI document, and a bad value is refused
at creation naming it."""

from __future__ import annotations

from shared.core.events import CardDrawn, CommandRejected, TurnForfeited, TurnStarted
from tests.gateway.api import check_error, new_id
from tests.gateway.conftest import Stack


async def test_the_fourth_rejected_layout_ends_the_turn_with_the_draw(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    seat = (await api.view(game_id))["turn"]["seat"]
    before = await api.view(game_id, tokens[seat])
    assert before["turn"]["rejections_left"] == 3
    layout = [*before["table"], [before["hand"][0]]]  # a one-card meld is never legal

    for attempt in range(1, 5):
        reply = await api.command(
            game_id, tokens[seat], {"id": new_id(), "type": "play", "layout": layout}
        )
        assert reply.status == 422, reply
        check_error(reply.body, "illegal_layout")
        view = await api.view(game_id, tokens[seat])
        if attempt < 4:
            assert view["turn"]["seat"] == seat, attempt
            assert view["turn"]["rejected"] == attempt
            assert view["turn"]["rejections_left"] == 3 - attempt
    message = reply.body["error"]["message"]
    assert "max_rejections" in message and "the turn is over" in message, message

    after = await api.view(game_id, tokens[seat])
    assert after["turn"]["seat"] == 1 - seat
    assert len(after["hand"]) == len(before["hand"]) + 1  # robbers' failed-turn draw: 1
    assert after["table"] == before["table"]
    assert after["stock"] == before["stock"] - 1
    log = await stack.log(game_id)
    rejected, forfeit, drawn, started = log[-4:]
    assert isinstance(rejected, CommandRejected) and rejected.seat == seat
    assert forfeit == TurnForfeited(seat, before["turn"]["number"], "max_rejections", 4)
    assert isinstance(drawn, CardDrawn) and drawn.penalty and len(drawn.cards) == 1
    assert isinstance(started, TurnStarted) and started.seat == 1 - seat
    assert sum(isinstance(e, CommandRejected) for e in log) == 4

    # The other seat sees why the turn ended, but not the layout.
    kinds = ("CommandRejected", "TurnForfeited")
    shown = [e for e in await api.events(game_id, tokens[1 - seat]) if e["type"] in kinds]
    assert [e["type"] for e in shown] == [*["CommandRejected"] * 4, "TurnForfeited"]
    fields = {k: shown[-1][k] for k in ("seat", "number", "reason", "rejected")}
    assert fields == {
        "seat": seat,
        "number": before["turn"]["number"],
        "reason": "max_rejections",
        "rejected": 4,
    }
    assert all(e["layout"] is None and e["reason"] is None for e in shown[:-1])


async def test_max_rejections_is_explained_and_checked(stack: Stack) -> None:
    api = stack.api
    rules = await api.call("GET", "/api/rules")
    option = rules.body["options"]["max_rejections"]
    assert (option["kind"], option["low"], option["high"]) == ("int", 0, 20)
    assert "0: the first rejected layout ends the turn" in option["help"]
    assert option["defaults"] == {"robbers": 3, "robbers-classic": 3, "rummikub": 3}
    spec = await api.call("GET", "/openapi.json")
    assert "0: the first" in spec.body["components"]["x-options"]["max_rejections"]
    for value in (21, -1, None, "3"):
        reply = await api.call(
            "POST",
            "/api/games",
            {"rules": "robbers", "seats": 2, "options": {"max_rejections": value}},
        )
        assert reply.status == 422, reply
        check_error(reply.body, "bad_options")
        assert "'max_rejections'" in reply.body["error"]["message"]
        assert "0 to 20" in reply.body["error"]["message"]
    game_id, _ = await api.create("rummikub", 2, {"max_rejections": 0})
    assert (await api.view(game_id))["rules"]["options"] == {"max_rejections": 0}
