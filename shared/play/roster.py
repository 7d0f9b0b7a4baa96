"""The bots a seat can be given, by name, and what a bot seat's move costs: a heuristic bot
thinks inline (milliseconds), a solver bot runs the exact solver (seconds on a crowded table)
and so thinks in a worker process within a budget, with a heuristic bot to fall back on when
the budget runs out, so that a bot seat never stalls its game.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from shared.core.commands import command_json
from shared.core.views import SeatView
from shared.play.bots import BOTS


@dataclass(frozen=True, slots=True)
class Seatable:
    """A bot a seat can be given: its name, whether its move needs the solver's budget, and
    the bot whose move is taken instead when that budget runs out."""

    name: str
    costly: bool
    fallback: str


COSTLY = frozenset({"solver", "patient", "hoarder"})
"""The bots that run the exact solver on every move."""
FALLBACK = "greedy"
"""The heuristic whose move a costly bot's seat gets when the budget runs out."""

SEATABLE: dict[str, Seatable] = {
    name: Seatable(name, name in COSTLY, FALLBACK if name in COSTLY else name) for name in BOTS
}
"""Every bot a seat may be given (the rules core's ``BOT_NAMES``; a test keeps them equal)."""


def seatable(name: str) -> Seatable:
    """The bot called ``name``, or ``ValueError`` naming the bots there are."""
    found = SEATABLE.get(name)
    if found is None:
        raise ValueError(f"no bot is called {name!r}; there are: {', '.join(SEATABLE)}")
    return found


def think(name: str, view: SeatView, seed: str) -> dict[str, Any]:
    """The command bot ``name`` chooses from ``view`` (its seat's view, nothing more), as a
    seat's client sends it (no seat). ``seed`` makes its random choices, so the same position
    gives the same command in any process: a move worked out twice is one command, not two.
    A plain function of picklable values: a worker process can run it."""
    command = BOTS[name]().choose(view, random.Random(seed))
    return command_json(command, with_seat=False)
