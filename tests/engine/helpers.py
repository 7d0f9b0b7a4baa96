"""Shared helpers of the engine tests: a game driven through ``decide``/``evolve`` with a known
seed, hand-built positions, card notation, and the JSON form of commands used by the golden
files (``tests/golden``).

A position is built by folding real events (create, sit, start with a known seed) and then
replacing hands, stock, table and the turn with ``dataclasses.replace``, so every scenario
starts from a state the engine itself produced.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from shared.core.cards import cards_str, parse_card
from shared.core.codes import Rejection
from shared.core.commands import (
    Command,
    Context,
    Continue,
    CreateGame,
    Discard,
    Draw,
    Play,
    RecordScores,
    Sit,
    Start,
    Timeout,
    seat_command,
    sit_command,
)
from shared.core.decide import decide, round_sheet
from shared.core.events import Cards, Event, Melds
from shared.core.evolve import evolve
from shared.core.shuffle import commitment
from shared.core.state import GameState, Turn
from shared.core.views import SeatView
from shared.play.bots import BOTS, Bot

SEED = hashlib.sha256(b"engine-tests").digest()
T0 = 1_700_000_000.0


def cards(text: str) -> Cards:
    """``"5H JK 7H"`` -> the card ints, in the order written."""
    return tuple(parse_card(t) for t in text.split())


def melds(*texts: str) -> Melds:
    """Several melds in notation -> a layout."""
    return tuple(cards(t) for t in texts)


def hand_text(hand: Sequence[int]) -> list[str]:
    """A hand in canonical notation, sorted."""
    return cards_str(sorted(hand))


def table_text(table: Sequence[Sequence[int]]) -> list[list[str]]:
    """A table in notation, meld by meld, in the order stored."""
    return [cards_str(m) for m in table]


@dataclass
class Game:
    """One game driven command by command; ``state`` is always the fold of ``events`` unless a
    position was set up by hand (``setup``)."""

    seed: bytes = SEED
    now: float = T0
    state: GameState = field(default_factory=GameState)
    events: list[Event] = field(default_factory=list)

    def decide(self, command: Command, now: float | None = None) -> list[Event] | Rejection:
        """What the engine answers, without applying it."""
        return decide(self.state, command, Context(self.now if now is None else now, self.seed))

    def do(self, command: Command, now: float | None = None) -> list[Event]:
        """Apply a command that must be accepted; returns its events."""
        if now is not None:
            self.now = now
        answer = self.decide(command)
        assert not isinstance(answer, Rejection), f"{command} refused: {answer}"
        for event in answer:
            self.state = evolve(self.state, event)
        self.events.extend(answer)
        return answer

    def refuse(self, command: Command, code: str, now: float | None = None) -> Rejection:
        """Send a command that must be refused with ``code`` and no event at all."""
        answer = self.decide(command, now)
        assert isinstance(answer, Rejection), f"{command} accepted: {answer}"
        assert answer.code == code, f"{command}: expected {code}, got {answer}"
        return answer

    def setup(
        self,
        *,
        hands: Sequence[str] | None = None,
        table: Sequence[str] = (),
        stock: str | None = None,
        discard: str | None = None,
        turn: int = 0,
        opened: Sequence[bool] | None = None,
        rejected: int = 0,
    ) -> None:
        """Replace the position of the current round: hands per seat, table, stock (top first),
        discard pile (bottom first), whose turn it is and who has opened."""
        s = self.state
        assert s.turn is not None, "set up a position during a round"
        changes: dict[str, Any] = {"table": melds(*table)}
        if hands is not None:
            assert len(hands) == s.seats
            changes["hands"] = tuple(cards(h) for h in hands)
        if stock is not None:
            changes["stock"] = cards(stock)
        if discard is not None:
            changes["discard"] = cards(discard)
        if opened is not None:
            changes["opened"] = tuple(opened)
        changes["turn"] = Turn(turn, s.turn.number, s.turn.deadline, rejected=rejected)
        self.state = replace(s, **changes)


def start_game(
    rules: str,
    options: dict[str, Any] | None = None,
    seats: int = 2,
    *,
    seed: bytes = SEED,
    player_seeds: Sequence[str] | None = None,
    game_id: str = "g1",
    now: float = T0,
) -> Game:
    """A game created, fully seated and started (round 1 dealt, first turn begun)."""
    game = Game(seed=seed, now=now)
    game.do(CreateGame(game_id, rules, dict(options or {}), seats, commitment(seed)))
    for i in range(seats):
        game.do(Sit(f"p{i}", player_seeds[i] if player_seeds else f"ps{i}"))
    game.do(Start())
    return game


def record_scores(game: Game) -> list[Event]:
    """Play the scoring role: record the engine's own score sheet of the last round."""
    s = game.state
    sheet = round_sheet(s.rules, s.rounds[-1])
    return game.do(RecordScores(s.round, sheet.winner, sheet.went_out, sheet.seats, sheet.scores))


def go_out(game: Game) -> list[Event]:
    """End the current round fast: the seat on turn (made opened, holding ``5H 6H 7H``) plays
    its whole hand and goes out; the other hands stay as dealt."""
    s = game.state
    assert s.turn is not None
    seat = s.turn.seat
    hands = [" ".join(cards_str(h)) for h in s.hands]
    hands[seat] = "5H 6H 7H"
    game.setup(hands=hands, turn=seat, opened=[True] * s.seats)
    return game.do(Play(seat, (*game.state.table, cards("5H 6H 7H"))))


class PileBot:
    """A bot for the discard-pile variant that now and then takes the pile's top card (the
    shipped bots always draw from the stock) and then discards another card at random; otherwise
    it plays like ``base``. The random discards keep low cards moving: bots that always discard
    their highest card can hoard the low ones until nobody can open, and a discard-pile round
    has no stall, so such a round would never end."""

    def __init__(self, base: Bot, rate: float = 0.3) -> None:
        self.base = base
        self.rate = rate
        self.name = f"pile-{base.name}"

    def choose(self, view: SeatView, rng: random.Random) -> Command:
        """Take from the pile, discard after taking, or leave it to the base bot."""
        pile = view.rules.discard_pile and not view.drawn and view.discard_count > 0
        if pile and rng.random() < self.rate:
            return Draw(view.seat, "pile")
        if view.taken is not None and not view.placed:
            hand = view.hand
            choices = [c for c in hand if c != view.taken or hand.count(c) > 1]
            return Discard(view.seat, rng.choice(choices))
        return self.base.choose(view, rng)


def bots(names: str) -> list[Bot]:
    """Bots by name, comma-separated; ``pile-<name>`` wraps one in a ``PileBot``."""
    chosen: list[Bot] = []
    for name in names.split(","):
        if name.startswith("pile-"):
            chosen.append(PileBot(BOTS[name.removeprefix("pile-")]()))
        else:
            chosen.append(BOTS[name]())
    return chosen


# --- the JSON form of commands (golden files) --------------------------------------------------


def command_from_json(data: dict[str, Any]) -> Command:
    """The inverse of ``command_json``; seat commands go through the API's own parser."""
    kind = data["type"]
    if kind in ("play", "draw", "end", "pass", "discard"):
        return seat_command(kind, int(data["seat"]), data)
    if kind == "sit":
        return sit_command(data)
    if kind == "create":
        return CreateGame(
            data["game_id"], data["rules"], data["options"], data["seats"], data["commitment"]
        )
    if kind == "start":
        return Start()
    if kind == "timeout":
        return Timeout(data["number"])
    if kind == "record_scores":
        scores = data["scores"]
        return RecordScores(
            data["round"],
            data["winner"],
            data["went_out"],
            tuple(data["seats"]),
            None if scores is None else tuple(scores),
        )
    if kind == "continue":
        return Continue()
    raise ValueError(f"unknown command type {kind!r}")
