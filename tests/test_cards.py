"""Card notation: parse and print symmetrically, alternatives accepted, errors quote the input."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.core.cards import JOKER, CardError, card_str, deck, excess_copies, parse_card


@given(st.integers(min_value=0, max_value=JOKER))
def test_print_then_parse_is_identity(card: int) -> None:
    assert parse_card(card_str(card)) == card


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("12H", "QH"),
        ("1S", "AS"),
        ("11D", "JD"),
        ("13C", "KC"),
        ("10♠", "10S"),
        ("q♥", "QH"),
        ("jk", "JK"),
        ("A♦", "AD"),
        ("K♣", "KC"),
    ],
)
def test_alternatives_print_canonical(text: str, canonical: str) -> None:
    assert card_str(parse_card(text)) == canonical


@pytest.mark.parametrize("text", ["", "1", "14H", "QX", "0S", "JKK", "H5", 5, None])
def test_bad_cards_are_refused_quoting_the_input(text: object) -> None:
    with pytest.raises(CardError, match=repr(text).replace("[", r"\[")):
        parse_card(text)


def test_deck_is_two_decks_plus_jokers() -> None:
    cards = deck(jokers=4)
    assert len(cards) == 108
    assert cards.count(JOKER) == 4
    assert excess_copies(cards, jokers=4) is None
    assert excess_copies([*cards, 0], jokers=4) == (0, 3)
