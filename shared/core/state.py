"""The state of a game: what a fold over its events yields. Frozen; ``evolve`` makes new ones.

The state holds the whole truth (every hand, the stock order); views decide who sees what.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from shared.core.events import Cards, Melds
from shared.core.rulesets import ROBBERS, RuleSet

Status = Literal["new", "waiting", "playing", "finished", "cancelled"]
Away = Literal["bot", "skip"]  # how an absent player's seat is played (Decision 17)
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
    ending: bool = False  # the referee is ending it (a timeout, a forfeit): its moves are not
    # the seat's own, so they do not show the player is there (Decision 17)


@dataclass(frozen=True, slots=True)
class RoundResult:
    """A finished round as the views show it: the facts and, once recorded, the score sheet."""

    round: int
    reason: str  # "out", "stalled" or "resigned"
    out: int | None
    seats: tuple[int, ...]
    hands: Melds
    redeemed: tuple[int, ...]
    last_player: int | None
    resigned: tuple[int, ...] = ()  # seats of the round that had resigned when it ended
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
    names: tuple[str, ...] = ()  # by seat; "" for a seat given up before the start
    seeds: tuple[str, ...] = ()
    bots: tuple[str | None, ...] = ()  # by seat: the bot that plays it now (seated as one, or
    # handed the seat of an absent player), None where its player does
    away: tuple[Away | None, ...] = ()  # by seat: how the seat of an absent player is played
    resigned: tuple[int, ...] = ()  # by seat: the round it left the game in (Decision 16); 0:
    # still playing
    missed: tuple[int, ...] = ()  # by seat: turns timed out in a row (Decision 17)
    cancelled: str = ""  # why the game was cancelled ("host", "expired"; Decision 18)
    rematch: str = ""  # the game offered as this one's rematch (Decision 19)
    rematch_of: str = ""  # the game this one is the rematch of
    tournament: str = ""  # the tournament this game is a table of: its seats are seated by it
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
        return sum(1 for name in self.names if name)

    def free_seat(self) -> int:
        """The first seat nobody holds (one given up before the start, else the next)."""
        return next((seat for seat, name in enumerate(self.names) if not name), len(self.names))

    def bot_at(self, seat: int) -> str | None:
        """The bot that plays ``seat`` now, or None where its player does."""
        return self.bots[seat] if seat < len(self.bots) else None

    def is_resigned(self, seat: int) -> bool:
        """Whether ``seat`` has left the game under way."""
        return seat < len(self.resigned) and self.resigned[seat] > 0

    def remaining(self) -> tuple[int, ...]:
        """The seats still in the match (not resigned)."""
        return tuple(s for s in range(self.seats) if not self.is_resigned(s))

    def playing_seats(self) -> tuple[int, ...]:
        """The seats of this round still in it (not resigned), in turn order."""
        return tuple(s for s in self.round_seats if not self.is_resigned(s))

    def next_seat(self, seat: int) -> int:
        """The seat after ``seat`` in turn order among the seats playing this round (a resigned
        seat is passed over)."""
        order = self.round_seats
        at = order.index(seat)
        for step in range(1, len(order) + 1):
            candidate = order[(at + step) % len(order)]
            if not self.is_resigned(candidate):
                return candidate
        return seat
