"""Shared checks of the solver tests: legality, conservation of cards, and the oracles."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import cache
from itertools import combinations

from shared.core.cards import JOKER, parse_cards
from shared.core.judgement import judge_play
from shared.core.melds import card_values, readings
from shared.core.rulesets import RuleSet
from shared.solver import Play


def melds(*texts: str) -> list[list[int]]:
    """``melds("5H 6H 7H", "9S 9D 9C")``."""
    return [parse_cards(t.split()) for t in texts]


def cards(text: str) -> list[int]:
    return parse_cards(text.split())


def check_play(
    rules: RuleSet, table: Sequence[Sequence[int]], hand: Sequence[int], opened: bool, play: Play
) -> None:
    """A found play is legal and conserves cards; no play leaves the table as it is."""
    if not play.found:
        assert play.played == ()
        assert sorted(map(sorted, play.layout)) == sorted(map(sorted, table))
        return
    verdict = judge_play(rules, table, hand, opened, play.layout)
    assert verdict.legal, (verdict.code, verdict.reason)
    after = Counter(c for m in play.layout for c in m)
    before = Counter(c for m in table for c in m)
    assert after == before + Counter(play.played) - Counter(play.to_hand)
    assert not Counter(play.played) - Counter(hand)
    assert sorted(verdict.played) == sorted(play.played)


def dp_points(
    rules: RuleSet, play: Play, table: Sequence[Sequence[int]] = (), opening: bool = False
) -> int:
    """Points as the solver ranks them: hand naturals played plus every layout joker at the
    card it stands for in its meld's best reading (an opening: the new melds' jokers only)."""
    values = card_values(rules.point_values)
    total = sum(values[c] for c in play.played if c != JOKER)
    melds = list(play.layout)
    if opening:
        for meld in table:
            key = tuple(sorted(meld))
            melds.remove(next(m for m in melds if tuple(sorted(m)) == key))
    for meld in melds:
        total += sum(values[c] for c in readings(meld, rules)[0].joker_cards())
    return total


def brute_force_cards(rules: RuleSet, table: Sequence[int], hand: Sequence[int]) -> int | None:
    """Exhaustive search on small cases: the most hand cards that can join ``table``'s cards in
    valid melds (every table card, jokers included, placed), or None when the table cards alone
    cannot be arranged. Independent of the DP: it tries every sub-multiset as a meld."""
    pool = tuple(sorted([*table, *hand]))
    must = Counter(table)

    @cache
    def is_meld(key: tuple[int, ...]) -> bool:
        return bool(readings(key, rules))

    candidates = sorted(
        {
            key
            for size in range(3, min(len(pool), 13) + 1)
            for key in combinations(pool, size)
            if is_meld(key)
        }
    )

    @cache
    def best(left: tuple[int, ...]) -> int | None:
        """Most hand cards placed from ``left`` once every mandatory card in it is placed."""
        counts = Counter(left)
        need = [c for c in sorted(counts) if must_left(counts, c) > 0]
        found: int | None = None
        if not need:
            found = 0
        for key in candidates:
            if need and need[0] not in key:
                continue
            if Counter(key) - counts:
                continue
            rest = counts - Counter(key)
            sub = best(tuple(sorted(rest.elements())))
            if sub is not None:
                placed = len(key) - mandatory_in(counts, key)
                if found is None or sub + placed > found:
                    found = sub + placed
        return found

    def must_left(counts: Counter[int], card: int) -> int:
        return max(0, must[card] - (pool.count(card) - counts[card]))

    def mandatory_in(counts: Counter[int], key: tuple[int, ...]) -> int:
        return sum(min(n, must_left(counts, c)) for c, n in Counter(key).items())

    return best(pool)
