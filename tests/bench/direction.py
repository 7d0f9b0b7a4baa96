"""The solver with two settings of one of its switches side by side (``--switch``, a constant
of ``shared/solver/goals.py``, by default ``MIRROR_PROBE``, the search with the ranks read K to
A; ``--values``, by default off and on; numbers for a number such as ``PROBE_EFFORT``).

Run with `python tests/bench/direction.py [--positions N] [--seed S] [--sizes 20,40,60]`. Per
position and goal the two settings run in turn, three times each, and each keeps its fastest
time (process time, the bound tables cleared before every run): the machine's speed drifts by
tens of percent over minutes here, which a comparison of two separate runs cannot tell from a
change. Rummikub rules, 2 jokers, seats have opened; median, p95, max and sum per row.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shared.solver.goals as solver
from shared.core.rulesets import RuleSet, rule_set
from shared.infra.runtime import configure_solver, quiet_gc
from shared.solver.dp import bounds, lanes
from tests.bench.solver import quantiles, warm_up
from tests.solver.positions import position


def timed(rules: RuleSet, table: list[list[int]], hand: list[int], goal: str) -> float:
    lanes._TABLES.clear()
    bounds._BOUNDS.clear()
    started = time.process_time()
    if goal == "arrange":
        solver.arrange(rules, [c for m in table for c in m] + hand)
    else:
        solver.solve(rules, table, hand, True, goal)  # type: ignore[arg-type]
    return time.process_time() - started


def setting(value: str) -> bool | int:
    """``off``/``on`` or a whole number."""
    if value in ("off", "on"):
        return value == "on"
    return int(value)


def summary(times: list[float]) -> str:
    return f"{quantiles(times)}  sum {sum(times):5.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--positions", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", default="20,40,60")
    parser.add_argument("--goals", default="cards,points,arrange")
    parser.add_argument("--switch", default="MIRROR_PROBE", help="a constant of goals.py")
    parser.add_argument("--values", default="off,on", help="two settings: off,on or numbers")
    args = parser.parse_args()
    try:
        settings = [setting(value) for value in args.values.split(",")]
    except ValueError:
        settings = []
    if len(settings) != 2:
        parser.error(f"--values {args.values!r}: two settings, such as off,on or 32,64")
    if not args.switch.isupper() or not hasattr(solver, args.switch):
        parser.error(f"--switch {args.switch!r}: not a constant of goals.py (MIRROR_PROBE, ...)")
    configure_solver()  # RUMMY_SOLVER, RUMMY_SOLVER_BUILD as for `rummy`
    quiet_gc()
    default = getattr(solver, args.switch)
    rules = rule_set("rummikub", {"jokers": 2})
    warm_up(rules, 2)
    rng = random.Random(args.seed)
    print(f"ms per position, {args.positions} positions per row, fastest of 3 runs each")
    for size in map(int, args.sizes.split(",")):
        positions = [position(rules, size, rng.randint(14, 25), rng) for _ in range(args.positions)]
        for goal in args.goals.split(","):
            best: list[list[float]] = [[], []]
            for table, hand in positions:
                runs: list[list[float]] = [[], []]
                for _ in range(3):
                    for which, value in enumerate(settings):
                        setattr(solver, args.switch, value)
                        runs[which].append(timed(rules, table, hand, goal))
                for which in (0, 1):
                    best[which].append(min(runs[which]))
            for which, value in enumerate(args.values.split(",")):
                print(f"table ~{size:2} {goal:8} {args.switch} {value:4} {summary(best[which])}")
    setattr(solver, args.switch, default)


if __name__ == "__main__":
    main()
