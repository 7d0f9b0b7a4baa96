"""Random positions for the solver tests and figures: a valid table of about a given size (runs
and sets, some with jokers, crossing K-A under ``ace: wrap``) and a hand from the rest."""

from __future__ import annotations

import random

from shared.core.cards import JOKER, deck, make_card
from shared.core.melds import readings
from shared.core.rulesets import RuleSet


def random_table(rules: RuleSet, size: int, rng: random.Random) -> list[list[int]]:
    """Valid melds totalling about ``size`` cards, drawn from one deck."""
    available = {c: 0 for c in range(53)}
    for card in deck(rules.jokers):
        available[card] += 1
    table: list[list[int]] = []
    total = 0
    attempts = 0
    while total < size and attempts < 5_000:
        attempts += 1
        suit = rng.randrange(4)
        if rng.random() < 0.6:
            length = rng.randint(3, min(rules.run_max, 7))
            start = rng.randint(1, 13) if rules.ace == "wrap" else rng.randint(1, 14 - length)
            meld = [make_card((start - 1 + k) % 13 + 1, suit) for k in range(length)]
        else:
            rank = rng.randint(1, 13)
            meld = [make_card(rank, s) for s in rng.sample(range(4), rng.randint(3, rules.set_max))]
        while available[JOKER] and rng.random() < 0.2 and meld.count(JOKER) < len(meld) - 1:
            meld[rng.randrange(len(meld))] = JOKER
            if rng.random() < 0.5:
                break
        need = {c: meld.count(c) for c in meld}
        if not readings(meld, rules):
            continue
        if all(available[c] >= n for c, n in need.items()):
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


def position(
    rules: RuleSet, table_size: int, hand_size: int, rng: random.Random
) -> tuple[list[list[int]], list[int]]:
    """A table of about ``table_size`` cards and a hand of ``hand_size`` from the rest."""
    table = random_table(rules, table_size, rng)
    rest = remaining(rules, table)
    return table, rng.sample(rest, min(hand_size, len(rest)))
