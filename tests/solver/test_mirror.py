"""Reading the ranks K to A (``mirrored_problem``): the same optimum, melds read back legal and
in rank order, and the solver gives the same play whichever way its search went on."""

from __future__ import annotations

import random
from collections import Counter

import pytest

import shared.solver.goals as solver
from shared.core.cards import JOKER
from shared.core.melds import card_values, readings
from shared.core.rulesets import rule_set
from shared.solver.dp.bounds import upper_bounds
from shared.solver.dp.program import Problem, Result, mirror_back, mirrored_problem, solve_dp
from shared.solver.dp.search import Refuted
from tests.solver.helpers import check_play
from tests.solver.positions import position

RUMMIKUB = rule_set("rummikub")


def _problem(table: list[list[int]], hand: list[int]) -> Problem:
    mandatory = [c for m in table for c in m]
    jokers = mandatory.count(JOKER) + hand.count(JOKER)
    w = solver._weights(RUMMIKUB, "cards", mandatory.count(JOKER), jokers, False)
    return solver._problem(RUMMIKUB, mandatory, hand, jokers, mandatory.count(JOKER), w)


@pytest.mark.parametrize("seed", range(30))
def test_mirrored_problem_has_the_same_optimum_and_legal_melds(seed: int) -> None:
    rng = random.Random(seed)
    table, hand = position(RUMMIKUB, rng.choice([10, 20, 30]), rng.randint(5, 12), rng)
    forward = solve_dp(_problem(table, hand))
    backward = solve_dp(mirrored_problem(_problem(table, hand)))
    assert (forward is None) == (backward is None)
    if forward is None or backward is None:
        return
    assert (backward.score, backward.jokers) == (forward.score, forward.jokers)
    melds = mirror_back(backward).melds
    for meld in melds:
        assert readings(meld, RUMMIKUB), meld
        naturals = [c for c in meld if c != JOKER]
        if len({c // 13 for c in naturals}) == 1 and len(meld) >= 3:  # a run: in rank order
            ranks = [c % 13 for c in naturals]
            assert ranks == sorted(ranks), meld
    placed = Counter(c for m in melds for c in m)
    assert not Counter(c for m in table for c in m if c != JOKER) - placed  # the table stays
    assert not placed - Counter([c for m in table for c in m] + hand)  # nothing invented


@pytest.mark.parametrize("seed", range(16))
def test_same_play_with_and_without_the_mirrored_search(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(200 + seed)
    rules = rule_set("rummikub", {"jokers": 2 + seed % 3})
    table, hand = position(rules, rng.choice([20, 40, 60]), rng.randint(14, 25), rng)
    mirrored: list[int] = []
    back = solver.mirror_back

    def counted(found: Result) -> Result:
        mirrored.append(seed)
        return back(found)

    monkeypatch.setattr(solver, "mirror_back", counted)
    values = card_values(rules.point_values)

    def naturals(cards: tuple[int, ...]) -> int:
        return sum(values[c] for c in cards if c != JOKER)

    found = {}
    for probe in (False, True):
        monkeypatch.setattr(solver, "MIRROR_PROBE", probe)
        for goal in ("cards", "points"):
            play = solver.solve(rules, table, hand, True, goal)  # type: ignore[arg-type]
            check_play(rules, table, hand, True, play)
            # what the goal ranks by: for ``cards`` the naturals' points (a joker's value is
            # not part of it, so equally good plays may differ there)
            worth = play.points if goal == "points" else naturals(play.played)
            found[(probe, goal)] = (len(play.played), worth, play.jokers)
        arranged = solver.arrange(rules, [c for m in table for c in m] + hand)
        found[(probe, "arrange")] = (arranged.arrangeable, arranged.free_jokers, 0)
        if arranged.arrangeable:
            laid = Counter(c for m in arranged.layout for c in m)
            laid[JOKER] += arranged.free_jokers
            assert +laid == Counter([c for m in table for c in m] + hand)
            assert all(readings(m, rules) for m in arranged.layout)
    for goal in ("cards", "points", "arrange"):
        assert found[(True, goal)] == found[(False, goal)], goal
    if seed in (2, 7, 9, 11, 12):  # measured: some goal goes on K to A (2: cards, 9: arrange)
        assert mirrored, "the search was expected to go on with the ranks read K to A"


@pytest.mark.parametrize("seed", range(6))
def test_a_witness_search_resumed_with_more_patience_ends_as_one_run_would(seed: int) -> None:
    """``solver._race`` resumes each witness search with twice the patience: the states it
    refuted are kept, so the resumed search ends where a single search with the final patience
    ends, having refuted the very same states (none twice)."""
    rng = random.Random(700 + seed)
    rules = rule_set("rummikub", {"jokers": 2})
    table, hand = position(rules, 40, rng.randint(14, 25), rng)
    search = solver._Search(rules, table, hand, True, "cards")
    weights = solver._weights(rules, "cards", search.table_jokers, 2, False)

    def problem() -> Problem:
        made = solver._problem(rules, search.table_cards, search.hand, 2, 0, weights)
        return solver._placeable(made)

    floor = upper_bounds(problem())[0][4][0] // solver.CARD * solver.CARD
    whole = Refuted(floor)
    found, refuted = solver._witness(problem(), floor, 100_000, whole)
    assert found is not None or refuted
    resumed, searched = Refuted(floor), problem()
    budget, resumes = 1, 0
    while True:
        again, again_refuted = solver._witness(searched, floor, budget, resumed)
        if again is not None or again_refuted:
            break
        assert len(resumed.failed) == budget + 1  # gave up on the first one too many
        resumes += 1
        budget *= 2
    assert resumes  # it was resumed, each time with what the searches before it refuted
    assert (again is None, again_refuted) == (found is None, refuted)
    if found is not None and again is not None:
        assert again.score == found.score and again.melds == found.melds
    assert resumed.failed == whole.failed
