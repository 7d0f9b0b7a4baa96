"""Melds: is a group of cards a set or a run, and what does each joker stand for.

A meld is judged as a multiset (the order of the input is not significant). Every legal
*reading* is enumerated: the kind, the cards in canonical display order with each joker in the
place it stands for, the card each position stands for, and the reading's point value. The
readings are ordered best first (highest value, then runs before sets, then the lowest start),
so ``readings[0]`` is the canonical display and the value counted for an opening.

Readings are cached per rule-set meld parameters: tables repeat the same melds turn after turn,
which is what keeps a turn judgement in the tens of microseconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import combinations
from typing import Literal

from shared.core.cards import JOKER, RANK_NAMES, SUITS, card_str, make_card
from shared.core.rulesets import RuleSet

MIN_MELD = 3
MeldKind = Literal["set", "run"]


@dataclass(frozen=True, slots=True)
class Reading:
    """One legal way to read a meld."""

    kind: MeldKind
    cards: tuple[int, ...]  # display order, jokers in place
    stands_for: tuple[int, ...]  # the card each position stands for (naturals: themselves)
    value: int  # sum of the point values of ``stands_for``

    def joker_cards(self) -> tuple[int, ...]:
        """The cards the jokers stand for, in display order."""
        return tuple(s for c, s in zip(self.cards, self.stands_for, strict=True) if c == JOKER)

    def joker_map(self) -> dict[int, int]:
        """Display position -> card stood for, for each joker."""
        pairs = enumerate(zip(self.cards, self.stands_for, strict=True))
        return {i: s for i, (c, s) in pairs if c == JOKER}


MeldKey = tuple[str, int, int, str]  # ace, run_max, set_max, point_values
_CACHES: dict[MeldKey, dict[tuple[int, ...], tuple[Reading, ...]]] = {}
_CACHE_LIMIT = 200_000


@cache
def card_values(point_values: str) -> tuple[int, ...]:
    """Point value of each natural card (index = card); jokers take the card they stand for.

    ``none`` rule sets still order readings by face value, so the display is deterministic.
    (Made once per kind of point values: bots and the solver ask for it on every move.)
    """
    table = []
    for card in range(52):
        rank = card % 13 + 1
        if point_values == "cards":
            table.append(15 if rank == 1 else 10 if rank > 10 else rank)
        else:
            table.append(rank)
    return tuple(table)


def meld_key(rules: RuleSet) -> MeldKey:
    """The fields of a rule set that decide meld validity and value."""
    return (rules.ace, rules.run_max, rules.set_max, rules.point_values)


def reading_cache(rules: RuleSet) -> dict[tuple[int, ...], tuple[Reading, ...]]:
    """The cache of readings for this rule set's meld parameters (sorted card tuple -> readings)."""
    key = meld_key(rules)
    cache = _CACHES.get(key)
    if cache is None:
        cache = _CACHES[key] = {}
    return cache


def readings(cards: Iterable[int], rules: RuleSet) -> tuple[Reading, ...]:
    """Every legal reading of ``cards`` under ``rules``, best first; empty if not a meld."""
    key = tuple(sorted(cards))
    cache = reading_cache(rules)
    found = cache.get(key)
    if found is None:
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()
        found = cache[key] = _enumerate(key, *meld_key(rules))
    return found


def is_meld(cards: Iterable[int], rules: RuleSet) -> bool:
    """Whether ``cards`` can be read as a set or a run."""
    return bool(readings(cards, rules))


def best_reading(cards: Iterable[int], rules: RuleSet) -> Reading | None:
    """The canonical reading (highest value), or None if not a meld."""
    found = readings(cards, rules)
    return found[0] if found else None


def joker_candidates(cards: Iterable[int], rules: RuleSet) -> set[int]:
    """Every natural card some joker of this meld stands for in some legal reading."""
    return {card for r in readings(cards, rules) for card in r.joker_cards()}


def _enumerate(
    cards: tuple[int, ...], ace: str, run_max: int, set_max: int, point_values: str
) -> tuple[Reading, ...]:
    jokers = cards.count(JOKER)
    naturals = cards[: len(cards) - jokers]  # sorted, so jokers (52) are last
    length = len(cards)
    if not naturals or length < MIN_MELD:
        return ()
    values = card_values(point_values)
    ranks = [c % 13 + 1 for c in naturals]
    suits = [c // 13 for c in naturals]
    found: list[tuple[int, int, int, Reading]] = []

    if length <= set_max and len(set(ranks)) == 1 and len(set(suits)) == len(suits):
        rank = ranks[0]
        missing = [s for s in range(4) if s not in suits]
        for combo in combinations(missing, jokers):
            stands = (*naturals, *(make_card(rank, s) for s in combo))
            shown = (*naturals, *(JOKER,) * jokers)
            value = sum(values[c] for c in stands)
            found.append((-value, 1, 0, Reading("set", shown, stands, value)))

    if length <= run_max and len(set(suits)) == 1 and len(set(ranks)) == len(ranks):
        suit = suits[0]
        present = set(ranks)
        if ace == "wrap" and length == 13:
            starts: Iterable[int] = [1]
        elif ace == "wrap":
            starts = [s for s in range(1, 14) if all((r - s) % 13 < length for r in present)]
        else:
            starts = range(max(1, max(ranks) - length + 1), min(min(ranks), 14 - length) + 1)
        for start in starts:
            positions = [(start - 1 + k) % 13 + 1 for k in range(length)]
            stands = tuple(make_card(r, suit) for r in positions)
            shown = tuple(make_card(r, suit) if r in present else JOKER for r in positions)
            value = sum(values[c] for c in stands)
            found.append((-value, 0, start, Reading("run", shown, stands, value)))

    found.sort(key=lambda entry: entry[:3])
    return tuple(entry[3] for entry in found)


def meld_str(cards: Sequence[int]) -> str:
    """``[5H JK 7H]``: a meld as people write it in messages."""
    return "[" + " ".join(card_str(c) for c in cards) + "]"


def why_not_meld(cards: Sequence[int], rules: RuleSet) -> str:
    """A sentence saying why ``cards`` is not a meld under ``rules`` (call only when it is not)."""
    shown = meld_str(sorted(cards))
    jokers = sum(1 for c in cards if c == JOKER)
    naturals = sorted(c for c in cards if c != JOKER)
    if len(cards) < MIN_MELD:
        return f"{shown} has {len(cards)} card(s); a meld needs at least {MIN_MELD}"
    if not naturals:
        return f"{shown} is only jokers; a meld needs at least one natural card"
    ranks = [c % 13 + 1 for c in naturals]
    suits = [c // 13 for c in naturals]
    if len(set(ranks)) == 1:
        repeated = [SUITS[s] for s in set(suits) if suits.count(s) > 1]
        if repeated:
            return (
                f"{shown} is not a set: suit {repeated[0]} appears twice (a set needs distinct "
                "suits) and one rank cannot make a run"
            )
        return (
            f"{shown} is not a set: it has {len(cards)} cards and a set has at most {rules.set_max}"
        )
    if len(set(suits)) > 1 and len(set(ranks)) > 1:
        return (
            f"{shown} is neither a set (cards of one rank) nor a run (cards of one suit): it "
            "mixes ranks and suits"
        )
    if len(set(ranks)) < len(ranks):
        twice = next(RANK_NAMES[r - 1] for r in ranks if ranks.count(r) > 1)
        return f"{shown} is not a run: rank {twice} appears twice"
    if len(cards) > rules.run_max:
        return (
            f"{shown} is not a run: it has {len(cards)} cards and a run has at most {rules.run_max}"
        )
    span = max(ranks) - min(ranks) + 1
    if rules.ace == "low" and 1 in ranks and 13 in ranks:
        return (
            f"{shown} is not a run: the ace is low in {rules.name} (A-2-3 is a run, Q-K-A and "
            "K-A-2 are not)"
        )
    missing = span - len(ranks)
    return (
        f"{shown} is not a run: from {RANK_NAMES[min(ranks) - 1]} to "
        f"{RANK_NAMES[max(ranks) - 1]} {missing} rank(s) are missing and it has {jokers} joker(s) "
        "to fill them"
    )
