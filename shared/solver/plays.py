"""What the solver answers: a play for a position (``Play``), an arrangement of cards
(``Arrangement``), and the goals a play can be asked for.

Plain values of their own module, so that a caller can name them without loading the searches
(``shared.solver`` loads those on first use).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Goal = Literal["cards", "points", "opening"]
GOALS: tuple[str, ...] = ("cards", "points", "opening", "arrange")
Meld = Sequence[int]
Layout = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Play:
    """The solver's answer for one position."""

    found: bool  # a legal play exists (else layout is the table unchanged)
    layout: Layout  # the whole table after the play, canonical melds
    played: tuple[int, ...]  # cards from the hand (jokers count)
    to_hand: tuple[int, ...]  # table jokers redeemed into the hand
    points: int | None  # as ``judge_play`` counts them
    jokers: int  # jokers in the layout
    unchanged: int  # table melds left as they were
    exact: bool = True  # always: no search has a state budget (kept for callers that read it)


@dataclass(frozen=True)
class Arrangement:
    """Whether a multiset of cards can be laid out as melds (naturals all placed)."""

    arrangeable: bool
    layout: Layout
    free_jokers: int  # jokers the layout does not need
