"""Fixtures of the audit tests: self-played games as stored logs, made once per session."""

from __future__ import annotations

import pytest

from tests.audit.games import CONFIGS, Game, play_game


@pytest.fixture(scope="session")
def games() -> list[Game]:
    """Two finished games of every configuration (16 games, some thousand events each)."""
    out = []
    for index, (rules, options, bots, timeouts, luck) in enumerate(CONFIGS):
        for k in range(2):
            game = play_game(index * 10 + k, rules, options, bots, timeouts, luck + k)
            assert game.report.finished and not game.report.violations, (rules, options, k)
            out.append(game)
    return out


@pytest.fixture(scope="session")
def game(games: list[Game]) -> Game:
    """One finished game with rejected attempts, penalty draws and two rounds (robbers)."""
    return games[0]


@pytest.fixture(scope="session")
def pile_game(games: list[Game]) -> Game:
    """A finished game of the discard-pile variant with at least one reshuffle."""
    found = [g for g in games if any(e.type == "StockReshuffled" for e in g.events)]
    assert found
    return found[0]
