"""Fixtures of the picture tests: self-played games of every rule set family, made once."""

from __future__ import annotations

import pytest

from tests.audit.games import CONFIGS, Game, play_game


@pytest.fixture(scope="session")
def played() -> list[Game]:
    """Two finished games of every configuration of ``tests.audit.games`` (robbers,
    robbers-classic and rummikub, with timeouts, the pile variant and penalty draws)."""
    out = []
    for index, (rules, options, bots, timeouts, luck) in enumerate(CONFIGS):
        for k in range(2):
            game = play_game(500 + index * 10 + k, rules, options, bots, timeouts, luck + 7 + k)
            assert game.report.finished and not game.report.violations, (rules, options, k)
            out.append(game)
    return out
