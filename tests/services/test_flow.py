"""Whole matches through the command streams: referee and scoring as the design's flow."""

from __future__ import annotations

import pytest

from shared.infra.chain import verify_chain
from shared.infra.gamelog import fold_stored
from tests.services.conftest import Stack
from tests.services.driver import create_game, drive


@pytest.mark.parametrize(
    ("rules", "seats", "options"),
    [
        ("robbers", 3, {"match_rounds": 2}),
        ("robbers-classic", 2, {}),
        ("rummikub", 2, {}),
    ],
)
async def test_a_match_plays_to_its_end_through_the_streams(
    stack: Stack, rules: str, seats: int, options: dict[str, object]
) -> None:
    game_id = await create_game(stack.requester, rules, seats, options)
    driven = await drive(stack.requester, stack.games, game_id, ["greedy", "random"] * 3)
    events = await stack.games.store.read(game_id)
    assert verify_chain(events) is None
    state = fold_stored(events).state
    assert state.status == "finished" and state.winners
    types = [e.type for e in events]
    assert types[-2:] == ["MatchEnded", "SeedRevealed"]
    assert types.count("RoundEnded") == types.count("ScoresRecorded")
    assert driven.commands > 0
