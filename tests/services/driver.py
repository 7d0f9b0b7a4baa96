"""Drive whole games through the command streams as clients would (used by the service tests).

Bots choose from the seat's view, rebuilt from the game's log, and send their commands through a
``Requester``; every answer is checked against what the log then holds.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from shared.core.commands import command_json
from shared.core.state import GameState
from shared.core.views import seat_view
from shared.infra.bus import Requester
from shared.infra.gamelog import GameLog
from shared.infra.protocol import CommandEntry
from shared.play.bots import BOTS


@dataclass
class Driven:
    """What driving one game saw."""

    game_id: str
    answers: list[dict[str, Any]] = field(default_factory=list)
    commands: int = 0
    sent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (command id, answer)
    retries: int = 0  # requests sent again with the same command id after a timeout


async def create_game(
    requester: Requester,
    rules: str,
    seats: int,
    options: dict[str, Any] | None = None,
    game_id: str | None = None,
    timeout: float = 10.0,
) -> str:
    """Create a game, fill its seats and start it; returns its id."""
    game_id = game_id or f"g{uuid.uuid4().hex[:10]}"
    body = {"rules": rules, "seats": seats, "options": options or {}}
    answer = await requester.request(CommandEntry(game_id, "create", "create", body), timeout)
    assert answer["status"] == "accepted", answer
    for seat in range(seats):
        sit = CommandEntry(game_id, "sit", f"sit:{seat}", {"name": f"p{seat}"})
        answer = await requester.request(sit, timeout)
        assert answer["status"] == "accepted" and answer["seat"] == seat, answer
    answer = await requester.request(CommandEntry(game_id, "start", "start"), timeout)
    assert answer["status"] == "accepted", answer
    return game_id


async def drive(
    requester: Requester,
    games: GameLog,
    game_id: str,
    bots: list[str],
    seed: int = 0,
    max_commands: int = 5000,
    timeout: float = 10.0,
    until: Callable[[GameState], bool] | None = None,
    attempts: int = 3,
    wait_seconds: float = 30.0,
) -> Driven:
    """Play the game to its end (or until ``until(state)``) with bots, waiting for score
    sheets between rounds. A request that times out is sent again with the same command id,
    as a client would, up to ``attempts`` times."""
    rng = random.Random(seed)
    players = [BOTS[b]() for b in bots]
    driven = Driven(game_id)
    loop = asyncio.get_running_loop()
    waiting_since: float | None = None
    while driven.commands < max_commands:
        loaded = await games.load(game_id, fresh=True)
        state = loaded.state
        if state.status == "finished" or (until is not None and until(state)):
            return driven
        if state.phase != "turns" or state.turn is None:
            waiting_since = waiting_since or loop.time()
            if loop.time() - waiting_since > wait_seconds:
                raise AssertionError(f"game {game_id} stuck in phase {state.phase!r}")
            await asyncio.sleep(0.01)
            continue
        waiting_since = None
        seat = state.turn.seat
        body = command_json(players[seat].choose(seat_view(state, seat), rng), with_seat=False)
        cid = f"{seat}:{uuid.uuid4().hex}"
        entry = CommandEntry(game_id, "seat", cid, body, seat=seat)
        for attempt in range(attempts):
            try:
                answer = await requester.request(entry, timeout)
                break
            except TimeoutError:
                if attempt == attempts - 1:
                    raise
                driven.retries += 1
        driven.answers.append(answer)
        driven.sent.append((cid, answer))
        driven.commands += 1
        assert answer["status"] in ("accepted", "rejected"), answer
    raise AssertionError(f"game {game_id} did not finish in {max_commands} commands")


async def round_ended(
    requester: Requester,
    games: GameLog,
    rules: str,
    seats: int,
    options: dict[str, Any] | None = None,
) -> str:
    """A new game of greedy bots, played until its first round has ended (its score sheet is
    due); its id."""
    game_id = await create_game(requester, rules, seats, options)
    await drive(requester, games, game_id, ["greedy"] * seats, until=lambda s: s.phase == "scoring")
    return game_id
