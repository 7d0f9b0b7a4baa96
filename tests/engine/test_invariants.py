"""Self-play invariants: whole matches between bots under every preset and several
option mixes, with ``SelfPlay``'s checks after every event (every card in exactly one place,
every table meld valid at each turn's end, the fold of the events equals the live state, every
event survives its encoding, views hold their own hand only). A quick run is part of the normal
suite; the long one (``-m slow``) plays thousands of rounds. ``rummy simulate --json`` is run
once as a subprocess for its contract."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import random
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from shared.core.events import Event, TurnStarted
from shared.play.selfplay import SelfPlay

from .helpers import bots

ROOT = Path(__file__).resolve().parents[2]

# (rules, options, players, timeout rate)
Mix = tuple[str, dict[str, Any], int, float]
MIXES: list[Mix] = [
    ("robbers", {}, 4, 0.0),
    ("robbers", {"jokers": 0}, 3, 0.0),
    ("robbers", {"jokers": 2, "opening_points": 30}, 2, 0.0),
    ("robbers", {"jokers": 6, "opening_points": 51}, 5, 0.0),
    ("robbers", {"opening_points": 0, "ace": "wrap"}, 4, 0.0),
    ("robbers", {"turn_seconds": 120, "failed_turn_draw": 3}, 3, 0.1),
    ("robbers", {"discard_pile": True}, 3, 0.0),
    ("robbers", {"discard_pile": True, "opening_points": 0, "turn_seconds": 60}, 4, 0.05),
    ("robbers", {"match": "first_out", "match_target": 1, "redeem_bonus": 5}, 3, 0.0),
    ("robbers-classic", {}, 4, 0.0),
    ("robbers-classic", {"jokers": 0}, 2, 0.0),
    ("robbers-classic", {"jokers": 6, "turn_seconds": 30}, 6, 0.1),
    ("robbers-classic", {"discard_pile": True}, 3, 0.0),
    ("rummikub", {}, 4, 0.1),
    ("rummikub", {"jokers": 0, "opening_points": 0}, 3, 0.0),
    ("rummikub", {"jokers": 6, "opening_points": 51}, 2, 0.05),
    ("rummikub", {"discard_pile": True, "ace": "wrap"}, 3, 0.0),
]
KINDS = ["clumsy", "greedy", "random", "stubborn", "greedy", "random"]  # stubborn: Decision 14


def seat_bots(options: dict[str, Any], players: int, game: int) -> str:
    """Bot names per seat, rotating from game to game; in the discard-pile variant every bot
    also takes from the pile now and then (``PileBot``), which the shipped bots never do."""
    prefix = "pile-" if options.get("discard_pile") else ""
    return ",".join(prefix + KINDS[(game + i) % len(KINDS)] for i in range(players))


def no_empty_hand(game: SelfPlay) -> Callable[[Event], None]:
    """An extra invariant: whenever a turn starts, every seat of the round holds a card (an
    empty hand must have ended the round)."""

    def check(event: Event) -> None:
        state = game.state
        if isinstance(event, TurnStarted):
            empty = [s for s in state.round_seats if not state.hands[s]]
            if empty:
                game.report.violations.append(f"seats {empty} hold no card at turn {event.number}")

    return check


def play_one(mix: Mix, game: int) -> tuple[int, int, bool, list[str]]:
    """Play game number ``game`` of ``mix`` with every check on; returns (rounds, turns,
    finished, violations); an exception is reported as a violation."""
    rules, options, players, rate = mix
    seed = hashlib.sha256(f"invariants/{rules}/{json.dumps(options)}/{game}".encode()).digest()
    names = seat_bots(options, players, game)
    selfplay = SelfPlay(
        rules, options, bots(names), seed, random.Random(game), timeout_rate=rate, check=True
    )
    selfplay.on_event = no_empty_hand(selfplay)
    try:
        report = selfplay.play()
    except Exception as err:  # reported with the game that raised it
        return 0, 0, False, [f"{type(err).__name__}: {err}"]
    return report.rounds, report.turns, report.finished, report.violations


def mix_id(mix: Mix) -> str:
    """A readable test id."""
    rules, options, players, rate = mix
    opts = ",".join(f"{k}={v}" for k, v in options.items())
    return f"{rules}[{opts}]x{players}" + (f"-timeouts{rate}" if rate else "")


@pytest.mark.parametrize("mix", MIXES, ids=mix_id)
def test_self_play_invariants_quick(mix: Mix) -> None:
    """A couple of whole matches per mix: no invariant violation, and every match finishes."""
    for game in range(2):
        rounds, turns, finished, violations = play_one(mix, game)
        assert violations == []
        assert finished
        assert rounds >= 1 and turns >= rounds


def run_all(tasks: list[tuple[Mix, int]]) -> list[tuple[int, int, bool, list[str]]]:
    """Play the tasks on up to two processes."""
    workers = min(2, os.cpu_count() or 1)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(play_one, *zip(*tasks, strict=True), chunksize=4))


SLOW_GAMES = {"robbers": 25, "robbers-classic": 100, "rummikub": 40}
SLOW_ROUNDS = {"robbers": 1000, "robbers-classic": 400, "rummikub": 400}  # 1800 at least


@pytest.mark.slow
@pytest.mark.parametrize("preset", list(SLOW_GAMES))
def test_self_play_invariants_long(preset: str) -> None:
    """Many whole matches per mix (thousands of rounds over the three presets): not one
    invariant violation, every match finishes."""
    tasks = [(m, g) for m in MIXES if m[0] == preset for g in range(100, 100 + SLOW_GAMES[preset])]
    results = run_all(tasks)
    problems = [
        (mix_id(mix), game, violations, finished)
        for (mix, game), (_, _, finished, violations) in zip(tasks, results, strict=True)
        if violations or not finished
    ]
    assert problems == []
    rounds = sum(r[0] for r in results)
    print(f"{preset}: {len(tasks)} matches, {rounds} rounds, {sum(r[1] for r in results)} turns")
    assert rounds >= SLOW_ROUNDS[preset]


def test_rummy_simulate_json() -> None:
    """``rummy simulate --json`` prints one JSON object with the required keys, whose figures
    agree with each other, and reports zero invariant violations (exit 0)."""
    command = [
        sys.executable,
        "-m",
        "services.main",
        "simulate",
        "--rules",
        "robbers",
        "--players",
        "3",
        "--games",
        "4",
        "--seed",
        "7",
        "--bots",
        "greedy,random,clumsy",
        "--options",
        '{"jokers": 2, "match_rounds": 2}',
        "--timeout-rate",
        "0.05",
        "--json",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    required = {
        "games",
        "rounds",
        "turns",
        "wins",
        "mean_turns_per_round",
        "rejected",
        "invariant_violations",
    }
    assert required <= set(result)
    assert result["invariant_violations"] == 0
    assert result["games"] == 4
    assert result["rounds"] >= 8
    assert set(result["wins"]) == {"greedy", "random", "clumsy"}
    assert sum(result["wins"].values()) >= 4
    assert result["mean_turns_per_round"] == round(result["turns"] / result["rounds"], 2)
    assert result["rejected"] > 0  # the clumsy bot's illegal layouts are counted


def test_rummy_simulate_bad_arguments() -> None:
    """Bad arguments exit 2 with a message naming the problem."""
    command = [sys.executable, "-m", "services.main", "simulate", "--rules", "poker", "--json"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "poker" in done.stderr
