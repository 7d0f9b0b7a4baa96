"""A solve leaves no reference cycles behind.

The searches build tens of thousands of small objects; when a recursive closure or a bound
function that refers back to its owner keeps them in a cycle, they outlive the search until the
cyclic collector walks them all, a pause of 5-16 ms measured inside 2-10 ms searches (the
bench's ``opening`` p95 was 20-23 ms, 7-11 ms without). Reference counting must free them the
moment a solve returns.
"""

from __future__ import annotations

import gc
import os
import random
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.core.judgement import judge_play
from shared.core.rulesets import rule_set
from shared.solver import arrange, solve
from tests.solver.positions import position


def solve_sample(family: str, options: dict[str, object], per_size: int) -> None:
    """Every goal (and the arrangement) on ``per_size`` random positions of 20 and 40 cards."""
    rules = rule_set(family, options)
    rng = random.Random(5)
    for size in (20, 40):
        for _ in range(per_size):
            table, hand = position(rules, size, rng.randint(14, 25), rng)
            for goal in ("cards", "points", "opening"):
                play = solve(rules, table, hand, goal != "opening", goal, min_disruption=True)
                judge_play(rules, table, hand, goal != "opening", list(play.layout))
            arrange(rules, [c for meld in table for c in meld] + hand)


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """The collector off and keeping what it finds unreachable (``gc.garbage``), as it was after."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


@pytest.mark.parametrize(
    ("family", "options"),
    [
        ("rummikub", {"jokers": 2}),
        ("rummikub", {"jokers": 4, "ace": "wrap", "joker_policy": "to_hand"}),
        ("robbers", {}),
    ],
)
def test_solving_leaves_no_cyclic_garbage(
    family: str, options: dict[str, object], saved_garbage: list[object]
) -> None:
    solve_sample(family, options, 3)
    gc.collect()
    kinds = Counter(type(o).__qualname__ for o in saved_garbage)
    functions = Counter(getattr(o, "__qualname__", "?") for o in saved_garbage if callable(o))
    assert not saved_garbage, f"cyclic garbage left: {kinds.most_common(6)}; {functions}"


def test_solving_as_plain_python_leaves_no_cyclic_garbage() -> None:
    """The same as plain Python (the test above runs the compiled modules where they are
    built): a closure calling itself makes a cycle there and not in compiled code, or the other
    way round."""
    script = (
        "import gc; from shared.infra.runtime import configure_solver; configure_solver(); "
        "from shared.solver import runs_compiled; "
        "from tests.solver.test_garbage import solve_sample; "
        "assert not runs_compiled(); "
        "solve_sample('rummikub', {'jokers': 2}, 1); "  # tables built once per process
        "gc.collect(); gc.disable(); "
        "solve_sample('rummikub', {'jokers': 4, 'ace': 'wrap', 'joker_policy': 'to_hand'}, 1); "
        "print(gc.collect())"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "RUMMY_SOLVER": "python"}
    ran = subprocess.run(
        [sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "0", f"cyclic garbage left: {ran.stdout.strip()} objects"
