"""Rule sets: the presets carry RULES.md's table, every option is overridable by name, bad
options are refused naming the option, and ``check_seats`` enforces Decision 12's limits."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from shared.core.cards import deck
from shared.core.rulesets import (
    OPTIONS,
    PRESETS,
    ROBBERS,
    ROBBERS_CLASSIC,
    RUMMIKUB,
    RuleSet,
    RuleSetError,
    check_seats,
    rule_set,
)

# RULES.md, "Field by field", one column per preset, written out field by field.
EXPECTED: dict[str, dict[str, Any]] = {
    "robbers": {
        "min_players": 2,
        "max_players": 5,
        "jokers": 4,
        "hand_size": None,  # 13 for 2-3 players, 11 for 4-5
        "ace": "low",
        "opening_points": 40,
        "point_values": "cards",
        "joker_penalty": 30,
        "joker_policy": "to_hand",
        "turn_shape": "play_or_draw",
        "failed_turn_draw": 1,
        "max_rejections": 3,
        "turn_seconds": None,
        "stall_winner": "fewest_cards",
        "scoring": "penalty",
        "redeem_bonus": 0,
        "match": "lowest_total",
        "match_rounds": 5,
        "match_target": 3,
        "tie_break_rounds": 3,
        "discard_pile": False,
        "starter": "cut",
        "run_max": 13,
        "set_max": 4,
        "max_reshuffles": 3,
    },
    "robbers-classic": {
        "min_players": 2,
        "max_players": 6,
        "jokers": 4,
        "hand_size": 13,
        "ace": "wrap",
        "opening_points": 0,
        "point_values": "none",
        "joker_policy": "never",
        "turn_shape": "place_draw_place",
        "failed_turn_draw": 1,
        "max_rejections": 3,
        "turn_seconds": None,
        "stall_winner": "fewest_cards",
        "scoring": "none",
        "match": "single",
        "match_rounds": 1,
        "discard_pile": False,
        "starter": "random",
        "run_max": 13,
        "set_max": 4,
        "max_reshuffles": 3,
    },
    "rummikub": {
        "min_players": 2,
        "max_players": 4,
        "jokers": 2,
        "hand_size": 14,
        "ace": "low",
        "opening_points": 30,
        "point_values": "tiles",
        "joker_penalty": 30,
        "joker_policy": "must_replay",
        "turn_shape": "play_or_draw",
        "failed_turn_draw": 3,
        "max_rejections": 3,
        "turn_seconds": 60,
        "stall_winner": "lowest_total",
        "scoring": "plus_minus",
        "match": "most_wins",
        "match_rounds": None,  # as many games as players
        "discard_pile": False,
        "starter": "draw_tile",
        "run_max": 13,
        "set_max": 4,
        "max_reshuffles": 3,
    },
}

# A legal value different from every preset's default, for each option.
OTHER_VALUE: dict[str, object] = {
    "min_players": 3,
    "max_players": 8,
    "jokers": 6,
    "hand_size": 12,
    "ace": "wrap",
    "opening_points": 51,
    "point_values": "tiles",
    "joker_penalty": 25,
    "joker_policy": "never",
    "turn_shape": "place_draw_place",
    "failed_turn_draw": 2,
    "max_rejections": 0,
    "turn_seconds": 120,
    "stall_winner": "lowest_total",
    "scoring": "plus_minus",
    "redeem_bonus": 5,
    "match": "first_out",
    "match_rounds": 7,
    "match_target": 2,
    "tie_break_rounds": 1,
    "discard_pile": True,
    "starter": "draw_tile",
    "run_max": 7,
    "set_max": 3,
    "max_reshuffles": None,
    "hints": False,
    "absent_seconds": 60,
    "absent_turns": 1,
    "absent": "forfeit",
    "absent_bot": "solver",
}

# Values outside what each option allows (RULES.md Decision 12 and docs/rule-sets.md's table).
BAD_VALUES: list[tuple[str, object]] = [
    ("absent_seconds", 5),
    ("absent_turns", 0),
    ("absent", "kick"),
    ("absent_bot", "deep-blue"),
    ("min_players", 1),
    ("max_players", 9),
    ("jokers", -1),
    ("jokers", 9),
    ("jokers", True),
    ("jokers", "4"),
    ("hand_size", 0),
    ("hand_size", 53),
    ("ace", "high"),
    ("opening_points", -1),
    ("opening_points", 101),
    ("opening_points", 40.5),
    ("point_values", "chips"),
    ("joker_penalty", 101),
    ("joker_policy", "sometimes"),
    ("turn_shape", "free"),
    ("failed_turn_draw", 0),
    ("failed_turn_draw", 6),
    ("max_rejections", -1),
    ("max_rejections", 21),
    ("max_rejections", None),  # no unlimited value (Decision 14)
    ("max_rejections", True),
    ("max_rejections", 2.5),
    ("turn_seconds", 4),
    ("stall_winner", "nobody"),
    ("scoring", "golf"),
    ("redeem_bonus", 31),
    ("match", "forever"),
    ("match_rounds", 0),
    ("match_target", 0),
    ("tie_break_rounds", 4),
    ("discard_pile", "yes"),
    ("discard_pile", 1),
    ("starter", "youngest"),
    ("run_max", 2),
    ("run_max", 14),
    ("set_max", 5),
    ("min_players", None),
]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_presets_have_the_values_of_the_rules_table(name: str) -> None:
    """Each preset's fields are the values of its column in RULES.md's table."""
    rules = rule_set(name)
    assert rules.name == name
    for field, value in EXPECTED[name].items():
        assert getattr(rules, field) == value, field


def test_the_preset_constants_are_the_registered_presets() -> None:
    """``rule_set(name)`` with no options is exactly the frozen preset value."""
    assert rule_set("robbers") is ROBBERS
    assert rule_set("robbers-classic") is ROBBERS_CLASSIC
    assert rule_set("rummikub") is RUMMIKUB
    assert set(PRESETS) == {"robbers", "robbers-classic", "rummikub"}


def test_robbers_hand_size_depends_on_the_seats() -> None:
    """Robbers deals 13 cards to 2-3 players and 11 to 4-5; the others a fixed number."""
    assert [ROBBERS.hand_size_for(n) for n in (2, 3, 4, 5)] == [13, 13, 11, 11]
    assert ROBBERS_CLASSIC.hand_size_for(6) == 13
    assert RUMMIKUB.hand_size_for(4) == 14


def test_rummikub_plays_as_many_games_as_players() -> None:
    """Rummikub's match has one game per seat; robbers defaults to 5 rounds."""
    assert RUMMIKUB.rounds_for(3) == 3
    assert RUMMIKUB.rounds_for(4) == 4
    assert ROBBERS.rounds_for(3) == 5


def test_deck_sizes_of_the_presets() -> None:
    """Two decks of 52 plus the jokers: 108 cards for robbers, 106 tiles for rummikub."""
    assert len(deck(ROBBERS.jokers)) == 108
    assert len(deck(ROBBERS_CLASSIC.jokers)) == 108
    assert len(deck(RUMMIKUB.jokers)) == 106


def test_vatikan_is_an_alias_of_robbers() -> None:
    """``vatikan`` is robbers with 4 jokers and the same rules (RULES.md variants)."""
    assert rule_set("vatikan") == ROBBERS
    assert rule_set("vatikan").jokers == 4
    assert rule_set("vatikan", {"jokers": 2}) == rule_set("robbers", {"jokers": 2})


def test_every_field_is_an_option() -> None:
    """Every rule-set field except the name can be overridden (RULES.md: no hard-coded rule)."""
    fields = {f.name for f in dataclasses.fields(RuleSet)} - {"name"}
    assert set(OPTIONS) == fields
    assert set(OTHER_VALUE) == fields


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.parametrize("option", sorted(OTHER_VALUE))
def test_every_option_is_overridable_by_name(preset: str, option: str) -> None:
    """Overriding one option changes that field only, and ``options()`` reports it."""
    value = OTHER_VALUE[option]
    extra: dict[str, object] = {}
    if preset == "robbers-classic" and option in ("scoring", "opening_points"):
        extra = {"point_values": "cards"}  # both need point values
    rules = rule_set(preset, {option: value, **extra})
    assert getattr(rules, option) == value
    base = PRESETS[preset]
    for field in OPTIONS:
        if field != option and field not in extra:
            assert getattr(rules, field) == getattr(base, field), field
    if getattr(base, option) != value:
        assert rules.options()[option] == value


def test_source_variants_are_options() -> None:
    """The variants named by the sources are plain overrides of the presets."""
    for points in (0, 30, 51):
        assert rule_set("robbers", {"opening_points": points}).opening_points == points
    assert rule_set("robbers", {"jokers": 0}).jokers == 0  # the no-joker variant
    assert rule_set("robbers", {"turn_seconds": 120}).turn_seconds == 120
    assert rule_set("robbers", {"failed_turn_draw": 3}).failed_turn_draw == 3
    assert rule_set("robbers", {"discard_pile": True}).discard_pile is True
    assert rule_set("robbers", {"redeem_bonus": 5}).redeem_bonus == 5
    assert rule_set("robbers", {"turn_seconds": None}).turn_seconds is None
    for jokers in range(2, 7):
        assert rule_set("robbers-classic", {"jokers": jokers}).jokers == jokers
    for size in (11, 12, 13):
        assert rule_set("robbers-classic", {"hand_size": size}).hand_size == size


def test_options_of_a_preset_is_empty() -> None:
    """A preset differs from itself in nothing."""
    for rules in PRESETS.values():
        assert rules.options() == {}


def test_rule_sets_are_frozen_and_hashable() -> None:
    """A rule set is a value: it cannot be changed and can key a cache."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        ROBBERS.jokers = 2  # type: ignore[misc]
    assert hash(rule_set("robbers", {"jokers": 2})) == hash(rule_set("robbers", {"jokers": 2}))


def test_unknown_rule_set_is_refused_listing_the_rule_sets() -> None:
    """An unknown rule-set name is an error naming it and listing the known ones."""
    with pytest.raises(RuleSetError, match="'poker'") as err:
        rule_set("poker")
    assert err.value.option == "rules"
    for name in ("robbers", "robbers-classic", "rummikub", "vatikan"):
        assert repr(name) in str(err.value)


def test_unknown_option_is_refused_naming_it() -> None:
    """An unknown option is an error naming the option and listing the known ones."""
    with pytest.raises(RuleSetError, match="'colour'") as err:
        rule_set("robbers", {"colour": "red"})
    assert err.value.option == "colour"
    assert "opening_points" in str(err.value)


def test_options_must_be_a_mapping() -> None:
    """Options that are not name/value pairs are refused."""
    with pytest.raises(RuleSetError) as err:
        rule_set("robbers", [("jokers", 2)])  # type: ignore[arg-type]
    assert err.value.option == "options"


@pytest.mark.parametrize(("option", "value"), BAD_VALUES)
def test_out_of_range_option_is_refused_naming_option_and_allowed(
    option: str, value: object
) -> None:
    """A value outside an option's range is refused, naming the option and what is allowed."""
    with pytest.raises(RuleSetError) as err:
        rule_set("robbers", {option: value})
    assert err.value.option == option
    message = str(err.value)
    assert repr(option) in message
    assert "allowed" in message
    assert OPTIONS[option].allowed() in message


def test_allowed_phrases_name_the_range() -> None:
    """The allowed-values phrase of a few options spells the range of Decision 12."""
    assert OPTIONS["jokers"].allowed() == "an integer from 0 to 8"
    assert OPTIONS["opening_points"].allowed() == "an integer from 0 to 100"
    assert OPTIONS["ace"].allowed() == "one of 'low', 'wrap'"
    assert "null" in OPTIONS["turn_seconds"].allowed()


@pytest.mark.parametrize(
    ("option", "value"),
    [("jokers", 0), ("jokers", 8), ("opening_points", 0), ("opening_points", 100)],
)
def test_limits_of_decision_12_are_inclusive(option: str, value: int) -> None:
    """0 to 8 jokers and 0 to 100 opening points are all allowed (Decision 12)."""
    assert getattr(rule_set("robbers", {option: value}), option) == value


def test_opening_points_need_point_values() -> None:
    """An opening threshold without point values is refused, naming the option."""
    with pytest.raises(RuleSetError, match="opening_points") as err:
        rule_set("robbers-classic", {"opening_points": 30})
    assert err.value.option == "opening_points"
    assert rule_set("robbers-classic", {"opening_points": 30, "point_values": "tiles"})


def test_min_players_cannot_exceed_max_players() -> None:
    """min_players above max_players is refused naming min_players."""
    with pytest.raises(RuleSetError) as err:
        rule_set("rummikub", {"min_players": 5})
    assert err.value.option == "min_players"


@pytest.mark.parametrize(("name", "low", "high"), [("robbers", 2, 5), ("rummikub", 2, 4)])
def test_check_seats_uses_the_preset_range(name: str, low: int, high: int) -> None:
    """Seats outside the preset's player range are refused, naming ``seats``."""
    rules = rule_set(name)
    for seats in range(low, high + 1):
        assert check_seats(rules, seats) == seats
    for seats in (low - 1, high + 1):
        with pytest.raises(RuleSetError) as err:
            check_seats(rules, seats)
        assert err.value.option == "seats"
        assert str(seats) in str(err.value)


def test_two_to_eight_seats_is_the_widest_range() -> None:
    """Decision 12: any preset may be widened to 2-8 seats, never further."""
    rules = rule_set("robbers", {"max_players": 8})
    for seats in range(2, 9):
        assert check_seats(rules, seats) == seats
    for seats in (0, 1, 9):
        with pytest.raises(RuleSetError):
            check_seats(rules, seats)
    with pytest.raises(RuleSetError):
        check_seats(rules, True)
    with pytest.raises(RuleSetError):
        check_seats(rules, "3")


def test_the_deal_must_leave_a_card_in_the_stock() -> None:
    """A deal that uses the whole deck is refused naming hand_size; one card left is enough."""
    no_jokers = {"jokers": 0, "hand_size": 52}
    with pytest.raises(RuleSetError, match="stock") as err:
        check_seats(rule_set("robbers", no_jokers), 2)  # 104 of 104 cards
    assert err.value.option == "hand_size"
    assert check_seats(rule_set("robbers", {"jokers": 0, "hand_size": 51}), 2) == 2
    assert check_seats(rule_set("robbers", {"jokers": 1, "hand_size": 52}), 2) == 2  # 1 left


def test_the_discard_pile_card_counts_against_the_stock() -> None:
    """With a discard pile one more card leaves the stock at the deal."""
    fits = {"jokers": 0, "hand_size": 51}
    assert check_seats(rule_set("robbers", fits), 2) == 2  # 102 dealt, 2 left
    assert check_seats(rule_set("robbers", {**fits, "discard_pile": True}), 2) == 2  # 1 left
    tight = {"jokers": 1, "hand_size": 52, "discard_pile": True}  # 104 + 1 of 105
    with pytest.raises(RuleSetError) as err:
        check_seats(rule_set("robbers", tight), 2)
    assert err.value.option == "hand_size"


def test_eight_rummikub_seats_do_not_fit_the_tiles() -> None:
    """8 seats x 14 tiles = 112 > 106 tiles: refused; 7 x 14 = 98 leaves a pool."""
    rules = rule_set("rummikub", {"max_players": 8})
    with pytest.raises(RuleSetError) as err:
        check_seats(rules, 8)
    assert err.value.option == "hand_size"
    assert check_seats(rules, 7) == 7
    assert check_seats(rule_set("robbers", {"max_players": 8}), 8) == 8  # 8 x 11 = 88
