"""Solver figures: timings on random positions of growing size, the same positions through the
HiGHS integer program in the same run, and a bot arena.

Run with `make bench` (or `python tests/bench/solver.py [--positions N] [--games G]`). Tables of
about 20, 40, 60 and 80+ cards, hands of 14-25 cards, 2 and 4 jokers, the rummikub rules (ace
low, 30-point opening; seats have opened except for the ``opening`` goal). One core, one process.
For each size and joker count: median, p95 and max seconds per goal (``arrange``: the table's
cards and the hand's together); for ``cards`` also the integer program's (model build + HiGHS)
and whether both found the same number of cards.

Timings are of a warm process, as in the gateway that answers hints: one position of each rule
set is solved untimed first (the lane machinery and set tables are built once per process), and
the collector runs as in the networked commands (``quiet_gc``: start-up objects frozen, fewer
collections; ``--default-gc`` keeps Python's settings).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shared.core.rulesets import RuleSet, rule_set
from shared.infra.runtime import configure_solver, quiet_gc
from shared.solver import arrange, runs_compiled, solve
from tests.solver.positions import position

GOALS = ("cards", "points", "opening", "arrange")


def quantiles(times: list[float]) -> str:
    times = sorted(times)
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return (
        f"median {statistics.median(times) * 1000:8.1f}  p95 {p95 * 1000:8.1f}  "
        f"max {times[-1] * 1000:8.1f} ms"
    )


def warm_up(rules: RuleSet, jokers: int) -> None:
    """Solve two positions of each goal untimed: the lane machinery and set tables are built
    once per process (from a generator of their own, not the timed positions')."""
    warm = random.Random(jokers)
    for size in (20, 60):
        table, hand = position(rules, size, 20, warm)
        for goal in ("cards", "points", "opening"):
            solve(rules, table, hand, goal != "opening", goal)  # type: ignore[arg-type]
        arrange(rules, [c for m in table for c in m] + hand)


def timings(count: int, with_ilp: bool, seed: int = 2026) -> None:
    ilp = None
    if with_ilp:
        try:
            from tests.solver.oracle import solve_ilp

            ilp = solve_ilp
        except ImportError:
            print("(highspy is not installed: no integer-program comparison)")
    rng = random.Random(seed)
    kind = "compiled with mypyc" if runs_compiled() else "plain Python"
    print(f"solver timings, {count} positions per row (ms); the solver's inner modules: {kind}")
    for jokers in (2, 4):
        rules = rule_set("rummikub", {"jokers": jokers})
        warm_up(rules, jokers)
        for size in (20, 40, 60, 80):
            positions = [position(rules, size, rng.randint(14, 25), rng) for _ in range(count)]
            on_table = statistics.mean(sum(len(m) for m in t) for t, _ in positions)
            for goal in GOALS:
                times = []
                placed = []
                for table, hand in positions:
                    started = time.perf_counter()
                    if goal == "arrange":  # the table's cards and the hand's, every one placed
                        arrange(rules, [c for m in table for c in m] + hand)
                    else:
                        play = solve(rules, table, hand, goal != "opening", goal)  # type: ignore[arg-type]
                        placed.append(len(play.played))
                    times.append(time.perf_counter() - started)
                print(f"jokers {jokers}  table ~{on_table:4.1f}  {goal:8} {quantiles(times)}")
                if goal == "cards" and ilp is not None:
                    ilp_times = []
                    agree = 0
                    for (table, hand), mine in zip(positions, placed, strict=True):
                        started = time.perf_counter()
                        with contextlib.redirect_stdout(io.StringIO()):
                            found = ilp(rules, table, hand, True, "cards")
                        ilp_times.append(time.perf_counter() - started)
                        agree += (found.cards if found.feasible else 0) == mine
                    print(
                        f"jokers {jokers}  table ~{on_table:4.1f}  {'ILP':8} "
                        f"{quantiles(ilp_times)}  same cards: {agree}/{len(positions)}"
                    )


def arena(games: int) -> None:
    from services.main import main

    print(f"\nbot arena: {games} games per line (seats rotate through the bots)")
    for rules, players, bots in (
        ("rummikub", 2, "solver,greedy"),
        ("robbers", 2, "solver,greedy"),
        ("robbers", 2, "patient,solver"),
        ("rummikub", 2, "patient,solver"),
    ):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(
                [
                    "simulate",
                    "--rules",
                    rules,
                    "--players",
                    str(players),
                    "--games",
                    str(games),
                    "--bots",
                    bots,
                    "--seed",
                    "11",
                    "--no-check",
                    "--json",
                ]
            )
        result = json.loads(out.getvalue())
        print(
            f"{rules:9} {bots:16} wins {result['wins']}  mean score {result['mean_score']}  "
            f"({result['seconds']} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--positions", type=int, default=20)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--no-ilp", action="store_true")
    parser.add_argument("--seed", type=int, default=2026, help="another sample of positions")
    parser.add_argument("--default-gc", action="store_true", help="Python's collector settings")
    args = parser.parse_args()
    configure_solver()  # RUMMY_SOLVER, RUMMY_SOLVER_BUILD as for `rummy`
    if not args.default_gc:
        quiet_gc()
    timings(args.positions, not args.no_ilp, args.seed)
    if args.games:
        arena(args.games)


if __name__ == "__main__":
    main()
