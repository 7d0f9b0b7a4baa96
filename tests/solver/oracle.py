"""An independent oracle: the integer program of den Hertog and Hulshof (2006) over every
candidate meld, solved with HiGHS (a test-only dependency).

A candidate is a multiset (naturals, number of jokers) that has a legal reading. Runs longer
than 5 are left out when they split into two legal runs (any play using them uses the two
parts instead), which keeps the model small without losing a single play. Variables: how often
each candidate is laid (0-2), how many of each hand card are played, how many jokers come from
the hand or go back to it (``to_hand``: matched to played naturals, reading by reading, as
``judge_play`` does). The objective is lexicographic through weights, and
solved to a zero gap (HiGHS's default relative gap would accept a worse tie-break).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import combinations

import highspy

from shared.core.cards import JOKER, make_card
from shared.core.melds import card_values, readings
from shared.core.rulesets import RuleSet


@dataclass(frozen=True)
class OracleResult:
    feasible: bool
    cards: int  # hand cards placed (jokers count)
    naturals: int  # hand naturals placed
    jokers: int  # jokers in the layout
    points: int  # value of the placed hand naturals + every layout joker at its best reading
    seconds: float  # time in HiGHS
    build_seconds: float


@cache
def candidates(
    ace: str, run_max: int, set_max: int, max_jokers: int
) -> tuple[tuple[tuple[int, ...], int], ...]:
    """Every candidate meld as (sorted naturals, jokers)."""
    found: set[tuple[tuple[int, ...], int]] = set()
    for rank in range(1, 14):
        for size in range(1, set_max + 1):
            for suits in combinations(range(4), size):
                for jokers in range(max(0, 3 - size), set_max - size + 1):
                    if jokers <= max_jokers:
                        found.add((tuple(make_card(rank, s) for s in suits), jokers))
    longest = min(run_max, 13)
    starts = range(1, 14) if ace == "wrap" else range(1, 12)
    for suit in range(4):
        for start in starts:
            for length in range(3, longest + 1):
                if ace == "low" and start + length - 1 > 13:
                    break
                if ace == "wrap" and length == 13 and start != 1:
                    continue
                ranks = [(start - 1 + k) % 13 + 1 for k in range(length)]
                for count in range(max(1, length - max_jokers), length + 1):
                    for positions in combinations(range(length), count):
                        if length > 5 and _splits(positions, length):
                            continue
                        naturals = tuple(sorted(make_card(ranks[p], suit) for p in positions))
                        found.add((naturals, length - count))
    return tuple(sorted(found))


def _splits(positions: Sequence[int], length: int) -> bool:
    """Whether a run with naturals at ``positions`` splits into two runs of 3+ with a natural."""
    return any(
        any(p < cut for p in positions) and any(p >= cut for p in positions)
        for cut in range(3, length - 2)
    )


def _value(meld: tuple[int, ...], rules: RuleSet) -> int:
    found = readings(meld, rules)
    return found[0].value if found else -1


def solve_ilp(
    rules: RuleSet,
    table: Sequence[Sequence[int]],
    hand: Sequence[int],
    opened: bool,
    goal: str = "cards",
) -> OracleResult:
    """The optimum of the integer program for ``goal`` (cards, points or opening)."""
    started = time.perf_counter()
    opening = (not opened and rules.opening_points > 0) or goal == "opening"
    table_cards = [] if opening else [c for m in table for c in m]
    t = Counter(table_cards)
    h = Counter(hand)
    tj, hj = t[JOKER], h[JOKER]
    pool = t + h
    values = card_values(rules.point_values)
    model = highspy.Highs()
    model.silent()
    model.setOptionValue("output_flag", False)
    # The objective is lexicographic through weights, so HiGHS's default relative gap (1e-4)
    # would accept a play that loses a tie-break (24 cards and 3 jokers, 23_997, is within
    # 1e-4 of 24 cards and 1 joker, 23_999): prove the optimum exactly. The objective is an
    # integer, so an absolute gap below 1 is a proof.
    model.setOptionValue("mip_rel_gap", 0.0)
    model.setOptionValue("mip_abs_gap", 0.5)
    melds = []
    for naturals, jokers in candidates(rules.ace, rules.run_max, rules.set_max, tj + hj):
        if jokers > tj + hj or any(pool[c] < n for c, n in Counter(naturals).items()):
            continue
        key = tuple(sorted((*naturals, *(JOKER,) * jokers)))
        value = _value(key, rules)
        if value < 0:
            continue
        melds.append((naturals, jokers, value))
    x = [model.addIntegral(lb=0, ub=2) for _ in melds]
    uses: dict[int, list[int]] = {}
    for i, (naturals, _, _) in enumerate(melds):
        for c in naturals:
            uses.setdefault(c, []).append(i)
    y: dict[int, object] = {}
    for c in set(pool) - {JOKER}:
        y[c] = model.addIntegral(lb=0, ub=h[c])
        expr = sum(x[i] * melds[i][0].count(c) for i in uses.get(c, [])) if uses.get(c) else 0
        model.addConstr(expr - y[c] == t[c])  # type: ignore[operator]
    jokers_used = sum(x[i] * melds[i][1] for i in range(len(melds)) if melds[i][1])
    dp = model.addIntegral(lb=0, ub=hj)  # jokers from the hand
    dn = model.addIntegral(lb=0, ub=tj)  # table jokers back to the hand
    if isinstance(jokers_used, int):  # no candidate holds a joker
        model.addConstr(dp - dn == -tj)
    else:
        model.addConstr(jokers_used - dp + dn == tj)  # type: ignore[operator]
    if rules.joker_policy == "to_hand" and tj and not opening:
        side = model.addIntegral(lb=0, ub=1)  # 1: jokers from the hand, 0: back to it
        model.addConstr(dp - hj * side <= 0)
        model.addConstr(dn + tj * side <= tj)
        redeemed = []
        by_card: dict[int, list[object]] = {}
        for meld in table:
            if JOKER not in meld:
                continue
            choose = []
            for reading in readings(meld, rules):
                u = model.addIntegral(lb=0, ub=1)
                choose.append(u)
                for card, n in Counter(reading.joker_cards()).items():
                    r = model.addIntegral(lb=0, ub=n)
                    model.addConstr(r - n * u <= 0)
                    redeemed.append(r)
                    by_card.setdefault(card, []).append(r)
            model.addConstr(sum(choose) <= 1)  # type: ignore[arg-type]
        for card, rs in by_card.items():
            if card in y:
                model.addConstr(sum(rs) - y[card] <= 0)  # type: ignore[arg-type, operator]
            else:
                model.addConstr(sum(rs) <= 0)  # type: ignore[arg-type]
        model.addConstr(dn - sum(redeemed) <= 0)  # type: ignore[arg-type, operator]
    else:
        model.addConstr(dn <= 0)
    naturals_played = sum(y.values()) if y else 0
    sum(y[c] * values[c] for c in y) if y else 0
    layout_value = sum(x[i] * melds[i][2] for i in range(len(melds)))
    table_value = sum(values[c] * n for c, n in t.items() if c != JOKER)
    points = layout_value - table_value  # hand naturals + every layout joker
    if opening:
        if isinstance(layout_value, int):  # no candidate meld at all
            return OracleResult(False, 0, 0, 0, 0, 0.0, time.perf_counter() - started)
        model.addConstr(layout_value >= rules.opening_points)
    cards = naturals_played + dp
    if isinstance(cards, int):  # nothing could be played
        return OracleResult(False, 0, 0, 0, 0, 0.0, time.perf_counter() - started)
    model.addConstr(cards >= 1)  # a play moves at least one card from the hand
    jokers_total = jokers_used
    if goal == "points":
        objective = points * 10_000 + cards * 10 - jokers_total
    elif goal == "opening":
        objective = naturals_played * 1_000_000 - jokers_total * 1_000 + points
    else:
        objective = cards * 1_000 - jokers_total
    build = time.perf_counter() - started
    started = time.perf_counter()
    model.maximize(objective)  # type: ignore[arg-type]
    seconds = time.perf_counter() - started
    status = model.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        return OracleResult(False, 0, 0, 0, 0, seconds, build)

    def val(v: object) -> int:
        return round(model.val(v)) if not isinstance(v, int) else v

    nat = sum(val(v) for v in y.values())
    used_j = sum(val(x[i]) * melds[i][1] for i in range(len(melds)))
    pts = sum(val(x[i]) * melds[i][2] for i in range(len(melds))) - table_value
    return OracleResult(True, nat + val(dp), nat, used_j, pts, seconds, build)
