"""Which pieces a picture marks as moved this turn: those played from the hand, and those that
left their meld for another; a meld that grew, shrank or was split keeps its pieces unmarked
where most of it went on."""

from __future__ import annotations

from shared.audit.replay import table_diff
from shared.core.cards import cards_str, parse_card
from shared.core.events import Melds
from shared.pictures.turn import marks


def _melds(*texts: str) -> Melds:
    return tuple(tuple(parse_card(c) for c in text.split()) for text in texts)


def _marks(before: Melds, after: Melds) -> list[list[str | None]]:
    return marks([cards_str(m) for m in after], table_diff(before, after, 0))


def test_a_grown_meld_marks_only_the_played_pieces() -> None:
    before = _melds("5H 6H 7H", "9C 9D 9S")
    after = _melds("5H 6H 7H", "9C 9D 9S 9H")
    assert _marks(before, after) == [[None] * 3, [None, None, None, "played"]]


def test_pieces_that_left_their_meld_are_moved() -> None:
    # 8H leaves the run for a new set with two 8s from the hand; the run shrinks but stays.
    before = _melds("5H 6H 7H 8H", "9C 9D 9S")
    after = _melds("5H 6H 7H", "9C 9D 9S", "8H 8C 8D")
    assert _marks(before, after) == [[None] * 3, [None] * 3, ["moved", "played", "played"]]


def test_two_melds_merged_keep_the_larger_in_place() -> None:
    before = _melds("3S 4S 5S", "6S 7S 8S 9S")
    after = _melds("3S 4S 5S 6S 7S 8S 9S")
    assert _marks(before, after) == [["moved"] * 3 + [None] * 4]


def test_a_new_deal_marks_nothing() -> None:
    after = _melds("5H 6H 7H")
    assert marks([cards_str(m) for m in after], table_diff((), after, None)) == [[None] * 3]
