"""The bots service plays an absent player's seat: once the seat is handed to a bot (the game's
``absent: bot`` policy), its moves are the bot's, as a seated bot's are."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.services.bot_games import Players, bot_commands, double_moves, holding, log_of, seat_game
from tests.services.conftest import Stack


@pytest.fixture
async def players(stack: Stack) -> AsyncIterator[Players]:
    built = Players(stack)
    try:
        yield built
    finally:
        await built.stop_all()


async def test_an_absent_player_s_seat_is_played_by_the_bot_it_is_handed_to(
    stack: Stack, players: Players
) -> None:
    """Seat 0's player never moves: once its turn times out (the absence limit passed on the
    test's clock) the seat is handed to a bot, which the bots service plays from then on: the
    game finishes with nobody else moving."""
    bots = players.start()
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    options = {"absent": "bot", "absent_turns": 1, "absent_seconds": 10, "match_rounds": 1}
    game_id = await seat_game(stack.requester, "robbers", 2, {1: "greedy"}, options)

    async def seat_0_on_turn() -> bool:
        state = (await stack.games.load(game_id, fresh=True)).state
        return state.turn is not None and state.turn.seat == 0

    await stack.until(seat_0_on_turn, timeout=30)
    stack.clock.advance(11.0)  # past the absence limit: the referee's timer fires

    async def handed() -> bool:
        return (await stack.games.load(game_id, fresh=True)).state.bot_at(0) == "greedy"

    async def finished() -> bool:
        return (await stack.games.load(game_id, fresh=True)).state.status == "finished"

    await stack.until(handed, timeout=30)
    await stack.until(finished, timeout=60)
    events = await log_of(stack, game_id)
    assert "SeatHandedToBot" in {e.type for e in events}
    assert double_moves(events) == []
    assert any(
        any(e.data.get("seat") == 0 for e in applied) for applied in bot_commands(events).values()
    )
