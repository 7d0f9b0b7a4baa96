"""Commands: what a director, a player or the tournament service asks of a tournament.

``command_from(kind, payload)`` builds one from JSON and refuses a malformed one with a
``TournamentError`` naming the field, what was wrong and what is allowed; ``command_parts`` is
the way back, for every client, tool and test that sends one. ``decide`` judges the rest (who may
send it, and whether the tournament is where it can take it), with the same error.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from shared.core.botnames import BOT_NAMES, BOTS_ALLOWED
from shared.core.rulesets import RuleSetError, check_seats, rule_set
from shared.tournament.events import BOT, SeatResult

FORMATS = ("swiss", "round_robin")
RULING_KINDS = ("annul", "forfeit", "verdict")
FILL_BYES = "byes"
FILL_BOTS = "bots:"  # "bots:<name>": a short table's empty seats go to that bot
SERVICE = "service"  # the actor of the tournament service's commands
MAX_NAME = 80
MAX_PLAYER_ID = 64  # as the game's commands (the gateway's account ids are 32 hex digits)
MAX_ROUNDS = 64
MAX_ENTRANTS = 1024
MAX_REASON = 500
TOURNAMENT_ID = re.compile(r"t[0-9a-f]{16}")
GAME_ID = re.compile(r"g[0-9a-f]{16}")

CODES: dict[str, str] = {
    "bad_command": "the command is malformed (the message names the field and what is allowed)",
    "no_tournament": "there is no such tournament",
    "tournament_exists": "a tournament with this id exists already",
    "not_director": "only the tournament's director may do this",
    "not_allowed": "this actor may not send this command (the message says who may)",
    "already_open": "registration is open already",
    "already_closed": "registration is closed: the tournament is running or over",
    "not_registering": "registration is not open",
    "already_registered": "the player is an entrant already",
    "not_registered": "the player is not an entrant",
    "already_withdrawn": "the player has withdrawn already",
    "tournament_full": "the tournament has as many entrants as it may",
    "too_few_entrants": "there are not enough entrants to pair a round",
    "table_in_play": "the player sits at a table still in play: withdraw between rounds",
    "not_running": "the tournament is not running",
    "round_paired": "that round is paired already",
    "round_not_due": "that round cannot be paired yet (the message says which round is due)",
    "round_in_play": "the current round has tables still in play",
    "no_such_table": "no table of that round has that number",
    "wrong_game": "the game id is not that table's game",
    "table_started": "the table's game has started already",
    "table_finished": "the table's game has finished already",
    "table_annulled": "the table was annulled",
    "results_wrong": "the results do not match the table's seats",
    "ruling_recorded": "this ruling is recorded already",
    "not_at_table": "the player does not sit at that table",
    "rounds_left": "the tournament has rounds still to play",
    "tournament_finished": "the tournament is over",
}


class TournamentError(ValueError):
    """A command refused: a stable ``code`` (``CODES``), a sentence for people that says what
    was wrong and what is allowed, and the ``field`` at fault ("" when it is none)."""

    def __init__(self, code: str, message: str, field: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field

    def to_json(self) -> dict[str, str]:
        """The error as the API's JSON error body."""
        return {"error": self.code, "message": self.message, "field": self.field}


@dataclass(frozen=True, slots=True)
class CreateTournament:
    """Create a tournament; its director is the account that sends this."""

    tournament_id: str
    name: str
    rules: str
    options: dict[str, Any]
    format: str
    rounds: int
    table_seats: int
    fill: str


@dataclass(frozen=True, slots=True)
class OpenRegistration:
    """The director opens registration."""


@dataclass(frozen=True, slots=True)
class Register:
    """Enter ``player`` (the sender's own account, or anyone the director enters: a bot too)
    with the name shown and its current rating (the gateway reads it from the ratings)."""

    player: str
    name: str
    rating: float = 0.0


@dataclass(frozen=True, slots=True)
class Withdraw:
    """``player`` leaves (itself, or the director withdraws it): before the start, or between
    rounds."""

    player: str


@dataclass(frozen=True, slots=True)
class CloseRegistration:
    """The director closes registration: the tournament runs."""


@dataclass(frozen=True, slots=True)
class PairRound:
    """Pair round ``round`` (the one due: 1 after closing, then each after the last is over).
    Naming the round makes a repeat of a pairing that took effect a refusal, not a new round."""

    round: int


@dataclass(frozen=True, slots=True)
class StartTable:
    """Table ``table`` of round ``round`` has its game ``game_id`` created and started."""

    round: int
    table: int
    game_id: str


@dataclass(frozen=True, slots=True)
class FinishTable:
    """Table ``table`` of round ``round``'s game ended with ``results`` (``tables.table_result``;
    empty for a cancelled game) read at the game log's ``head`` (``[version, hash]``)."""

    round: int
    table: int
    game_id: str
    results: tuple[SeatResult, ...]
    head: tuple[int, str]


@dataclass(frozen=True, slots=True)
class Rule:
    """The director's ruling on table ``table`` of round ``round`` (see ``RulingRecorded``):
    ``player`` for a forfeit (the entrant it is against), ``turn`` and ``verdict`` for a
    verdict, a ``reason`` always."""

    kind: str
    round: int
    table: int
    reason: str
    player: str = ""
    turn: int | None = None
    verdict: str = ""


@dataclass(frozen=True, slots=True)
class FinishTournament:
    """End the tournament after its last round (the director may end it early, between
    rounds)."""


Command = (
    CreateTournament
    | OpenRegistration
    | Register
    | Withdraw
    | CloseRegistration
    | PairRound
    | StartTable
    | FinishTable
    | Rule
    | FinishTournament
)
KINDS = (
    "create",
    "open",
    "register",
    "withdraw",
    "close",
    "pair",
    "table_started",
    "table_finished",
    "rule",
    "finish",
)


def _bad(field: str, message: str) -> TournamentError:
    return TournamentError("bad_command", message, field)


def _int(payload: dict[str, Any], field: str, low: int, high: int) -> int:
    value = payload.get(field)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _bad(field, f"{field} is {value!r}; allowed: an integer from {low} to {high}")
    return value


def _text(payload: dict[str, Any], field: str, most: int, *, empty: bool = False) -> str:
    value = payload.get(field, "" if empty else None)
    if not isinstance(value, str) or (not empty and not value.strip()) or len(value) > most:
        need = "a string" if empty else "a non-empty string"
        raise _bad(field, f"{field} is {value!r}; allowed: {need} of at most {most} characters")
    return value.strip()


def player_id(value: object, field: str = "player") -> str:
    """An entrant's id: an account id, or ``bot:<name>`` with a bot of ``BOT_NAMES``."""
    if not isinstance(value, str) or not value or len(value) > MAX_PLAYER_ID:
        raise _bad(
            field,
            f"{field} is {value!r}; allowed: an account id of at most {MAX_PLAYER_ID} characters "
            "or 'bot:<name>'",
        )
    if value.startswith(BOT) and value[len(BOT) :] not in BOT_NAMES:
        raise _bad(
            field, f"{field} is {value!r}; a bot entrant is 'bot:<name>' with {BOTS_ALLOWED}"
        )
    if value == SERVICE:
        raise _bad(field, f"{field} is {value!r}, the service's name; allowed: an account id")
    return value


def fill_bot(fill: str) -> str | None:
    """The bot a ``bots:<name>`` fill seats, or None for ``byes``."""
    return fill[len(FILL_BOTS) :] if fill.startswith(FILL_BOTS) else None


def _fill(value: object) -> str:
    if value == FILL_BYES or (
        isinstance(value, str) and value.startswith(FILL_BOTS) and fill_bot(value) in BOT_NAMES
    ):
        return str(value)
    raise _bad(
        "fill",
        f"fill is {value!r}; allowed: 'byes' (entrants left over sit the round out) or "
        f"'bots:<name>' (short tables get that bot's seats), the bot {BOTS_ALLOWED}",
    )


def _create(payload: dict[str, Any]) -> CreateTournament:
    tournament_id = payload.get("tournament_id")
    if not isinstance(tournament_id, str) or not TOURNAMENT_ID.fullmatch(tournament_id):
        raise _bad(
            "tournament_id",
            f"tournament_id is {tournament_id!r}; allowed: 't' and 16 lowercase hex digits",
        )
    name = _text(payload, "name", MAX_NAME)
    options = payload.get("options")
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise _bad("options", "options must be an object of rule-set option names to values")
    try:
        rules = rule_set(payload.get("rules"), options)
    except RuleSetError as err:
        raise _bad(
            err.option if err.option in ("rules", "options") else "options", str(err)
        ) from None
    fmt = payload.get("format", "swiss")
    if fmt not in FORMATS:
        raise _bad("format", f"format is {fmt!r}; allowed: {', '.join(map(repr, FORMATS))}")
    low = 0 if fmt == "round_robin" else 1
    if "rounds" not in payload and fmt == "round_robin":
        payload = {**payload, "rounds": 0}
    rounds = _int(payload, "rounds", low, MAX_ROUNDS)
    seats = payload.get("table_seats")
    try:
        check_seats(rules, seats)
    except RuleSetError as err:
        raise _bad("table_seats", str(err).replace("seats is", "table_seats is", 1)) from None
    assert isinstance(seats, int)
    return CreateTournament(
        tournament_id,
        name,
        str(payload.get("rules")),
        dict(options),
        str(fmt),
        rounds,
        seats,
        _fill(payload.get("fill", FILL_BYES)),
    )


def _results(value: object) -> tuple[SeatResult, ...]:
    if not isinstance(value, list) or len(value) > 8:
        raise _bad("results", "results must be a list of at most 8 seat results (or empty)")
    out = []
    for i, item in enumerate(value):
        where = f"results[{i}]"
        if not isinstance(item, dict):
            raise _bad("results", f"{where} must be an object")
        total = item.get("total")
        ok_total = total is None or (isinstance(total, int) and not isinstance(total, bool))
        counts = [item.get(k) for k in ("seat", "outs", "wins")]
        if (
            not ok_total
            or not isinstance(item.get("winner"), bool)
            or any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in counts)
        ):
            raise _bad(
                "results",
                f"{where} is {item!r}; allowed: player (an id), seat, outs, wins (integers from "
                "0), winner (true or false), total (an integer or null)",
            )
        out.append(
            SeatResult(
                player_id(item.get("player"), "results"),
                item["seat"],
                item["winner"],
                total,
                item["outs"],
                item["wins"],
            )
        )
    return tuple(out)


def _head(value: object) -> tuple[int, str]:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or isinstance(value[0], bool)
        or not isinstance(value[0], int)
        or value[0] < 1
        or not isinstance(value[1], str)
        or len(value[1]) > 128
    ):
        raise _bad("head", f"head is {value!r}; allowed: [version, hash] of the game's log")
    return (value[0], value[1])


def _game_id(payload: dict[str, Any]) -> str:
    game_id = payload.get("game_id")
    if not isinstance(game_id, str) or not GAME_ID.fullmatch(game_id):
        raise _bad("game_id", f"game_id is {game_id!r}; allowed: 'g' and 16 lowercase hex digits")
    return game_id


def _rating(payload: dict[str, Any]) -> float:
    rating = payload.get("rating", 0.0)
    if isinstance(rating, bool) or not isinstance(rating, int | float) or not math.isfinite(rating):
        raise _bad("rating", f"rating is {rating!r}; allowed: a finite number")
    return float(rating)


def command_from(kind: object, payload: dict[str, Any]) -> Command:
    """The command of ``kind`` (one of ``KINDS``) from its JSON ``payload``; raises
    ``TournamentError("bad_command", ..., field)`` for a malformed one."""
    if not isinstance(payload, dict):
        raise _bad("payload", "the command's body must be a JSON object")
    match kind:
        case "create":
            return _create(payload)
        case "open":
            return OpenRegistration()
        case "register":
            return Register(
                player_id(payload.get("player")),
                _text(payload, "name", MAX_NAME),
                _rating(payload),
            )
        case "withdraw":
            return Withdraw(player_id(payload.get("player")))
        case "close":
            return CloseRegistration()
        case "pair":
            return PairRound(_int(payload, "round", 1, MAX_ROUNDS * MAX_ENTRANTS))
        case "table_started":
            return StartTable(
                _int(payload, "round", 1, MAX_ROUNDS * MAX_ENTRANTS),
                _int(payload, "table", 1, MAX_ENTRANTS),
                _game_id(payload),
            )
        case "table_finished":
            return FinishTable(
                _int(payload, "round", 1, MAX_ROUNDS * MAX_ENTRANTS),
                _int(payload, "table", 1, MAX_ENTRANTS),
                _game_id(payload),
                _results(payload.get("results")),
                _head(payload.get("head")),
            )
        case "rule":
            return _rule(payload)
        case "finish":
            return FinishTournament()
    raise _bad("kind", f"kind is {kind!r}; allowed: {', '.join(map(repr, KINDS))}")


def _rule(payload: dict[str, Any]) -> Rule:
    kind = payload.get("kind")
    if kind not in RULING_KINDS:
        raise _bad("kind", f"kind is {kind!r}; allowed: {', '.join(map(repr, RULING_KINDS))}")
    number = _int(payload, "round", 1, MAX_ROUNDS * MAX_ENTRANTS)
    table = _int(payload, "table", 1, MAX_ENTRANTS)
    reason = _text(payload, "reason", MAX_REASON)
    player = ""
    if kind == "forfeit":
        player = player_id(payload.get("player"))
    elif payload.get("player"):
        raise _bad("player", f"player is for a forfeit only; a {kind} ruling names no player")
    turn: int | None = None
    verdict = ""
    if kind == "verdict":
        turn = _int(payload, "turn", 1, 1_000_000)
        verdict = _text(payload, "verdict", MAX_REASON)
    return Rule(str(kind), number, table, reason, player, turn, verdict)


def command_parts(command: Command) -> tuple[str, dict[str, Any]]:
    """The kind and JSON payload of ``command`` (``command_from``'s inverse)."""
    match command:
        case CreateTournament():
            return "create", {
                "tournament_id": command.tournament_id,
                "name": command.name,
                "rules": command.rules,
                "options": dict(command.options),
                "format": command.format,
                "rounds": command.rounds,
                "table_seats": command.table_seats,
                "fill": command.fill,
            }
        case OpenRegistration():
            return "open", {}
        case Register(player, name, rating):
            return "register", {"player": player, "name": name, "rating": rating}
        case Withdraw(player):
            return "withdraw", {"player": player}
        case CloseRegistration():
            return "close", {}
        case PairRound(number):
            return "pair", {"round": number}
        case StartTable(number, table, game_id):
            return "table_started", {"round": number, "table": table, "game_id": game_id}
        case FinishTable(number, table, game_id, results, head):
            return "table_finished", {
                "round": number,
                "table": table,
                "game_id": game_id,
                "results": [
                    {
                        "player": r.player,
                        "seat": r.seat,
                        "winner": r.winner,
                        "total": r.total,
                        "outs": r.outs,
                        "wins": r.wins,
                    }
                    for r in results
                ],
                "head": list(head),
            }
        case Rule(kind, number, table, reason, player, turn, verdict):
            doc: dict[str, Any] = {"kind": kind, "round": number, "table": table, "reason": reason}
            if player:
                doc["player"] = player
            if turn is not None:
                doc["turn"] = turn
            if verdict:
                doc["verdict"] = verdict
            return "rule", doc
        case FinishTournament():
            return "finish", {}
    raise TypeError(f"not a tournament command: {command!r}")
