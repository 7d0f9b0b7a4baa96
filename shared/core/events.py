"""The domain events of a game: immutable, past-tense facts; a game is nothing but these.

Each event is a frozen dataclass of plain values (cards are ints, see ``cards``). ``to_data`` and
``event_from`` turn them into plain dicts and back; the storage layer wraps that dict in its
envelope (game, version, time, hash chain) and is the only place that knows the wire format.
Every fact a replay needs is in the events themselves: the deal records every hand and the stock
order, draws record the cards drawn, so replaying never needs the secret seed.

Each class declares in ``SEEN`` who may see each of its fields while the game is live (see
``visibility``): every field, public ones too, so that a new field is a decision about its
secrecy and not a leak by default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from shared.core.visibility import DRAWN, HAND, PUBLIC, SEAT_ONLY, SEED, STOCK, Seen

Cards = tuple[int, ...]
Melds = tuple[Cards, ...]


@dataclass(frozen=True, slots=True)
class Event:
    """Base of all events; ``TYPE`` is the tag stored with the event, ``SCHEMA`` its version."""

    TYPE: ClassVar[str] = ""
    SCHEMA: ClassVar[int] = 1
    SEEN: ClassVar[Mapping[str, Seen]] = {}  # every field: who may see it while the game is live


@dataclass(frozen=True, slots=True)
class GameCreated(Event):
    """A game exists, with its rules, its seat count and the commitment to its secret seed."""

    TYPE: ClassVar[str] = "GameCreated"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "game_id": PUBLIC,
        "rules": PUBLIC,
        "options": PUBLIC,
        "seats": PUBLIC,
        "commitment": PUBLIC,  # the seed's hash, not the seed
        "rematch_of": PUBLIC,
        "tournament": PUBLIC,
    }
    game_id: str
    rules: str
    options: dict[str, Any]
    seats: int
    commitment: str
    rematch_of: str = ""  # the finished game this one is the rematch of (Decision 19)
    tournament: str = ""  # the tournament whose table this game is: its seats are the
    # tournament's to fill (Decision 20)


@dataclass(frozen=True, slots=True)
class PlayerSeated(Event):
    """Someone took a seat; ``seed`` is the player's contribution to the shuffle (published with
    the rest at the end: until then only its own seat sees it). ``bot``: the seat is a bot's
    (``botnames.BOT_NAMES``), played by the bots service for the whole game. ``player``: the
    account that took the seat ("" for a guest): what ratings count by, since a name is only
    shown and anyone may type it; an opaque id, which says nothing once the account is gone."""

    TYPE: ClassVar[str] = "PlayerSeated"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "seat": PUBLIC,
        "name": PUBLIC,
        "seed": SEAT_ONLY,
        "bot": PUBLIC,
        "player": PUBLIC,
    }
    seat: int
    name: str
    seed: str
    bot: str | None = None
    player: str = ""


@dataclass(frozen=True, slots=True)
class SeatLeft(Event):
    """A player gave up a seat of a game still waiting (Decision 15): the seat is free again."""

    TYPE: ClassVar[str] = "SeatLeft"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC}
    seat: int


@dataclass(frozen=True, slots=True)
class SeatResigned(Event):
    """A seat left a game under way (Decision 16): its hand stays where it is, face down, and
    scores as a loser's; it takes no more turns and is dealt no more rounds. ``reason``:
    ``resigned`` (its player chose to) or ``absent`` (the ``forfeit`` policy, Decision 17)."""

    TYPE: ClassVar[str] = "SeatResigned"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC, "reason": PUBLIC}
    seat: int
    reason: str


@dataclass(frozen=True, slots=True)
class SeatHandedToBot(Event):
    """An absent player's seat is played by ``bot`` until the player returns (Decision 17)."""

    TYPE: ClassVar[str] = "SeatHandedToBot"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC, "bot": PUBLIC, "reason": PUBLIC}
    seat: int
    bot: str
    reason: str  # "absent"


@dataclass(frozen=True, slots=True)
class SeatSkipped(Event):
    """An absent player's turns are ended by the referee at once, as timeouts, until the player
    returns (the ``skip`` policy, Decision 17)."""

    TYPE: ClassVar[str] = "SeatSkipped"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC, "reason": PUBLIC}
    seat: int
    reason: str  # "absent"


@dataclass(frozen=True, slots=True)
class SeatReturned(Event):
    """An absent player is back and plays the seat again (Decision 17). ``reason``:
    ``returned`` (the ``return`` command) or ``moved`` (a move of its own)."""

    TYPE: ClassVar[str] = "SeatReturned"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC, "reason": PUBLIC}
    seat: int
    reason: str


@dataclass(frozen=True, slots=True)
class GameCancelled(Event):
    """The game ended without a result (Decision 18): ``host`` (the host cancelled it while it
    waited) or ``expired`` (nobody joined, or nobody moved, within the service's limits)."""

    TYPE: ClassVar[str] = "GameCancelled"
    SEEN: ClassVar[Mapping[str, Seen]] = {"reason": PUBLIC}
    reason: str


@dataclass(frozen=True, slots=True)
class RematchOffered(Event):
    """Seat ``seat`` of this finished game offered a rematch: game ``game_id`` (Decision 19)."""

    TYPE: ClassVar[str] = "RematchOffered"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC, "game_id": PUBLIC}
    seat: int
    game_id: str


@dataclass(frozen=True, slots=True)
class GameStarted(Event):
    """Every seat is filled and the host started the game."""

    TYPE: ClassVar[str] = "GameStarted"


@dataclass(frozen=True, slots=True)
class StarterChosen(Event):
    """Who deals and who starts (Decision 11), with every cut or draw that decided it.

    ``draws`` holds one tuple per attempt of (seat, card) pairs; later attempts are the re-cuts
    among the tied seats.
    """

    TYPE: ClassVar[str] = "StarterChosen"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "method": PUBLIC,
        "draws": PUBLIC,  # cut face up, before the deal
        "dealer": PUBLIC,
        "starter": PUBLIC,
    }
    method: str
    draws: tuple[tuple[tuple[int, int], ...], ...]
    dealer: int | None
    starter: int


@dataclass(frozen=True, slots=True)
class RoundDealt(Event):
    """A round is dealt: every hand, the stock in draw order, the discard pile (bottom first)."""

    TYPE: ClassVar[str] = "RoundDealt"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "round": PUBLIC,
        "seats": PUBLIC,
        "dealer": PUBLIC,
        "starter": PUBLIC,
        "hands": HAND,
        "stock": STOCK,
        "discard": PUBLIC,  # dealt face up
    }
    round: int
    seats: tuple[int, ...]  # the seats playing this round (all, except in tie-break rounds)
    dealer: int | None
    starter: int
    hands: Melds  # indexed by seat; empty for a seat not in the round
    stock: Cards
    discard: Cards


@dataclass(frozen=True, slots=True)
class TurnStarted(Event):
    """It is ``seat``'s turn, number ``number`` of the game; ``deadline`` in unix seconds."""

    TYPE: ClassVar[str] = "TurnStarted"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC, "number": PUBLIC, "deadline": PUBLIC}
    seat: int
    number: int
    deadline: float | None


@dataclass(frozen=True, slots=True)
class TurnPlayed(Event):
    """A legal play: the table is now ``layout`` (canonical melds)."""

    TYPE: ClassVar[str] = "TurnPlayed"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "seat": PUBLIC,
        "layout": PUBLIC,
        "played": PUBLIC,  # now on the table
        "to_hand": PUBLIC,  # taken from the table, where everyone saw them
        "points": PUBLIC,
        "opening": PUBLIC,
        "redeemed": PUBLIC,
    }
    seat: int
    layout: Melds
    played: Cards
    to_hand: Cards
    points: int | None
    opening: bool
    redeemed: int  # table jokers swapped for their natural card (Decision 9)


@dataclass(frozen=True, slots=True)
class CardDrawn(Event):
    """Cards drawn into a hand; ``penalty`` marks the failed-manipulation draw (Decision 5)."""

    TYPE: ClassVar[str] = "CardDrawn"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "seat": PUBLIC,
        "cards": DRAWN,  # the drawer's; the others see how many (all see a card off the pile)
        "source": PUBLIC,
        "penalty": PUBLIC,
    }
    seat: int
    cards: Cards
    source: str  # "stock" or "pile"
    penalty: bool


@dataclass(frozen=True, slots=True)
class CardDiscarded(Event):
    """A card laid face up on the discard pile (discard-pile variant)."""

    TYPE: ClassVar[str] = "CardDiscarded"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC, "card": PUBLIC}  # face up
    seat: int
    card: int


@dataclass(frozen=True, slots=True)
class StockReshuffled(Event):
    """The pile except its top card became the new stock, in this order (Decision 10)."""

    TYPE: ClassVar[str] = "StockReshuffled"
    SEEN: ClassVar[Mapping[str, Seen]] = {"stock": STOCK}
    stock: Cards


@dataclass(frozen=True, slots=True)
class CommandRejected(Event):
    """An attempt the rules refused; recorded because disputes need the attempts too.

    ``layout`` shows cards of the seat's hand, so only that seat sees it while the game is live.
    """

    TYPE: ClassVar[str] = "CommandRejected"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "seat": PUBLIC,
        "command": PUBLIC,
        "code": PUBLIC,  # others see that an attempt was refused, and why
        "detail": PUBLIC,
        "reason": SEAT_ONLY,  # names cards of the layout
        "layout": SEAT_ONLY,
    }
    seat: int
    command: str
    code: str
    detail: str  # the rules core's code for an illegal layout, else ""
    reason: str
    layout: Melds | None


@dataclass(frozen=True, slots=True)
class TurnPassed(Event):
    """A seat passed (only possible with an empty stock)."""

    TYPE: ClassVar[str] = "TurnPassed"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC}
    seat: int


@dataclass(frozen=True, slots=True)
class TurnTimedOut(Event):
    """The turn's time is up; the referee ends it as a draw, or a pass (Decision 6). ``reason``
    (Decision 17): ``deadline`` (the turn timer), ``absent`` (an untimed turn's absence limit),
    ``skipped`` (the seat of a player away under the ``skip`` policy)."""

    TYPE: ClassVar[str] = "TurnTimedOut"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seat": PUBLIC, "number": PUBLIC, "reason": PUBLIC}
    seat: int
    number: int
    reason: str = "deadline"


@dataclass(frozen=True, slots=True)
class TurnForfeited(Event):
    """The referee ended the turn because the seat used up its rejected layouts (Decision 14):
    ``rejected`` layouts were refused this turn, one more than ``max_rejections`` allows. Its
    consequence follows as for a timeout: the failed-turn draw, a pass, or a discard."""

    TYPE: ClassVar[str] = "TurnForfeited"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "seat": PUBLIC,
        "number": PUBLIC,
        "reason": PUBLIC,  # that and why the turn ended; the refused layouts stay the seat's
        "rejected": PUBLIC,
    }
    seat: int
    number: int
    reason: str  # "max_rejections"
    rejected: int


@dataclass(frozen=True, slots=True)
class RoundEnded(Event):
    """The facts of a round's end: who went out (or that it stalled) and every hand left."""

    TYPE: ClassVar[str] = "RoundEnded"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "round": PUBLIC,
        "reason": PUBLIC,
        "out": PUBLIC,
        "seats": PUBLIC,
        "hands": HAND,  # the hands left stay secret until the match ends
        "last_player": PUBLIC,
        "redeemed": PUBLIC,
        "resigned": PUBLIC,
    }
    round: int
    reason: str  # "out", "stalled", or "resigned" (one seat of the round is left: Decision 16)
    out: int | None
    seats: tuple[int, ...]
    hands: Melds
    last_player: int | None
    redeemed: tuple[int, ...]
    resigned: tuple[int, ...] = ()  # seats of the round that had resigned: they cannot win it


@dataclass(frozen=True, slots=True)
class ScoresRecorded(Event):
    """The score sheet of a round, computed by the scoring role from ``RoundEnded``."""

    TYPE: ClassVar[str] = "ScoresRecorded"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "round": PUBLIC,
        "winner": PUBLIC,
        "went_out": PUBLIC,
        "seats": PUBLIC,
        "scores": PUBLIC,
    }
    round: int
    winner: int
    went_out: bool
    seats: tuple[int, ...]
    scores: tuple[int, ...] | None  # aligned with ``seats``; None where the rules keep no score


@dataclass(frozen=True, slots=True)
class MatchEnded(Event):
    """The match is over: the winning seat(s) and the final standings per seat."""

    TYPE: ClassVar[str] = "MatchEnded"
    SEEN: ClassVar[Mapping[str, Seen]] = {
        "winners": PUBLIC,
        "totals": PUBLIC,
        "outs": PUBLIC,
        "wins": PUBLIC,
    }
    winners: tuple[int, ...]
    totals: tuple[int, ...] | None  # None where the rules keep no score
    outs: tuple[int, ...]
    wins: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SeedRevealed(Event):
    """The secret seed, published once the game is over so anyone can recompute every deal."""

    TYPE: ClassVar[str] = "SeedRevealed"
    SEEN: ClassVar[Mapping[str, Seen]] = {"seed": SEED}  # written only once the game is over
    seed: str  # hex


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        GameCreated,
        PlayerSeated,
        SeatLeft,
        GameStarted,
        StarterChosen,
        RoundDealt,
        TurnStarted,
        TurnPlayed,
        CardDrawn,
        CardDiscarded,
        StockReshuffled,
        CommandRejected,
        TurnPassed,
        TurnTimedOut,
        TurnForfeited,
        RoundEnded,
        ScoresRecorded,
        MatchEnded,
        SeedRevealed,
        SeatResigned,
        SeatHandedToBot,
        SeatSkipped,
        SeatReturned,
        GameCancelled,
        RematchOffered,
    )
}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _frozen(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def to_data(event: Event) -> dict[str, Any]:
    """The event's fields as a plain dict (lists, not tuples), for the storage layer. A field
    with a default is left out while at it (``event_from`` puts it back), so that a field added
    later leaves every record made before it byte for byte as it was."""
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
        raise UnknownEvent(f"unknown event type {type_name!r}")
    try:
        return cls(**{k: (v if k == "options" else _frozen(v)) for k, v in data.items()})
    except TypeError as err:
        raise UnknownEvent(f"event {type_name} does not fit its fields: {err}") from None
