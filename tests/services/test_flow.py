"""Whole matches through the command streams: referee and scoring as the design's flow."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.infra import codec
from shared.infra.chain import event_salt, verify_chain
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


async def test_the_referee_salts_every_event_with_the_games_seed(stack: Stack) -> None:
    """Each event the referee appends carries the salt of its version under the game's seed (so
    a hidden draw's hash cannot be tested against guesses), and the stored records keep it."""
    game_id = await create_game(stack.requester, "robbers", 2, {"match_rounds": 1})
    await drive(stack.requester, stack.games, game_id, ["greedy", "random"])
    events = await stack.games.store.read(game_id)
    revealed = [e for e in events if e.type == "SeedRevealed"]
    seed = bytes.fromhex(revealed[-1].data["seed"])
    # Scoring's score sheets are public through and through, and scoring holds no seed.
    by_referee = [e for e in events if e.actor != "scoring"]
    assert {e.type for e in events if e.actor == "scoring"} == {"ScoresRecorded"}
    assert [e.salt for e in by_referee] == [
        event_salt(seed, game_id, e.version) for e in by_referee
    ]
    assert all(e.salt is None for e in events if e.actor == "scoring")
    assert all(codec.decode(codec.encode(e)).salt == e.salt for e in events)
    assert verify_chain(events) is None
    # The salt is covered: another salt breaks the chain at that event.
    tampered = list(events)
    tampered[3] = replace(events[3], salt="0" * 32)
    assert verify_chain(tampered) == 3
