"""The solver with and without one of its switches (``--switch``, a boolean of ``solver.py``;
by default ``MIRROR_PROBE``, the search with the ranks read K to A), side by side.

Run with `python tests/bench/direction.py [--positions N] [--seed S] [--sizes 20,40,60]`. Per
position and goal the two settings run in turn, three times each, and each keeps its fastest
time (process time, the bound tables cleared before every run): the machine's speed drifts by
tens of percent over minutes here, which a comparison of two separate runs cannot tell from a
change. Rummikub rules, 2 jokers, seats have opened; median, p95, max and sum per row.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shared.core.solver as solver
from shared.cli.main import quiet_gc
from shared.core import solver_dp, solver_lanes
from shared.core.rulesets import RuleSet, rule_set
from tests.solver.positions import position


def timed(rules: RuleSet, table: list[list[int]], hand: list[int], goal: str) -> float:
    solver_lanes._TABLES.clear()
    solver_dp._BOUNDS.clear()
    started = time.process_time()
    if goal == "arrange":
        solver.arrange(rules, [c for m in table for c in m] + hand)
    else:
        solver.solve(rules, table, hand, True, goal)  # type: ignore[arg-type]
    return time.process_time() - started


def summary(times: list[float]) -> str:
    times = sorted(times)
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return (
        f"median {statistics.median(times) * 1000:6.1f}  p95 {p95 * 1000:6.1f}  "
        f"max {times[-1] * 1000:6.1f}  sum {sum(times):5.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--positions", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", default="20,40,60")
    parser.add_argument("--goals", default="cards,points,arrange")
    parser.add_argument("--switch", default="MIRROR_PROBE", help="a boolean of solver.py")
    args = parser.parse_args()
    quiet_gc()
    default = getattr(solver, args.switch)
    rules = rule_set("rummikub", {"jokers": 2})
    warm = random.Random(2)
    for size in (20, 60):  # the lane machinery and set tables, built once per process
        table, hand = position(rules, size, 20, warm)
        for goal in ("cards", "points", "arrange"):
            timed(rules, table, hand, goal)
    rng = random.Random(args.seed)
    print(f"ms per position, {args.positions} positions per row, fastest of 3 runs each")
    for size in map(int, args.sizes.split(",")):
        positions = [position(rules, size, rng.randint(14, 25), rng) for _ in range(args.positions)]
        for goal in args.goals.split(","):
            best: dict[bool, list[float]] = {False: [], True: []}
            for table, hand in positions:
                runs: dict[bool, list[float]] = {False: [], True: []}
                for _ in range(3):
                    for probe in (False, True):
                        setattr(solver, args.switch, probe)
                        runs[probe].append(timed(rules, table, hand, goal))
                for probe in (False, True):
                    best[probe].append(min(runs[probe]))
            print(f"table ~{size:2} {goal:8} {args.switch} off  {summary(best[False])}")
            print(f"table ~{size:2} {goal:8} {args.switch} on   {summary(best[True])}")
    setattr(solver, args.switch, default)


if __name__ == "__main__":
    main()
