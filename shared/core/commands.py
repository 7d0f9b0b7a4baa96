"""Commands: what a seat, the host or the service asks of a game. ``decide`` judges them.

Commands are plain frozen values; the edges (API, command stream, CLI) build them from JSON with
``seat_command`` and ``sit_command``, which refuse a malformed one with a message naming the
field; ``command_json`` is the way back, for every client, tool and test that sends one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shared.core.botnames import BOT_NAMES, BOTS_ALLOWED
from shared.core.cards import CardError, card_str, cards_str, parse_card, parse_cards
from shared.core.events import Cards, Melds
from shared.core.shuffle import Shuffle

MAX_LAYOUT_MELDS = 60
MAX_MELD_CARDS = 13  # the longest run; a set is at most 4
MAX_LAYOUT_CARDS = 2 * 52 + 8  # every card of the largest deck
MAX_NAME = 40
MAX_SEED = 128
MAX_PLAYER_ID = 64  # characters of an account id (the gateway's are 32 hex digits)


@dataclass(frozen=True, slots=True)
class Context:
    """What a decision may depend on besides the state: the time, and the secret seed (held by
    the service outside the log; only its commitment is in ``GameCreated``).

    ``shuffle``, when given, is where the random orders come from instead of the seed (whose
    commitment is then not checked; ``seed`` only makes the reveal): an audit passes the orders
    a log records, to re-derive a game whose seed is still secret.

    ``bot``: who sends a seat's command: None for its player, else the bot (its name) that the
    bots service plays the seat as. A bot may move only for a seat it plays now; its player's
    own move takes an absent player's seat back (Decision 17)."""

    now: float = 0.0
    seed: bytes | None = None
    shuffle: Shuffle | None = None
    bot: str | None = None


@dataclass(frozen=True, slots=True)
class CreateGame:
    game_id: str
    rules: str
    options: dict[str, Any]
    seats: int
    commitment: str
    rematch_of: str = ""  # the finished game this one is the rematch of (Decision 19)
    tournament: str = ""  # the tournament this game is a table of (Decision 20)


@dataclass(frozen=True, slots=True)
class Sit:
    """Take the first free seat, for a player, or for a bot (``bot``: one of ``BOT_NAMES``)
    that the bots service plays. ``seat``: the seat a rematch reserved (Decision 19).
    ``player``: the account taking it (set by the gateway from a session, never by a client)."""

    name: str
    seed: str = ""
    bot: str | None = None
    seat: int | None = None
    player: str = ""


@dataclass(frozen=True, slots=True)
class Leave:
    """Give up a seat of a game still waiting (Decision 15)."""

    seat: int


@dataclass(frozen=True, slots=True)
class Resign:
    """Leave a game under way (Decision 16)."""

    seat: int


@dataclass(frozen=True, slots=True)
class Return:
    """An absent player takes its seat back (Decision 17); ``reason`` as ``SeatReturned``'s."""

    seat: int
    reason: str = "returned"


@dataclass(frozen=True, slots=True)
class Cancel:
    """The host cancels a game still waiting (Decision 18)."""


@dataclass(frozen=True, slots=True)
class Expire:
    """Issued by the service for a game left waiting, or left without a move, past its limit
    (Decision 18); the service's timers judge the time, as they do for an untimed turn."""


@dataclass(frozen=True, slots=True)
class OfferRematch:
    """Seat ``seat`` of a finished game offers game ``game_id`` (made by the service, with the
    same rules and the seats rotated) as its rematch (Decision 19)."""

    seat: int
    game_id: str


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
    """Issued by the service when turn ``number``'s time is up: its deadline passed
    (``deadline``), an untimed turn's absence limit passed (``absent``: ``absent_seconds``, kept
    by the service's timer), or at once for the seat of a player away under ``skip``
    (``skipped``); Decision 17."""

    number: int
    reason: str = "deadline"


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
    | Leave
    | Resign
    | Return
    | Cancel
    | Expire
    | OfferRematch
)
# What a seat's client may send (the API's ``type``); the gateway's own routes send the others
# (``leave`` withdraws the seat's tokens too, ``rematch`` links a game the gateway made).
SEAT_COMMANDS = {"play", "draw", "end", "pass", "discard", "resign", "return"}
SERVICE_SEAT_COMMANDS = {"leave", "rematch"}
SERVICE_COMMAND_PREFIX = "service:"  # their command ids (a seat's client's are "<seat>:<id>")


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
    if kind == "leave":
        return Leave(seat)
    if kind == "resign":
        return Resign(seat)
    if kind == "return":
        return Return(seat)
    if kind == "rematch":
        game_id = body.get("game_id")
        if not isinstance(game_id, str) or not game_id:
            raise CommandError("game_id", "game_id must be the rematch's game id")
        return OfferRematch(seat, game_id)
    allowed = ", ".join(repr(k) for k in sorted(SEAT_COMMANDS))
    raise CommandError("type", f"type is {kind!r}; allowed: {allowed}")


def bot_name(value: object) -> str:
    """A bot's name, checked against ``BOT_NAMES``."""
    if not isinstance(value, str) or value not in BOT_NAMES:
        raise CommandError("bot", f"bot is {value!r}; allowed: {BOTS_ALLOWED}")
    return value


def sit_command(body: dict[str, Any]) -> Sit:
    """A ``Sit`` from a JSON body with ``name``, an optional ``seed``, ``bot`` (a bot's seat,
    named ``"<bot> bot"`` unless ``name`` is given) and ``seat`` (a rematch's reserved seat)."""
    bot = body.get("bot")
    if bot is not None:
        bot = bot_name(bot)
    name = body.get("name")
    if name is None and bot is not None:
        name = f"{bot} bot"
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise CommandError("name", f"name must be a non-empty string of at most {MAX_NAME} chars")
    seed = body.get("seed") or ""
    if not isinstance(seed, str) or len(seed) > MAX_SEED:
        raise CommandError("seed", f"seed must be a string of at most {MAX_SEED} characters")
    seat = body.get("seat")
    if seat is not None and (isinstance(seat, bool) or not isinstance(seat, int) or seat < 0):
        raise CommandError("seat", f"seat is {seat!r}; allowed: a seat number")
    player = body.get("player") or ""
    if not isinstance(player, str) or len(player) > MAX_PLAYER_ID:
        raise CommandError("player", f"player must be an account id of at most {MAX_PLAYER_ID}")
    return Sit(name.strip(), seed, bot, seat, player)


def cards_tuple(cards: list[int]) -> Cards:
    """A list of cards as the tuple commands and events hold."""
    return tuple(cards)


def command_json(command: Command, *, with_seat: bool = True) -> dict[str, Any]:
    """A command as JSON: ``type`` and its fields, as the edges read them back (a seat command's
    as the API's body, which ``seat_command`` parses). ``with_seat=False``: a seat command
    without its ``seat``, as a seat's client sends it (its token names the seat)."""
    doc: dict[str, Any]
    seat: int | None = None
    match command:
        case CreateGame(game_id, rules, options, seats, commit, rematch_of, tournament):
            doc = {
                "type": "create",
                "game_id": game_id,
                "rules": rules,
                "options": options,
                "seats": seats,
                "commitment": commit,
            }
            if rematch_of:
                doc["rematch_of"] = rematch_of
            if tournament:
                doc["tournament"] = tournament
        case Sit(name, seed, bot, at, player):
            doc = {"type": "sit", "name": name, "seed": seed}
            if bot is not None:
                doc["bot"] = bot
            if at is not None:
                doc["seat"] = at
            if player:
                doc["player"] = player
        case Start():
            doc = {"type": "start"}
        case Play(seat, layout):
            doc = {"type": "play", "layout": [cards_str(meld) for meld in layout]}
        case Draw(seat, source):
            doc = {"type": "draw", "source": source}
        case End(seat):
            doc = {"type": "end"}
        case Pass(seat):
            doc = {"type": "pass"}
        case Discard(seat, card):
            doc = {"type": "discard", "card": card_str(card)}
        case Timeout(number, reason):
            doc = {"type": "timeout", "number": number}
            if reason != "deadline":
                doc["reason"] = reason
        case RecordScores(number, winner, went_out, seats, scores):
            doc = {
                "type": "record_scores",
                "round": number,
                "winner": winner,
                "went_out": went_out,
                "seats": list(seats),
                "scores": None if scores is None else list(scores),
            }
        case Continue():
            doc = {"type": "continue"}
        case Leave(seat):
            doc = {"type": "leave"}
        case Resign(seat):
            doc = {"type": "resign"}
        case Return(seat, reason):
            doc = {"type": "return", "reason": reason}
        case Cancel():
            doc = {"type": "cancel"}
        case Expire():
            doc = {"type": "expire"}
        case OfferRematch(seat, game_id):
            doc = {"type": "rematch", "game_id": game_id}
        case _:
            raise TypeError(f"not a command: {command!r}")
    if seat is not None and with_seat:
        doc = {"type": doc["type"], "seat": seat, **doc}
    return doc
