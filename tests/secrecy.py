"""What a viewer may know of a game's cards, from the state's whole truth, and the check that an
output (a masked event, a view, a replay, a feed page) shows nothing more.

A viewer may know its own hand, the table and the pile (every card of it was laid face up). Every
other card is hidden from it: the other seats' hands and the stock. An output leaks when it shows
some card more often than those places hold it; the cards are compared as notation, so copies of
one card (two decks) are counted, not told apart.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from shared.core.cards import cards_str
from shared.core.events import Event, RoundDealt
from shared.core.state import GameState

CARD = re.compile(r"^(?:A|[2-9]|10|J|Q|K)[SHDC]$|^JK$")
# A card named inside a text (a rejected layout's reason: "meld 8 [5S] has 1 card(s)").
NAMED = re.compile(
    r"(?<![0-9A-Za-z])(?:A|[2-9]|10|J|Q|K)[SHDC](?![0-9A-Za-z])|(?<![A-Za-z])JK(?![A-Za-z])"
)


def card_texts(value: Any) -> Counter[str]:
    """Every card in notation in a JSON value (strings that are a card, and cards named inside
    other strings), counted."""
    found: Counter[str] = Counter()
    for text in _texts(value):
        if CARD.match(text):
            found[text] += 1
        else:
            found.update(NAMED.findall(text))
    return found


def visible(state: GameState, viewer: int | None) -> Counter[str]:
    """The cards ``viewer`` (a seat, or None for a spectator) may know of in ``state``."""
    known: Counter[str] = Counter(cards_str(c for meld in state.table for c in meld))
    known += Counter(cards_str(state.discard))
    if viewer is not None and state.hands:
        known += Counter(cards_str(state.hands[viewer]))
    return known


def around(event: Event, before: GameState, after: GameState, viewer: int | None) -> Counter[str]:
    """What ``viewer`` may know of while ``event`` happens: what it could see before or after
    (a card drawn from the pile was on it, a played card is on the table). A deal replaces every
    hand, the stock and the table, so what was visible before it says nothing of it."""
    if isinstance(event, RoundDealt):
        return visible(after, viewer)
    return visible(before, viewer) | visible(after, viewer)


def excess(shown: Any, allowed: Counter[str]) -> dict[str, int]:
    """The cards ``shown`` holds beyond ``allowed`` (empty: nothing leaks)."""
    return {card: n - allowed[card] for card, n in card_texts(shown).items() if n > allowed[card]}


def assert_within(shown: Any, allowed: Counter[str], where: object) -> None:
    """``shown`` shows no card beyond ``allowed``."""
    extra = excess(shown, allowed)
    assert not extra, (where, extra, shown)


def assert_fields_within(shown: dict[str, Any], allowed: Counter[str], where: object) -> None:
    """Each field of a shown event shows no card beyond ``allowed`` (one field at a time: a play's
    ``played`` cards are also in its ``layout``)."""
    for name, value in shown.items():
        assert_within(value, allowed, (where, name))


def assert_no_text(shown: Any, secrets: Iterable[str], where: object) -> None:
    """None of ``secrets`` (the seed, the shuffle key, other seats' seeds) is in ``shown``."""
    text = json.dumps(shown)
    for secret in secrets:
        assert secret not in text, (where, secret)


def card_lists(value: Any) -> list[list[str]]:
    """Every list of cards in notation inside a JSON value."""
    found: list[list[str]] = []
    if isinstance(value, list | tuple):
        if value and all(isinstance(v, str) and CARD.match(v) for v in value):
            found.append(list(value))
        for item in value:
            found += card_lists(item)
    elif isinstance(value, dict):
        for item in value.values():
            found += card_lists(item)
    return found


RUN = 4  # consecutive stock cards, in order, that no output may show


@functools.lru_cache(maxsize=1024)
def _runs(stock: tuple[int, ...]) -> frozenset[tuple[str, ...]]:
    order = cards_str(stock)
    return frozenset(tuple(order[i : i + RUN]) for i in range(len(order) - RUN + 1))


def assert_no_stock_order(shown: Any, stocks: Iterable[Iterable[int]], where: object) -> None:
    """No list of cards in ``shown`` holds ``RUN`` consecutive cards of any of ``stocks`` in its
    order (its cards may all be known, after a reshuffle of the face-up pile: its order is not)."""
    runs = frozenset().union(*(_runs(tuple(stock)) for stock in stocks))
    if not runs:
        return
    for cards in card_lists(shown):
        for i in range(len(cards) - RUN + 1):
            assert tuple(cards[i : i + RUN]) not in runs, (where, cards)


def _texts(value: Any, into: list[str] | None = None) -> list[str]:
    """Every string inside a JSON value."""
    found = [] if into is None else into
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _texts(item, found)
    elif isinstance(value, list | tuple):
        for item in value:
            _texts(item, found)
    return found


def assert_each_within(shown: Any, allowed: Counter[str], where: object) -> None:
    """Each list of cards and each text in ``shown`` shows no card beyond ``allowed`` (one at a
    time: a replay names a card in several places, a verdict's ``played`` and its ``layout``)."""
    for cards in card_lists(shown):
        assert_within(cards, allowed, where)
    for text in _texts(shown):
        assert_within(text, allowed, where)
