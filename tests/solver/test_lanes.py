"""The lane-reading bound (``dp.lanes``) never promises less than a state can still score.

Every state the DP can reach on small random positions (no floor, no dominance: every state,
with its best score so far) is followed to its best completion by a plain backward pass; the
bound of each state must be at least that. A bound below it would drop the optimum silently
(the first version of the bound took the jokers of a rank's pending sets twice: caught here).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from shared.solver import goals as solver_module
from shared.solver import solve
from shared.solver.dp.bounds import joker_rows, lane_bound, upper_bounds
from shared.solver.dp.program import (
    UNREACHABLE,
    Problem,
    initial_states,
    key_layout,
    machinery,
    set_joker_counts,
    turned_problem,
)
from tests.solver.positions import position
from tests.solver.test_exact import random_rules

NEG = -(1 << 60)


def moves(p: Problem, stage: int, key: int) -> list[tuple[int, int]]:
    """The DP's moves from a state before ``stage`` (0-64: four suits, then the sets, per rank)
    as (next key, score gained), within the problem's jokers."""
    pairs = machinery(p.cfg)[1]
    lay = key_layout(p.cfg)
    js, c1s = lay.js, lay.c1s
    rank, suit = divmod(stage, 5)
    rank += 1
    found: list[tuple[int, int]] = []
    if suit < 4:
        shift = lay.width * suit
        pair = (key >> shift) & lay.mask
        for new, jok, m, used, _ in pairs.suit_options(
            pair, p.table[rank][suit], p.hand[rank][suit]
        ):
            gain = p.nat_weight[rank] * used + p.joker_weight[rank] * jok
            found.append((key + lay.option_key(shift, pair, new, jok, m), gain))
    else:
        base = key & ((1 << c1s) - 1)
        used = (key >> js) & 15
        for j in set_joker_counts((key >> c1s) & 7, (key >> lay.c2s) & 7, p.cfg.set_max):
            if used + j <= p.jokers_max:  # (counts run to 16: a 4-bit field would overflow)
                found.append((base + (j << js), p.joker_weight[rank] * j))
    return [(new_key, gain) for new_key, gain in found if (new_key >> js) & 15 <= p.jokers_max]


def every_state(p: Problem) -> list[dict[int, int]]:
    """Per stage (0: before anything; then four suits and the sets per rank), every reachable
    state key with its best score so far."""
    lanes, pairs = machinery(p.cfg)
    stages = [initial_states(p, lanes, pairs, key_layout(p.cfg).width)]
    for stage in range(65):
        nxt: dict[int, int] = {}
        for key, score in stages[-1].items():
            for new_key, gain in moves(p, stage, key):
                if nxt.get(new_key, NEG) < score + gain:
                    nxt[new_key] = score + gain
        stages.append(nxt)
    return stages


def best_completions(p: Problem, stages: list[dict[int, int]]) -> list[dict[int, int]]:
    """Per stage and state: the most still to be scored (with the joker adjustment), NEG when
    no arrangement completes it."""
    pairs = machinery(p.cfg)[1]
    lay = key_layout(p.cfg)
    later: dict[int, int] = {}
    for key in stages[-1]:
        jokers = (key >> lay.js) & 15
        ends = all(pairs.end_ok((key >> (lay.width * s)) & lay.mask) for s in range(4))
        later[key] = p.joker_adjust[jokers] if ends and jokers >= p.jokers_min else NEG
    out = [later]
    for stage in range(64, -1, -1):
        here: dict[int, int] = {}
        for key in stages[stage]:
            best = NEG
            for new_key, gain in moves(p, stage, key):
                rest = later.get(new_key, NEG)
                if rest > NEG:
                    best = max(best, gain + rest)
            here[key] = best
        later = here
        out.append(here)
    out.reverse()
    return out


def problems(seed: int, count: int) -> list[Problem]:
    """The DP problems the solver builds for random small positions (every goal)."""
    found: list[Problem] = []
    original = solver_module._stepped

    def record(p: Problem, unit: int, known: Any = None) -> Any:
        found.append(turned_problem(p)[0])
        return original(p, unit, known)

    rng = random.Random(seed)
    solver_module._stepped = record  # type: ignore[assignment]
    try:
        for _ in range(count):
            rules = random_rules(rng, fast=True)
            table, hand = position(rules, rng.choice([0, 6, 10, 16, 24]), rng.randint(3, 14), rng)
            goal = rng.choice(["cards", "points", "opening"])
            solve(rules, table, hand, rng.random() < 0.8, goal)  # type: ignore[arg-type]
    finally:
        solver_module._stepped = original  # type: ignore[assignment]
    return found


@pytest.mark.parametrize("seed", range(6))
def test_the_bounds_never_promise_less_than_a_state_can_score(seed: int) -> None:
    checked = 0
    for p in problems(seed, 16):
        stages = every_state(p)
        completions = best_completions(p, stages)
        static = upper_bounds(p)
        lanes = lane_bound(p)
        rows = joker_rows(p)
        assert len(rows) == 14
        lay = key_layout(p.cfg)
        for stage, states in enumerate(stages):
            rank, suit = (0, 4) if stage == 0 else divmod(stage - 1, 5)
            rank += stage > 0
            bound = lanes.at(rank, suit)
            for key in states:
                rest = completions[stage][key]
                if rest == NEG:
                    continue
                used = (key >> lay.js) & 15
                assert static[rank][suit][used] >= rest, (stage, key, p)
                sharper = bound(key, used)
                assert sharper > UNREACHABLE // 2 and sharper >= rest, (stage, key, rest, p)
                checked += 1
    assert checked > 1000
