"""The state of a game: what a fold over its events yields. Frozen; ``evolve`` makes new ones.

The state holds the whole truth (every hand, the stock order); views decide who sees what.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shared.core.events import Cards, Melds
from shared.core.rulesets import ROBBERS, RuleSet

Status = Literal["new", "waiting", "playing", "finished"]
Phase = Literal["none", "turns", "scoring", "next"]


@dataclass(frozen=True, slots=True)
class Turn:
    """The turn in progress."""

    seat: int
    number: int
    deadline: float | None
    placed: bool = False  # a legal play was made this turn (place_draw_place turns go on)
    drawn: bool = False  # the seat drew this turn (stock or pile)
    rejected: int = 0  # rejected layouts this turn (a later draw is the failed-turn draw)
    taken: int | None = None  # the card taken from the discard pile this turn


@dataclass(frozen=True, slots=True)
class RoundResult:
    """A finished round as the views show it: the facts and, once recorded, the score sheet."""

    round: int
    reason: str  # "out" or "stalled"
    out: int | None
    seats: tuple[int, ...]
    hands: Melds
    redeemed: tuple[int, ...]
    last_player: int | None
    recorded: bool = False  # the score sheet below is in
    winner: int | None = None
    went_out: bool = False
    scores: tuple[int, ...] | None = None  # aligned with ``seats``


@dataclass(frozen=True)
class GameState:
    """Everything known about one game after its events so far."""

    game_id: str = ""
    version: int = 0
    rules: RuleSet = ROBBERS
    seats: int = 0
    names: tuple[str, ...] = ()
    seeds: tuple[str, ...] = ()
    commitment: str = ""
    status: Status = "new"
    phase: Phase = "none"  # turns: playing; scoring: waiting for a score sheet; next: deal on
    round: int = 0
    round_seats: tuple[int, ...] = ()
    dealer: int | None = None
    starter: int | None = None  # who took the first turn of the current round
    first_dealer: int | None = None  # the dealer and starter of round 1 (Decision 11 rotates
    first_starter: int | None = None  # them one seat on each round)
    hands: Melds = ()
    stock: Cards = ()
    discard: Cards = ()
    table: Melds = ()
    opened: tuple[bool, ...] = ()
    turn: Turn | None = None
    turn_number: int = 0  # turns so far, across the whole game
    passes: int = 0  # consecutive passes with no play between (Decision 7)
    reshuffles: int = 0  # times the pile became the stock this round (Decision 10)
    last_player: int | None = None  # the seat that made the last play of the round
    redeemed: tuple[int, ...] = ()  # jokers each seat took from the table this round
    rounds: tuple[RoundResult, ...] = ()
    winners: tuple[int, ...] = ()
    revealed_seed: str | None = None
    rejected: int = 0  # rejected attempts recorded over the game

    def seated(self) -> int:
        """How many seats are taken."""
        return len(self.names)

    def next_seat(self, seat: int) -> int:
        """The seat after ``seat`` in turn order among the seats playing this round."""
        order = self.round_seats
        return order[(order.index(seat) + 1) % len(order)]
