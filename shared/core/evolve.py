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
    GameCancelled,
    GameCreated,
    GameStarted,
    MatchEnded,
    Melds,
    PlayerSeated,
    RematchOffered,
    RoundDealt,
    RoundEnded,
    ScoresRecorded,
    SeatHandedToBot,
    SeatLeft,
    SeatResigned,
    SeatReturned,
    SeatSkipped,
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


def _put(items: tuple[Any, ...], index: int, value: Any, empty: Any) -> tuple[Any, ...]:
    """``items`` with ``value`` at ``index``, past the end too (a new last seat, or a rematch's
    reserved seat taken before those ahead of it, which stay ``empty``)."""
    if index >= len(items):
        return (*items, *(empty,) * (index - len(items)), value)
    return _set(items, index, value)


def _present(s: GameState, seat: int) -> Changes:
    """A move by the seat itself, not the referee's ending of its turn, shows its player is
    there: the count of turns it missed in a row starts again (Decision 17)."""
    if not s.missed or not s.missed[seat] or (s.turn is not None and s.turn.ending):
        return {}
    return {"missed": _set(s.missed, seat, 0)}


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
        bots=(None,) * e.seats,
        away=(None,) * e.seats,
        resigned=(0,) * e.seats,
        missed=(0,) * e.seats,
        rematch_of=e.rematch_of,
        tournament=e.tournament,
    )


def _seated(s: GameState, e: PlayerSeated) -> Changes:
    return dict(
        names=_put(s.names, e.seat, e.name, ""),
        seeds=_put(s.seeds, e.seat, e.seed, ""),
        bots=_set(s.bots, e.seat, e.bot),
    )


def _left(s: GameState, e: SeatLeft) -> Changes:
    return dict(
        names=_set(s.names, e.seat, ""),
        seeds=_set(s.seeds, e.seat, ""),
        bots=_set(s.bots, e.seat, None),
    )


def _resigned(s: GameState, e: SeatResigned) -> Changes:
    return dict(
        resigned=_set(s.resigned, e.seat, max(1, s.round)),
        bots=_set(s.bots, e.seat, None),
        away=_set(s.away, e.seat, None),
    )


def _handed(s: GameState, e: SeatHandedToBot) -> Changes:
    return dict(bots=_set(s.bots, e.seat, e.bot), away=_set(s.away, e.seat, "bot"))


def _skipped(s: GameState, e: SeatSkipped) -> Changes:
    return {"away": _set(s.away, e.seat, "skip")}


def _returned(s: GameState, e: SeatReturned) -> Changes:
    return dict(
        bots=_set(s.bots, e.seat, None),
        away=_set(s.away, e.seat, None),
        missed=_set(s.missed, e.seat, 0),
    )


def _cancelled(s: GameState, e: GameCancelled) -> Changes:
    return dict(status="cancelled", phase="none", turn=None, cancelled=e.reason)


def _rematch(s: GameState, e: RematchOffered) -> Changes:
    return {"rematch": e.game_id}


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
        _present(s, e.seat),
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
    present = _present(s, e.seat)
    if e.source == "pile":
        discard = s.discard[: len(s.discard) - len(e.cards)]
        turn = replace(turn, drawn=True, taken=e.cards[-1]) if turn else None
        return dict(present, hands=_set(s.hands, e.seat, hand), discard=discard, turn=turn)
    turn = replace(turn, drawn=True) if turn else None
    stock = s.stock[len(e.cards) :]
    return dict(present, hands=_set(s.hands, e.seat, hand), stock=stock, turn=turn)


def _discarded(s: GameState, e: CardDiscarded) -> Changes:
    hand = _without(s.hands[e.seat], (e.card,))
    return dict(
        _present(s, e.seat), hands=_set(s.hands, e.seat, hand), discard=(*s.discard, e.card)
    )


def _reshuffled(s: GameState, e: StockReshuffled) -> Changes:
    return dict(stock=e.stock, discard=s.discard[-1:], reshuffles=s.reshuffles + 1)


def _rejected(s: GameState, e: CommandRejected) -> Changes:
    turn = s.turn
    if turn is not None and turn.seat == e.seat and e.code == "illegal_layout":
        turn = replace(turn, rejected=turn.rejected + 1)
    return dict(_present(s, e.seat), turn=turn, rejected=s.rejected + 1)


def _passed(s: GameState, e: TurnPassed) -> Changes:
    return dict(_present(s, e.seat), passes=s.passes + 1)


def _timed_out(s: GameState, e: TurnTimedOut) -> Changes:
    turn = replace(s.turn, ending=True) if s.turn else None
    if not s.missed:
        return {"turn": turn}
    return dict(turn=turn, missed=_set(s.missed, e.seat, s.missed[e.seat] + 1))


def _forfeited(s: GameState, e: TurnForfeited) -> Changes:
    # The events that follow it (a draw, a pass, a discard, the next turn) say it all; they are
    # the referee's, not the seat's.
    return {"turn": replace(s.turn, ending=True) if s.turn else None}


def _round_ended(s: GameState, e: RoundEnded) -> Changes:
    result = RoundResult(
        e.round, e.reason, e.out, e.seats, e.hands, e.redeemed, e.last_player, e.resigned
    )
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
    SeatLeft: _left,
    SeatResigned: _resigned,
    SeatHandedToBot: _handed,
    SeatSkipped: _skipped,
    SeatReturned: _returned,
    GameCancelled: _cancelled,
    RematchOffered: _rematch,
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
