"""Commands: what a seat, the host or the service asks of a game. ``decide`` judges them.

Commands are plain frozen values; the edges (API, command stream, CLI) build them from JSON with
``command_from``, which refuses a malformed one with a message naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.core.cards import CardError, parse_card, parse_cards
from shared.core.events import Cards, Melds
from shared.core.shuffle import Shuffle

MAX_LAYOUT_MELDS = 60
MAX_MELD_CARDS = 13  # the longest run; a set is at most 4
MAX_LAYOUT_CARDS = 2 * 52 + 8  # every card of the largest deck
MAX_NAME = 40
MAX_SEED = 128


@dataclass(frozen=True, slots=True)
class Context:
    """What a decision may depend on besides the state: the time, and the secret seed (held by
    the service outside the log; only its commitment is in ``GameCreated``).

    ``shuffle``, when given, is where the random orders come from instead of the seed (whose
    commitment is then not checked; ``seed`` only makes the reveal): an audit passes the orders
    a log records, to re-derive a game whose seed is still secret."""

    now: float = 0.0
    seed: bytes | None = None
    shuffle: Shuffle | None = None


@dataclass(frozen=True, slots=True)
class CreateGame:
    game_id: str
    rules: str
    options: dict[str, Any]
    seats: int
    commitment: str


@dataclass(frozen=True, slots=True)
class Sit:
    name: str
    seed: str = ""


@dataclass(frozen=True, slots=True)
class Start:
    pass


@dataclass(frozen=True, slots=True)
class Play:
    seat: int
    layout: Melds


@dataclass(frozen=True, slots=True)
class Draw:
    seat: int
    source: str = "stock"  # "stock" or "pile" (discard-pile variant)


@dataclass(frozen=True, slots=True)
class End:
    seat: int


@dataclass(frozen=True, slots=True)
class Pass:
    seat: int


@dataclass(frozen=True, slots=True)
class Discard:
    seat: int
    card: int


@dataclass(frozen=True, slots=True)
class Timeout:
    """Issued by the service when turn ``number``'s deadline has passed."""

    number: int


@dataclass(frozen=True, slots=True)
class RecordScores:
    """The scoring role's score sheet for ``round`` (see ``ScoresRecorded``)."""

    round: int
    winner: int
    went_out: bool
    seats: tuple[int, ...]
    scores: tuple[int, ...] | None


@dataclass(frozen=True, slots=True)
class Continue:
    """After a score sheet: deal the next round, or end the match and reveal the seed."""


Command = (
    CreateGame
    | Sit
    | Start
    | Play
    | Draw
    | End
    | Pass
    | Discard
    | Timeout
    | RecordScores
    | Continue
)
SEAT_COMMANDS = {"play", "draw", "end", "pass", "discard"}


class CommandError(ValueError):
    """A command that is malformed (not merely refused by the rules); names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _layout(value: object) -> Melds:
    if not isinstance(value, list):
        raise CommandError("layout", "layout must be a list of melds, each a list of cards")
    if len(value) > MAX_LAYOUT_MELDS:
        raise CommandError("layout", f"layout has {len(value)} melds; at most {MAX_LAYOUT_MELDS}")
    for i, meld in enumerate(value):
        if isinstance(meld, list) and len(meld) > MAX_MELD_CARDS:
            raise CommandError(
                "layout", f"layout[{i}] has {len(meld)} cards; a meld has at most {MAX_MELD_CARDS}"
            )
    try:
        layout = tuple(tuple(parse_cards(m, f"layout[{i}]")) for i, m in enumerate(value))
    except CardError as err:
        raise CommandError("layout", str(err)) from None
    total = sum(len(m) for m in layout)
    if total > MAX_LAYOUT_CARDS:
        raise CommandError("layout", f"layout has {total} cards; at most {MAX_LAYOUT_CARDS}")
    return layout


def seat_command(kind: object, seat: int, body: dict[str, Any]) -> Command:
    """A seat's command from its JSON body (``type`` plus ``layout``/``card``/``source``)."""
    if kind == "play":
        return Play(seat, _layout(body.get("layout")))
    if kind == "draw":
        source = body.get("source", "stock")
        if source not in ("stock", "pile"):
            raise CommandError("source", f"source is {source!r}; allowed: 'stock' or 'pile'")
        return Draw(seat, source)
    if kind == "end":
        return End(seat)
    if kind == "pass":
        return Pass(seat)
    if kind == "discard":
        try:
            return Discard(seat, parse_card(body.get("card")))
        except CardError as err:
            raise CommandError("card", str(err)) from None
    allowed = ", ".join(repr(k) for k in sorted(SEAT_COMMANDS))
    raise CommandError("type", f"type is {kind!r}; allowed: {allowed}")


def sit_command(body: dict[str, Any]) -> Sit:
    """A ``Sit`` from a JSON body with ``name`` and an optional ``seed``."""
    name = body.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise CommandError("name", f"name must be a non-empty string of at most {MAX_NAME} chars")
    seed = body.get("seed") or ""
    if not isinstance(seed, str) or len(seed) > MAX_SEED:
        raise CommandError("seed", f"seed must be a string of at most {MAX_SEED} characters")
    return Sit(name.strip(), seed)


def cards_tuple(cards: list[int]) -> Cards:
    """A list of cards as the tuple commands and events hold."""
    return tuple(cards)
