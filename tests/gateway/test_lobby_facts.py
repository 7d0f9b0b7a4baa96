"""What the lobby needs to know from the server: whether it takes a fixed deal seed (the
lobby offers the field only then, ``GET /api/rules`` ``seeded_games``), and who won a finished
game (``won_by`` in the lobby's finished list)."""

from __future__ import annotations

import asyncio

from tests.gateway.conftest import MakeStack, Stack


async def test_the_rules_say_whether_this_server_takes_a_seed(make_stack: MakeStack) -> None:
    fair = await make_stack()
    assert (await fair.api.call("GET", "/api/rules")).body["seeded_games"] is False
    seeded = await make_stack(allow_seeded_games=True)
    assert (await seeded.api.call("GET", "/api/rules")).body["seeded_games"] is True


async def test_a_finished_game_is_listed_with_its_winner(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match": "single"})
    view = await api.view(game_id)
    quitter = view["turn"]["seat"]
    names = [seat["name"] for seat in view["seats"]]
    reply = await api.command(game_id, tokens[quitter], {"id": "r1", "type": "resign"})
    assert reply.status == 200, reply
    listed: list[dict[str, object]] = []
    for _ in range(200):
        page = (await api.call("GET", "/api/games?status=finished")).body["games"]
        listed = [g for g in page if g["game_id"] == game_id]
        if listed:
            break
        await asyncio.sleep(0.02)
    assert listed and listed[0]["won_by"] == [names[1 - quitter]]
    playing = (await api.call("GET", "/api/games?status=playing")).body["games"]
    assert all("won_by" not in g for g in playing)  # only a finished game has a winner
