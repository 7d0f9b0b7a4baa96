"""`rummy score`: the public contract, through the handler and through the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from services.main import COMMANDS
from shared.cli.io import InputError
from shared.cli.score import score


def run_cli(stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.main", "score"],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


# --- the command line -------------------------------------------------------------------------


def test_the_issue_example_through_the_command_line() -> None:
    doc = {
        "rules": "rummikub",
        "options": {},
        "hands": {"ann": ["4S", "5H"], "bo": []},
        "out": "bo",
        "redeemed": {"ann": 1},
    }
    done = run_cli(json.dumps(doc))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"winner": "bo", "scores": {"ann": -9, "bo": 9}}


def test_out_with_cards_left_exits_2_with_a_message() -> None:
    doc = {"rules": "robbers", "hands": {"ann": ["4S"], "bo": ["KH"]}, "out": "ann"}
    done = run_cli(json.dumps(doc))
    assert done.returncode == 2
    assert done.stdout == ""
    assert "rummy score:" in done.stderr and "'ann'" in done.stderr and "4S" in done.stderr


def test_input_that_is_not_json_exits_2() -> None:
    done = run_cli("{hands")
    assert done.returncode == 2
    assert "not JSON" in done.stderr


def test_score_is_a_registered_subcommand() -> None:
    assert COMMANDS["score"] == "shared.cli.score"
    done = subprocess.run(
        [sys.executable, "-m", "services.main", "score", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0 and "stalled round" in done.stdout


# --- the handler: scoring ---------------------------------------------------------------------


def test_rummikub_winner_gets_the_sum_of_the_racks_9_17_34() -> None:
    doc = {
        "rules": "rummikub",
        "hands": {
            "ann": ["9S"],
            "bo": ["10H", "7H"],
            "cy": [],
            "di": ["JK", "4D"],
        },
        "out": "cy",
    }
    assert score(doc) == {"winner": "cy", "scores": {"ann": -9, "bo": -17, "cy": 60, "di": -34}}


def test_rummikub_blocked_game_6_10_15() -> None:
    doc = {
        "rules": "rummikub",
        "hands": {"ann": ["10S"], "bo": ["6C"], "cy": ["13D", "2D"]},
        "out": None,
    }
    assert score(doc) == {"winner": "bo", "scores": {"ann": -4, "bo": 13, "cy": -9}}


def test_scores_keep_the_order_of_the_hands() -> None:
    doc = {"rules": "rummikub", "hands": {"zed": ["3S"], "amy": []}, "out": "amy"}
    assert list(score(doc)["scores"]) == ["zed", "amy"]


def test_robbers_penalty_values() -> None:
    doc = {
        "rules": "robbers",
        "hands": {"ann": ["JK", "AS"], "bo": ["KD", "QC", "JH"], "cy": ["2S", "10H"], "di": []},
        "out": "di",
    }
    assert score(doc) == {"winner": "di", "scores": {"ann": 45, "bo": 30, "cy": 12, "di": 0}}


def test_robbers_redeem_bonus_option_applies_to_the_winner_too() -> None:
    doc = {
        "rules": "robbers",
        "options": {"redeem_bonus": 5},
        "hands": {"ann": ["4S", "5H"], "bo": []},
        "out": "bo",
        "redeemed": {"ann": 1, "bo": 2},
    }
    assert score(doc) == {"winner": "bo", "scores": {"ann": 4, "bo": -10}}


def test_redeemed_is_ignored_without_the_bonus_option() -> None:
    doc = {
        "rules": "robbers",
        "hands": {"ann": ["4S", "5H"], "bo": []},
        "out": "bo",
        "redeemed": {"ann": 1},
    }
    assert score(doc)["scores"] == {"ann": 9, "bo": 0}


def test_robbers_classic_has_no_scores() -> None:
    doc = {"rules": "robbers-classic", "hands": {"ann": ["4S", "5H"], "bo": []}, "out": "bo"}
    assert score(doc) == {"winner": "bo", "scores": None}


def test_robbers_stalled_round_fewest_cards_wins() -> None:
    doc = {
        "rules": "robbers",
        "hands": {"ann": ["2S", "3S"], "bo": ["JK"], "cy": ["4S", "5S", "6S"]},
        "out": None,
    }
    assert score(doc) == {"winner": "bo", "scores": {"ann": 5, "bo": 0, "cy": 15}}


@pytest.mark.parametrize(
    ("last_play", "winner"), [("ann", "bo"), ("bo", "cy"), ("cy", "ann"), (None, "ann")]
)
def test_stalled_tie_goes_to_the_first_seat_after_the_last_play(
    last_play: str | None, winner: str
) -> None:
    doc: dict[str, Any] = {
        "rules": "robbers",
        "hands": {"ann": ["5S"], "bo": ["5H"], "cy": ["5D"]},
        "out": None,
    }
    if last_play is not None:
        doc["last_play"] = last_play
    assert score(doc)["winner"] == winner


def test_options_change_the_stall_winner_rule() -> None:
    doc = {
        "rules": "robbers",
        "options": {"stall_winner": "lowest_total"},
        "hands": {"ann": ["2S", "3S"], "bo": ["JK"]},
        "out": None,
    }
    assert score(doc) == {"winner": "ann", "scores": {"ann": 0, "bo": 30}}


def test_cards_in_other_notations_are_accepted() -> None:
    doc = {"rules": "rummikub", "hands": {"ann": ["12♥", "1s"], "bo": []}, "out": "bo"}
    assert score(doc)["scores"] == {"ann": -13, "bo": 13}


def test_vatikan_alias() -> None:
    doc = {"rules": "vatikan", "hands": {"ann": ["AS"], "bo": []}, "out": "bo"}
    assert score(doc)["scores"] == {"ann": 15, "bo": 0}


# --- the handler: refusals --------------------------------------------------------------------


def refused(doc: Any) -> str:
    with pytest.raises(InputError) as caught:
        score(doc)
    return str(caught.value)


BASE: dict[str, Any] = {"rules": "robbers", "hands": {"ann": ["4S"], "bo": []}, "out": "bo"}


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"out": "ann"}, "out is 'ann', but that hand is not empty"),
        ({"out": "cy"}, "out is 'cy', which is not a seat"),
        ({"out": 1}, "out is 1"),
        ({"last_play": "zoe"}, "last_play is 'zoe'"),
        ({"redeemed": {"cy": 1}}, "redeemed names 'cy'"),
        ({"redeemed": {"ann": -1}}, "redeemed['ann'] is -1"),
        ({"redeemed": {"ann": True}}, "redeemed['ann'] is True"),
        ({"redeemed": {"ann": 1.5}}, "redeemed['ann'] is 1.5"),
        ({"redeemed": [1]}, "redeemed must be an object"),
        ({"hands": ["4S"]}, "hands must be an object"),
        ({"hands": {"ann": []}}, "hands names 1 seats"),
        ({"hands": {"ann": "4S", "bo": []}}, "hands['ann'] must be a list"),
        ({"hands": {"ann": ["4X"], "bo": []}}, "hands['ann'][0]"),
        ({"hands": {"ann": ["4S", "4S", "4S"], "bo": []}}, "3 x 4S"),
        ({"hands": {"ann": ["JK"] * 3, "bo": ["JK"] * 2, "cy": []}, "out": "cy"}, "5 x JK"),
        ({"hands": {"": ["4S"], "bo": []}}, "seat name cannot be empty"),
        ({"hands": {"ann": [], "bo": []}, "out": "bo"}, "'ann' has an empty hand too"),
        ({"out": None}, "'bo' has an empty hand: set out to 'bo'"),
        ({"rules": "canasta"}, "unknown rule set 'canasta'"),
        ({"options": {"redeem_bonus": 99}}, "redeem_bonus"),
        ({"options": {"colour": "red"}}, "unknown option 'colour'"),
    ],
)
def test_refusals_name_the_problem(change: dict[str, Any], fragment: str) -> None:
    assert fragment in refused({**BASE, **change})


def test_missing_fields_are_refused() -> None:
    assert "missing field 'rules'" in refused({"hands": BASE["hands"], "out": "bo"})
    assert "missing field 'hands'" in refused({"rules": "robbers", "out": "bo"})
    assert "missing field 'out'" in refused({"rules": "robbers", "hands": BASE["hands"]})


def test_too_many_seats_for_the_rule_set_is_refused_unless_widened() -> None:
    hands = {name: [f"4{suit}"] for name, suit in zip("abcd", "SHDC", strict=True)} | {"e": []}
    doc = {"rules": "rummikub", "hands": hands, "out": "e"}
    assert "2 to 4" in refused(doc)
    widened = {**doc, "options": {"max_players": 5}}
    assert score(widened)["scores"]["e"] == 16


def test_rummikub_deck_has_only_two_jokers() -> None:
    doc = {"rules": "rummikub", "hands": {"ann": ["JK", "JK", "JK"], "bo": []}, "out": "bo"}
    assert "3 x JK" in refused(doc)
