"""Score sheets and match results: every scoring example of the sources and Decisions 7, 8 and 9."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.core.cards import JOKER, parse_card
from shared.core.rulesets import ROBBERS, ROBBERS_CLASSIC, RUMMIKUB, RuleSet, rule_set
from shared.core.scoring import (
    MatchStatus,
    RoundScore,
    ScoringError,
    hand_penalty,
    match_result,
    score_round,
    stall_winner,
)


def hand(text: str) -> list[int]:
    """Cards from a space-separated text ("" is an empty hand)."""
    return [parse_card(word) for word in text.split()]


def tiles_worth(total: int) -> list[int]:
    """A rack of black tiles whose face values add up to ``total`` (tens, then the rest)."""
    cards = [parse_card("10S")] * (total // 10)
    if total % 10:
        cards.append(parse_card(f"{total % 10}S"))
    return cards


# Independent of the code under test: the robbers card values of the source text 000.
def robbers_value(card: int) -> int:
    if card == JOKER:
        return 30
    rank = card % 13 + 1
    return 15 if rank == 1 else 10 if rank > 10 else rank


# --- hand values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cards", "value"),
    [
        ("JK", 30),
        ("AS", 15),
        ("AH", 15),
        ("KD", 10),
        ("QC", 10),
        ("JS", 10),
        ("10H", 10),
        ("2S", 2),
        ("7D", 7),
        ("9C", 9),
        ("JK AS KD 2S 7D", 30 + 15 + 10 + 2 + 7),
        ("", 0),
    ],
)
def test_robbers_penalty_values_of_the_source(cards: str, value: int) -> None:
    assert hand_penalty(ROBBERS, hand(cards)) == value


@pytest.mark.parametrize(
    ("cards", "value"),
    [("JK", 30), ("AS", 1), ("JH", 11), ("QD", 12), ("KC", 13), ("5S 13H JK", 5 + 13 + 30)],
)
def test_rummikub_tiles_count_face_value_and_a_joker_30(cards: str, value: int) -> None:
    assert hand_penalty(RUMMIKUB, hand(cards)) == value


def test_joker_penalty_is_an_option() -> None:
    assert hand_penalty(rule_set("robbers", {"joker_penalty": 50}), hand("JK 2S")) == 52


def test_a_rule_set_without_point_values_gives_every_hand_zero() -> None:
    assert hand_penalty(ROBBERS_CLASSIC, hand("JK AS KD")) == 0


def test_a_card_out_of_range_is_refused() -> None:
    with pytest.raises(ScoringError, match="53"):
        hand_penalty(ROBBERS, [53])


# --- penalty scoring (robbers) ----------------------------------------------------------------


def test_robbers_round_winner_zero_others_their_hand() -> None:
    sheet = score_round(ROBBERS, [hand("AS KD"), hand(""), hand("JK 2H 10C")], out=1, redeemed=None)
    assert sheet == RoundScore(seats=(0, 1, 2), winner=1, went_out=True, scores=(25, 0, 42))


def test_redeem_bonus_is_off_in_the_preset() -> None:
    sheet = score_round(ROBBERS, [hand("5S"), hand("")], out=1, redeemed=[2, 1])
    assert sheet.scores == (5, 0)


def test_decision_9_bonus_per_redeemed_joker_for_every_seat_and_below_zero() -> None:
    rules = rule_set("robbers", {"redeem_bonus": 5})
    sheet = score_round(rules, [hand("KS 3H"), hand(""), hand("2S"), hand("JK")], 1, [1, 1, 2, 0])
    # loser 13 - 5; the winner 0 - 5 (below zero); loser 2 - 10 (below zero); no redemption: 30
    assert sheet.scores == (8, -5, -8, 30)


def test_redeem_bonus_size_is_the_option() -> None:
    rules = rule_set("robbers", {"redeem_bonus": 7})
    assert score_round(rules, [hand("KS"), hand("")], 1, [2, 0]).scores == (-4, 0)


def test_redemption_counts_must_match_the_seats_and_not_be_negative() -> None:
    with pytest.raises(ScoringError, match="redemption"):
        score_round(ROBBERS, [hand("KS"), hand("")], 1, [1])
    with pytest.raises(ScoringError, match="negative"):
        score_round(ROBBERS, [hand("KS"), hand("")], 1, [-1, 0])


# --- plus/minus scoring (rummikub) ------------------------------------------------------------


def test_rummikub_source_example_9_17_34_gives_the_winner_60() -> None:
    racks = [tiles_worth(9), tiles_worth(17), [], tiles_worth(34)]
    assert [hand_penalty(RUMMIKUB, r) for r in racks] == [9, 17, 0, 34]
    sheet = score_round(RUMMIKUB, racks, out=2, redeemed=None)
    assert sheet.winner == 2 and sheet.went_out
    assert sheet.scores == (-9, -17, 60, -34)


def test_rummikub_source_blocked_example_6_10_15() -> None:
    racks = [tiles_worth(6), tiles_worth(10), tiles_worth(15)]
    sheet = score_round(RUMMIKUB, racks, out=None, redeemed=None)
    assert sheet.winner == 0 and not sheet.went_out
    assert sheet.scores == (13, -4, -9)


def test_rummikub_blocked_example_in_another_seat_order() -> None:
    racks = [tiles_worth(10), tiles_worth(15), tiles_worth(6)]
    assert score_round(RUMMIKUB, racks, None).scores == (-4, -9, 13)


def test_rummikub_joker_on_a_rack_costs_30() -> None:
    sheet = score_round(RUMMIKUB, [hand("JK 1S"), hand("")], out=1)
    assert sheet.scores == (-31, 31)


def test_plus_minus_ignores_redemptions() -> None:
    rules = rule_set("rummikub", {"redeem_bonus": 5})
    assert score_round(rules, [hand("4S 5H"), hand("")], 1, [1, 0]).scores == (-9, 9)


def test_plus_minus_blocked_with_fewest_cards_winner_uses_the_lowest_total() -> None:
    rules = rule_set("rummikub", {"stall_winner": "fewest_cards"})
    # seat 0 wins on one card (13); seat 1 has the lowest total (3) and loses nothing
    sheet = score_round(rules, [hand("13S"), hand("1S 2S"), hand("5S 6S")], None)
    assert sheet.winner == 0
    assert sheet.scores == (8, 0, -8)


# --- no scoring (robbers-classic) -------------------------------------------------------------


def test_robbers_classic_has_a_winner_only() -> None:
    sheet = score_round(ROBBERS_CLASSIC, [hand("KS"), hand(""), hand("2S 3S")], out=1)
    assert sheet == RoundScore((0, 1, 2), 1, True, None)


# --- Decision 7: stalled rounds ---------------------------------------------------------------


def test_robbers_stall_fewest_cards_wins_even_with_a_higher_total() -> None:
    sheet = score_round(ROBBERS, [hand("2S 3S"), hand("JK"), hand("4S 5S 6S")], None)
    assert sheet.winner == 1 and not sheet.went_out
    assert sheet.scores == (5, 0, 15)


def test_rummikub_stall_lowest_total_wins_even_with_more_tiles() -> None:
    assert stall_winner(RUMMIKUB, [hand("13S"), hand("1S 2S 3S")], None) == 1


def test_stall_tie_on_cards_goes_to_the_lower_total() -> None:
    assert stall_winner(ROBBERS, [hand("KS 2S"), hand("3S 2H"), hand("4S 4H")], 0) == 1


def test_stall_tie_on_total_goes_to_fewer_cards() -> None:
    assert stall_winner(RUMMIKUB, [hand("2S 3S"), hand("5H"), hand("1S 4S")], 1) == 1


@pytest.mark.parametrize(("last", "winner"), [(0, 1), (1, 2), (2, 0), (None, 0)])
def test_stall_full_tie_goes_to_the_first_seat_after_the_last_play(
    last: int | None, winner: int
) -> None:
    hands = [hand("5S"), hand("5H"), hand("5D")]
    assert stall_winner(ROBBERS, hands, last) == winner
    assert score_round(ROBBERS, hands, None, last_player=last).winner == winner


@pytest.mark.parametrize(("last", "winner"), [(0, 2), (1, 2), (2, 0), (3, 0), (None, 0)])
def test_stall_tie_among_some_seats_follows_turn_order_from_the_last_play(
    last: int | None, winner: int
) -> None:
    hands = [hand("5S"), hand("5H 2S"), hand("5D"), hand("6D")]
    assert stall_winner(ROBBERS, hands, last) == winner


def test_the_seat_that_made_the_last_play_comes_last_in_a_tie() -> None:
    assert stall_winner(ROBBERS, [hand("5S"), hand("5H")], 0) == 1
    assert stall_winner(ROBBERS, [hand("5S"), hand("5H")], 1) == 0


def test_stall_winner_scores_as_a_winner_but_has_not_gone_out() -> None:
    sheet = score_round(ROBBERS, [hand("KS"), hand("2S 3S")], None)
    assert sheet == RoundScore((0, 1), 0, False, (0, 5))


def test_stall_winner_refuses_a_last_player_outside_the_round() -> None:
    with pytest.raises(ScoringError):
        stall_winner(ROBBERS, [hand("5S"), hand("5H")], 2)
    with pytest.raises(ScoringError, match="seat 3"):
        score_round(ROBBERS, [hand("5S"), hand("5H")], None, last_player=3)


# --- impossible round facts -------------------------------------------------------------------


def test_out_with_cards_in_hand_is_refused() -> None:
    with pytest.raises(ScoringError, match="seat 0 cannot have gone out"):
        score_round(ROBBERS, [hand("5S"), hand("")], out=0)


def test_scoring_error_is_a_value_error() -> None:
    assert issubclass(ScoringError, ValueError)


def test_out_naming_a_seat_not_in_the_round_is_refused() -> None:
    with pytest.raises(ScoringError, match="seat 5"):
        score_round(ROBBERS, [hand("5S"), hand("")], out=5)


def test_a_stalled_round_with_an_empty_hand_is_refused() -> None:
    with pytest.raises(ScoringError, match="seat 1 has an empty hand"):
        score_round(ROBBERS, [hand("5S"), hand("")], out=None)


def test_two_empty_hands_are_refused() -> None:
    with pytest.raises(ScoringError, match="only one seat"):
        score_round(ROBBERS, [hand(""), hand(""), hand("2S")], out=0)


def test_a_round_needs_two_seats() -> None:
    with pytest.raises(ScoringError, match="at least 2"):
        score_round(ROBBERS, [hand("")], out=0)


def test_round_record_checks_itself() -> None:
    with pytest.raises(ScoringError):
        RoundScore((0, 1), 2, True, (0, 1))
    with pytest.raises(ScoringError):
        RoundScore((1, 0), 0, True, (0, 1))
    with pytest.raises(ScoringError):
        RoundScore((0, 1), 0, True, (0,))
    assert RoundScore((1, 3), 3, True, (7, 0)).score_of(1) == 7


def test_a_tie_break_round_is_scored_among_its_seats() -> None:
    sheet = score_round(ROBBERS, [hand("9S"), hand("")], out=3, seats=(1, 3))
    assert sheet == RoundScore((1, 3), 3, True, (9, 0))
    # the stall tie-break uses seat numbers too: after seat 3 comes seat 1
    tied = score_round(ROBBERS, [hand("9S"), hand("9H")], None, last_player=3, seats=(1, 3))
    assert tied.winner == 1


# --- hypothesis: round properties -------------------------------------------------------------

cards = st.integers(min_value=0, max_value=JOKER)


@st.composite
def round_facts(draw: st.DrawFn) -> tuple[list[list[int]], int | None, list[int]]:
    """Hands (one possibly emptied by going out), who went out, and redemption counts."""
    count = draw(st.integers(min_value=2, max_value=6))
    hands = [draw(st.lists(cards, min_size=1, max_size=14)) for _ in range(count)]
    out = draw(st.none() | st.integers(min_value=0, max_value=count - 1))
    if out is not None:
        hands[out] = []
    redeemed = draw(st.lists(st.integers(0, 4), min_size=count, max_size=count))
    return hands, out, redeemed


@given(round_facts(), st.sampled_from([RUMMIKUB, ROBBERS]))
def test_plus_minus_rounds_sum_to_zero(
    facts: tuple[list[list[int]], int | None, list[int]], base: RuleSet
) -> None:
    hands, out, redeemed = facts
    rules = dataclasses.replace(base, scoring="plus_minus")
    sheet = score_round(rules, hands, out, redeemed)
    assert sheet.scores is not None
    assert sum(sheet.scores) == 0
    winner_score = sheet.scores[sheet.winner]
    assert winner_score >= 0
    assert all(s <= 0 for i, s in enumerate(sheet.scores) if i != sheet.winner)


@given(round_facts(), st.integers(min_value=0, max_value=30))
def test_penalty_totals_are_the_cards_left_minus_bonuses(
    facts: tuple[list[list[int]], int | None, list[int]], bonus: int
) -> None:
    hands, out, redeemed = facts
    rules = dataclasses.replace(ROBBERS, redeem_bonus=bonus)
    sheet = score_round(rules, hands, out, redeemed)
    assert sheet.scores is not None
    left = sum(robbers_value(c) for i, h in enumerate(hands) if i != sheet.winner for c in h)
    assert sum(sheet.scores) == left - bonus * sum(redeemed)
    assert sheet.scores[sheet.winner] == -bonus * redeemed[sheet.winner]
    assert sheet.went_out == (out is not None)


@given(round_facts())
def test_stalled_winner_has_fewest_cards(
    facts: tuple[list[list[int]], int | None, list[int]],
) -> None:
    hands, out, _ = facts
    sheet = score_round(ROBBERS, hands, out)
    if out is None:
        assert len(hands[sheet.winner]) == min(len(h) for h in hands)
    else:
        assert sheet.winner == out


# --- match results ----------------------------------------------------------------------------


def out_round(
    rules: RuleSet, seats: tuple[int, ...], winner: int, penalties: list[int]
) -> RoundScore:
    """A round won by going out, with the given scores (as a scoring service would record)."""
    scores = None if rules.scoring == "none" else tuple(penalties)
    return RoundScore(seats, winner, True, scores)


def stall_round(
    rules: RuleSet, seats: tuple[int, ...], winner: int, penalties: list[int]
) -> RoundScore:
    scores = None if rules.scoring == "none" else tuple(penalties)
    return RoundScore(seats, winner, False, scores)


ALL3 = (0, 1, 2)


def play(rules: RuleSet, seats: int, rounds: list[RoundScore]) -> list[MatchStatus]:
    """The status after each prefix of ``rounds`` (a match is judged after every round)."""
    return [match_result(rules, seats, rounds[:n]) for n in range(len(rounds) + 1)]


def test_a_match_before_any_round() -> None:
    status = match_result(ROBBERS, 3, [])
    assert not status.over and status.winners == ()
    assert status.next_seats == ALL3 and not status.next_is_tie_break
    assert status.standings.totals == (0, 0, 0)


def test_lowest_total_five_rounds_lowest_cumulative_penalty_wins() -> None:
    rounds = [
        out_round(ROBBERS, ALL3, 0, [0, 20, 30]),
        out_round(ROBBERS, ALL3, 1, [15, 0, 30]),
        out_round(ROBBERS, ALL3, 2, [10, 10, 0]),
        out_round(ROBBERS, ALL3, 0, [0, 5, 5]),
        out_round(ROBBERS, ALL3, 2, [40, 20, 0]),
    ]
    statuses = play(ROBBERS, 3, rounds)
    assert all(not s.over and s.next_seats == ALL3 for s in statuses[:5])
    final = statuses[5]
    assert final.over and final.winners == (1,)
    assert final.standings.totals == (65, 55, 65)
    assert final.standings.outs == (2, 1, 2)
    assert final.next_seats == () and final.tie_break_rounds_played == 0


def test_lowest_total_number_of_rounds_is_the_option() -> None:
    rules = rule_set("robbers", {"match_rounds": 2})
    rounds = [out_round(rules, (0, 1), 0, [0, 5]), out_round(rules, (0, 1), 0, [0, 5])]
    assert match_result(rules, 2, rounds).winners == (0,)
    assert not match_result(rules, 2, rounds[:1]).over


def test_lowest_total_tie_is_broken_by_most_rounds_gone_out() -> None:
    rounds = [
        out_round(ROBBERS, ALL3, 0, [0, 20, 30]),
        out_round(ROBBERS, ALL3, 0, [0, 10, 30]),
        out_round(ROBBERS, ALL3, 1, [30, 0, 30]),
        stall_round(ROBBERS, ALL3, 1, [10, 0, 30]),
        stall_round(ROBBERS, ALL3, 2, [10, 20, 0]),
    ]
    status = match_result(ROBBERS, 3, rounds)
    assert status.standings.totals == (50, 50, 120)
    assert status.standings.outs == (2, 1, 0)
    assert status.over and status.winners == (0,)


def test_stalled_wins_do_not_count_as_rounds_gone_out() -> None:
    # seat 1 wins more rounds, but only by stalls: seat 0 went out more often
    tie = [
        out_round(ROBBERS, ALL3, 0, [0, 10, 30]),
        stall_round(ROBBERS, ALL3, 1, [10, 0, 30]),
        stall_round(ROBBERS, ALL3, 1, [10, 0, 30]),
        out_round(ROBBERS, ALL3, 0, [0, 20, 30]),
        stall_round(ROBBERS, ALL3, 1, [10, 0, 30]),
    ]
    status = match_result(ROBBERS, 3, tie)
    assert status.standings.totals == (30, 30, 150)
    assert status.standings.wins == (2, 3, 0)
    assert status.standings.outs == (2, 0, 0)
    assert status.winners == (0,)


TIED_AFTER_FIVE = [
    out_round(ROBBERS, ALL3, 0, [0, 20, 30]),
    out_round(ROBBERS, ALL3, 1, [20, 0, 30]),
    out_round(ROBBERS, ALL3, 0, [0, 10, 30]),
    out_round(ROBBERS, ALL3, 1, [10, 0, 30]),
    stall_round(ROBBERS, ALL3, 2, [5, 5, 0]),
]


def test_lowest_total_tie_on_total_and_outs_plays_an_extra_round_among_the_tied_only() -> None:
    status = match_result(ROBBERS, 3, TIED_AFTER_FIVE)
    assert status.standings.totals == (35, 35, 120)
    assert status.standings.outs == (2, 2, 0)
    assert not status.over and status.winners == ()
    assert status.next_seats == (0, 1) and status.next_is_tie_break


def test_the_extra_round_decides_the_tie() -> None:
    extra = score_round(ROBBERS, [hand("KS 2S"), hand("")], out=1, seats=(0, 1))
    status = match_result(ROBBERS, 3, [*TIED_AFTER_FIVE, extra])
    assert status.over and status.winners == (1,)
    assert status.standings.totals == (47, 35, 120)
    assert status.standings.played == (6, 6, 5)
    assert status.tie_break_rounds_played == 1


def test_an_extra_round_with_the_wrong_seats_is_refused() -> None:
    with pytest.raises(ScoringError, match="due to play"):
        match_result(ROBBERS, 3, [*TIED_AFTER_FIVE, out_round(ROBBERS, ALL3, 0, [0, 5, 5])])
    with pytest.raises(ScoringError, match="due to play"):
        match_result(ROBBERS, 3, [out_round(ROBBERS, (0, 1), 0, [0, 5])])


def level_stall(rules: RuleSet, seats: tuple[int, ...]) -> RoundScore:
    """An extra round that leaves the tied seats level: a stall where the loser's penalty is
    cancelled by the redemption bonus (Decision 9), so every seat scores 0 and nobody went out."""
    hands = [hand("2S")] + [hand("2H 3H")] * (len(seats) - 1)
    redeemed = [0] + [1] * (len(seats) - 1)
    sheet = score_round(rules, hands, None, redeemed, seats=seats)
    assert sheet.scores == (0,) * len(seats) and sheet.winner == seats[0]
    return sheet


def test_tied_seats_share_the_win_after_the_allowed_extra_rounds() -> None:
    rules = rule_set("robbers", {"redeem_bonus": 5})
    rounds = list(TIED_AFTER_FIVE)
    for extra in range(1, 4):
        status = match_result(rules, 3, rounds)
        assert not status.over and status.next_seats == (0, 1)
        assert status.tie_break_rounds_played == extra - 1
        rounds.append(level_stall(rules, (0, 1)))
    status = match_result(rules, 3, rounds)
    assert status.over and status.winners == (0, 1)
    assert status.tie_break_rounds_played == 3
    with pytest.raises(ScoringError, match="after the match ended"):
        match_result(rules, 3, [*rounds, level_stall(rules, (0, 1))])


def test_a_tied_extra_round_is_followed_by_another_that_can_decide() -> None:
    rules = rule_set("robbers", {"redeem_bonus": 5})
    rounds = [*TIED_AFTER_FIVE, level_stall(rules, (0, 1))]
    assert match_result(rules, 3, rounds).next_seats == (0, 1)
    rounds.append(out_round(rules, (0, 1), 0, [0, 12]))
    status = match_result(rules, 3, rounds)
    assert status.over and status.winners == (0,)
    assert status.tie_break_rounds_played == 2


def test_going_out_in_an_extra_round_breaks_a_tie_on_its_penalty() -> None:
    # the loser's penalty is cancelled by a redemption, but the winner went out: most outs wins
    rules = rule_set("robbers", {"redeem_bonus": 5})
    extra = score_round(rules, [hand("5H"), hand("")], out=1, redeemed=[1, 0], seats=(0, 1))
    assert extra.scores == (0, 0)
    status = match_result(rules, 3, [*TIED_AFTER_FIVE, extra])
    assert status.winners == (1,)


def test_tie_break_rounds_zero_shares_the_win_at_once() -> None:
    rules = rule_set("robbers", {"tie_break_rounds": 0})
    status = match_result(rules, 3, TIED_AFTER_FIVE)
    assert status.over and status.winners == (0, 1)


def test_three_tied_seats_narrow_to_two_in_an_extra_round() -> None:
    rules = rule_set("robbers", {"redeem_bonus": 5, "match_rounds": 3})
    rounds = [
        out_round(rules, ALL3, 0, [0, 10, 10]),
        out_round(rules, ALL3, 1, [10, 0, 10]),
        out_round(rules, ALL3, 2, [10, 10, 0]),
    ]
    status = match_result(rules, 3, rounds)
    assert status.next_seats == ALL3 and status.next_is_tie_break
    # stall: seats 0 and 1 score 0 (seat 1 by a redemption), seat 2 scores 9
    extra = score_round(rules, [hand("2S"), hand("2H 3H"), hand("4H 5H")], None, [0, 1, 0])
    assert extra.scores == (0, 0, 9)
    status = match_result(rules, 3, [*rounds, extra])
    assert not status.over and status.next_seats == (0, 1)
    final = match_result(rules, 3, [*rounds, extra, out_round(rules, (0, 1), 1, [7, 0])])
    assert final.winners == (1,)


def test_lowest_total_with_plus_minus_scores_counts_the_highest_total_as_best() -> None:
    rules = rule_set("rummikub", {"match": "lowest_total", "match_rounds": 2})
    rounds = [out_round(rules, (0, 1), 0, [20, -20]), out_round(rules, (0, 1), 1, [-5, 5])]
    assert match_result(rules, 2, rounds).winners == (0,)


def test_lowest_total_without_scores_falls_back_to_rounds_gone_out() -> None:
    rules = rule_set("robbers-classic", {"match": "lowest_total", "match_rounds": 3})
    rounds = [
        out_round(rules, (0, 1), 1, []),
        out_round(rules, (0, 1), 0, []),
        out_round(rules, (0, 1), 1, []),
    ]
    status = match_result(rules, 2, rounds)
    assert status.standings.totals is None
    assert status.winners == (1,)


# most_wins (rummikub)


def test_most_wins_as_many_games_as_players() -> None:
    rounds = [
        out_round(RUMMIKUB, ALL3, 0, [30, -10, -20]),
        out_round(RUMMIKUB, ALL3, 0, [12, -6, -6]),
        stall_round(RUMMIKUB, ALL3, 1, [-4, 13, -9]),
    ]
    statuses = play(RUMMIKUB, 3, rounds)
    assert [s.over for s in statuses] == [False, False, False, True]
    assert statuses[3].winners == (0,)
    assert statuses[3].standings.wins == (2, 1, 0)
    assert statuses[3].standings.totals == (38, -3, -35)


def test_most_wins_tie_goes_to_the_higher_cumulative_score() -> None:
    rounds = [
        out_round(RUMMIKUB, ALL3, 0, [30, -10, -20]),
        out_round(RUMMIKUB, ALL3, 1, [-25, 50, -25]),
        out_round(RUMMIKUB, ALL3, 2, [-5, -5, 10]),
    ]
    status = match_result(RUMMIKUB, 3, rounds)
    assert status.standings.totals == (0, 35, -35)
    assert status.over and status.winners == (1,)


def test_most_wins_higher_score_beats_more_rounds_gone_out() -> None:
    rules = rule_set("rummikub", {"match_rounds": 2})
    rounds = [out_round(rules, (0, 1), 0, [5, -5]), stall_round(rules, (0, 1), 1, [-9, 9])]
    assert match_result(rules, 2, rounds).winners == (1,)


def test_most_wins_tie_on_wins_and_score_then_rounds_gone_out() -> None:
    rules = rule_set("rummikub", {"match_rounds": 2})
    rounds = [out_round(rules, (0, 1), 0, [9, -9]), stall_round(rules, (0, 1), 1, [-9, 9])]
    assert match_result(rules, 2, rounds).winners == (0,)


def test_most_wins_full_tie_plays_extra_rounds_then_shares() -> None:
    rules = rule_set("rummikub", {"match_rounds": 2})
    rounds = [out_round(rules, (0, 1), 0, [9, -9]), out_round(rules, (0, 1), 1, [-9, 9])]
    status = match_result(rules, 2, rounds)
    assert not status.over and status.next_seats == (0, 1) and status.next_is_tie_break
    decided = match_result(rules, 2, [*rounds, out_round(rules, (0, 1), 1, [-3, 3])])
    assert decided.winners == (1,) and decided.standings.wins == (1, 2)
    share = rule_set("rummikub", {"match_rounds": 2, "tie_break_rounds": 0})
    assert match_result(share, 2, rounds).winners == (0, 1)


def test_most_wins_extra_round_is_won_by_its_winner_even_at_zero_points() -> None:
    rules = rule_set("rummikub", {"match_rounds": 2})
    rounds = [out_round(rules, (0, 1), 0, [9, -9]), out_round(rules, (0, 1), 1, [-9, 9])]
    # a blocked extra game with equal racks: both score 0, the stall tie-break picks seat 1
    extra = score_round(rules, [hand("5S"), hand("5H")], None, last_player=0)
    assert extra.scores == (0, 0) and extra.winner == 1
    assert match_result(rules, 2, [*rounds, extra]).winners == (1,)


def test_most_wins_extra_rounds_only_among_the_tied() -> None:
    rules = rule_set("rummikub", {"match_rounds": 3})
    rounds = [
        out_round(rules, ALL3, 0, [10, -5, -5]),
        out_round(rules, ALL3, 2, [-5, -5, 10]),
        stall_round(rules, ALL3, 1, [-2, 4, -2]),
    ]
    status = match_result(rules, 3, rounds)
    assert status.standings.totals == (3, -6, 3)
    assert status.next_seats == (0, 2)


# first_out


def test_first_out_first_seat_to_go_out_three_times() -> None:
    rules = rule_set("robbers", {"match": "first_out"})
    rounds = [
        out_round(rules, ALL3, 0, [0, 5, 5]),
        out_round(rules, ALL3, 1, [5, 0, 5]),
        out_round(rules, ALL3, 1, [5, 0, 5]),
        out_round(rules, ALL3, 0, [0, 5, 5]),
        out_round(rules, ALL3, 2, [5, 5, 0]),
        out_round(rules, ALL3, 0, [0, 5, 5]),
    ]
    statuses = play(rules, 3, rounds)
    assert [s.over for s in statuses] == [False] * 6 + [True]
    assert statuses[6].winners == (0,)
    assert statuses[6].standings.outs == (3, 2, 1)
    assert not any(s.next_is_tie_break for s in statuses)


def test_first_out_counts_only_real_outs() -> None:
    rules = rule_set("robbers", {"match": "first_out", "match_target": 2})
    rounds = [
        stall_round(rules, ALL3, 1, [5, 0, 5]),
        stall_round(rules, ALL3, 1, [5, 0, 5]),
        stall_round(rules, ALL3, 1, [5, 0, 5]),
        out_round(rules, ALL3, 2, [5, 5, 0]),
    ]
    status = match_result(rules, 3, rounds)
    assert status.standings.wins == (0, 3, 1)
    assert not status.over and status.next_seats == ALL3
    status = match_result(rules, 3, [*rounds, out_round(rules, ALL3, 2, [5, 5, 0])])
    assert status.over and status.winners == (2,)


def test_first_out_is_not_limited_by_match_rounds() -> None:
    rules = rule_set("robbers", {"match": "first_out", "match_rounds": 1, "match_target": 2})
    rounds = [out_round(rules, (0, 1), 0, [0, 5]), out_round(rules, (0, 1), 1, [5, 0])]
    assert not match_result(rules, 2, rounds).over


# single


def test_single_round_match_robbers_classic() -> None:
    sheet = score_round(ROBBERS_CLASSIC, [hand("KS"), hand("")], out=1)
    assert not match_result(ROBBERS_CLASSIC, 2, []).over
    status = match_result(ROBBERS_CLASSIC, 2, [sheet])
    assert status.over and status.winners == (1,)
    assert status.standings.totals is None and status.standings.outs == (0, 1)
    with pytest.raises(ScoringError, match="after the match ended"):
        match_result(ROBBERS_CLASSIC, 2, [sheet, sheet])


def test_single_round_won_by_a_stall() -> None:
    sheet = score_round(ROBBERS_CLASSIC, [hand("KS 2S"), hand("3S")], out=None)
    assert match_result(ROBBERS_CLASSIC, 2, [sheet]).winners == (1,)


def test_rounds_must_carry_scores_exactly_when_the_rules_score() -> None:
    with pytest.raises(ScoringError, match="scores"):
        match_result(ROBBERS, 2, [RoundScore((0, 1), 0, True, None)])
    with pytest.raises(ScoringError, match="scores"):
        match_result(ROBBERS_CLASSIC, 2, [RoundScore((0, 1), 0, True, (0, 5))])


def test_a_match_needs_two_seats() -> None:
    with pytest.raises(ScoringError):
        match_result(ROBBERS, 1, [])


# --- hypothesis: every match ends with a result -----------------------------------------------


def random_round(
    data: st.DataObject, rules: RuleSet, seats: tuple[int, ...], may_stall: bool = True
) -> RoundScore:
    """A round among ``seats`` with random hands, an out or a stall, and redemptions."""
    hands = [data.draw(st.lists(cards, min_size=1, max_size=6)) for _ in seats]
    outs = st.sampled_from(seats)
    out = data.draw(st.none() | outs if may_stall else outs)
    if out is not None:
        hands[seats.index(out)] = []
    redeemed = data.draw(st.lists(st.integers(0, 2), min_size=len(seats), max_size=len(seats)))
    last = data.draw(st.none() | st.sampled_from(seats))
    return score_round(rules, hands, out, redeemed, last, seats=seats)


ranked_rules = st.builds(
    lambda base, rounds, extra, bonus, match: dataclasses.replace(
        base, match_rounds=rounds, tie_break_rounds=extra, redeem_bonus=bonus, match=match
    ),
    st.sampled_from([ROBBERS, RUMMIKUB, ROBBERS_CLASSIC]),
    st.none() | st.integers(1, 4),
    st.integers(0, 3),
    st.sampled_from([0, 5, 30]),
    st.sampled_from(["lowest_total", "most_wins"]),
)


@settings(max_examples=150, deadline=None)
@given(ranked_rules, st.integers(min_value=2, max_value=5), st.data())
def test_a_ranked_match_ends_within_its_rounds_plus_tie_break_rounds(
    rules: RuleSet, seats: int, data: st.DataObject
) -> None:
    limit = rules.rounds_for(seats) + rules.tie_break_rounds
    rounds: list[RoundScore] = []
    status = match_result(rules, seats, rounds)
    while not status.over:
        assert len(rounds) < limit
        assert status.next_is_tie_break == (len(rounds) >= rules.rounds_for(seats))
        rounds.append(random_round(data, rules, status.next_seats))
        status = match_result(rules, seats, rounds)
    assert len(rounds) >= rules.rounds_for(seats)
    assert status.winners and set(status.winners) <= set(range(seats))
    assert status.next_seats == ()
    if len(status.winners) > 1:
        assert len(rounds) == limit
    if rules.scoring == "plus_minus":
        assert status.standings.totals is not None and sum(status.standings.totals) == 0


@settings(max_examples=100, deadline=None)
@given(
    st.sampled_from([ROBBERS, RUMMIKUB, ROBBERS_CLASSIC]),
    st.integers(min_value=2, max_value=5),
    st.integers(min_value=1, max_value=4),
    st.data(),
)
def test_a_first_out_match_ends_when_a_seat_reaches_the_target(
    base: RuleSet, seats: int, target: int, data: st.DataObject
) -> None:
    rules = dataclasses.replace(base, match="first_out", match_target=target)
    rounds: list[RoundScore] = []
    status = match_result(rules, seats, rounds)
    while not status.over:
        assert sum(status.standings.outs) <= seats * (target - 1)
        assert status.next_seats == tuple(range(seats))
        stalls = sum(not r.went_out for r in rounds)
        rounds.append(random_round(data, rules, status.next_seats, may_stall=stalls < 5))
        status = match_result(rules, seats, rounds)
    (winner,) = status.winners
    assert status.standings.outs[winner] == target
    assert rounds[-1].winner == winner and rounds[-1].went_out
