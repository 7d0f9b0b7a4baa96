"""What each viewer may see: a seat sees its own hand and everyone's counts; a spectator sees the
table and the counts. Nobody sees another seat's hand, the stock order, the seed, or another
seat's rejected layout while the game is live; once it is finished, everything is public.

Who sees what is declared once, with the events and in ``visibility``; these views only shape
what that rule lets through. ``seat_view`` is the typed view bots play from (so a bot cannot
cheat); ``view_json`` is the API's view; ``event_json`` is one event as one viewer sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NotRequired, TypedDict, cast

from shared.core.cards import cards_str, parse_card, parse_cards, sorted_cards
from shared.core.events import Event, Melds, RoundDealt, RoundEnded
from shared.core.gameview import (
    CancelReason,
    GameView,
    LastRoundView,
    RoundEndReason,
    TurnView,
    ViewStatus,
)
from shared.core.rulesets import RuleSet
from shared.core.state import GameState
from shared.core.visibility import ROUND_HANDS, TURN, Sight, mask_fields, masked


@dataclass(frozen=True, slots=True)
class SeatView:
    """Everything one seat knows on its turn, and nothing more."""

    seat: int
    rules: RuleSet
    hand: tuple[int, ...]
    table: Melds
    opened: bool
    hand_counts: tuple[int, ...]
    stock: int
    discard_top: int | None
    discard_count: int
    reshuffles: int  # times the pile became the stock this round
    drawn: bool  # this turn
    placed: bool  # this turn
    rejected: int  # this turn
    taken: int | None  # the card taken from the pile this turn
    my_turn: bool


def seat_view(state: GameState, seat: int) -> SeatView:
    """The typed view of ``seat`` (bots decide from this alone)."""
    turn = state.turn
    mine = turn is not None and turn.seat == seat
    return SeatView(
        seat=seat,
        rules=state.rules,
        hand=state.hands[seat] if state.hands else (),
        table=state.table,
        opened=bool(state.opened) and state.opened[seat],
        hand_counts=tuple(len(h) for h in state.hands),
        stock=len(state.stock),
        discard_top=state.discard[-1] if state.discard else None,
        discard_count=len(state.discard),
        reshuffles=state.reshuffles,
        drawn=mine and turn is not None and turn.drawn,
        placed=mine and turn is not None and turn.placed,
        rejected=turn.rejected if mine and turn is not None else 0,
        taken=turn.taken if mine and turn is not None else None,
        my_turn=mine,
    )


def iso_time(seconds: float | None) -> str | None:
    """Unix seconds as an ISO-8601 UTC time, or None."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def standings(state: GameState) -> list[int | None]:
    """Each seat's cumulative score over the recorded rounds (None where nothing is scored)."""
    if state.rules.scoring == "none":
        return [None] * state.seats
    totals = [0] * state.seats
    for result in state.rounds:
        if result.recorded and result.scores is not None:
            for seat, score in zip(result.seats, result.scores, strict=True):
                totals[seat] += score
    return list(totals)


def _last_round(state: GameState) -> LastRoundView | None:
    if not state.rounds:
        return None
    last = state.rounds[-1]
    finished = state.status == "finished"
    shown: LastRoundView = {
        "round": last.round,
        "reason": cast(RoundEndReason, last.reason),
        "out": last.out,
        "winner": last.winner,
        "went_out": last.went_out,
        "recorded": last.recorded,
        "scores": (
            {str(s): v for s, v in zip(last.seats, last.scores, strict=True)}
            if last.scores is not None
            else None
        ),
        "hand_counts": {str(s): len(last.hands[s]) for s in last.seats},
    }
    if Sight(None, finished).sees(ROUND_HANDS, None):
        shown["hands"] = {str(s): cards_str(sorted_cards(last.hands[s])) for s in last.seats}
    return shown


def _turn(state: GameState, viewer: int | None) -> TurnView | None:
    """The turn in progress as ``viewer`` may see it (``visibility.TURN``, key by key)."""
    turn = state.turn
    if turn is None:
        return None
    taken = cards_str([turn.taken])[0] if turn.taken is not None else None
    fields: TurnView = {
        "seat": turn.seat,
        "number": turn.number,
        "deadline": iso_time(turn.deadline),
        "drawn": turn.drawn,
        "placed": turn.placed,
        "rejected": turn.rejected,
        # Decision 14: how many more rejected layouts leave the turn open (0: the next
        # rejected layout ends it)
        "rejections_left": max(0, state.rules.max_rejections - turn.rejected),
        "taken": taken,
    }
    return cast(TurnView, mask_fields(fields, TURN, Sight(viewer), turn.seat))


class _OwnHand(TypedDict):
    """A seat's own hand, in its view only."""

    hand: NotRequired[list[str]]


def view_json(state: GameState, viewer: int | None, *, own_keys: bool = True) -> GameView:
    """The API view for a seat (``viewer`` its number) or a spectator (``None``), of the shape
    ``gameview.GameView`` declares (its keys in that order). ``own_keys=False``: the keys that
    differ by viewer (``SEAT_KEYS``) stand in their places unfilled (None), for a public part
    that each viewer's ``seat_part`` completes."""
    totals = standings(state)
    status: ViewStatus = "waiting" if state.status == "new" else state.status
    own: _OwnHand = {}
    if viewer is not None:
        own["hand"] = cards_str(sorted_cards(state.hands[viewer])) if state.hands else []
    return {
        "game_id": state.game_id,
        "version": state.version,
        "status": status,
        "rules": {"name": state.rules.name, "options": state.rules.options()},
        "round": state.round,
        "turn": _turn(state, viewer) if own_keys else None,
        "you": viewer,
        **own,
        "table": [cards_str(m) for m in state.table],
        "seats": [
            {
                "seat": seat,
                "name": (state.names[seat] or None) if seat < len(state.names) else None,
                "hand_count": len(state.hands[seat]) if state.hands else 0,
                "opened": bool(state.opened) and state.opened[seat],
                "score": totals[seat],
                "bot": state.bot_at(seat),
                "away": state.away[seat] if seat < len(state.away) else None,
                "resigned": state.is_resigned(seat),
                "missed": state.missed[seat] if seat < len(state.missed) else 0,
            }
            for seat in range(state.seats)
        ],
        "stock": len(state.stock),
        "discard": cards_str(state.discard[-1:])[0] if state.discard else None,
        "discard_count": len(state.discard),
        "reshuffles": state.reshuffles,
        "last_round": _last_round(state),
        "winner": list(state.winners) if state.status == "finished" else None,
        "seed": state.revealed_seed,
        "cancelled": cast(CancelReason, state.cancelled) if state.cancelled else None,
        "rematch": state.rematch or None,
        "rematch_of": state.rematch_of or None,
    }


SEAT_KEYS = ("turn", "you", "hand")
"""The keys of a view that differ by viewer; every other key is the same for every viewer."""


def seat_part(state: GameState, viewer: int | None) -> dict[str, Any]:
    """What of ``view_json(state, viewer)`` is the viewer's own: the turn as it may see it, who
    it is, and (a seat only) its hand. With the public rest (``view_json(state, None)`` without
    these keys) it makes the viewer's view, so the public part is built once per change."""
    own: dict[str, Any] = {"turn": _turn(state, viewer), "you": viewer}
    if viewer is not None:
        own["hand"] = cards_str(sorted_cards(state.hands[viewer])) if state.hands else []
    return own


def seat_view_from_json(view: dict[str, Any], rules: RuleSet) -> SeatView:
    """The typed seat view back from the API's JSON view (how bots play over the API)."""
    seat = view["you"]
    turn = view.get("turn") or {}
    mine = turn.get("seat") == seat
    return SeatView(
        seat=seat,
        rules=rules,
        hand=tuple(parse_cards(view["hand"])),
        table=tuple(tuple(parse_cards(m)) for m in view["table"]),
        opened=bool(view["seats"][seat]["opened"]),
        hand_counts=tuple(s["hand_count"] for s in view["seats"]),
        stock=view["stock"],
        discard_top=parse_card(view["discard"]) if view.get("discard") else None,
        discard_count=view.get("discard_count", 0),
        reshuffles=view.get("reshuffles", 0),
        drawn=mine and bool(turn.get("drawn")),
        placed=mine and bool(turn.get("placed")),
        rejected=int(turn.get("rejected", 0)) if mine else 0,
        taken=parse_card(turn["taken"]) if mine and turn.get("taken") else None,
        my_turn=mine,
    )


def _cards_json(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_cards_json(v) for v in value]
    return value


CARD_FIELDS = {"layout", "played", "to_hand", "hands", "stock", "discard", "cards"}


def event_json(event: Event, viewer: int | None, finished: bool) -> dict[str, Any]:
    """One event as ``viewer`` (a seat, or None for a spectator) may see it, by the events'
    declared visibility (``finished``: the game is over, nothing is secret), cards in notation.

    What a viewer may not see becomes its mask: a deal shows only the viewer's own hand and the
    stock's size, a draw by someone else only how many cards, a rejected attempt by someone else
    only its code.
    """
    data = {
        name: _cards_json(value) for name, value in masked(event, Sight(viewer, finished)).items()
    }
    for name in CARD_FIELDS & data.keys():
        data[name] = _cards_str_deep(data[name])
    if "card" in data and isinstance(data["card"], int):
        data["card"] = cards_str([data["card"]])[0]
    shown: dict[str, Any] = {"type": event.TYPE, **data}
    if isinstance(event, RoundDealt | RoundEnded):
        shown["hand_counts"] = [len(h) for h in event.hands]
    return shown


def _cards_str_deep(value: Any) -> Any:
    if isinstance(value, list):
        if all(isinstance(v, int) for v in value):
            return cards_str(value)
        return [_cards_str_deep(v) for v in value]
    return value
