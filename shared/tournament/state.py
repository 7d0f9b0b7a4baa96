"""The state of a tournament: what a fold over its events yields. Frozen; ``evolve`` makes new
ones, and the live decisions and a replay from the log build the same state.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from shared.tournament.events import (
    Event,
    PlayerRegistered,
    PlayerWithdrew,
    RegistrationClosed,
    RegistrationOpened,
    RoundPaired,
    RulingRecorded,
    SeatResult,
    Standing,
    StandingsRecorded,
    TableFinished,
    TableStarted,
    TournamentCreated,
    TournamentFinished,
)

Status = Literal["created", "registering", "running", "finished"]
TableStatus = Literal["paired", "started", "finished", "annulled"]
NO_TOURNAMENT: Literal[""] = ""  # the status of a fold over no events


@dataclass(frozen=True, slots=True)
class Entrant:
    """A registered player: id, name shown, rating at registration; ``withdrawn``: the last
    round paired when it left (None while it plays; 0: it left before round 1 was paired;
    withdrawing before registration closed removes the entrant instead)."""

    player: str
    name: str
    rating: float
    withdrawn: int | None = None


@dataclass(frozen=True, slots=True)
class Table:
    """One table of a round and where its game is."""

    round: int
    table: int
    game_id: str
    seats: tuple[str, ...]
    status: TableStatus = "paired"
    results: tuple[SeatResult, ...] = ()  # once finished; empty for a cancelled game
    head: tuple[int, str] | None = None  # the game log's head the results were read from

    @property
    def over(self) -> bool:
        """Nothing more will happen at this table (finished, or annulled)."""
        return self.status in ("finished", "annulled")


@dataclass(frozen=True, slots=True)
class Round:
    """A paired round: its tables and byes."""

    number: int
    tables: tuple[Table, ...]
    byes: tuple[str, ...]

    @property
    def over(self) -> bool:
        """Every table of the round is over."""
        return all(t.over for t in self.tables)


@dataclass(frozen=True, slots=True)
class Ruling:
    """A recorded ruling (see ``RulingRecorded``)."""

    kind: str
    round: int
    table: int
    player: str
    reason: str
    turn: int | None = None
    verdict: str = ""


@dataclass(frozen=True)
class Tournament:
    """Everything known about one tournament after its events so far. ``rounds`` is the number
    of rounds it has (a round robin's whole cycle once registration closed); ``played`` the
    rounds paired so far, in order. ``history``: every standings recorded, (round, rows)."""

    tournament_id: str = ""
    version: int = 0
    status: Status | Literal[""] = NO_TOURNAMENT
    name: str = ""
    director: str = ""
    rules: str = ""
    options: dict[str, Any] = dataclasses.field(default_factory=dict)
    format: str = ""
    rounds: int = 0
    table_seats: int = 0
    fill: str = ""
    entrants: tuple[Entrant, ...] = ()
    played: tuple[Round, ...] = ()
    rulings: tuple[Ruling, ...] = ()
    standings: tuple[Standing, ...] = ()
    history: tuple[tuple[int, tuple[Standing, ...]], ...] = ()

    def entrant(self, player: str) -> Entrant | None:
        """The entrant ``player``, or None."""
        for entrant in self.entrants:
            if entrant.player == player:
                return entrant
        return None

    def active(self) -> tuple[Entrant, ...]:
        """The entrants still playing (not withdrawn), in registration order."""
        return tuple(e for e in self.entrants if e.withdrawn is None)

    def players(self) -> frozenset[str]:
        """Every entrant's id, withdrawn ones too."""
        return frozenset(e.player for e in self.entrants)

    def table(self, number: int, table: int) -> Table | None:
        """Table ``table`` of round ``number``, or None."""
        if not 1 <= number <= len(self.played):
            return None
        tables = self.played[number - 1].tables
        return tables[table - 1] if 1 <= table <= len(tables) else None

    @property
    def current(self) -> int:
        """The last round paired (0 before the first)."""
        return len(self.played)

    def round_over(self) -> bool:
        """The last round paired is over (true before the first)."""
        return not self.played or self.played[-1].over


def full_cycle(entrants: int, seats: int) -> int:
    """The rounds of a whole round robin: every pair of entrants meets at least once (2 seats:
    the circle method's n - 1 rounds, n for an odd n; s seats: each round meets s - 1 others,
    so ceil((n - 1) / (s - 1)), and one more when some sit out each round)."""
    if entrants < 2:
        return 1
    if seats == 2:
        return entrants - 1 if entrants % 2 == 0 else entrants
    rounds = -(-(entrants - 1) // (seats - 1))
    return rounds + (1 if entrants % seats else 0)


def _set_table(state: Tournament, number: int, table: int, **changes: Any) -> Tournament:
    rounds = list(state.played)
    paired = rounds[number - 1]
    tables = list(paired.tables)
    tables[table - 1] = dataclasses.replace(tables[table - 1], **changes)
    rounds[number - 1] = dataclasses.replace(paired, tables=tuple(tables))
    return dataclasses.replace(state, played=tuple(rounds))


def evolve(state: Tournament, event: Event) -> Tournament:
    """The state after ``event`` (a fact: it is applied, never judged)."""
    state = dataclasses.replace(state, version=state.version + 1)
    match event:
        case TournamentCreated():
            return dataclasses.replace(
                state,
                tournament_id=event.tournament_id,
                status="created",
                name=event.name,
                director=event.director,
                rules=event.rules,
                options=dict(event.options),
                format=event.format,
                rounds=event.rounds,
                table_seats=event.table_seats,
                fill=event.fill,
            )
        case RegistrationOpened():
            return dataclasses.replace(state, status="registering")
        case PlayerRegistered(player, name, rating):
            entrant = Entrant(player, name, rating)
            return dataclasses.replace(state, entrants=(*state.entrants, entrant))
        case PlayerWithdrew(player):
            if state.status == "registering":
                kept = tuple(e for e in state.entrants if e.player != player)
                return dataclasses.replace(state, entrants=kept)
            entrants = tuple(
                dataclasses.replace(e, withdrawn=state.current) if e.player == player else e
                for e in state.entrants
            )
            return dataclasses.replace(state, entrants=entrants)
        case RegistrationClosed():
            rounds = state.rounds or full_cycle(len(state.entrants), state.table_seats)
            return dataclasses.replace(state, status="running", rounds=rounds)
        case RoundPaired(number, tables, byes):
            paired = Round(
                number,
                tuple(Table(number, t.table, t.game_id, t.seats) for t in tables),
                byes,
            )
            return dataclasses.replace(state, played=(*state.played, paired))
        case TableStarted(number, table):
            return _set_table(state, number, table, status="started")
        case TableFinished(number, table, _, results, head):
            return _set_table(state, number, table, status="finished", results=results, head=head)
        case RulingRecorded(kind, number, table, player, reason, turn, verdict):
            state = dataclasses.replace(
                state,
                rulings=(
                    *state.rulings,
                    Ruling(kind, number, table, player, reason, turn, verdict),
                ),
            )
            if kind == "annul":
                state = _set_table(state, number, table, status="annulled")
            return state
        case StandingsRecorded(number, rows):
            return dataclasses.replace(
                state, standings=rows, history=(*state.history, (number, rows))
            )
        case TournamentFinished(rows):
            return dataclasses.replace(state, status="finished", standings=rows)
    raise TypeError(f"not a tournament event: {event!r}")


def fold(events: Iterable[Event]) -> Tournament:
    """The tournament its events make, from nothing."""
    state = Tournament()
    for event in events:
        state = evolve(state, event)
    return state
