"""The solver bots play whole games through the engine without a refused or illegal command."""

from __future__ import annotations

import hashlib
import random

import pytest

from shared.core.bots import BOTS
from shared.core.selfplay import SelfPlay


@pytest.mark.parametrize(
    ("rules", "options", "bots"),
    [
        ("rummikub", {}, ["solver", "greedy"]),
        ("robbers", {"match_rounds": 1}, ["patient", "solver"]),
        ("robbers", {"match_rounds": 1, "discard_pile": True}, ["solver", "patient"]),
    ],
)
def test_solver_bots_play_whole_games(
    rules: str, options: dict[str, object], bots: list[str]
) -> None:
    seed = hashlib.sha256(f"solver-bots/{rules}".encode()).digest()
    report = SelfPlay(rules, options, [BOTS[b]() for b in bots], seed, random.Random(3)).play()
    assert report.finished and not report.violations
    assert report.rejected == 0 and report.refused == 0
    plays = sum(1 for e in report.events if e.TYPE == "TurnPlayed")
    assert plays > 0
