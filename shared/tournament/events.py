"""The events of a tournament: immutable, past-tense facts; a tournament is nothing but these.

Like a game's (``shared.core.events``): frozen dataclasses of plain values, ``to_data`` and
``event_from`` to plain dicts and back, and the store's envelope (tournament, version, time,
hash chain) around them. Everything in a tournament is public (its games keep their own
secrets), so there is no visibility table. Every fact a replay needs is in the log: the ratings
entrants registered with (a pairing replays from them, not from today's ratings), each round's
tables, and each table's results with the head of the game log they were read from.

Entrants are named by player id: an account's id, or ``bot:<name>`` (``botnames.BOT_NAMES``)
for a bot, as ratings name them (``shared.infra.ratings``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

BOT = "bot:"  # a bot's player id is "bot:<name>"


@dataclass(frozen=True, slots=True)
class SeatedTable:
    """One table of a round: its number (from 1), its game's id and who sits where (the game's
    seat ``i`` is ``seats[i]``: entrants' ids, or ``bot:<name>`` for a seat the fill gives a
    bot)."""

    table: int
    game_id: str
    seats: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SeatResult:
    """One seat's line of a finished table, read from its game's ``MatchEnded``: ``winner``
    (among ``MatchEnded.winners``), ``total`` (the cumulative score; None where the rule set
    keeps none), ``outs`` (rounds gone out) and ``wins`` (rounds won)."""

    player: str
    seat: int
    winner: bool
    total: int | None
    outs: int
    wins: int


@dataclass(frozen=True, slots=True)
class Standing:
    """One entrant's row of the standings. ``score`` is the family's first criterion and
    ``keys`` every criterion in order, the first too (``standings.criteria`` names them), as
    shown: penalties are shown as they are, though lower ranks higher. ``tables`` counts the
    tables that counted for it, ``byes`` its byes (annulled and cancelled tables score as byes),
    ``forfeits`` the forfeits against it. ``notes``: what else the row was computed from, each
    ruling that touched it with its reason (``round 2 table 3: forfeit (no show)``)."""

    rank: int
    player: str
    name: str
    score: float
    keys: tuple[float, ...]
    tables: int
    byes: int
    forfeits: int
    withdrawn: bool
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Event:
    """Base of the tournament's events; ``TYPE`` is the tag stored with each."""

    TYPE: ClassVar[str] = ""
    SCHEMA: ClassVar[int] = 1


@dataclass(frozen=True, slots=True)
class TournamentCreated(Event):
    """A tournament exists: its director (an account id), the rule set and options of every
    table's game, the format (``swiss`` | ``round_robin``), the number of rounds (0 in a round
    robin: the whole cycle, fixed when registration closes), the seats of a table and how short
    tables are filled (``byes`` or ``bots:<name>``)."""

    TYPE: ClassVar[str] = "TournamentCreated"
    tournament_id: str
    name: str
    director: str
    rules: str
    options: dict[str, Any]
    format: str
    rounds: int
    table_seats: int
    fill: str


@dataclass(frozen=True, slots=True)
class RegistrationOpened(Event):
    """Players may register."""

    TYPE: ClassVar[str] = "RegistrationOpened"


@dataclass(frozen=True, slots=True)
class PlayerRegistered(Event):
    """An entrant: its id, the name shown and its rating when it registered (kept so a pairing
    replays the same whatever the ratings are now)."""

    TYPE: ClassVar[str] = "PlayerRegistered"
    player: str
    name: str
    rating: float


@dataclass(frozen=True, slots=True)
class PlayerWithdrew(Event):
    """An entrant left: before the start it is no entrant any more; once running it is paired
    in no later round (its rows stay, each later round scored as a forfeit)."""

    TYPE: ClassVar[str] = "PlayerWithdrew"
    player: str


@dataclass(frozen=True, slots=True)
class RegistrationClosed(Event):
    """Registration is over and the tournament runs (a round robin's whole cycle, ``rounds``
    0, is fixed now: the state works it out from the entrants)."""

    TYPE: ClassVar[str] = "RegistrationClosed"


@dataclass(frozen=True, slots=True)
class RoundPaired(Event):
    """Round ``round``'s tables and the entrants with a bye in it."""

    TYPE: ClassVar[str] = "RoundPaired"
    round: int
    tables: tuple[SeatedTable, ...]
    byes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TableStarted(Event):
    """A table's game was created and started (by the service, or the director)."""

    TYPE: ClassVar[str] = "TableStarted"
    round: int
    table: int
    game_id: str


@dataclass(frozen=True, slots=True)
class TableFinished(Event):
    """A table's game ended: its results per seat (from its ``MatchEnded``; empty when the game
    was cancelled: the table then counts for nobody) and ``head``, the game log's ``[version,
    hash]`` at its end, which pins what the results were read from (the audit checks them)."""

    TYPE: ClassVar[str] = "TableFinished"
    round: int
    table: int
    game_id: str
    results: tuple[SeatResult, ...]
    head: tuple[int, str]


@dataclass(frozen=True, slots=True)
class RulingRecorded(Event):
    """A director's ruling, with its reason. ``kind``: ``annul`` (the table's game counts for
    nobody), ``forfeit`` (``player`` scores as last at that table), ``verdict`` (a disputed
    ``turn`` of the table's game was replayed; ``verdict`` says what was found: it is noted in
    the standings and changes them only through an annul or forfeit ruling of its own)."""

    TYPE: ClassVar[str] = "RulingRecorded"
    kind: str
    round: int
    table: int
    player: str
    reason: str
    turn: int | None = None
    verdict: str = ""


@dataclass(frozen=True, slots=True)
class StandingsRecorded(Event):
    """The standings after round ``round`` (recorded again after a later ruling changed them)."""

    TYPE: ClassVar[str] = "StandingsRecorded"
    round: int
    standings: tuple[Standing, ...]


@dataclass(frozen=True, slots=True)
class TournamentFinished(Event):
    """The tournament is over: its final standings."""

    TYPE: ClassVar[str] = "TournamentFinished"
    standings: tuple[Standing, ...]


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        TournamentCreated,
        RegistrationOpened,
        PlayerRegistered,
        PlayerWithdrew,
        RegistrationClosed,
        RoundPaired,
        TableStarted,
        TableFinished,
        RulingRecorded,
        StandingsRecorded,
        TournamentFinished,
    )
}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def _many(cls: type[Any]) -> Callable[[Any], Any]:
    def build(value: Any) -> Any:
        if not isinstance(value, list):
            raise TypeError(f"expected a list of {cls.__name__}")
        return tuple(cls(**{k: _frozen(v) for k, v in item.items()}) for item in value)

    return build


# Fields holding records of their own (lists of dicts on the wire).
_NESTED: Mapping[str, Mapping[str, Callable[[Any], Any]]] = {
    "RoundPaired": {"tables": _many(SeatedTable)},
    "TableFinished": {"results": _many(SeatResult)},
    "StandingsRecorded": {"standings": _many(Standing)},
    "TournamentFinished": {"standings": _many(Standing)},
}


def to_data(event: Event) -> dict[str, Any]:
    """The event's fields as a plain dict (lists and dicts), for the store. A field left at its
    default is left out (``event_from`` puts it back), as the game's events do."""
    data: dict[str, Any] = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if f.default is dataclasses.MISSING or value != f.default:
            data[f.name] = _plain(value)
    return data


class UnknownEvent(ValueError):
    """A stored event whose type this code does not know, or whose fields do not fit it."""


def event_from(type_name: str, data: dict[str, Any]) -> Event:
    """Rebuild an event from its type tag and plain dict (the inverse of ``to_data``)."""
    cls = EVENT_TYPES.get(type_name)
    if cls is None:
        raise UnknownEvent(f"unknown tournament event type {type_name!r}")
    nested = _NESTED.get(type_name, {})
    try:
        fields = {
            k: (v if k == "options" else nested[k](v) if k in nested else _frozen(v))
            for k, v in data.items()
        }
        return cls(**fields)
    except (TypeError, AttributeError) as err:
        raise UnknownEvent(f"event {type_name} does not fit its fields: {err}") from None
