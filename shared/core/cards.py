"""Cards and their notation.

A card is a small int so that hands, tables and the stock are cheap to copy, hash and count:
``suit * 13 + (rank - 1)`` for the 52 naturals (suits in the order S H D C, ranks 1..13 with
A = 1, J = 11, Q = 12, K = 13) and ``JOKER = 52``. Sorting ints therefore sorts loose cards in
the canonical order of RULES.md: suit order, then rank, jokers last.

The notation is rank then suit letter (``QH``, ``10S``, ``JK``). Input also accepts ``1``, ``11``,
``12``, ``13`` for A, J, Q, K, the suit symbols, and lower case; output is always canonical.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

SUITS = "SHDC"
SUIT_SYMBOLS = {"♠": 0, "♤": 0, "♥": 1, "♡": 1, "♦": 2, "♢": 2, "♣": 3, "♧": 3}
RANK_NAMES = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
RANK_INPUT = {name: i + 1 for i, name in enumerate(RANK_NAMES)} | {
    "1": 1,
    "11": 11,
    "12": 12,
    "13": 13,
}
JOKER = 52
CARD_KINDS = 53  # length of a count vector indexed by card
NATURALS = range(52)


class CardError(ValueError):
    """A text that is not a card; the message quotes it."""


def make_card(rank: int, suit: int) -> int:
    """The card of ``rank`` (1..13) and ``suit`` (0..3)."""
    return suit * 13 + rank - 1


def rank_of(card: int) -> int:
    """Rank 1..13 of a natural card."""
    return card % 13 + 1


def suit_of(card: int) -> int:
    """Suit index 0..3 (S H D C) of a natural card."""
    return card // 13


def parse_card(text: object) -> int:
    """Parse one card in any accepted notation; raise ``CardError`` quoting the input."""
    if type(text) is str:
        known = _CANONICAL.get(text)  # the common case: the canonical notation, one lookup
        if known is not None:
            return known
    if not isinstance(text, str):
        raise CardError(f"card {text!r} is not a string like 'QH', '10S' or 'JK'")
    raw = text.strip().upper()
    if raw in ("JK", "JOKER"):
        return JOKER
    if len(raw) >= 2:
        suit_text, rank_text = raw[-1], raw[:-1]
        suit = SUITS.find(suit_text) if suit_text in SUITS else SUIT_SYMBOLS.get(text.strip()[-1])
        rank = RANK_INPUT.get(rank_text)
        if suit is not None and suit >= 0 and rank is not None:
            return make_card(rank, suit)
    raise CardError(
        f"card {text!r} does not parse: expected a rank (A, 2..10, J, Q, K or 1..13) "
        "followed by a suit (S, H, D, C or a suit symbol), or JK for a joker"
    )


def parse_cards(texts: object, what: str = "cards") -> list[int]:
    """Parse a list of card texts; the error names ``what`` and the position."""
    if not isinstance(texts, list):
        raise CardError(f"{what} must be a list of cards, got {type(texts).__name__}")
    cards = []
    for i, text in enumerate(texts):
        try:
            cards.append(parse_card(text))
        except CardError as err:
            raise CardError(f"{what}[{i}]: {err}") from None
    return cards


def _text_of(card: int) -> str:
    return "JK" if card == JOKER else RANK_NAMES[card % 13] + SUITS[card // 13]


_TEXTS = tuple(_text_of(card) for card in range(CARD_KINDS))
"""Card -> canonical text, looked up (every view spells each card of every hand and meld)."""

_CANONICAL = {text: card for card, text in enumerate(_TEXTS)}
"""Canonical text -> card: views, layouts and commands spell every card this way."""


def card_str(card: int) -> str:
    """Canonical text of a card."""
    return _TEXTS[card]


def cards_str(cards: Iterable[int]) -> list[str]:
    """Canonical texts of cards, in the order given."""
    texts = _TEXTS
    return [texts[c] for c in cards]


def sorted_cards(cards: Iterable[int]) -> list[int]:
    """Loose cards (a hand, the played cards) in canonical order: suit, rank, jokers last."""
    return sorted(cards)


def counts(cards: Iterable[int]) -> list[int]:
    """Count vector of a multiset of cards, indexed by card."""
    vector = [0] * CARD_KINDS
    for card in cards:
        vector[card] += 1
    return vector


def deck(jokers: int, copies: int = 2) -> list[int]:
    """The full multiset: ``copies`` of every natural card plus ``jokers`` jokers, in card order."""
    return [card for card in NATURALS for _ in range(copies)] + [JOKER] * jokers


def excess_copies(cards: Sequence[int], jokers: int, copies: int = 2) -> tuple[int, int] | None:
    """The first card that appears more often than the deck holds it, with its count, or None."""
    vector = counts(cards)
    for card, n in enumerate(vector):
        limit = jokers if card == JOKER else copies
        if n > limit:
            return card, n
    return None
