"""Rules-core figures: meld checks and turn judgements per second on realistic tables.

Run with `make bench` (or `python tests/bench/core.py`). Tables hold 40-80 cards, hands 14.
The judged play extends one run of the table with a card from the hand (a legal play), on a
table whose melds the referee has seen before (their readings cached, as in a live game) while
the played layout is new to it (its changed meld is read from scratch, as a live turn's is); the
cold figure re-reads every meld.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shared.core.judgement import judge_play
from shared.core.melds import _CACHES, readings
from shared.core.rulesets import rule_set
from tests.bench.positions import random_table, remaining


def extend_play(table: list[list[int]], hand: list[int]) -> list[list[int]] | None:
    """A layout that adds one hand card to the end of a run, if the hand allows one."""
    for i, meld in enumerate(table):
        if 52 in meld or len({c // 13 for c in meld}) != 1:
            continue
        top = max(meld)
        if top % 13 != 12 and top + 1 in hand:
            return [m if j != i else [*m, top + 1] for j, m in enumerate(table)]
    return None


def main() -> None:
    rules = rule_set("robbers", {"jokers": 2})
    rng = random.Random(7)
    positions: list[tuple[int, list[list[int]], list[int], list[list[int]]]] = []
    while len(positions) < 400:
        size = rng.choice([40, 60, 80])
        table = random_table(rules, size, rng)
        hand = rng.sample(remaining(rules, table), 14)
        layout = extend_play(table, hand)
        if layout is not None:
            positions.append((size, table, hand, layout))

    melds = [m for _, t, _, _ in positions for m in t]
    start = time.perf_counter()
    for meld in melds:
        readings(meld, rules)
    warm_meld = len(melds) / (time.perf_counter() - start)
    start = time.perf_counter()
    for meld in melds:
        _CACHES.clear()
        readings(meld, rules)
    cold_meld = len(melds) / (time.perf_counter() - start)
    print(f"meld checks/s (cached reading):   {warm_meld:>12,.0f}")
    print(f"meld checks/s (read from scratch): {cold_meld:>11,.0f}")

    for size in (40, 60, 80):
        chosen = [p for p in positions if p[0] == size]
        samples = []
        for _ in range(20):
            for _, t, h, lay in chosen:
                # As in a live game: the table's melds were read before, the played layout
                # (its changed meld) never was.
                _CACHES.clear()
                for meld in t:
                    readings(meld, rules)
                begin = time.perf_counter_ns()
                verdict = judge_play(rules, t, h, True, lay)
                samples.append(time.perf_counter_ns() - begin)
                assert verdict.legal, verdict
        median_us = statistics.median(samples) / 1000
        cards = statistics.mean(sum(len(m) for m in t) for _, t, _, _ in chosen)
        print(
            f"turn judgement, {size}-card table (mean {cards:.0f}): median {median_us:6.1f} us,"
            f" {1e6 / median_us:>9,.0f} judgements/s"
        )


if __name__ == "__main__":
    main()
