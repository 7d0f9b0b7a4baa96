"""The solver on positions worked by hand: every goal, every joker policy, ace wrap, limits."""

from __future__ import annotations

import pytest

from shared.core.cards import JOKER, cards_str
from shared.core.rulesets import RuleSet, rule_set
from shared.solver import arrange, solve
from tests.solver.helpers import cards, check_play, dp_points, melds

RUMMIKUB = rule_set("rummikub")
ROBBERS = rule_set("robbers")
CLASSIC = rule_set("robbers-classic")


def layout_text(play: object) -> list[list[str]]:
    return sorted(cards_str(m) for m in play.layout)  # type: ignore[attr-defined]


def test_splits_a_run_to_place_a_card() -> None:
    table = melds("4C 5C 6C 7C 8C")
    play = solve(RUMMIKUB, table, cards("6C 2H"), True)
    check_play(RUMMIKUB, table, cards("6C 2H"), True, play)
    assert cards_str(play.played) == ["6C"]
    assert layout_text(play) == [["4C", "5C", "6C"], ["6C", "7C", "8C"]]


def test_rearranges_sets_and_runs_together() -> None:
    # 7H goes into a new run only if 5H/6H come out of the sets, which then need the hand's 5D/6D.
    table = melds("5S 5H 5C", "6S 6H 6C")
    hand = cards("7H 5D 6D")
    play = solve(RUMMIKUB, table, hand, True)
    check_play(RUMMIKUB, table, hand, True, play)
    assert len(play.played) == 3


def test_no_play_leaves_the_table() -> None:
    table = melds("4C 5C 6C")
    play = solve(RUMMIKUB, table, cards("9H KD"), True)
    assert not play.found
    assert play.played == ()
    assert layout_text(play) == [["4C", "5C", "6C"]]


def test_prefers_fewer_jokers_among_equal_plays() -> None:
    hand = cards("5H 6H 7H JK")
    play = solve(RUMMIKUB, [], hand, True)
    # the joker is a card too: 4 cards beat 3, so it is played
    assert len(play.played) == 4
    # melds of exactly 3: [5H 6H 7H] or [5H 6H JK] or [5H JK 7H] all place 3 cards
    rules = rule_set("rummikub", {"run_max": 3, "set_max": 3})
    play = solve(rules, [], hand, True)
    check_play(rules, [], hand, True, play)
    assert JOKER not in play.played and len(play.played) == 3


def test_to_hand_redeems_a_table_joker() -> None:
    table = melds("5H JK 7H")
    hand = cards("6H")
    play = solve(ROBBERS, table, hand, True)
    check_play(ROBBERS, table, hand, True, play)
    assert cards_str(play.to_hand) == ["JK"]
    assert layout_text(play) == [["5H", "6H", "7H"]]


def test_never_and_must_replay_keep_table_jokers() -> None:
    table = melds("5H JK 7H")
    hand = cards("6H")
    for policy in ("never", "must_replay"):
        rules = rule_set("robbers", {"joker_policy": policy})
        play = solve(rules, table, hand, True)
        check_play(rules, table, hand, True, play)
        assert play.to_hand == ()
        assert sum(m.count(JOKER) for m in play.layout) == 1


def test_opening_needs_the_threshold_from_the_hand() -> None:
    table = melds("4C 5C 6C")
    hand = cards("7C 2H 3H 4H")  # 7C would lay off, but before opening the table is untouched
    play = solve(ROBBERS, table, hand, False)
    assert not play.found  # 2H 3H 4H is 9 points, robbers needs 40
    hand = cards("QH KH JH 7C")  # 30 points
    assert not solve(ROBBERS, table, hand, False).found
    hand = cards("QH KH JH 10H 7C")  # 40 points
    play = solve(ROBBERS, table, hand, False)
    check_play(ROBBERS, table, hand, False, play)
    assert sorted(cards_str(play.played)) == ["10H", "JH", "KH", "QH"]


def test_opening_uses_jokers_only_where_needed() -> None:
    hand = cards("QH KH JH 9S 9D JK")
    rules = rule_set("robbers", {"opening_points": 30})
    play = solve(rules, [], hand, False, "opening")
    check_play(rules, [], hand, False, play)
    # the joker would add a card (9S 9D JK) but the opening reaches 30 without it
    assert JOKER in play.played  # it places two more naturals, so it is needed
    hand = cards("QH KH JH JK")
    play = solve(rules, [], hand, False, "opening")
    assert JOKER not in play.played
    play = solve(rules, [], hand, False, "cards")
    assert JOKER in play.played  # the cards goal counts a joker as a card


def test_points_goal_prefers_value() -> None:
    table = melds("2S 3S 4S")
    hand = cards("AS KD KC KH 5S")
    rules = rule_set("robbers", {"opening_points": 0})
    play = solve(rules, table, hand, True, "points")
    check_play(rules, table, hand, True, play)
    assert play.points == 30 + 15 + 5  # KD KC KH, AS and 5S laid off on the run
    assert len(play.played) == 5


def test_wrap_runs_cross_king_to_ace() -> None:
    table = melds("QS KS AS")
    hand = cards("2S JS")
    play = solve(CLASSIC, table, hand, True)
    check_play(CLASSIC, table, hand, True, play)
    assert layout_text(play) == [["JS", "QS", "KS", "AS", "2S"]]
    low = rule_set("robbers-classic", {"ace": "low"})
    assert not solve(low, [], cards("QS KS AS"), True).found


def test_run_and_set_limits() -> None:
    rules = rule_set("rummikub", {"run_max": 4, "set_max": 3})
    hand = cards("AH 2H 3H 4H 5H 6H 7H")
    play = solve(rules, [], hand, True)
    check_play(rules, [], hand, True, play)
    assert len(play.played) == 7 and all(len(m) <= 4 for m in play.layout)
    hand = cards("9S 9H 9D 9C")
    play = solve(rules, [], hand, True)
    assert len(play.played) == 3  # a set holds at most 3
    rules = rule_set("rummikub", {"run_max": 3})
    play = solve(rules, [], cards("AH 2H 3H 4H 5H"), True)
    assert len(play.played) == 3  # 5 cards cannot be runs of exactly 3


def test_long_runs_are_merged() -> None:
    hand = cards("AH 2H 3H 4H 5H 6H 7H 8H 9H")
    play = solve(RUMMIKUB, [], hand, True)
    assert [len(m) for m in play.layout] == [9]


def test_many_jokers() -> None:
    rules = rule_set("robbers", {"jokers": 8, "opening_points": 0})
    hand = [*cards("5H 9C"), *[JOKER] * 8]
    play = solve(rules, [], hand, True)
    check_play(rules, [], hand, True, play)
    assert len(play.played) == 10


def test_min_disruption_keeps_table_melds() -> None:
    table = melds("3H 4H 5H", "6H 7H 8H", "9S 9D 9C")
    hand = cards("9H")
    play = solve(RUMMIKUB, table, hand, True, min_disruption=True)
    check_play(RUMMIKUB, table, hand, True, play)
    # 9H extends the run or joins the set; either way two table melds stay as they were
    assert play.unchanged == 2


def test_arrange() -> None:
    found = arrange(RUMMIKUB, cards("5H 6H 7H JK 5S 5D"))
    assert found.arrangeable and found.free_jokers == 0
    found = arrange(RUMMIKUB, cards("5H 6H 7H JK JK"))
    assert found.arrangeable and found.free_jokers == 2
    assert not arrange(RUMMIKUB, cards("5H 6H 8H")).arrangeable
    assert arrange(RUMMIKUB, cards("5H 6H 8H JK")).arrangeable


def test_arrange_counts_the_jokers_far_apart_cards_need() -> None:
    # AH 2H and 9S 10S each need a joker, and no one joker serves both (the bound's need).
    assert not arrange(RUMMIKUB, cards("AH 2H 9S 10S JK")).arrangeable
    found = arrange(RUMMIKUB, cards("AH 2H 9S 10S JK JK JK"))
    assert found.arrangeable and found.free_jokers == 1
    # The need is counted without wrap only: the ace-low bounds must not serve the wrap problem.
    assert arrange(CLASSIC, cards("QS KS AS")).arrangeable
    assert arrange(CLASSIC, cards("KS AS JK")).arrangeable
    assert solve(CLASSIC, melds("QS KS AS"), cards("2S"), True).found


@pytest.mark.parametrize("goal", ["cards", "points", "opening"])
def test_every_goal_on_an_empty_hand(goal: str) -> None:
    play = solve(RUMMIKUB, melds("4C 5C 6C"), [], True, goal)  # type: ignore[arg-type]
    assert not play.found


def test_unknown_goal() -> None:
    with pytest.raises(ValueError, match="goal"):
        solve(RUMMIKUB, [], [], True, "most")  # type: ignore[arg-type]


def test_one_joker_carries_four_cards_that_need_it() -> None:
    # 3H..7H minus 5H: every card's windows of three ranks miss 5H (and 2H, 8H are gone), so
    # each needs the joker, and one joker carries all four.
    hand = cards("3H 4H 6H 7H JK 9S")
    play = solve(RUMMIKUB, [], hand, True)
    check_play(RUMMIKUB, [], hand, True, play)
    assert sorted(cards_str(play.played)) == ["3H", "4H", "6H", "7H", "JK"]


def test_points_regression_merging_does_not_reread_jokers() -> None:
    """Seed 1 of the exactness run: the DP found 146 points, but tidying joined
    ``KD JK JK JK`` (a set: jokers as kings) to the end of a diamond run, where the jokers stand
    for 10D JD QD, and 140 was returned. The integer program finds 146."""
    rules = rule_set("rummikub", {"jokers": 8})
    table = [
        [41, 42, 43, 52, 45, 46],
        [16, 29, 3, 42],
        [4, 17, 43, 30],
        [29, 30, 31, 32, 33, 34],
        [3, 4, 5, 6, 7, 8, 9],
        [28, 41, 15],
        [33, 46, 20, 7],
        [20, 21, 22, 23],
        [19, 32, 45, 6],
        [15, 16, 17, 18, 19, 52, 21],
        [0, 26, 13, 39],
        [18, 5, 44, 31],
        [52, 52, 52, 50],
        [13, 26, 39],
        [48, 52, 22, 9],
        [36, 37, 38],
        [51, 12, 38, 25],
        [10, 11, 12],
        [52, 44, 52],
    ]
    hand = cards("9S 9C QS QD")
    play = solve(rules, table, hand, True, "points")
    check_play(rules, table, hand, True, play)
    assert dp_points(rules, play, table) == 146


def test_points_regression_bound_counts_jokers_already_placed() -> None:
    """The upper bound gave cards that need a joker credit only for jokers not yet placed, so a
    floor pruned the best play (134 points found, the integer program finds 139): a joker laid
    a rank earlier still carries such cards."""
    rules = rule_set("rummikub")
    table = [
        [16, 17, 18, 19, 20, 21, 22],
        [2, 3, 4, 5, 6, 7, 8],
        [2, 3, 4, 5, 6, 7],
        [0, 39, 26, 13],
        [28, 29, 30],
        [16, 17, 18, 19, 20, 21],
        [36, 49, 23, 52],
        [14, 40, 27],
    ]
    hand = [10, 38, 33, 50, 40, 9, 32, 48, 26, 34, 45, 44, 34, 46, 45, 52]
    play = solve(rules, table, hand, True, "points")
    check_play(rules, table, hand, True, play)
    assert dp_points(rules, play, table) == 139
    assert len(play.played) == 14


def test_points_regression_wrap_bound_sees_runs_crossing_k_a() -> None:
    """Under ace wrap a joker near one end of the cycle carries cards at the other end; the
    bound's needy-card reach did not see that and pruned the best play (134 points found, the
    integer program finds 136). The wrap state budget used to hide it (the answer was marked
    inexact)."""
    rules = rule_set("rummikub", {"jokers": 4, "ace": "wrap", "set_max": 3})
    table = [
        [24, 25, 13, 14, 15, 16],
        [3, 16, 29],
        [12, 0, 1, 2, 3, 4],
        [2, 28, 15],
        [41, 42, 43, 44, 45, 46],
        [45, 46, 47, 52, 49, 50, 51],
        [37, 38, 26, 27, 28],
        [39, 40, 41, 42, 43],
    ]
    hand = [52, 40, 18, 7, 21, 31, 52, 9, 33, 39, 32, 32, 19, 23, 50, 19, 37]
    play = solve(rules, table, hand, True, "points")
    check_play(rules, table, hand, True, play)
    assert dp_points(rules, play, table) == 136


def test_points_regression_a_joker_alone_before_the_ace_stands_for_a_king() -> None:
    """Under ace wrap the DP let a run enter the ace already running only with a natural on
    the king's side: K(JK) A 2 3 4 was laid as A 2 3 4 JK, the same cards, but the joker then
    counts as a four, not a king. Points goal: 16 found (the joker in the queens' set), the
    integer program 17 (the table joker's 4 and a king)."""
    rules = rule_set("robbers-classic", {"jokers": 2})
    table = [
        [27, 28, 52, 30, 31, 32],
        [27, 28, 29, 30, 31],
        [50, 11, 37],
        [3, 4, 5, 6],
        [13, 14, 15, 16],
        [45, 46, 47, 48],
        [19, 20, 21, 22],
    ]
    play = solve(rules, table, [JOKER], True, "points")
    check_play(rules, table, [JOKER], True, play)
    assert dp_points(rules, play, table) == 17
    assert sorted([52, 13, 14, 15, 16]) in [sorted(m) for m in play.layout]


def test_searches_from_many_threads_agree_with_one_at_a_time() -> None:
    """The gateway answers hints from worker threads, and the searches build per-process tables
    as they go (lane pair codes among them), so ``solve`` runs one search at a time: threads
    started together on rule sets whose tables are not built yet get the plays one thread gets."""
    import random
    from concurrent.futures import ThreadPoolExecutor

    from shared.solver.dp import program
    from tests.solver.positions import position

    rng = random.Random(12)
    cases: list[tuple[RuleSet, list[list[int]], list[int]]] = []
    for run_max in (4, 5, 6, 7):
        rules = rule_set("robbers", {"ace": "wrap", "run_max": run_max, "jokers": 2})
        for _ in range(3):
            table, hand = position(rules, 16, 10, rng)
            cases.append((rules, table, hand))

    def play(case: tuple[RuleSet, list[list[int]], list[int]]) -> tuple[int, int, int]:
        rules, table, hand = case
        found = solve(rules, table, hand, True, "points")
        check_play(rules, table, hand, True, found)
        return len(found.played), found.jokers, dp_points(rules, found, table)

    program._LANES.clear()
    with ThreadPoolExecutor(6) as pool:
        together = list(pool.map(play, cases))
    alone = [play(case) for case in cases]
    assert together == alone
