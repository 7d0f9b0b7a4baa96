"""GET /api/games/{id}/hint: a seat's best play from its own view, switchable per game."""

from __future__ import annotations

from shared.cli.judge import judge
from shared.core.cards import cards_str, sorted_cards
from shared.core.views import seat_view
from shared.solver import solve
from tests.gateway.api import check_error
from tests.gateway.conftest import Stack, make_stack, stack  # noqa: F401 - fixtures


async def test_a_seat_gets_its_best_play(stack: Stack) -> None:  # noqa: F811
    api = stack.api
    game_id, host, tokens = await api.new_game("rummikub", 2, {"opening_points": 0})
    truth = await stack.truth(game_id)
    for seat, token in enumerate(tokens):
        reply = await api.call("GET", f"/api/games/{game_id}/hint", token=token)
        assert reply.status == 200, reply
        body = reply.body
        view = seat_view(truth, seat)
        expected = solve(view.rules, view.table, view.hand, view.opened)
        assert body["seat"] == seat and body["found"] == expected.found
        assert body["played"] == cards_str(sorted_cards(expected.played))
        assert body["my_turn"] == (truth.turn is not None and truth.turn.seat == seat)
        if body["found"]:  # the referee's own judgement accepts it for that seat
            verdict = judge(
                {
                    "rules": "rummikub",
                    "options": {"opening_points": 0},
                    "table": [cards_str(m) for m in view.table],
                    "hand": cards_str(view.hand),
                    "opened": view.opened,
                    "layout": body["layout"],
                }
            )
            assert verdict["legal"]
    reply = await api.call("GET", f"/api/games/{game_id}/hint?goal=points", token=tokens[0])
    assert reply.status == 200 and reply.body["goal"] == "points"
    reply = await api.call("GET", f"/api/games/{game_id}/hint?goal=best", token=tokens[0])
    assert reply.status == 422
    check_error(reply.body, "bad_request")
    reply = await api.call("GET", f"/api/games/{game_id}/hint", token=host)
    assert reply.status == 403
    check_error(reply.body, "forbidden")
    reply = await api.call("GET", f"/api/games/{game_id}/hint")
    assert reply.status == 401


async def test_hints_can_be_switched_off(stack: Stack) -> None:  # noqa: F811
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"hints": False})
    reply = await api.call("GET", f"/api/games/{game_id}/hint", token=tokens[0])
    assert reply.status == 409
    check_error(reply.body, "hints_off")


async def test_no_hint_before_the_deal(stack: Stack) -> None:  # noqa: F811
    api = stack.api
    game_id, _ = await api.create("robbers", 2)
    _, token = await api.sit(game_id, "p0")
    reply = await api.call("GET", f"/api/games/{game_id}/hint", token=token)
    assert reply.status == 409
    check_error(reply.body, "game_not_started")
