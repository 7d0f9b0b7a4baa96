"""Whole games of every preset, played purely through HTTP by bots that see only the API's views."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from tests.gateway.api import check_error, play_to_end
from tests.gateway.conftest import Stack

GAMES = [
    ("robbers", 3, {"match_rounds": 1}, ["greedy", "random", "greedy"]),
    ("robbers", 2, {"match_rounds": 2}, ["random", "greedy"]),
    ("robbers-classic", 3, {}, ["greedy", "random", "random"]),
    ("rummikub", 2, {}, ["greedy", "random"]),
]


@pytest.mark.parametrize(("rules", "seats", "options", "bots"), GAMES)
async def test_a_whole_game_is_played_over_http(
    stack: Stack, rules: str, seats: int, options: dict[str, Any], bots: list[str]
) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game(rules, seats, options)
    started = await api.view(game_id)
    assert started["status"] == "playing" and started["round"] == 1

    played = await play_to_end(api, game_id, tokens, bots, seed=seats)

    final = played.final
    truth = await stack.truth(game_id)
    assert final["status"] == "finished" and truth.status == "finished"
    assert played.rejected == 0, "a bot's checked play was refused: its view was wrong"
    # Every round of the match was dealt without anyone asking, and played.
    rounds = len(truth.rounds)
    assert played.rounds_played == set(range(1, rounds + 1))
    assert rounds >= truth.rules.rounds_for(seats)  # (more only for tie-break rounds)
    if options.get("match_rounds") == 2 or rules == "rummikub":
        assert rounds >= 2
    for number in range(2, rounds + 1):
        # Each later round opened with the previous one's result, scored, in last_round.
        previous = played.first_views[number]["last_round"]
        assert previous["round"] == number - 1 and previous["recorded"] is True
        assert "hands" not in previous  # (hands stay secret until the game ends)
        if truth.rules.scoring != "none":
            assert set(previous["scores"]) == {str(s) for s in range(seats)}
    # The end is described: the last round's result and the winners.
    last = final["last_round"]
    assert last is not None and last["round"] == rounds and last["recorded"] is True
    assert set(last["hands"]) == {str(s) for s in range(seats)}
    assert final["winner"] and all(0 <= w < seats for w in final["winner"])
    assert final["winner"] == list(truth.winners)
    for token in tokens:
        assert (await api.view(game_id, token))["winner"] == final["winner"]
    # The revealed seed is the one committed to at creation.
    events = await api.events(game_id)
    created = next(e for e in events if e["type"] == "GameCreated")
    revealed = next(e for e in events if e["type"] == "SeedRevealed")
    assert final["seed"] == revealed["seed"]
    assert hashlib.sha256(bytes.fromhex(final["seed"])).hexdigest() == created["commitment"]
    assert [e["version"] for e in events] == list(range(1, final["version"] + 1))
    assert events[-1]["hash"] == final["head"]
    # The lobby files it under finished.
    lobby = await api.call("GET", "/api/games?status=finished")
    assert [g["game_id"] for g in lobby.body["games"]] == [game_id]
    # A finished game takes no more commands.
    reply = await api.command(game_id, tokens[0], {"id": "late", "type": "draw"})
    assert reply.status == 409
    check_error(reply.body, "game_finished")
