"""The judgement of one play against RULES.md: every line of "What every turn must satisfy",
every Decision about a single play (1, 2, 3, 4 and 12), the points figure, ``played`` /
``to_hand``, ``out`` and the canonical layout."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence

import pytest

from shared.core.cards import JOKER, card_str, parse_card
from shared.core.judgement import REJECTION_CODES, Verdict, judge_play
from shared.core.melds import best_reading, readings
from shared.core.rulesets import PRESETS, RuleSet, RuleSetError, check_seats, rule_set

POLICIES = ("to_hand", "never", "must_replay")


def cards(text: str) -> list[int]:
    """``"5H JK 7H"`` -> card ints."""
    return [parse_card(t) for t in text.split()]


def text(melds: Sequence[Sequence[int]]) -> list[str]:
    """Card ints of several melds -> ``"5H JK 7H"`` strings."""
    return [" ".join(card_str(c) for c in meld) for meld in melds]


def loose(cs: Sequence[int]) -> str:
    """Loose cards as one string, in the order given."""
    return " ".join(card_str(c) for c in cs)


def play(
    rules: RuleSet | str,
    table: Sequence[str],
    hand: str,
    layout: Sequence[str],
    opened: bool = True,
    **options: object,
) -> Verdict:
    """Judge a play written in card notation."""
    if isinstance(rules, str):
        rules = rule_set(rules, options)
    return judge_play(
        rules, [cards(m) for m in table], cards(hand), opened, [cards(m) for m in layout]
    )


def refused(verdict: Verdict, code: str, *named: str) -> None:
    """The verdict is a refusal with ``code`` whose reason names every text in ``named``."""
    assert not verdict.legal
    assert verdict.code == code
    assert code in REJECTION_CODES
    assert verdict.reason
    for name in named:
        assert name in verdict.reason, (name, verdict.reason)


# ---------------------------------------------------------------- what every turn must satisfy


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_table_card_stays_on_the_table(preset: str) -> None:
    """A natural table card missing from the layout is refused, naming the card."""
    verdict = play(preset, ["4C 5C 6C 7C"], "8C", ["5C 6C 7C 8C"])
    refused(verdict, "table_card_missing", "4C")
    assert verdict.to_hand == (parse_card("4C"),)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_table_card_may_not_go_back_to_the_hand_even_with_copies(preset: str) -> None:
    """Counting copies: two 6C on the table and one in the layout means one left the table."""
    verdict = play(preset, ["4C 5C 6C", "6C 7C 8C"], "9C", ["4C 5C 6C 7C 8C 9C"])
    refused(verdict, "table_card_missing", "6C")


def test_only_a_joker_the_rule_set_lets_go_may_leave() -> None:
    """A joker may leave the table under ``to_hand`` (redeemed), never under the other policies."""
    table, hand, layout = ["6D JK 8D"], "7D", ["6D 7D 8D"]
    assert play("robbers", table, hand, layout).legal
    for policy in ("never", "must_replay"):
        refused(play("robbers", table, hand, layout, joker_policy=policy), "joker_left_table")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_meld_on_the_table_must_be_valid(preset: str) -> None:
    """An invalid meld is refused with ``invalid_meld``, naming its position and its cards."""
    verdict = play(preset, ["4C 5C 6C"], "8C 9H 5C", ["4C 5C 6C", "8C 9H 5C"])
    refused(verdict, "invalid_meld", "meld 2", "[9H 5C 8C]")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_an_untouched_invalid_meld_is_still_judged(preset: str) -> None:
    """Validity applies to every meld of the layout, including one made of hand cards only."""
    verdict = play(preset, ["4C 5C 6C"], "9H 9S 8D", ["4C 5C 6C", "9H 9S 8D"])
    refused(verdict, "invalid_meld", "[9S 9H 8D]")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_at_least_one_card_from_the_hand(preset: str) -> None:
    """A layout that adds no card from the hand is refused with ``no_card_played``."""
    verdict = play(preset, ["4C 5C 6C 7C 8C 9C"], "2H", ["4C 5C 6C", "7C 8C 9C"])
    refused(verdict, "no_card_played")
    refused(play(preset, ["4C 5C 6C"], "2H", ["4C 5C 6C"]), "no_card_played")
    refused(play(preset, [], "2H", []), "no_card_played")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_cards_from_the_hand_were_in_the_hand(preset: str) -> None:
    """A card neither on the table nor in the hand is refused, naming the card."""
    verdict = play(preset, ["4C 5C 6C"], "2H", ["4C 5C 6C 7C"])
    refused(verdict, "card_not_in_hand", "7C")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_copies_in_the_hand_are_counted(preset: str) -> None:
    """Playing a card twice when the hand holds it once is refused, naming the card."""
    verdict = play(preset, ["4C 5C 6C 7C 8C"], "6C 6C", ["4C 5C 6C", "6C 7C 8C"])
    assert verdict.legal
    verdict = play(preset, ["4C 5C 6C", "8C 9C 10C"], "7C", ["4C 5C 6C 7C", "7C 8C 9C 10C"])
    refused(verdict, "card_not_in_hand", "7C", "2 time(s)", "holds 1")


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_no_meld_has_fewer_than_three_cards(preset: str) -> None:
    """A one- or two-card meld is refused with ``meld_too_small``, naming the meld."""
    refused(
        play(preset, ["4C 5C 6C 7C 8C"], "9C", ["4C 5C", "6C 7C 8C 9C"]),
        "meld_too_small",
        "meld 1",
        "[4C 5C]",
    )
    refused(
        play(preset, ["4C 5C 6C 7C"], "8C", ["4C 5C 6C 7C 8C", "2H"]),
        "card_not_in_hand",
        "2H",
    )
    refused(
        play(preset, ["4C 5C 6C 7C"], "2H 8C", ["4C 5C 6C 7C 8C", "2H"]),
        "meld_too_small",
        "meld 2",
        "[2H]",
    )
    refused(play(preset, ["4C 5C 6C"], "7C", ["4C 5C 6C 7C", ""]), "meld_too_small", "meld 2")


# ------------------------------------------------------------------------------ Decision 1


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_decision_1_a_rearrangement_alone_is_not_a_play(preset: str) -> None:
    """In every preset a turn that only rearranges the table is not a play."""
    table = ["4S 5S 6S 7S 8S 9S", "8H 8D 8C"]
    refused(play(preset, table, "2D", ["4S 5S 6S", "7S 8S 9S", "8H 8D 8C"]), "no_card_played")
    refused(play(preset, table, "2D", ["4S 5S 6S 7S", "8S 8H 8D 8C", "9S"]), "no_card_played")
    refused(play(preset, table, "2D", ["4S 5S 6S 7S", "8S 8H 8D 8C", "9S 2D"]), "meld_too_small")
    assert play(preset, table, "10S", ["4S 5S 6S", "7S 8S 9S 10S", "8H 8D 8C"]).legal


# ------------------------------------------------------------------------------ Decision 2


def test_decision_2_opening_points_zero_means_opened_from_the_first_turn() -> None:
    """With ``opening_points: 0`` a seat that has not opened may rearrange the table at once."""
    table, hand, layout = ["4C 5C 6C 7C 8C"], "6C", ["4C 5C 6C", "6C 7C 8C"]
    for preset in ("robbers", "rummikub"):
        refused(play(preset, table, hand, layout, opened=False), "table_touched_before_opening")
        verdict = play(preset, table, hand, layout, opened=False, opening_points=0)
        assert verdict.legal
        assert not verdict.opening
    assert play("robbers-classic", table, hand, layout, opened=False).legal


def test_decision_2_no_opening_needs_no_points() -> None:
    """Without an opening a single low meld from the hand is a legal first play."""
    verdict = play("robbers", [], "2S 2H 2D", ["2S 2H 2D"], opened=False, opening_points=0)
    assert verdict.legal
    assert verdict.points == 6
    refused(play("robbers", [], "2S 2H 2D", ["2S 2H 2D"], opened=False), "opening_too_low", "6")


def test_decision_2_redeeming_at_once_without_an_opening() -> None:
    """With no opening threshold a seat may redeem a table joker on its first turn."""
    verdict = play("robbers", ["6D JK 8D"], "7D", ["6D 7D 8D"], opened=False, opening_points=0)
    assert verdict.legal
    assert verdict.to_hand == (JOKER,)


# ------------------------------------------------------------------------------ Decision 3


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_decision_3_a_meld_holds_a_natural_card(preset: str) -> None:
    """``JK JK JK`` (or four jokers) is not a meld; one natural card makes it one."""
    rules = rule_set(preset, {"jokers": 4})
    assert readings(cards("JK JK JK"), rules) == ()
    assert readings(cards("JK JK JK JK"), rules) == ()
    assert readings(cards("JK JK JK 5H"), rules) != ()
    verdict = play(rules, ["4C 5C 6C"], "JK JK JK 7C", ["4C 5C 6C 7C", "JK JK JK"])
    refused(verdict, "invalid_meld", "meld 2", "[JK JK JK]", "only jokers")


# ------------------------------------------------------------------------------ Decision 4


def test_decision_4_to_hand_redeems_with_the_natural_card() -> None:
    """``to_hand``: the joker standing for 7D goes to the hand when 7D is played."""
    verdict = play("robbers", ["6D JK 8D"], "7D 2C", ["6D 7D 8D"])
    assert verdict.legal
    assert verdict.played == (parse_card("7D"),)
    assert verdict.to_hand == (JOKER,)
    assert not verdict.out


def test_decision_4_to_hand_redeemed_joker_may_be_replayed_at_once() -> None:
    """``to_hand``: the redeemed joker may be played again in the same layout."""
    verdict = play("robbers", ["6D JK 8D"], "7D 2C 3C", ["6D 7D 8D", "2C 3C JK"])
    assert verdict.legal
    assert verdict.to_hand == ()
    assert Counter(verdict.played) == Counter(cards("7D 2C 3C"))
    assert verdict.out


def test_decision_4_to_hand_needs_a_card_the_joker_stands_for() -> None:
    """``to_hand``: a joker that leaves without its natural card being played is refused."""
    table = ["JK 8D 9D 10D", "6S 6H 6C"]  # the joker is 7D or JD
    verdict = play("robbers", table, "6D", ["8D 9D 10D", "6S 6H 6D 6C"])
    refused(verdict, "joker_not_redeemed", "1 joker(s)")
    assert play("robbers", table, "JD", ["8D 9D 10D JD", "6S 6H 6C"]).legal
    assert play("robbers", table, "7D", ["7D 8D 9D 10D", "6S 6H 6C"]).legal


def test_decision_4_to_hand_either_missing_suit_redeems_a_three_card_set() -> None:
    """``to_hand``: in a 3-card set either missing suit redeems the joker; a present one cannot."""
    for natural in ("7D", "7C"):
        verdict = play("robbers", ["7S 7H JK"], natural, [f"7S 7H {natural}"])
        assert verdict.legal, natural
        assert verdict.to_hand == (JOKER,)
    refused(play("robbers", ["7S 7H JK"], "7S", ["7S 7H 7S"]), "invalid_meld", "suit S")


def test_decision_4_to_hand_four_card_set_has_one_missing_suit() -> None:
    """``to_hand``: in a 4-card set the joker stands for the one missing suit only."""
    assert play("robbers", ["7S 7H 7D JK"], "7C", ["7S 7H 7D 7C"]).legal
    table = ["7S 7H 7D JK", "8D 9D 10D"]
    refused(play("robbers", table, "7D", ["7S 7H 7D", "7D 8D 9D 10D"]), "joker_not_redeemed")
    assert play("robbers", table, "7C 7D", ["7S 7H 7C", "7D 8D 9D 10D"]).legal


def test_decision_4_to_hand_each_joker_needs_a_distinct_natural() -> None:
    """``to_hand``: one 7D cannot redeem two jokers that both stand for 7D."""
    table = ["7S 7H JK", "5D 6D JK"]
    layout = ["7S 7H 7D", "5D 5S 5H", "6D 6S 6H"]
    verdict = play("robbers", table, "7D 5S 5H 6S 6H", layout)
    refused(verdict, "joker_not_redeemed", "2 joker(s)")
    both = play("robbers", table, "7D 7D 5S", ["7S 7H 7D", "5D 6D 7D"])
    assert both.legal
    assert both.to_hand == (JOKER, JOKER)


def test_decision_4_to_hand_one_reading_per_meld() -> None:
    """``to_hand``: two jokers of one meld are redeemed by cards of one reading of that meld.

    ``[9H JK JK]`` reads as a set (two of 9S 9D 9C) or a run (7H 8H, 8H 10H or 10H JH). 9S and
    10H each fit some reading, but no single reading, so they cannot free both jokers.
    """
    table = ["9H JK JK", "JH QH KH", "6S 7S 8S"]
    verdict = play("robbers", table, "9S 10H", ["9H 10H JH QH KH", "6S 7S 8S 9S"])
    refused(verdict, "joker_not_redeemed", "2 joker(s)")
    one = play("robbers", table, "9S 10H", ["9H 10H JH QH KH", "6S 7S 8S 9S JK"])
    assert one.legal
    assert one.to_hand == (JOKER,)
    same_reading = play("robbers", ["9H JK JK"], "7H 8H", ["7H 8H 9H"])
    assert same_reading.legal
    assert same_reading.to_hand == (JOKER, JOKER)
    set_reading = play("robbers", ["9H JK JK"], "9S 9C", ["9S 9H 9C"])
    assert set_reading.legal


def test_decision_4_to_hand_matching_uses_the_meld_before_the_turn() -> None:
    """``to_hand``: a natural the joker could not stand for before the turn does not redeem it."""
    table = ["5C 6C JK", "7C 8C 9C"]  # the joker is 4C or 7C
    refused(play("robbers", table, "10C", ["5C 6C 7C 8C 9C 10C"]), "joker_not_redeemed")
    assert play("robbers", table, "4C", ["4C 5C 6C 7C 8C 9C"]).legal


def test_decision_4_to_hand_table_jokers_are_interchangeable() -> None:
    """``to_hand`` on multisets: jokers are alike, so the joker that leaves may be matched through
    any table meld with a joker. Here [7S 7H JK] stays as it is and the joker of [JK 8D 9D 10D]
    (7D or JD) leaves while 7C is played: legal, because the same end table is reached by
    redeeming the set's joker with 7C and moving the run's joker into its place."""
    table = ["7S 7H JK", "JK 8D 9D 10D"]
    verdict = play("robbers", table, "7C 8C 9C", ["7S 7H JK", "8D 9D 10D", "7C 8C 9C"])
    assert verdict.legal
    assert verdict.to_hand == (JOKER,)
    refused(
        play("robbers", table, "8C 9C 10C", ["7S 7H JK", "8D 9D 10D", "8C 9C 10C"]),
        "joker_not_redeemed",
    )


def test_decision_9_redeemed_jokers_do_not_depend_on_the_table_order() -> None:
    """The verdict counts redeemed jokers (Decision 9's bonus); the count is the same whatever
    the order of the table's melds. [7S 7H JK] can be redeemed by 7D or 7C, [5D 6D JK] only by
    7D; one 7D and one 7C are played, so both jokers are redeemed and replayed."""
    melds = {
        "set": "7S 7H JK",
        "run": "5D 6D JK",
        "s": "7S 8S 9S 10S",
        "h": "7H 8H 9H 10H",
        "d": "7D 8D 9D 10D",
    }
    layout = [
        "7S 7H 7D",
        "5D 6D 7D",
        "7S 7H 7C",
        "8S 9S 10S",
        "8H 9H 10H",
        "8D 9D 10D",
        "2C JK JK",
    ]
    for order in (["set", "run", "s", "h", "d"], ["run", "set", "s", "h", "d"]):
        verdict = play("robbers", [melds[k] for k in order], "7D 7C 2C", layout)
        assert verdict.legal
        assert verdict.to_hand == ()
        assert verdict.redeemed == 2, order
    kept = play("robbers", ["6D JK 8D"], "7D", ["6D 7D 8D"])
    assert kept.redeemed == 1
    assert play("robbers", ["5C 6C JK"], "7C", ["5C 6C 7C JK"]).redeemed == 0


@pytest.mark.parametrize("policy", ["never", "must_replay"])
def test_decision_4_never_and_must_replay_keep_jokers_on_the_table(policy: str) -> None:
    """``never`` / ``must_replay``: a joker leaving the table is refused, naming the policy."""
    verdict = play("robbers", ["6D JK 8D"], "7D", ["6D 7D 8D"], joker_policy=policy)
    refused(verdict, "joker_left_table", "1 joker(s)", f"'{policy}'")


@pytest.mark.parametrize("policy", ["never", "must_replay"])
def test_decision_4_jokers_may_be_freed_and_replayed_or_reread(policy: str) -> None:
    """``never`` / ``must_replay``: a joker replaced and played again, or re-read, is legal."""
    freed = play(
        "robbers", ["7S 7H JK"], "7D 9C 10C", ["7S 7H 7D", "JK 9C 10C"], joker_policy=policy
    )
    assert freed.legal
    assert freed.to_hand == ()
    reread = play("robbers", ["5C 6C JK"], "7C", ["5C 6C 7C JK"], joker_policy=policy)
    assert reread.legal


POSITIONS: list[tuple[list[str], str, list[str]]] = [
    (["7S 7H JK"], "7D", ["7S 7H 7D"]),
    (["7S 7H JK"], "7D 9C 10C", ["7S 7H 7D", "JK 9C 10C"]),
    (["5C 6C JK", "7C 8C 9C"], "10C", ["5C 6C 7C 8C 9C 10C"]),
    (["5C 6C JK"], "7C", ["5C 6C 7C JK"]),
    (["9H JK JK"], "7H 8H", ["7H 8H 9H"]),
    (["9H JK JK"], "7H 8H", ["7H 8H 9H JK"]),
    (["9H JK JK"], "7H 8H 2S 3S", ["7H 8H 9H", "2S 3S JK JK"]),
    (["4C 5C 6C"], "7C", ["4C 5C 6C 7C"]),
]


@pytest.mark.parametrize(("table", "hand", "layout"), POSITIONS)
def test_decision_4_never_and_must_replay_judge_the_same(
    table: list[str], hand: str, layout: list[str]
) -> None:
    """At the level of one play ``never`` and ``must_replay`` give identical verdicts."""
    for preset in ("robbers", "robbers-classic", "rummikub"):
        never = play(preset, table, hand, layout, joker_policy="never")
        replay = play(preset, table, hand, layout, joker_policy="must_replay")
        # the reason quotes the policy's name; everything else is identical
        assert dataclasses.replace(never, reason=None) == dataclasses.replace(replay, reason=None)
        assert never.code == replay.code


@pytest.mark.parametrize("policy", POLICIES)
def test_decision_4_nobody_moves_a_table_card_before_opening(policy: str) -> None:
    """Before opening no table card moves, joker or not, whatever the joker policy."""
    opening = "AS AH AD"
    cases = [  # (table, hand, layout, a joker goes to the hand)
        (["7S 7H JK"], f"7D {opening}", ["7S 7H 7D", opening], True),
        (["7S 7H JK"], f"7D 9C 10C {opening}", ["7S 7H 7D", "JK 9C 10C", opening], False),
        (["4C 5C 6C 7C 8C"], f"6C {opening}", ["4C 5C 6C", "6C 7C 8C", opening], False),
        (["4C 5C 6C"], f"7C {opening}", ["4C 5C 6C 7C", opening], False),
        (["5C 6C JK"], f"7C {opening}", ["5C 6C 7C JK", opening], False),
    ]
    for table, hand, layout, joker_out in cases:
        verdict = play("robbers", table, hand, layout, opened=False, joker_policy=policy)
        refused(
            verdict,
            "table_touched_before_opening",
            f"[{' '.join(sorted(table[0].split(), key=parse_card))}]",
        )
        after_opening = play("robbers", table, hand, layout, opened=True, joker_policy=policy)
        assert after_opening.legal == (policy == "to_hand" or not joker_out)


def test_decision_4_joker_to_hand_before_opening_is_named() -> None:
    """Before opening, a joker taken off an otherwise kept meld is still a table change."""
    verdict = play(
        "robbers", ["7S 7H 7D JK"], "7C AS AH AD", ["7S 7H 7D 7C", "AS AH AD"], opened=False
    )
    refused(verdict, "table_touched_before_opening")


def test_decision_4_untouched_table_before_opening_may_be_reordered() -> None:
    """Before opening the table melds may be listed in any order and any card order."""
    verdict = play(
        "robbers",
        ["4C 5C 6C", "7S 7H JK"],
        "AS AH AD",
        ["JK 7H 7S", "AD AS AH", "6C 4C 5C"],
        opened=False,
    )
    assert verdict.legal
    assert verdict.opening
    assert verdict.points == 45


# ------------------------------------------------------------------------------ Decision 12


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("jokers", 9),
        ("jokers", -1),
        ("opening_points", 101),
        ("min_players", 1),
        ("max_players", 9),
    ],
)
def test_decision_12_limits_are_refused_naming_the_option(option: str, value: int) -> None:
    """Decision 12: 2-8 seats, 0-8 jokers, 0-100 opening points, refused naming the option."""
    for preset in PRESETS:
        with pytest.raises(RuleSetError, match=option) as err:
            rule_set(preset, {option: value})
        assert err.value.option == option


def test_decision_12_seats_and_the_stock() -> None:
    """Decision 12: 2-8 seats, and the deal must leave at least one card in the stock."""
    wide = rule_set("robbers", {"max_players": 8})
    assert [check_seats(wide, n) for n in range(2, 9)] == list(range(2, 9))
    for seats in (1, 9):
        with pytest.raises(RuleSetError, match="seats"):
            check_seats(wide, seats)
    with pytest.raises(RuleSetError, match="stock") as err:
        check_seats(rule_set("robbers", {"hand_size": 27, "max_players": 4}), 4)  # 108 of 108
    assert err.value.option == "hand_size"
    assert check_seats(rule_set("robbers", {"hand_size": 26, "max_players": 4}), 4) == 4


# ------------------------------------------------------------------------------ the opening


def test_opening_threshold_counts_new_melds_from_the_hand() -> None:
    """The opening counts the new melds: below the threshold refused, naming the points."""
    refused(
        play("robbers", [], "KC QC JC", ["KC QC JC"], opened=False), "opening_too_low", "30", "40"
    )
    verdict = play("robbers", [], "KC QC JC 4S 4H 4D", ["JC QC KC", "4S 4H 4D"], opened=False)
    assert verdict.legal
    assert verdict.opening
    assert verdict.points == 42


def test_opening_threshold_is_inclusive() -> None:
    """Exactly the threshold opens; one point less does not."""
    assert play("robbers", [], "10S 10H 10D 10C", ["10S 10H 10D 10C"], opened=False).legal
    refused(
        play("robbers", [], "3S 3H 3D KC QC JC", ["3S 3H 3D", "JC QC KC"], opened=False),
        "opening_too_low",
        "39",
    )


def test_opening_counts_each_meld_at_its_highest_reading() -> None:
    """``[9H JK JK]`` counts 29 in robbers (9H 10H JH), the most of its readings."""
    refused(play("robbers", [], "9H JK JK", ["9H JK JK"], opened=False), "opening_too_low", "29")
    verdict = play("robbers", [], "9H JK JK 4S 4H 4D", ["9H JK JK", "4S 4H 4D"], opened=False)
    assert verdict.legal
    assert verdict.points == 29 + 12
    assert best_reading(cards("9H JK JK"), rule_set("robbers")) is not None
    assert text(verdict.layout) == ["9H JK JK", "4S 4H 4D"]


def test_opening_ace_counts_fifteen_in_robbers_and_one_in_rummikub() -> None:
    """Point values: A 15 and J Q K 10 in robbers; face value 1-13 in rummikub."""
    assert (
        play("robbers", [], "AS 2S 3S", ["AS 2S 3S"], opened=False, opening_points=1).points == 20
    )
    assert (
        play("rummikub", [], "AS 2S 3S", ["AS 2S 3S"], opened=False, opening_points=1).points == 6
    )
    assert (
        play("robbers", [], "JS QS KS", ["JS QS KS"], opened=False, opening_points=1).points == 30
    )
    assert play("rummikub", [], "JS QS KS", ["JS QS KS"], opened=False).points == 36


def test_opening_ignores_the_table_melds() -> None:
    """Table melds left as they are do not count towards the opening."""
    refused(
        play("rummikub", ["10H JH QH"], "AS 2S 3S", ["10H JH QH", "AS 2S 3S"], opened=False),
        "opening_too_low",
        "6",
    )


def test_opening_may_copy_a_table_meld_from_the_hand() -> None:
    """A new meld equal to a table meld, from the hand's second copies, counts as new."""
    verdict = play("rummikub", ["10H JH QH"], "10H JH QH", ["10H JH QH", "QH JH 10H"], opened=False)
    assert verdict.legal
    assert verdict.points == 33


def test_opening_may_not_use_table_cards() -> None:
    """An opening extending a table meld is refused even if the points would suffice."""
    verdict = play(
        "robbers", ["10H JH QH"], "KH AS AH AD", ["10H JH QH KH", "AS AH AD"], opened=False
    )
    refused(verdict, "table_touched_before_opening", "[10H JH QH]")


def test_opening_out_when_the_hand_is_empty() -> None:
    """An opening that plays the whole hand goes out."""
    assert play("robbers", [], "AS AH AD", ["AS AH AD"], opened=False).out
    assert not play("robbers", [], "AS AH AD 2C", ["AS AH AD"], opened=False).out


# ------------------------------------------------------------------------------ points


def test_points_of_a_play_are_the_played_cards() -> None:
    """After opening, points are the value of the played cards only."""
    verdict = play("rummikub", ["4C 5C 6C 7C 8C"], "6C 2H", ["4C 5C 6C", "6C 7C 8C"])
    assert verdict.points == 6
    assert not verdict.opening
    verdict = play("robbers", ["4C 5C 6C 7C 8C"], "AC 2C 3C", ["AC 2C 3C 4C 5C 6C 7C 8C"])
    assert verdict.points == 15 + 2 + 3


def test_points_count_a_played_joker_as_the_card_it_stands_for() -> None:
    """A joker played from the hand counts as the card it stands for in the new layout."""
    verdict = play("rummikub", [], "5H 6H JK", ["5H 6H JK"])
    assert verdict.points == 18  # 5 + 6 + 7
    verdict = play("robbers", ["4C 5C 6C"], "JK", ["4C 5C 6C JK"])
    assert verdict.points == 7  # the joker is 7C, the highest of 3C / 7C


def test_points_are_null_without_point_values() -> None:
    """``robbers-classic`` has no point values: points is None."""
    assert play("robbers-classic", ["4C 5C 6C"], "7C", ["4C 5C 6C 7C"]).points is None
    assert play("robbers-classic", [], "AS AH AD", ["AS AH AD"], opened=False).points is None


# ---------------------------------------------------------------- played / to_hand / out


def test_played_and_to_hand_are_multisets_in_canonical_order() -> None:
    """``played`` = after - before and ``to_hand`` = before - after, loose cards sorted."""
    verdict = play(
        "robbers",
        ["9H JK JK", "QD KD AD"],
        "8H 7H 10S 10C 10D",
        ["10C 10S 10D", "7H 8H 9H", "QD KD AD"],
    )
    assert not verdict.legal  # Q-K-A is not a run with the ace low
    verdict = play(
        "robbers",
        ["9H JK JK", "JD QD KD"],
        "8H 7H 10S 10C 10D",
        ["10C 10S 10D", "7H 8H 9H", "JD QD KD"],
    )
    assert verdict.legal
    assert loose(verdict.played) == "10S 7H 8H 10D 10C"
    assert verdict.to_hand == (JOKER, JOKER)
    assert not verdict.out


def test_out_when_the_hand_is_emptied() -> None:
    """``out`` is true exactly when no card is left in the hand after the play."""
    assert play("robbers", ["4C 5C 6C"], "7C", ["4C 5C 6C 7C"]).out
    assert not play("robbers", ["4C 5C 6C"], "7C 7C", ["4C 5C 6C 7C"]).out
    assert not play("robbers", ["6D JK 8D"], "7D", ["6D 7D 8D"]).out  # the joker came home


# ------------------------------------------------------------------------------ canonical layout


@pytest.mark.parametrize(
    ("preset", "meld", "shown"),
    [
        ("robbers", "7H 5H 6H", "5H 6H 7H"),
        ("robbers", "7H JK 5H", "5H JK 7H"),
        ("robbers", "3S AS 2S", "AS 2S 3S"),
        ("robbers", "KS JS QS", "JS QS KS"),
        ("robbers", "9C 9S JK 9H", "9S 9H 9C JK"),
        ("robbers", "JK 9D 9S", "9S 9D JK"),
        ("robbers", "8C 8D 8H 8S", "8S 8H 8D 8C"),
        ("robbers-classic", "2H AH KH QH", "QH KH AH 2H"),
        ("robbers-classic", "AH KH 2H", "KH AH 2H"),
        ("robbers-classic", "2H KH JK", "KH JK 2H"),
        ("robbers-classic", "3H 2H AH", "AH 2H 3H"),
        ("robbers-classic", "10H JH QH KH", "10H JH QH KH"),
        ("robbers", "JK 5H JK", "5H JK JK"),
    ],
)
def test_canonical_display_order(preset: str, meld: str, shown: str) -> None:
    """Runs ascend (a wrapped run from the card after its gap, each joker in its place); sets go
    S H D C with jokers last; melds are kept in the order given."""
    verdict = play(preset, ["4C 5C 6C"], f"{meld} 7C", ["4C 5C 6C 7C", meld], opened=True)
    assert verdict.legal, verdict.reason
    assert text(verdict.layout) == ["4C 5C 6C 7C", shown]


def test_canonical_reading_prefers_runs_on_a_tie() -> None:
    """The shown reading is the highest-valued one; on a tie a run comes before a set:
    [10H JK JK] in robbers is 10-J-Q (30), not the set of tens (30)."""
    verdict = play("robbers", [], "10H JK JK", ["JK 10H JK"])
    assert text(verdict.layout) == ["10H JK JK"]
    reading = best_reading(cards("JK 10H JK"), rule_set("robbers"))
    assert reading is not None
    assert reading.kind == "run"
    assert reading.joker_cards() == (parse_card("JH"), parse_card("QH"))
    assert reading.value == 30


def test_layout_melds_are_never_merged_or_split() -> None:
    """The judge keeps the melds as given, even where two runs could be one."""
    verdict = play("rummikub", [], "AC 2C 3C 4C 5C 6C", ["4C 5C 6C", "3C 2C AC"])
    assert text(verdict.layout) == ["4C 5C 6C", "AC 2C 3C"]
