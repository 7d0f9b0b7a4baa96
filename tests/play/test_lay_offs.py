"""The bots' cheap test of a lay-off (``extending_cards``) never rules out a card the rules core
would read as lengthening the meld, so skipping the core for those cards changes no move."""

from __future__ import annotations

import random

import pytest

from shared.core.cards import JOKER, make_card
from shared.core.melds import readings
from shared.core.rulesets import PRESETS, rule_set
from shared.play.bots import extending_cards


def _melds(rng: random.Random, count: int) -> list[tuple[int, ...]]:
    """Sets and runs of 3-7 cards, some with jokers standing in."""
    melds: list[tuple[int, ...]] = []
    while len(melds) < count:
        if rng.random() < 0.5:
            rank = rng.randint(1, 13)
            suits = rng.sample(range(4), rng.randint(3, 4))
            cards = [make_card(rank, s) for s in suits]
        else:
            suit, length = rng.randrange(4), rng.randint(3, 7)
            start = rng.randint(1, 14 - length)
            cards = [make_card(r, suit) for r in range(start, start + length)]
        for i in rng.sample(range(len(cards)), rng.randint(0, 1)):
            cards[i] = JOKER
        melds.append(tuple(cards))
    return melds


@pytest.mark.parametrize("family", sorted(PRESETS))
def test_a_card_ruled_out_never_lengthens_the_meld(family: str) -> None:
    rules = rule_set(family)
    rng = random.Random(family)
    ruled_out = 0
    for meld in _melds(rng, 400):
        assert readings(meld, rules), meld
        passed = extending_cards(meld, range(JOKER + 1))
        for card in set(range(JOKER + 1)) - set(passed):
            ruled_out += 1
            assert not readings((*meld, card), rules), (meld, card)
    assert ruled_out > 400 * 30  # most pairs are ruled out: the test is worth its cost


def test_jokers_and_cards_of_the_same_rank_or_suit_pass() -> None:
    run = (make_card(4, 1), make_card(5, 1), make_card(6, 1))
    a_set = (make_card(9, 0), make_card(9, 2), JOKER)
    hand = [make_card(7, 1), make_card(12, 1), make_card(9, 3), make_card(7, 2), JOKER]
    assert extending_cards(run, hand) == [make_card(7, 1), make_card(12, 1), JOKER]
    assert extending_cards(a_set, hand) == [make_card(9, 3), JOKER]
    assert extending_cards((JOKER, JOKER, JOKER), hand) == hand
