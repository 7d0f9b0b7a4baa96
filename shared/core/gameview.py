"""The shape of the API's view of a game: what ``views.view_json`` builds, field by field, with
each field's type. It is the one list of the view's fields: the self-play checks, the tests and
the published JSON Schema (``/openapi.json``) all read it from here.

Plain JSON objects (``TypedDict``), so the view is serialised as it is built. A ``NotRequired``
field is one that some viewers do not get: a seat's own ``hand`` (the spectator has none), the
seat on turn's own standing in ``turn``, the last round's hands (once the game has ended).

No ``from __future__ import annotations`` here: on Python 3.11, a TypedDict only knows which of
its keys are ``NotRequired`` from annotations that are evaluated.
"""

from typing import Annotated, Literal, NotRequired, TypedDict

from shared.core.rulesets import PRESETS, RuleSet
from shared.core.shapes import FieldsOf, Keywords, described

# A card in notation ("7H", "10S", "AD", "JK"): the API never shows cards as numbers.
Card = Annotated[str, described("a card in notation, e.g. '7H', '10S', 'AD', 'JK'")]
ViewStatus = Literal["waiting", "playing", "finished", "cancelled"]
AwayPolicy = Literal["bot", "skip"]
CancelReason = Literal["host", "expired"]
RoundEndReason = Literal["out", "stalled", "resigned"]
OptionValue = int | bool | str | None


class RulesView(TypedDict):
    """The game's rule set: the preset's name and the options that differ from it."""

    name: Annotated[str, Keywords({"enum": sorted(PRESETS)})]
    options: Annotated[dict[str, OptionValue], FieldsOf(RuleSet, frozenset({"name"}))]


class TurnView(TypedDict):
    """The turn in progress: its seat, number and deadline are public; how it stands (drawn,
    placed, rejected layouts, how many more leave it open, the card taken) only its seat sees
    (``visibility.TURN`` says so, key by key)."""

    seat: int
    number: int
    deadline: Annotated[str | None, Keywords({"format": "date-time"})]
    drawn: NotRequired[bool]
    placed: NotRequired[bool]
    rejected: NotRequired[int]
    rejections_left: NotRequired[
        Annotated[
            int, described("more rejected layouts that leave the turn open (0: the next ends it)")
        ]
    ]
    taken: NotRequired[Card | None]


class SeatEntry(TypedDict):
    """One seat as everyone sees it."""

    seat: int
    name: str | None
    hand_count: int
    opened: bool
    score: Annotated[int | None, described("cumulative score; null where nothing is scored")]
    bot: Annotated[
        str | None,
        described(
            "the bot that plays the seat now: seated as one, or handed the seat while its "
            "player is away; null: its player does"
        ),
    ]
    away: Annotated[
        AwayPolicy | None,
        described("its player is away: its seat is played by a bot, or its turns are skipped"),
    ]
    resigned: Annotated[bool, described("the seat has left the game under way")]
    missed: Annotated[int, described("turns of the seat that timed out in a row")]


class LastRoundView(TypedDict):
    """The last round that ended, keyed by seat number (as text) where it lists seats."""

    round: int
    reason: RoundEndReason
    out: int | None
    winner: int | None
    went_out: bool
    recorded: Annotated[bool, described("the score sheet is in")]
    scores: dict[str, int] | None
    hand_counts: dict[str, int]
    hands: NotRequired[Annotated[dict[str, list[Card]], described("once the game has ended")]]


class GameView(TypedDict):
    """A seat's view (with ``hand``) or the spectator's (``you``: null)."""

    game_id: str
    version: int
    status: ViewStatus
    rules: RulesView
    round: int
    turn: TurnView | None
    you: int | None
    hand: NotRequired[list[Card]]
    table: list[list[Card]]
    seats: list[SeatEntry]
    stock: Annotated[int, described("cards in the stock")]
    discard: Annotated[Card | None, described("the pile's top card")]
    discard_count: int
    reshuffles: Annotated[int, described("times the pile became the stock this round")]
    last_round: LastRoundView | None
    winner: list[int] | None
    seed: Annotated[str | None, described("the game's seed in hex, once revealed at the end")]
    cancelled: Annotated[CancelReason | None, described("why the game was cancelled, if it was")]
    rematch: Annotated[str | None, described("the game offered as this one's rematch")]
    rematch_of: Annotated[str | None, described("the finished game this one is the rematch of")]


# Every viewer's fields; a seat's view has its ``hand`` too.
VIEW_KEYS: frozenset[str] = GameView.__required_keys__
SEAT_VIEW_KEYS: frozenset[str] = VIEW_KEYS | {"hand"}
TURN_KEYS: frozenset[str] = TurnView.__required_keys__ | TurnView.__optional_keys__
