"""The tournament bench's own arithmetic: CPU per game, the ratio to its baseline, the entrants'
ids, and its chart carrying each round's seconds exactly."""

from __future__ import annotations

from shared.tournament.commands import player_id
from tests.bench import tournament
from tests.pictures.test_chart import drawn_series


def test_cpu_per_game_and_the_ratio() -> None:
    assert tournament.per_game(1.5, 192) == 1.5 / 192 * 1000
    assert tournament.per_game(1.5, 0) == 0.0
    assert tournament.ratio(30.0, 24.0) == 1.25
    assert tournament.ratio(30.0, 0.0) == 0.0


def test_the_entrants_are_256_distinct_account_ids() -> None:
    ids = [tournament.entrant(i) for i in range(256)]
    assert len(set(ids)) == 256
    assert all(player_id(i) == i and len(i) == 32 for i in ids)


def test_the_chart_carries_each_rounds_seconds() -> None:
    swiss = tournament.Played(games=192, rounds=[9.5, 8.25, 8.0])
    before = tournament.Played(games=192, rounds=[7.0, 6.5, 6.75])
    after = tournament.Played(games=192, rounds=[7.5, 7.25, 6.0])
    drawn = drawn_series(tournament.plot(swiss, before, after))
    assert drawn["Seconds per round"] == {
        "baseline before": [(1, 7.0), (2, 6.5), (3, 6.75)],
        "with the tournament service": [(1, 9.5), (2, 8.25), (3, 8.0)],
        "baseline after": [(1, 7.5), (2, 7.25), (3, 6.0)],
    }
