"""Rule sets: every rule of RULES.md is a field, every preset is a frozen value.

A game may override any field by name at creation. Overrides are checked here, field by field,
so that a bad option is refused with an error naming the option and what is allowed. Limits that
depend on the number of seats (the deal must leave a card in the stock) are checked by
``check_seats``, which game creation calls once the seat count is known.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from shared.core.botnames import BOT_NAMES, DEFAULT_BOT

Ace = Literal["low", "wrap"]
JokerPolicy = Literal["to_hand", "never", "must_replay"]
PointValues = Literal["cards", "tiles", "none"]
TurnShape = Literal["play_or_draw", "place_draw_place"]
StallWinner = Literal["fewest_cards", "lowest_total"]
Scoring = Literal["penalty", "plus_minus", "none"]
MatchRule = Literal["lowest_total", "first_out", "most_wins", "single"]
Starter = Literal["cut", "draw_tile", "random"]
AbsentPolicy = Literal["bot", "skip", "forfeit"]

MIN_SEATS, MAX_SEATS = 2, 8
DECK_COPIES = 2


class RuleSetError(ValueError):
    """An unknown rule set, an unknown option or a value out of range; the message names it."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(message)
        self.option = option


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The complete rules of one game. Frozen and hashable: it keys caches of meld readings."""

    name: str
    min_players: int
    max_players: int
    jokers: int
    hand_size: int | None  # None: 13 for up to 3 seats, 11 for more (the robbers rule)
    ace: Ace
    opening_points: int
    point_values: PointValues
    joker_penalty: int
    joker_policy: JokerPolicy
    turn_shape: TurnShape
    failed_turn_draw: int
    max_rejections: int  # rejected layouts a turn absorbs; the next one ends it (Decision 14)
    turn_seconds: int | None
    stall_winner: StallWinner
    scoring: Scoring
    redeem_bonus: int
    match: MatchRule
    match_rounds: int | None  # None: as many rounds as seats
    match_target: int  # rounds gone out that win a "first_out" match
    tie_break_rounds: int
    discard_pile: bool
    starter: Starter
    run_max: int
    set_max: int
    max_reshuffles: int | None  # discard-pile variant: refills of the stock from the pile
    hints: bool = True  # GET /api/games/{id}/hint answers (a house rule)
    absent_seconds: int = 300  # an untimed turn's absence limit (Decision 17)
    absent_turns: int = 3  # turns timed out in a row that make a player absent
    absent: AbsentPolicy = "skip"  # how an absent player's seat is played
    absent_bot: str = DEFAULT_BOT  # the bot handed an absent player's seat (absent: bot)

    def hand_size_for(self, seats: int) -> int:
        """Cards dealt to each seat at a table of ``seats``."""
        if self.hand_size is not None:
            return self.hand_size
        return 13 if seats <= 3 else 11

    def rounds_for(self, seats: int) -> int:
        """Rounds in a match at a table of ``seats`` (before any tie-break rounds)."""
        return self.match_rounds if self.match_rounds is not None else seats

    def options(self) -> dict[str, Any]:
        """The fields that differ from the preset this rule set is named after (a fresh dict;
        worked out once per rule set: every view shows them)."""
        return dict(_options(self))

    def to_dict(self) -> dict[str, Any]:
        """Every field, for views and records."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class OptionSpec:
    """What one option may be, and what it means (shown by the lobby and in errors)."""

    kind: str  # "int", "int?", "bool", "choice"
    help: str
    low: int = 0
    high: int = 0
    choices: tuple[str, ...] = ()

    def allowed(self) -> str:
        """The allowed values, as a phrase for error messages."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        text = f"an integer from {self.low} to {self.high}"
        return text + " or null" if self.kind == "int?" else text


OPTIONS: dict[str, OptionSpec] = {
    "min_players": OptionSpec(
        "int", "fewest seats a game of these rules may have", MIN_SEATS, MAX_SEATS
    ),
    "max_players": OptionSpec(
        "int", "most seats a game of these rules may have", MIN_SEATS, MAX_SEATS
    ),
    "jokers": OptionSpec("int", "jokers in the deck (0 is the no-joker variant)", 0, 8),
    "hand_size": OptionSpec(
        "int?", "cards dealt to each seat; null: 13 for 2-3 seats, 11 for more", 1, 52
    ),
    "ace": OptionSpec(
        "choice",
        "low: A-2-3 only; wrap: runs may go round the corner (Q-K-A-2)",
        choices=("low", "wrap"),
    ),
    "opening_points": OptionSpec(
        "int", "points the first play must reach from the hand alone (0: no opening)", 0, 100
    ),
    "point_values": OptionSpec(
        "choice",
        "cards: A 15, J Q K 10, 2-10 face; tiles: face value 1-13; none: no points",
        choices=("cards", "tiles", "none"),
    ),
    "joker_penalty": OptionSpec("int", "penalty of a joker left in hand", 0, 100),
    "joker_policy": OptionSpec(
        "choice",
        "to_hand: redeem a table joker with its natural card and keep it; "
        "never / must_replay: a joker never leaves the table",
        choices=("to_hand", "never", "must_replay"),
    ),
    "turn_shape": OptionSpec(
        "choice",
        "play_or_draw: a play or a draw ends the turn; place_draw_place: place, draw if you "
        "wish (must if you placed nothing), place again, then end",
        choices=("play_or_draw", "place_draw_place"),
    ),
    "failed_turn_draw": OptionSpec(
        "int",
        "cards drawn when a turn with a rejected layout ends in a draw, a timeout or a forfeit "
        "(max_rejections)",
        1,
        5,
    ),
    "max_rejections": OptionSpec(
        "int",
        "rejected layouts a turn may have and stay open; the next one ends the turn as a failed "
        "turn (the failed-turn draw; a pass with an empty stock; the referee's discard after a "
        "pile draw). 0: the first rejected layout ends the turn. There is no unlimited value",
        0,
        20,
    ),
    "turn_seconds": OptionSpec("int?", "turn timer in seconds; null: no timer", 5, 3600),
    "stall_winner": OptionSpec(
        "choice",
        "who wins a stalled round: fewest cards in hand, or lowest total value",
        choices=("fewest_cards", "lowest_total"),
    ),
    "scoring": OptionSpec(
        "choice",
        "penalty: losers score their hand, winner 0; plus_minus: losers minus their rack, "
        "winner plus the sum; none: a winner only",
        choices=("penalty", "plus_minus", "none"),
    ),
    "redeem_bonus": OptionSpec(
        "int", "points taken off a round penalty per joker redeemed (0: off)", 0, 30
    ),
    "match": OptionSpec(
        "choice",
        "lowest_total: N rounds, lowest penalty; first_out: first to go out N times; "
        "most_wins: N games, most wins; single: one round",
        choices=("lowest_total", "first_out", "most_wins", "single"),
    ),
    "match_rounds": OptionSpec("int?", "rounds in a match; null: as many as seats", 1, 20),
    "match_target": OptionSpec("int", "rounds gone out that win a first_out match", 1, 10),
    "tie_break_rounds": OptionSpec(
        "int", "extra rounds among tied seats before they share the win", 0, 3
    ),
    "discard_pile": OptionSpec(
        "bool", "a face-up discard pile: draw from stock or pile, end by discarding"
    ),
    "starter": OptionSpec(
        "choice",
        "cut: highest cut deals, next seat starts; draw_tile: highest tile starts; "
        "random: the seeded shuffle picks",
        choices=("cut", "draw_tile", "random"),
    ),
    "run_max": OptionSpec("int", "longest run allowed", 3, 13),
    "set_max": OptionSpec("int", "largest set allowed", 3, 4),
    "max_reshuffles": OptionSpec(
        "int?",
        "discard-pile variant: times the pile may be shuffled into an empty stock in a round; "
        "after that an empty stock stays empty, seats pass and the round stalls (null: no limit, "
        "and a round may then never end)",
        0,
        100,
    ),
    "hints": OptionSpec("bool", "seats may ask the server for a hint (the solver's best play)"),
    "absent_seconds": OptionSpec(
        "int",
        "seconds an untimed turn waits for its seat before it ends as a timeout (a timed turn "
        "ends at turn_seconds)",
        10,
        86400,
    ),
    "absent_turns": OptionSpec(
        "int", "turns timed out in a row after which the seat's player counts as absent", 1, 20
    ),
    "absent": OptionSpec(
        "choice",
        "an absent player's seat: bot: a bot plays it until the player returns; skip: its "
        "turns end at once as timeouts until the player returns; forfeit: it resigns",
        choices=("bot", "skip", "forfeit"),
    ),
    "absent_bot": OptionSpec(
        "choice", "the bot that plays an absent player's seat (absent: bot)", choices=BOT_NAMES
    ),
}


ROBBERS = RuleSet(
    name="robbers",
    min_players=2,
    max_players=5,
    jokers=4,
    hand_size=None,
    ace="low",
    opening_points=40,
    point_values="cards",
    joker_penalty=30,
    joker_policy="to_hand",
    turn_shape="play_or_draw",
    failed_turn_draw=1,
    max_rejections=3,
    turn_seconds=None,
    stall_winner="fewest_cards",
    scoring="penalty",
    redeem_bonus=0,
    match="lowest_total",
    match_rounds=5,
    match_target=3,
    tie_break_rounds=3,
    discard_pile=False,
    starter="cut",
    run_max=13,
    set_max=4,
    max_reshuffles=3,
)

ROBBERS_CLASSIC = dataclasses.replace(
    ROBBERS,
    name="robbers-classic",
    max_players=6,
    hand_size=13,
    ace="wrap",
    opening_points=0,
    point_values="none",
    joker_penalty=0,
    joker_policy="never",
    turn_shape="place_draw_place",
    scoring="none",
    match="single",
    match_rounds=1,
    starter="random",
)

RUMMIKUB = dataclasses.replace(
    ROBBERS,
    name="rummikub",
    max_players=4,
    jokers=2,
    hand_size=14,
    opening_points=30,
    point_values="tiles",
    joker_policy="must_replay",
    failed_turn_draw=3,
    turn_seconds=60,
    stall_winner="lowest_total",
    scoring="plus_minus",
    match="most_wins",
    match_rounds=None,
    starter="draw_tile",
)

PRESETS: dict[str, RuleSet] = {
    "robbers": ROBBERS,
    "robbers-classic": ROBBERS_CLASSIC,
    "rummikub": RUMMIKUB,
}
ALIASES = {"vatikan": "robbers"}


def _check_option(option: str, value: object) -> object:
    spec = OPTIONS.get(option)
    if spec is None:
        raise RuleSetError(
            option, f"unknown option {option!r}; allowed options: {', '.join(sorted(OPTIONS))}"
        )
    bad = RuleSetError(option, f"option {option!r} is {value!r}; allowed: {spec.allowed()}")
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise bad
        return value
    if spec.kind == "choice":
        if value not in spec.choices:
            raise bad
        return value
    if value is None and spec.kind == "int?":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not spec.low <= value <= spec.high:
        raise bad
    return value


def rule_set(name: object, options: Mapping[str, object] | None = None) -> RuleSet:
    """The preset ``name`` with ``options`` applied; raise ``RuleSetError`` naming what is wrong."""
    if not isinstance(name, str) or ALIASES.get(name, name) not in PRESETS:
        names = ", ".join(repr(n) for n in [*PRESETS, *ALIASES])
        raise RuleSetError("rules", f"unknown rule set {name!r}; allowed rule sets: {names}")
    base = PRESETS[ALIASES.get(name, name)]
    if options is None:
        return base
    if not isinstance(options, Mapping):
        raise RuleSetError("options", "options must be an object of option names to values")
    checked = {key: _check_option(key, value) for key, value in options.items()}
    rules = dataclasses.replace(base, **checked)  # type: ignore[arg-type]
    if rules.point_values == "none":
        for option, value in (("opening_points", rules.opening_points), ("scoring", rules.scoring)):
            if value not in (0, "none"):
                raise RuleSetError(
                    option,
                    f"option {option!r} is {value!r} but 'point_values' is 'none'; allowed: "
                    f"{option} {0 if option == 'opening_points' else repr('none')} without "
                    "point values, or point_values 'cards' or 'tiles'",
                )
    if rules.min_players > rules.max_players:
        raise RuleSetError(
            "min_players",
            f"option 'min_players' is {rules.min_players} but 'max_players' is "
            f"{rules.max_players}; allowed: min_players <= max_players",
        )
    return rules


def check_seats(rules: RuleSet, seats: object) -> int:
    """Check a seat count against the rule set and the deck (RULES.md Decision 12)."""
    if isinstance(seats, bool) or not isinstance(seats, int):
        raise RuleSetError("seats", f"seats is {seats!r}; allowed: an integer")
    if not rules.min_players <= seats <= rules.max_players:
        raise RuleSetError(
            "seats",
            f"seats is {seats}; allowed for {rules.name}: {rules.min_players} to "
            f"{rules.max_players} (options min_players / max_players widen it up to "
            f"{MIN_SEATS}-{MAX_SEATS})",
        )
    deck_size = 52 * DECK_COPIES + rules.jokers
    needed = seats * rules.hand_size_for(seats) + (1 if rules.discard_pile else 0)
    if needed >= deck_size:
        raise RuleSetError(
            "hand_size",
            f"dealing {rules.hand_size_for(seats)} cards to {seats} seats"
            f"{' and turning up a discard' if rules.discard_pile else ''} needs {needed} of "
            f"the {deck_size} cards and leaves no stock; allowed: a deal that leaves at least "
            "one card in the stock",
        )
    return seats


@functools.lru_cache(maxsize=1024)
def _options(rules: RuleSet) -> dict[str, Any]:
    base = PRESETS[rules.name]
    return {
        f.name: getattr(rules, f.name)
        for f in dataclasses.fields(rules)
        if f.name != "name" and getattr(rules, f.name) != getattr(base, f.name)
    }
