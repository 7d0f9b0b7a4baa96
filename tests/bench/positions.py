"""Random realistic positions for the benchmarks: a valid table of a given size and a hand."""

from __future__ import annotations

import random

from shared.core.cards import JOKER, deck, make_card
from shared.core.rulesets import RuleSet


def random_table(rules: RuleSet, cards_on_table: int, rng: random.Random) -> list[list[int]]:
    """Valid melds (runs of 3-6 and sets of 3-4, some with a joker) totalling about the size."""
    pool = deck(rules.jokers)
    available = {c: pool.count(c) for c in set(pool)}
    table: list[list[int]] = []
    total = 0
    attempts = 0
    while total < cards_on_table and attempts < 10_000:
        attempts += 1
        suit = rng.randrange(4)
        if rng.random() < 0.6:
            length = rng.randint(3, 6)
            start = rng.randint(1, 14 - length)
            meld = [make_card(start + k, suit) for k in range(length)]
        else:
            rank = rng.randint(1, 13)
            meld = [make_card(rank, s) for s in rng.sample(range(4), rng.randint(3, 4))]
        if available.get(JOKER, 0) and rng.random() < 0.15:
            meld[rng.randrange(len(meld))] = JOKER
        need = {c: meld.count(c) for c in meld}
        if all(available.get(c, 0) >= n for c, n in need.items()):
            for c, n in need.items():
                available[c] -= n
            table.append(meld)
            total += len(meld)
    return table


def remaining(rules: RuleSet, table: list[list[int]]) -> list[int]:
    """The cards of the deck that are not on the table."""
    left = deck(rules.jokers)
    for meld in table:
        for card in meld:
            left.remove(card)
    return left
