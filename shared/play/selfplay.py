"""Self-play: whole games between bots through ``decide``/``evolve``, exactly the sequence the
services run (deal, turns, ``RoundEnded``, the scoring role's ``RecordScores``, ``Continue``),
with the game's invariants checked after every event.

The invariants: every card in exactly one place (stock, a hand, the table, the pile); every table
meld valid whenever a turn ends; the fold of the events from scratch equals the live state; every
event survives ``to_data``/``event_from``; a seat's view holds its own hand and no other.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shared.core.cards import cards_str, deck
from shared.core.codes import Rejection
from shared.core.commands import (
    Command,
    Context,
    Continue,
    CreateGame,
    RecordScores,
    Sit,
    Start,
    Timeout,
)
from shared.core.decide import decide, round_sheet
from shared.core.events import (
    CommandRejected,
    Event,
    MatchEnded,
    RoundEnded,
    TurnForfeited,
    TurnStarted,
    event_from,
    to_data,
)
from shared.core.evolve import evolve, fold
from shared.core.gameview import SEAT_VIEW_KEYS, VIEW_KEYS
from shared.core.melds import readings
from shared.core.shuffle import commitment
from shared.core.state import GameState
from shared.core.views import seat_view, view_json
from shared.play.bots import Bot

MAX_COMMANDS = 20_000  # a safety net: a game that has not ended by then is reported unfinished


@dataclass
class GameReport:
    """What one self-played game did."""

    events: list[Event]
    state: GameState
    rounds: int = 0
    turns: int = 0
    rejected: int = 0
    refused: int = 0  # commands refused without an event (a bot bug if not zero)
    timeouts: int = 0
    forfeits: int = 0  # turns ended by max_rejections (Decision 14)
    finished: bool = False
    violations: list[str] = field(default_factory=list)


def check_cards(state: GameState) -> str | None:
    """Every card of the deck in exactly one place."""
    if state.phase != "turns":
        return None
    everywhere = sorted(
        [
            *state.stock,
            *state.discard,
            *(c for h in state.hands for c in h),
            *(c for m in state.table for c in m),
        ]
    )
    if everywhere != deck(state.rules.jokers):
        return f"cards not conserved at version {state.version}"
    return None


def check_table(state: GameState) -> str | None:
    """Every meld on the table is valid."""
    for meld in state.table:
        if not readings(meld, state.rules):
            return f"invalid table meld {meld} at version {state.version}"
    return None


def check_views(state: GameState) -> str | None:
    """A seat's view holds exactly its own hand; the spectator's none; no view holds the stock
    order or the seed before the end."""
    if not state.hands:
        return None
    if view_json(state, None).keys() != VIEW_KEYS:
        return "the spectator view has unexpected fields"
    for seat in range(state.seats):
        view = view_json(state, seat)
        if view.keys() != SEAT_VIEW_KEYS:
            return f"seat {seat}'s view has unexpected fields"
        if view["hand"] != cards_str(sorted(state.hands[seat])):
            return f"seat {seat}'s view does not hold its own hand"
        if not isinstance(view["stock"], int):
            return "a view shows more of the stock than its size"
        if view["seed"] is not None and state.status != "finished":
            return "a view shows the seed before the end"
    return None


class SelfPlay:
    """One game between bots, driven the way the services drive it."""

    def __init__(
        self,
        rules: str,
        options: dict[str, Any],
        bots: Sequence[Bot],
        seed: bytes,
        rng: random.Random,
        *,
        timeout_rate: float = 0.0,
        check: bool = True,
        on_event: Callable[[Event], None] | None = None,
    ) -> None:
        self.bots = list(bots)
        self.seed = seed
        self.rng = rng
        self.timeout_rate = timeout_rate
        self.check = check
        self.now = 1_700_000_000.0
        self.state = GameState()
        self.report = GameReport([], self.state)
        self.on_event = on_event
        self.create = CreateGame("sim", rules, options, len(bots), commitment(seed))

    def apply(self, command: Command) -> list[Event] | Rejection:
        """Decide and fold one command, checking invariants after each event."""
        self.now += 1.0
        decision = decide(self.state, command, Context(self.now, self.seed))
        if isinstance(decision, Rejection):
            self.report.refused += 1
            return decision
        for event in decision:
            self.state = evolve(self.state, event)
            self.report.events.append(event)
            if self.on_event:
                self.on_event(event)
            if isinstance(event, CommandRejected):
                self.report.rejected += 1
            elif isinstance(event, TurnStarted):
                self.report.turns += 1
            elif isinstance(event, TurnForfeited):
                self.report.forfeits += 1
            elif isinstance(event, RoundEnded):
                self.report.rounds += 1
            if self.check:
                self._check(event)
        return decision

    def _check(self, event: Event) -> None:
        problems = [check_cards(self.state)]
        if isinstance(event, TurnStarted | RoundEnded):
            problems += [check_table(self.state), check_views(self.state)]
        if event_from(event.TYPE, to_data(event)) != event:
            problems.append(f"{event.TYPE} does not survive its own encoding")
        self.report.violations += [p for p in problems if p]

    def play(self) -> GameReport:
        """Play the whole game (a match of rounds) and return its report."""
        self.apply(self.create)
        for i in range(len(self.bots)):
            self.apply(Sit(f"{self.bots[i].name}-{i}", f"player-seed-{i}"))
        self.apply(Start())
        for _ in range(MAX_COMMANDS):
            state = self.state
            if state.status == "finished":
                self.report.finished = True
                break
            if state.phase == "scoring":
                sheet = round_sheet(state.rules, state.rounds[-1])
                self.apply(
                    RecordScores(
                        state.round, sheet.winner, sheet.went_out, sheet.seats, sheet.scores
                    )
                )
                continue
            if state.phase == "next":
                self.apply(Continue())
                continue
            turn = state.turn
            assert turn is not None
            if turn.deadline is not None and self.rng.random() < self.timeout_rate:
                self.now = turn.deadline
                self.apply(Timeout(turn.number))
                self.report.timeouts += 1
                continue
            view = seat_view(state, turn.seat)
            outcome = self.apply(self.bots[turn.seat].choose(view, self.rng))
            if isinstance(outcome, Rejection):
                self.report.violations.append(f"a bot's command was refused: {outcome}")
                break
        self.report.state = self.state
        if self.check:
            if fold(self.report.events) != self.state:
                self.report.violations.append("the fold of the events differs from the state")
            if not self.report.finished:
                self.report.violations.append("the game did not finish")
        if any(isinstance(e, MatchEnded) for e in self.report.events) != self.report.finished:
            self.report.violations.append("MatchEnded and the finished status disagree")
        return self.report
