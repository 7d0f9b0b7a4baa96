"""``rummy judge``: the public contract that docs/cli.md documents.

A few tests run the real command in a subprocess; the many input cases call ``judge()`` or
``main()`` in-process (same code path, much faster).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from services.main import main
from shared.cli.io import InputError
from shared.cli.judge import judge
from shared.core.judgement import REJECTION_CODES

ROOT = Path(__file__).resolve().parents[1]

BLUE_SPLIT: dict[str, Any] = {
    "rules": "rummikub",
    "options": {},
    "opened": True,
    "table": [["4C", "5C", "6C", "7C", "8C"]],
    "hand": ["6C", "2H"],
    "layout": [["4C", "5C", "6C"], ["6C", "7C", "8C"]],
}


def run_cli(stdin: str) -> subprocess.CompletedProcess[str]:
    """``python -m services.main judge`` with ``stdin``."""
    return subprocess.run(
        [sys.executable, "-m", "services.main", "judge"],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


def run_main(
    stdin: str, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> tuple[int, str, str]:
    """``rummy judge`` in-process: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main(["judge"])
    out, err = capsys.readouterr()
    return code, out, err


# ====================================================================== through a subprocess


def test_subprocess_meld_shape() -> None:
    """The meld shape: exit 0, one JSON document, the documented example answer."""
    proc = run_cli(json.dumps({"rules": "robbers", "options": {}, "meld": ["5H", "JK", "7H"]}))
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["valid"] is True
    assert answer["kind"] == "run"
    assert answer["cards"] == ["5H", "JK", "7H"]
    assert answer["jokers"] == {"1": "6H"}


def test_subprocess_turn_shape() -> None:
    """The turn shape: exit 0 and exactly docs/cli.md's answer for 004's blue split."""
    proc = run_cli(json.dumps(BLUE_SPLIT))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "legal": True,
        "played": ["6C"],
        "to_hand": [],
        "points": 6,
        "layout": [["4C", "5C", "6C"], ["6C", "7C", "8C"]],
        "opening": False,
        "out": False,
    }


def test_subprocess_refused_play_exits_0() -> None:
    """An illegal play is a verdict (exit 0) with a code and a reason."""
    doc = {**BLUE_SPLIT, "layout": [["4C", "5C"], ["6C", "6C", "7C", "8C"]]}
    proc = run_cli(json.dumps(doc))
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["legal"] is False
    assert answer["code"] == "meld_too_small"
    assert "[4C 5C]" in answer["reason"]


def test_subprocess_not_json_exits_2() -> None:
    """Input that is not JSON: exit 2, a message on stderr, nothing on stdout."""
    proc = run_cli("this is not json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "not JSON" in proc.stderr


def test_subprocess_unknown_option_exits_2() -> None:
    """An unknown option: exit 2 with the option named on stderr."""
    proc = run_cli(json.dumps({"rules": "robbers", "options": {"wild": 1}, "meld": ["5H"]}))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "'wild'" in proc.stderr


# ====================================================================== exit 2, in-process

BAD_INPUT: list[tuple[str, str, str]] = [
    # (what, stdin, text the message must contain)
    ("not JSON", "{'rules': 'robbers'}", "not JSON"),
    ("empty input", "", "not JSON"),
    ("a JSON list", '["5H", "6H", "7H"]', "JSON object"),
    ("a JSON string", '"robbers"', "JSON object"),
    ("no rules", '{"meld": ["5H", "6H", "7H"]}', "'rules'"),
    ("neither shape", '{"rules": "robbers"}', "'meld'"),
    ("meld not a list", '{"rules": "robbers", "meld": "5H 6H 7H"}', "meld must be a list"),
    (
        "table not a list",
        '{"rules": "robbers", "table": {}, "hand": [], "layout": []}',
        "table must be a list",
    ),
    (
        "a table meld not a list",
        '{"rules": "robbers", "table": ["5H"], "hand": [], "layout": []}',
        "table[0] must be a list",
    ),
    ("no hand", '{"rules": "robbers", "table": [], "layout": []}', "'hand'"),
    ("no table", '{"rules": "robbers", "hand": [], "layout": []}', "'table'"),
    (
        "opened not a boolean",
        '{"rules": "robbers", "opened": "yes", "table": [], "hand": [], "layout": []}',
        "opened must be true or false",
    ),
    (
        "options not an object",
        '{"rules": "robbers", "options": ["jokers"], "meld": ["5H", "6H", "7H"]}',
        "options",
    ),
    (
        "options an empty list",
        '{"rules": "robbers", "options": [], "meld": ["5H", "6H", "7H"]}',
        "options",
    ),
    ("unknown rule set", '{"rules": "poker", "meld": ["5H", "6H", "7H"]}', "'poker'"),
    ("rules not a string", '{"rules": 3, "meld": ["5H", "6H", "7H"]}', "unknown rule set"),
    (
        "unknown option",
        '{"rules": "robbers", "options": {"colour": "red"}, "meld": ["5H", "6H", "7H"]}',
        "'colour'",
    ),
    (
        "jokers out of range",
        '{"rules": "robbers", "options": {"jokers": 9}, "meld": ["5H", "6H", "7H"]}',
        "option 'jokers' is 9; allowed: an integer from 0 to 8",
    ),
    (
        "ace not a choice",
        '{"rules": "robbers", "options": {"ace": "high"}, "meld": ["5H", "6H", "7H"]}',
        "option 'ace' is 'high'; allowed: one of 'low', 'wrap'",
    ),
    (
        "opening out of range",
        '{"rules": "rummikub", "options": {"opening_points": 101}, "meld": ["5H", "6H", "7H"]}',
        "option 'opening_points' is 101; allowed: an integer from 0 to 100",
    ),
    (
        "policy not a choice",
        '{"rules": "rummikub", "options": {"joker_policy": "keep"}, "meld": ["5H", "6H", "7H"]}',
        "'to_hand', 'never', 'must_replay'",
    ),
    ("unparseable meld card", '{"rules": "robbers", "meld": ["5H", "14H", "7H"]}', "'14H'"),
    ("card not a string", '{"rules": "robbers", "meld": ["5H", 6, "7H"]}', "6"),
    (
        "unparseable table card",
        '{"rules": "robbers", "table": [["5H", "6X", "7H"]], "hand": [], "layout": []}',
        "'6X'",
    ),
    (
        "unparseable hand card",
        '{"rules": "robbers", "table": [], "hand": ["ZZ"], "layout": []}',
        "'ZZ'",
    ),
    (
        "unparseable layout card",
        '{"rules": "robbers", "table": [], "hand": ["5H"], "layout": [["5H", "?"]]}',
        "'?'",
    ),
    (
        "three copies across table and hand",
        '{"rules": "robbers", "opened": true, "table": [["5H", "6H", "7H"], ["5H", "5S", "5D"]],'
        ' "hand": ["5H"], "layout": []}',
        "3 x 5H",
    ),
    ("three copies in a meld", '{"rules": "robbers", "meld": ["5H", "5H", "5H"]}', "3 x 5H"),
    (
        "three jokers in rummikub",
        '{"rules": "rummikub", "table": [["5H", "JK", "7H"]], "hand": ["JK", "JK"], "layout": []}',
        "3 x JK, but the rummikub deck has 2",
    ),
    (
        "a joker in the no-joker variant",
        '{"rules": "robbers", "options": {"jokers": 0}, "table": [], "hand": ["JK"], "layout": []}',
        "1 x JK, but the robbers deck has 0",
    ),
    (
        "a two-card table meld",
        '{"rules": "robbers", "table": [["5H", "6H"]], "hand": ["7H"], "layout": []}',
        "table[0] is not a valid meld",
    ),
    (
        "a table meld with a gap",
        '{"rules": "robbers", "table": [["4C", "5C", "6C"], ["3S", "5S", "6S", "7S"]], '
        '"hand": ["7C"], "layout": []}',
        "table[1] is not a valid meld: [3S 5S 6S 7S]",
    ),
    (
        "a wrapped table run under ace low",
        '{"rules": "rummikub", "table": [["13H", "1H", "2H"]], "hand": ["3H"], "layout": []}',
        "table[0] is not a valid meld",
    ),
]


@pytest.mark.parametrize(("what", "stdin", "message"), BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_input_that_is_not_a_position_exits_2(
    what: str,
    stdin: str,
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each kind of malformed input the contract names exits 2 with a clear message on stderr."""
    code, out, err = run_main(stdin, capsys, monkeypatch)
    assert code == 2, (what, out)
    assert out == ""
    assert err.startswith("rummy judge: ")
    assert message in err, err


def _is_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


BAD_DOCUMENTS = [case for case in BAD_INPUT if _is_object(case[1])]


@pytest.mark.parametrize(
    ("what", "stdin", "message"), BAD_DOCUMENTS, ids=[b[0] for b in BAD_DOCUMENTS]
)
def test_judge_function_raises_input_error(what: str, stdin: str, message: str) -> None:
    """``judge()`` itself raises ``InputError`` for every JSON object the command exits 2 on."""
    with pytest.raises(InputError) as err:
        judge(json.loads(stdin))
    assert message in str(err.value), what


# ====================================================================== verdicts, in-process


def test_turn_answer_has_exactly_the_documented_keys() -> None:
    """A legal play answers legal, played, to_hand, points, layout, opening and out."""
    answer = judge(BLUE_SPLIT)
    assert set(answer) == {"legal", "played", "to_hand", "points", "layout", "opening", "out"}
    json.dumps(answer)  # serialisable as it is


def test_refusal_answer_has_code_and_reason_only() -> None:
    """A refused play answers legal false, a documented code and a reason."""
    answer = judge({**BLUE_SPLIT, "hand": ["2H"]})
    assert answer == {"legal": False, "code": "card_not_in_hand", "reason": answer["reason"]}
    assert answer["code"] in REJECTION_CODES
    assert "6C" in answer["reason"]


def test_opened_defaults_to_false() -> None:
    """Without ``opened`` the seat has not opened: rummikub refuses touching the table."""
    doc = {key: value for key, value in BLUE_SPLIT.items() if key != "opened"}
    assert judge(doc)["code"] == "table_touched_before_opening"


def test_options_null_means_none() -> None:
    """``options: null`` or no options at all is the preset."""
    assert judge({**BLUE_SPLIT, "options": None})["legal"] is True
    doc = {key: value for key, value in BLUE_SPLIT.items() if key != "options"}
    assert judge(doc)["legal"] is True


def test_options_change_the_verdict() -> None:
    """Options apply: the same play is refused before opening unless opening_points is 0."""
    doc = {**BLUE_SPLIT, "opened": False}
    assert judge(doc)["code"] == "table_touched_before_opening"
    assert judge({**doc, "options": {"opening_points": 0}})["legal"] is True


def test_vatikan_is_accepted() -> None:
    """The alias ``vatikan`` judges as robbers."""
    answer = judge({"rules": "vatikan", "meld": ["AS", "AH", "AD"]})
    assert answer["valid"] is True and answer["points"] == 45


def test_input_notation_alternatives_print_canonical() -> None:
    """Input accepts 1/11/12/13, suit symbols and lower case; output is canonical."""
    answer = judge({"rules": "rummikub", "meld": ["13♥", "11h", "12H"]})
    assert answer["cards"] == ["JH", "QH", "KH"]
    answer = judge(
        {
            "rules": "rummikub",
            "opened": True,
            "table": [["4♣", "5c", "6C", "7C", "8C"]],
            "hand": ["6♣", "2h"],
            "layout": [["6c", "5C", "4c"], ["8C", "7C", "6C"]],
        }
    )
    assert answer["played"] == ["6C"]
    assert answer["layout"] == [["4C", "5C", "6C"], ["6C", "7C", "8C"]]


def test_meld_answer_lists_every_reading() -> None:
    """An ambiguous meld lists all readings, best first, each with its joker identities."""
    answer = judge({"rules": "robbers", "meld": ["9H", "JK", "JK"]})
    assert answer["points"] == 29
    assert answer["jokers"] == {"1": "10H", "2": "JH"}
    readings = answer["readings"]
    assert readings[0] == {k: answer[k] for k in ("kind", "cards", "jokers", "points")}
    jokers = {tuple(sorted(r["jokers"].values())) for r in readings}
    assert jokers == {
        ("7H", "8H"),
        ("10H", "8H"),
        ("10H", "JH"),
        ("9D", "9S"),
        ("9C", "9S"),
        ("9C", "9D"),
    }
    assert [r["points"] for r in readings] == sorted((r["points"] for r in readings), reverse=True)


def test_three_card_set_lists_both_missing_suits() -> None:
    """In a 3-card set either missing suit is a reading of the joker."""
    answer = judge({"rules": "rummikub", "meld": ["7H", "JK", "7S"]})
    assert answer["kind"] == "set"
    assert answer["cards"] == ["7S", "7H", "JK"]
    assert {r["jokers"]["2"] for r in answer["readings"]} == {"7D", "7C"}


def test_invalid_meld_answer() -> None:
    """An invalid meld answers valid false with a reason naming it."""
    answer = judge({"rules": "rummikub", "meld": ["12H", "13H", "1H"]})
    assert answer["valid"] is False
    assert "[AH QH KH]" in answer["reason"]
    assert set(answer) == {"valid", "reason"}


def test_points_null_without_point_values() -> None:
    """``points`` is null where the rule set has no point values."""
    assert judge({"rules": "robbers-classic", "meld": ["KH", "AH", "2H"]})["points"] is None
    answer = judge(
        {
            "rules": "robbers-classic",
            "table": [["4C", "5C", "6C"]],
            "hand": ["7C"],
            "layout": [["4C", "5C", "6C", "7C"]],
        }
    )
    assert answer["legal"] is True
    assert answer["points"] is None
    assert answer["out"] is True


def test_layout_may_hold_more_copies_than_the_deck_as_a_verdict() -> None:
    """The deck check covers table and hand; an impossible layout is a refused play, not exit 2."""
    answer = judge(
        {
            "rules": "robbers",
            "opened": True,
            "table": [["5H", "6H", "7H"]],
            "hand": ["8H"],
            "layout": [["5H", "6H", "7H", "8H"], ["5H", "5H", "5H"]],
        }
    )
    assert answer["code"] == "card_not_in_hand"
