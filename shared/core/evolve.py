"""``evolve(state, event) -> state``: the fold that makes a game out of its events.

Evolve never judges: every event is a fact ``decide`` already checked, so applying one is plain
bookkeeping and cheap (a rebuild of a whole game takes milliseconds). Replaying the same events
always yields the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from shared.core.cards import JOKER
from shared.core.events import (
    CardDiscarded,
    CardDrawn,
    Cards,
    CommandRejected,
    Event,
    GameCreated,
    GameStarted,
    MatchEnded,
    Melds,
    PlayerSeated,
    RoundDealt,
    RoundEnded,
    ScoresRecorded,
    SeedRevealed,
    StarterChosen,
    StockReshuffled,
    TurnForfeited,
    TurnPassed,
    TurnPlayed,
    TurnStarted,
    TurnTimedOut,
)
from shared.core.rulesets import rule_set
from shared.core.state import GameState, RoundResult, Turn

Changes = dict[str, Any]


def _set(items: tuple[Any, ...], index: int, value: Any) -> tuple[Any, ...]:
    return (*items[:index], value, *items[index + 1 :])


def _without(hand: Cards, cards: Iterable[int]) -> Cards:
    left = list(hand)
    for card in cards:
        left.remove(card)
    return tuple(left)


def _created(s: GameState, e: GameCreated) -> Changes:
    return dict(
        game_id=e.game_id,
        rules=rule_set(e.rules, e.options),
        seats=e.seats,
        commitment=e.commitment,
        status="waiting",
    )


def _seated(s: GameState, e: PlayerSeated) -> Changes:
    return dict(names=(*s.names, e.name), seeds=(*s.seeds, e.seed))


def _started(s: GameState, e: GameStarted) -> Changes:
    return {"status": "playing"}


def _starter(s: GameState, e: StarterChosen) -> Changes:
    return dict(first_dealer=e.dealer, first_starter=e.starter)


def _dealt(s: GameState, e: RoundDealt) -> Changes:
    opened = s.rules.opening_points == 0
    return dict(
        phase="turns",
        round=e.round,
        round_seats=e.seats,
        dealer=e.dealer,
        starter=e.starter,
        hands=e.hands,
        stock=e.stock,
        discard=e.discard,
        table=(),
        opened=(opened,) * s.seats,
        turn=None,
        passes=0,
        reshuffles=0,
        last_player=None,
        redeemed=(0,) * s.seats,
    )


def _turn(s: GameState, e: TurnStarted) -> Changes:
    return dict(turn=Turn(e.seat, e.number, e.deadline), turn_number=e.number)


def _played(s: GameState, e: TurnPlayed) -> Changes:
    hand = (*_without(s.hands[e.seat], e.played), *e.to_hand)
    turn = replace(s.turn, placed=True) if s.turn else None
    return dict(
        table=e.layout,
        hands=_set(s.hands, e.seat, hand),
        opened=_set(s.opened, e.seat, True),
        turn=turn,
        passes=0,
        last_player=e.seat,
        redeemed=_set(s.redeemed, e.seat, s.redeemed[e.seat] + e.redeemed),
    )


def _drawn(s: GameState, e: CardDrawn) -> Changes:
    hand = s.hands[e.seat] + e.cards
    turn = s.turn
    if e.source == "pile":
        discard = s.discard[: len(s.discard) - len(e.cards)]
        turn = replace(turn, drawn=True, taken=e.cards[-1]) if turn else None
        return dict(hands=_set(s.hands, e.seat, hand), discard=discard, turn=turn)
    turn = replace(turn, drawn=True) if turn else None
    stock = s.stock[len(e.cards) :]
    return dict(hands=_set(s.hands, e.seat, hand), stock=stock, turn=turn)


def _discarded(s: GameState, e: CardDiscarded) -> Changes:
    hand = _without(s.hands[e.seat], (e.card,))
    return dict(hands=_set(s.hands, e.seat, hand), discard=(*s.discard, e.card))


def _reshuffled(s: GameState, e: StockReshuffled) -> Changes:
    return dict(stock=e.stock, discard=s.discard[-1:], reshuffles=s.reshuffles + 1)


def _rejected(s: GameState, e: CommandRejected) -> Changes:
    turn = s.turn
    if turn is not None and turn.seat == e.seat and e.code == "illegal_layout":
        turn = replace(turn, rejected=turn.rejected + 1)
    return dict(turn=turn, rejected=s.rejected + 1)


def _passed(s: GameState, e: TurnPassed) -> Changes:
    return dict(passes=s.passes + 1)


def _timed_out(s: GameState, e: TurnTimedOut) -> Changes:
    return {}


def _forfeited(s: GameState, e: TurnForfeited) -> Changes:
    return {}  # the events that follow it (a draw, a pass, a discard, the next turn) say it all


def _round_ended(s: GameState, e: RoundEnded) -> Changes:
    result = RoundResult(e.round, e.reason, e.out, e.seats, e.hands, e.redeemed, e.last_player)
    return dict(phase="scoring", turn=None, rounds=(*s.rounds, result))


def _scored(s: GameState, e: ScoresRecorded) -> Changes:
    last = replace(
        s.rounds[-1], recorded=True, winner=e.winner, went_out=e.went_out, scores=e.scores
    )
    return dict(phase="next", rounds=(*s.rounds[:-1], last))


def _match_ended(s: GameState, e: MatchEnded) -> Changes:
    return dict(status="finished", phase="none", winners=e.winners)


def _revealed(s: GameState, e: SeedRevealed) -> Changes:
    return dict(revealed_seed=e.seed)


_HANDLERS: dict[type[Event], Callable[[GameState, Any], Changes]] = {
    GameCreated: _created,
    PlayerSeated: _seated,
    GameStarted: _started,
    StarterChosen: _starter,
    RoundDealt: _dealt,
    TurnStarted: _turn,
    TurnPlayed: _played,
    CardDrawn: _drawn,
    CardDiscarded: _discarded,
    StockReshuffled: _reshuffled,
    CommandRejected: _rejected,
    TurnPassed: _passed,
    TurnTimedOut: _timed_out,
    TurnForfeited: _forfeited,
    RoundEnded: _round_ended,
    ScoresRecorded: _scored,
    MatchEnded: _match_ended,
    SeedRevealed: _revealed,
}


def evolve(state: GameState, event: Event) -> GameState:
    """The state after ``event``; ``version`` counts the events applied.

    Handlers return only the fields that change; the new state is one copy of the old one's
    fields with those applied (a frozen dataclass copied through its ``__dict__``, several times
    cheaper than ``dataclasses.replace`` on thirty fields, which matters to rebuild speed).
    """
    changes = _HANDLERS[type(event)](state, event)
    after = object.__new__(GameState)
    fields = after.__dict__
    fields.update(state.__dict__)
    fields.update(changes)
    fields["version"] = state.version + 1
    return after


def fold(events: Iterable[Event], state: GameState | None = None) -> GameState:
    """The state after all ``events`` (from a fresh game unless ``state`` is given)."""
    current = state if state is not None else GameState()
    for event in events:
        current = evolve(current, event)
    return current


def table_cards(table: Melds) -> int:
    """How many cards lie on the table."""
    return sum(len(m) for m in table)


def jokers_in(cards: Cards) -> int:
    """How many jokers a hand holds."""
    return cards.count(JOKER)
