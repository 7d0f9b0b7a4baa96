"""The solver bots play whole games through the engine without a refused or illegal command."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import random
import sys
from pathlib import Path

import pytest

from services.main import main
from shared.cli.simulate import wilson
from shared.core.cards import cards_str, parse_cards
from shared.core.commands import Command, Draw, Play
from shared.core.judgement import judge_play
from shared.core.rulesets import rule_set
from shared.core.state import GameState
from shared.core.views import SeatView, seat_view
from shared.play.bots import BOTS
from shared.play.selfplay import SelfPlay


@pytest.mark.parametrize(
    ("rules", "options", "bots"),
    [
        ("rummikub", {}, ["solver", "greedy"]),
        ("robbers", {"match_rounds": 1}, ["patient", "solver"]),
        ("robbers", {"match_rounds": 1, "discard_pile": True}, ["solver", "patient"]),
        ("rummikub", {"match_rounds": 1}, ["hoarder", "solver"]),
        ("robbers", {"match_rounds": 1}, ["solver", "hoarder"]),
        ("robbers", {"match_rounds": 1, "discard_pile": True}, ["hoarder", "patient"]),
    ],
)
def test_solver_bots_play_whole_games(
    rules: str, options: dict[str, object], bots: list[str]
) -> None:
    seed = hashlib.sha256(f"solver-bots/{rules}".encode()).digest()
    report = SelfPlay(rules, options, [BOTS[b]() for b in bots], seed, random.Random(3)).play()
    assert report.finished and not report.violations
    assert report.rejected == 0 and report.refused == 0
    plays = sum(1 for e in report.events if e.TYPE == "TurnPlayed")
    assert plays > 0


def view_of(
    table: list[str],
    hand: str,
    *,
    opened: bool = True,
    opponent: int = 10,
    rules: str = "rummikub",
) -> SeatView:
    """Seat 0's view of a two-seat game, its turn, nothing done yet this turn."""
    return SeatView(
        seat=0,
        rules=rule_set(rules, {}),
        hand=tuple(parse_cards(hand.split())),
        table=tuple(tuple(parse_cards(m.split())) for m in table),
        opened=opened,
        hand_counts=(len(hand.split()), opponent),
        stock=40,
        discard_top=None,
        discard_count=0,
        reshuffles=0,
        drawn=False,
        placed=False,
        rejected=0,
        taken=None,
        my_turn=True,
    )


def played(view: SeatView, command: Command) -> list[str]:
    """The cards a command plays from the hand, after checking that the play is legal."""
    assert isinstance(command, Play)
    verdict = judge_play(view.rules, view.table, view.hand, view.opened, command.layout)
    assert verdict.legal, verdict
    return sorted(cards_str(verdict.played))


def test_patient_holds_its_joker_back() -> None:
    """The most cards here lay the joker off too (on the run, or with the queens): the solver
    plays it; the patient bot places the same natural cards and keeps the joker."""
    view = view_of(["5H 6H 7H"], "8H QC QD QS 2S JK")
    rng = random.Random(0)
    assert played(view, BOTS["solver"]().choose(view, rng)) == ["8H", "JK", "QC", "QD", "QS"]
    assert played(view, BOTS["patient"]().choose(view, rng)) == ["8H", "QC", "QD", "QS"]


def test_patient_keeps_its_joker_even_when_an_opponent_is_close() -> None:
    """With the opponent down to one card it still keeps the joker (``danger`` 0, the setting
    the arena measured: shedding it would save penalty only when losing anyway)."""
    view = view_of(["5H 6H 7H"], "8H 2S JK", opponent=1)
    assert played(view, BOTS["patient"]().choose(view, random.Random(0))) == ["8H"]


def test_patient_plays_the_joker_rather_than_draw() -> None:
    """When only the joker can be played, it plays it (one card fewer, instead of one more)."""
    view = view_of(["5H 6H 7H"], "2S 9C JK")
    assert played(view, BOTS["patient"]().choose(view, random.Random(0))) == ["JK"]


def test_patient_goes_out_with_its_jokers() -> None:
    view = view_of(["5H 6H 7H"], "8H 9H JK")
    assert played(view, BOTS["patient"]().choose(view, random.Random(0))) == ["8H", "9H", "JK"]
    view = view_of(["5H 6H 7H"], "2S 2D JK 9C 10C JK")
    assert played(view, BOTS["patient"]().choose(view, random.Random(0))) == [
        "10C",
        "2D",
        "2S",
        "9C",
        "JK",
        "JK",
    ]


def test_patient_opens_like_the_solver() -> None:
    """Before opening it plays the solver's opening (jokers only where the threshold needs
    them): here the joker completes the only 30-point opening."""
    view = view_of([], "QC QD JK 2S 5H", opened=False)
    assert played(view, BOTS["patient"]().choose(view, random.Random(0))) == ["JK", "QC", "QD"]


def test_patient_draws_when_nothing_fits() -> None:
    view = view_of(["5H 6H 7H"], "2S 9C KD")
    assert isinstance(BOTS["patient"]().choose(view, random.Random(0)), Draw)


@pytest.mark.parametrize(
    ("rules", "options"),
    [
        ("rummikub", {"match_rounds": 1}),
        ("robbers", {"match_rounds": 1}),
        ("robbers", {"match_rounds": 1, "discard_pile": True}),
        ("robbers-classic", {}),
    ],
)
def test_patient_plays_only_legal_layouts(rules: str, options: dict[str, object]) -> None:
    """Whole games patient against solver (invariants checked after every event): no play of
    the patient bot is ever rejected or refused."""
    for g in range(2):
        seed = hashlib.sha256(f"patient/{rules}/{g}".encode()).digest()
        bots = [BOTS["patient"](), BOTS["solver"]()][:: 1 if g == 0 else -1]
        report = SelfPlay(rules, options, bots, seed, random.Random(g)).play()
        assert report.finished and not report.violations
        assert report.rejected == 0 and report.refused == 0


def test_simulate_reports_win_rates_and_penalties() -> None:
    """`rummy simulate --same-deals --json`: every bot's wins, win rate with its 95% interval
    and mean penalty; each deal is played once per seating."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(
            [
                "simulate",
                "--rules",
                "robbers",
                "--players",
                "2",
                "--games",
                "4",
                "--bots",
                "patient,greedy",
                "--options",
                '{"match_rounds": 1}',
                "--same-deals",
                "--json",
            ]
        )
    assert code == 0
    result = json.loads(out.getvalue())
    assert result["games"] == 4 and result["invariant_violations"] == 0
    assert set(result["win_rate"]) == set(result["mean_penalty"]) == {"patient", "greedy"}
    assert sum(result["wins"].values()) >= 4
    for bot, wins in result["wins"].items():
        assert result["win_rate"][bot] == wins / 4
        low, high = result["win_rate_ci95"][bot]
        assert 0 <= low <= result["win_rate"][bot] <= high <= 1
        assert result["mean_penalty"][bot] >= 0
        assert 0 <= result["deals_swept"][bot] <= min(wins // 2, 2)


def test_wilson_interval() -> None:
    low, high = wilson(1100, 2000)
    assert round(low, 3) == 0.528 and round(high, 3) == 0.572
    assert wilson(0, 0) == (0.0, 1.0)


def test_arena_prints_each_bot_with_its_figures(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`tests/bench/arena.py` prints, per line, the `rummy simulate` command and each bot's
    wins, win rate with its interval and mean penalty."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2]))
    from tests.bench import arena

    monkeypatch.setattr(arena, "LINES", (("robbers", 2, "greedy,random", {"match_rounds": 1}),))
    monkeypatch.setattr(sys, "argv", ["arena.py", "--games", "4"])
    arena.main()
    out = capsys.readouterr().out
    assert "rummy simulate --rules robbers --players 2 --bots greedy,random --games 4" in out
    assert "win rate (95% CI)" in out and "mean penalty" in out
    rows = [
        line.split() for line in out.splitlines() if line.split()[:1] in (["greedy"], ["random"])
    ]
    assert len(rows) == 2 and sum(int(row[1]) for row in rows) >= 4


def test_hoarder_draws_and_keeps_a_play_that_does_not_go_out() -> None:
    """The solver lays the 8H off; the hoarder keeps it (and everything else) and draws, even
    with the opponent down to one card."""
    view = view_of(["5H 6H 7H"], "8H 2S KD")
    rng = random.Random(0)
    assert played(view, BOTS["solver"]().choose(view, rng)) == ["8H"]
    assert isinstance(BOTS["hoarder"]().choose(view, rng), Draw)
    close = view_of(["5H 6H 7H"], "8H 2S KD", opponent=1)
    assert isinstance(BOTS["hoarder"]().choose(close, rng), Draw)


def test_hoarder_goes_out_when_the_whole_hand_fits() -> None:
    view = view_of(["5H 6H 7H", "QS QD QC"], "4H 8H 9H QH 2S 3S 4S")
    assert played(view, BOTS["hoarder"]().choose(view, random.Random(0))) == [
        "2S",
        "3S",
        "4H",
        "4S",
        "8H",
        "9H",
        "QH",
    ]


def test_hoarder_opens_like_the_solver() -> None:
    view = view_of([], "QC QD QS 2S 5H", opened=False)
    assert played(view, BOTS["hoarder"]().choose(view, random.Random(0))) == ["QC", "QD", "QS"]


def test_hoarder_plays_the_most_cards_over_its_cap_or_near_the_stocks_end() -> None:
    """Over 16 cards in hand, or with the stock down to 10 cards, it plays as the solver does."""
    rng = random.Random(0)
    hand = "8H 2S 2D 3C 4C 6C 8C 10C QC KS KD 9D JD 5S 7S 9S"
    assert len(hand.split()) == 16
    assert isinstance(BOTS["hoarder"]().choose(view_of(["5H 6H 7H"], hand), rng), Draw)
    view = view_of(["5H 6H 7H"], hand + " AC")
    assert played(view, BOTS["hoarder"]().choose(view, rng)) == ["8H"]
    low = dataclasses.replace(view_of(["5H 6H 7H"], "8H 2S KD"), stock=10)
    assert played(low, BOTS["hoarder"]().choose(low, rng)) == ["8H"]
    high = dataclasses.replace(low, stock=11)
    assert isinstance(BOTS["hoarder"]().choose(high, rng), Draw)


def test_hoarder_decides_from_its_own_view_only() -> None:
    """At turns of a real game, the opponent's hand and the stock dealt again (the same seat
    view): the hoarder's command is the same."""
    seed = hashlib.sha256(b"hoarder/hidden").digest()
    states: list[GameState] = []
    game = SelfPlay(
        "rummikub",
        {"match_rounds": 1},
        [BOTS["hoarder"](), BOTS["solver"]()],
        seed,
        random.Random(1),
    )
    game.on_event = lambda e: states.append(game.state) if e.TYPE == "TurnStarted" else None
    assert game.play().finished
    shuffle = random.Random(2)
    kinds = set()
    for state in states[::3]:
        assert state.turn is not None
        seat = state.turn.seat
        if seat != 0:
            continue
        hidden = [*state.hands[1], *state.stock]
        shuffle.shuffle(hidden)
        n = len(state.hands[1])
        other = dataclasses.replace(
            state, hands=(state.hands[0], tuple(hidden[:n])), stock=tuple(hidden[n:])
        )
        assert other.hands[1] != state.hands[1] or not n
        view = seat_view(state, 0)
        assert seat_view(other, 0) == view
        command = BOTS["hoarder"]().choose(view, random.Random(0))
        assert BOTS["hoarder"]().choose(seat_view(other, 0), random.Random(0)) == command
        kinds.add(type(command).__name__)
    assert kinds == {"Draw", "Play"}
