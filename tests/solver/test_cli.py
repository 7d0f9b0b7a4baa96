"""`rummy solve`: JSON in, JSON out, layouts that `rummy judge` accepts, exit 2 on bad input."""

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
from shared.cli.solve import solve_document

ROOT = Path(__file__).resolve().parents[2]

POSITION: dict[str, Any] = {
    "rules": "rummikub",
    "options": {},
    "opened": True,
    "table": [["4C", "5C", "6C", "7C", "8C"]],
    "hand": ["6C", "2H"],
}


def test_subprocess_round_trip_through_judge() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "services.main", "solve"],
        input=json.dumps(POSITION | {"goal": "cards"}),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert set(answer) == {"layout", "played", "to_hand", "points", "seconds"}
    assert answer["played"] == ["6C"] and answer["to_hand"] == [] and answer["points"] == 6
    verdict = judge(POSITION | {"layout": answer["layout"]})
    assert verdict["legal"] and verdict["played"] == ["6C"]


def test_no_play_returns_the_table() -> None:
    answer = solve_document(POSITION | {"hand": ["2H"]})
    assert answer["played"] == [] and answer["layout"] == [["4C", "5C", "6C", "7C", "8C"]]


def test_goals_and_min_disruption() -> None:
    doc = POSITION | {"hand": ["9C", "3C", "6C"], "min_disruption": True}
    for goal in ("cards", "points"):
        answer = solve_document(doc | {"goal": goal})
        verdict = judge(doc | {"layout": answer["layout"]})
        assert verdict["legal"], (goal, answer)
    # an opening from the hand alone: 9C 3C 6C make no meld
    assert solve_document(doc | {"goal": "opening"})["played"] == []
    assert len(solve_document(doc)["played"]) == 3


def test_arrange() -> None:
    answer = solve_document({"rules": "rummikub", "goal": "arrange", "cards": ["5H", "6H", "JK"]})
    assert answer["arrangeable"] is True and answer["free_jokers"] == 0
    answer = solve_document({"rules": "rummikub", "goal": "arrange", "cards": ["5H", "6H", "9D"]})
    assert answer == answer | {"arrangeable": False, "layout": [], "free_jokers": 0}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (POSITION | {"goal": "most"}, "goal"),
        (POSITION | {"min_disruption": "yes"}, "min_disruption"),
        (POSITION | {"opened": 1}, "opened"),
        ({k: v for k, v in POSITION.items() if k != "hand"}, "hand"),
        (POSITION | {"table": [["4C", "5C"]]}, "table[0]"),
        (POSITION | {"hand": ["6C", "6C", "6C"]}, "6C"),
        ({"rules": "rummikub", "goal": "arrange"}, "cards"),
        ({"goal": "cards"}, "rules"),
    ],
)
def test_malformed_input(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message.replace("[", r"\[")):
        solve_document(doc)


def test_exit_code_two(capsys: pytest.CaptureFixture[str], monkeypatch: Any) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("[1, 2]"))
    assert main(["solve"]) == 2
    assert "rummy solve:" in capsys.readouterr().err
