"""The replay of one turn (or of the command behind one version), exactly as it was.

``replay(events, turn=N)`` or ``replay(events, version=V)`` gives, as JSON-ready values: the
table, the hands, the stock and the scores just before and just after; every command of the turn
(accepted plays, draws, discards, passes, timeouts and rejected attempts) with its verdict
re-judged by today's rules core in ``rummy judge``'s output shape; and a diff of the table (melds
removed, melds added, which cards moved where).

Turn ``N`` is the number the views show (``TurnStarted.number``, counted from 1 across the
game). Its span runs from its ``TurnStarted`` up to the next ``TurnStarted`` or deal, so the end
of a round, its score sheet and the end of the match are part of the turn that caused them.

``viewer`` decides what is shown while the game is live: ``None`` everything (an operator, or any
finished game), a seat number that seat's own hand only and no stock order, ``"spectator"`` no
hands. Another seat's rejected layout (and the reason, which names its cards) stays hidden until
the game has ended, and so does the id of another seat's command. Once it has ended, everything
is shown to everyone. Who sees what is the events' declared visibility
(``shared.core.visibility``): the snapshots, the commands' events and their card moves read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from shared.core.cards import cards_str, sorted_cards
from shared.core.events import (
    CardDiscarded,
    CardDrawn,
    CommandRejected,
    Event,
    Melds,
    RoundDealt,
    StockReshuffled,
    TurnPlayed,
    TurnStarted,
    event_from,
)
from shared.core.evolve import evolve
from shared.core.judgement import Verdict as Judged
from shared.core.judgement import judge_play
from shared.core.state import GameState
from shared.core.views import event_json, iso_time, standings
from shared.core.visibility import COMMAND_ID, PILE, STOCK, Sight, sees_field
from shared.infra import codec
from shared.infra.stored import StoredEvent

Viewer = int | Literal["spectator"] | None
SPECTATOR: Literal["spectator"] = "spectator"

KINDS = {
    "GameCreated": "create",
    "PlayerSeated": "sit",
    "GameStarted": "start",
    "RoundDealt": "continue",
    "TurnPlayed": "play",
    "CommandRejected": "play",
    "CardDrawn": "draw",
    "StockReshuffled": "draw",
    "CardDiscarded": "discard",
    "TurnPassed": "pass",
    "TurnTimedOut": "timeout",
    "ScoresRecorded": "record_scores",
    "MatchEnded": "continue",
    "SeedRevealed": "continue",
    "TurnStarted": "end",
    "SeatLeft": "leave",
    "SeatResigned": "resign",
    "SeatReturned": "return",
    "GameCancelled": "cancel",
    "RematchOffered": "rematch",
}


class ReplayError(ValueError):
    """The turn or version asked for is not in the log, or the log cannot be replayed to it."""


@dataclass(frozen=True)
class Timeline:
    """A log folded once: ``states[i]`` is the state before ``events[i]`` (and the last one the
    state after the whole log)."""

    game_id: str
    stored: tuple[StoredEvent, ...]
    events: tuple[Event, ...]
    states: tuple[GameState, ...]
    _turns: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    @property
    def final(self) -> GameState:
        return self.states[-1]

    def turn_index(self) -> dict[int, int]:
        """Turn number -> index of its TurnStarted (the first one, should a number repeat)."""
        if not self._turns:
            for i, event in enumerate(self.events):
                if isinstance(event, TurnStarted):
                    self._turns.setdefault(event.number, i)
        return self._turns


def timeline(stored: Sequence[StoredEvent]) -> Timeline:
    """Fold the log, keeping every intermediate state (:class:`ReplayError` where it fails)."""
    if not stored:
        raise ReplayError("the log holds no events")
    events: list[Event] = []
    states = [GameState()]
    for item in stored:
        try:
            current = codec.UPCASTERS.upcast(item)
            event = event_from(current.type, current.data)
            states.append(evolve(states[-1], event))
        except Exception as err:
            raise ReplayError(
                f"the log cannot be replayed past version {item.version} ({item.type}): {err!r}; "
                "run the audit"
            ) from None
        events.append(event)
    return Timeline(stored[0].game_id, tuple(stored), tuple(events), tuple(states))


def command_spans(stored: Sequence[StoredEvent], start: int, end: int) -> list[tuple[int, int]]:
    """Index ranges ``[a, b)`` of the commands within ``stored[start:end]``: consecutive events
    appended together (same command id and time)."""
    spans: list[tuple[int, int]] = []
    index = start
    while index < end:
        first = stored[index]
        stop = index + 1
        while (
            stop < end
            and stored[stop].command_id == first.command_id
            and stored[stop].time == first.time
        ):
            stop += 1
        spans.append((index, stop))
        index = stop
    return spans


def group_of(stored: Sequence[StoredEvent], index: int) -> tuple[int, int]:
    """The ``[a, b)`` range of the command whose events include ``stored[index]``."""
    key = (stored[index].command_id, stored[index].time)
    first = index
    while first > 0 and (stored[first - 1].command_id, stored[first - 1].time) == key:
        first -= 1
    last = index + 1
    while last < len(stored) and (stored[last].command_id, stored[last].time) == key:
        last += 1
    return first, last


# --- what a viewer sees --------------------------------------------------------------------------


def label(sight: Sight) -> str | int:
    """Whom a replay was shown to: ``"all"``, ``"spectator"`` or a seat number."""
    if sight.full:
        return "all"
    return SPECTATOR if sight.seat is None else sight.seat


def _hand(cards: Sequence[int]) -> list[str]:
    return cards_str(sorted_cards(cards))


def snapshot(state: GameState, sight: Sight) -> dict[str, Any]:
    """The table, hands, stock, pile and scores of ``state`` as ``sight`` may see them."""
    turn = state.turn
    shown: dict[str, Any] = {
        "version": state.version,
        "status": state.status,
        "round": state.round,
        "turn": None if turn is None else {"number": turn.number, "seat": turn.seat},
        "table": [cards_str(meld) for meld in state.table],
        "hands": {
            str(seat): _hand(hand) if sight.sees_hand(seat) else None
            for seat, hand in enumerate(state.hands)
        },
        "hand_counts": [len(hand) for hand in state.hands],
        "opened": list(state.opened),
        "stock": len(state.stock),
        "pile": {
            "top": cards_str(state.discard[-1:])[0] if state.discard else None,
            "count": len(state.discard),
        },
        "scores": standings(state),
    }
    if sight.sees(STOCK, None):
        shown["stock_cards"] = cards_str(state.stock)
    if sight.sees(PILE, None):
        shown["pile"]["cards"] = cards_str(state.discard)
    return shown


def rejudge(state: GameState, seat: int, layout: Sequence[Sequence[int]]) -> Judged:
    """Today's rules core on ``seat`` proposing ``layout`` in ``state``."""
    return judge_play(state.rules, state.table, state.hands[seat], state.opened[seat], layout)


def judge_json(verdict: Judged) -> dict[str, Any]:
    """A verdict in ``rummy judge``'s output shape."""
    if not verdict.legal:
        return {"legal": False, "code": verdict.code, "reason": verdict.reason}
    return {
        "legal": True,
        "played": cards_str(sorted_cards(verdict.played)),
        "to_hand": cards_str(sorted_cards(verdict.to_hand)),
        "points": verdict.points,
        "layout": [cards_str(meld) for meld in verdict.layout],
        "opening": verdict.opening,
        "out": verdict.out,
    }


# --- the table diff ------------------------------------------------------------------------------


def table_diff(before: Melds, after: Melds, seat: int | None) -> dict[str, Any]:
    """Melds removed (numbered in the table before), melds added (numbered in the table after)
    and where each card of an added meld came from (a removed meld, or ``seat``'s hand); cards of
    removed melds that are on no added meld went to that hand (a redeemed joker), or off the
    table when no seat played (a new deal)."""
    unmatched_after = list(range(len(after)))
    removed: list[int] = []
    for i, meld in enumerate(before):
        key = sorted(meld)
        match = next((j for j in unmatched_after if sorted(after[j]) == key), None)
        if match is None:
            removed.append(i)
        else:
            unmatched_after.remove(match)
    added = unmatched_after
    pools = {i: list(before[i]) for i in removed}
    hand = "off the table" if seat is None else f"hand of seat {seat}"
    moves: dict[tuple[str, str], list[int]] = {}
    for j in added:
        for card in after[j]:
            source = next((i for i in removed if card in pools[i]), None)
            if source is None:
                origin = "stock" if seat is None else hand
            else:
                pools[source].remove(card)
                origin = f"meld {source + 1}"
            moves.setdefault((origin, f"meld {j + 1}"), []).append(card)
    for i in removed:
        if pools[i]:
            moves.setdefault((f"meld {i + 1}", hand), []).extend(pools[i])
    return {
        "removed": [{"meld": i + 1, "cards": cards_str(before[i])} for i in removed],
        "added": [{"meld": j + 1, "cards": cards_str(after[j])} for j in added],
        "moves": [
            {"cards": cards_str(cards), "from": origin, "to": target}
            for (origin, target), cards in moves.items()
        ],
    }


def _card_moves(event: Event, before: GameState, sight: Sight) -> list[dict[str, Any]]:
    """Cards that changed place by one event (draws, discards, reshuffles, plays)."""
    if isinstance(event, CardDrawn):
        visible = sees_field(sight, event, "cards")
        cards: Any = cards_str(event.cards) if visible else len(event.cards)
        return [{"cards": cards, "from": event.source, "to": f"hand of seat {event.seat}"}]
    if isinstance(event, CardDiscarded):
        laid: Any = cards_str([event.card]) if sees_field(sight, event, "card") else 1
        return [{"cards": laid, "from": f"hand of seat {event.seat}", "to": "pile"}]
    if isinstance(event, StockReshuffled):
        refill = len(event.stock) - len(before.stock)
        visible = sees_field(sight, event, "stock")
        shown: Any = cards_str(event.stock[len(before.stock) :]) if visible else refill
        return [{"cards": shown, "from": "pile", "to": "stock"}]
    if isinstance(event, TurnPlayed):
        return list(table_diff(before.table, event.layout, event.seat)["moves"])
    return []


# --- commands ------------------------------------------------------------------------------------


def _command(line: Timeline, a: int, b: int, sight: Sight) -> dict[str, Any]:
    """One command (events ``a..b-1``): what it was, its events as the viewer may see them, and
    its verdict re-judged by today's rules core."""
    stored = line.stored[a]
    events = line.events[a:b]
    first = events[0]
    kind = KINDS.get(first.TYPE, first.TYPE)
    seat = next((getattr(e, "seat", None) for e in events if hasattr(e, "seat")), None)
    ending = line.states[a].turn
    if isinstance(first, TurnStarted):
        seat = ending.seat if ending is not None else None
    shown_events = []
    moves: list[dict[str, Any]] = []
    for offset, event in enumerate(events):
        index = a + offset
        item = line.stored[index]
        data = event_json(event, sight.seat, sight.full)
        shown_events.append({"version": item.version, **data})
        moves += _card_moves(event, line.states[index], sight)
    entry: dict[str, Any] = {
        "versions": [line.stored[a].version, line.stored[b - 1].version],
        "time": iso_time(stored.time),
        "unix_time": stored.time,
        "command_id": stored.command_id if sight.sees(COMMAND_ID, seat) else None,
        "actor": stored.actor,
        "kind": kind,
        "seat": seat,
        "outcome": "rejected" if isinstance(first, CommandRejected) else "accepted",
        "events": shown_events,
        "moves": moves,
        "verdict": None,
        "recorded": None,
        "agrees": None,
    }
    before = line.states[a]
    if isinstance(first, TurnPlayed):
        verdict = rejudge(before, first.seat, first.layout)
        entry["verdict"] = judge_json(verdict)
        entry["recorded"] = {
            "played": cards_str(sorted_cards(first.played)),
            "to_hand": cards_str(sorted_cards(first.to_hand)),
            "points": first.points,
            "layout": [cards_str(meld) for meld in first.layout],
            "opening": first.opening,
        }
        entry["agrees"] = (
            verdict.legal
            and verdict.layout == first.layout
            and sorted(verdict.played) == sorted(first.played)
            and sorted(verdict.to_hand) == sorted(first.to_hand)
        )
    elif isinstance(first, CommandRejected) and first.layout is not None:
        verdict = rejudge(before, first.seat, first.layout)
        agrees = not verdict.legal and verdict.code == first.detail
        if sees_field(sight, first, "layout"):
            entry["verdict"] = judge_json(verdict)
            entry["layout"] = [cards_str(meld) for meld in first.layout]
            entry["recorded"] = {"code": first.code, "detail": first.detail,
                                 "reason": first.reason}  # fmt: skip
        else:
            entry["verdict"] = {"legal": False, "code": first.detail, "hidden": True}
            entry["recorded"] = {"code": first.code, "detail": first.detail}
        entry["agrees"] = agrees
    return entry


# --- the replay ----------------------------------------------------------------------------------


def _find_turn(line: Timeline, number: int) -> tuple[int, int]:
    """The span ``[start, end)`` of turn ``number``: its TurnStarted up to (not including) the
    next TurnStarted or deal."""
    start = line.turn_index().get(number)
    if start is None:
        last = line.final.turn_number
        raise ReplayError(f"there is no turn {number} in this game (turns 1 to {last})")
    end = start + 1
    while end < len(line.events) and not isinstance(line.events[end], TurnStarted | RoundDealt):
        end += 1
    return start, end


def replay(
    stored: Sequence[StoredEvent],
    *,
    turn: int | None = None,
    version: int | None = None,
    viewer: Viewer = None,
    line: Timeline | None = None,
) -> dict[str, Any]:
    """The replay of turn ``turn`` or of the command behind version ``version`` (exactly one of
    them), as ``viewer`` may see it. Raises :class:`ReplayError` when there is no such turn or
    version, or the log cannot be replayed that far."""
    if (turn is None) == (version is None):
        raise ReplayError("give a turn number or a version, not both")
    if viewer is not None and viewer != SPECTATOR and not isinstance(viewer, int):
        raise ReplayError(f"viewer {viewer!r} is not a seat number, 'spectator' or None")
    line = line or timeline(stored)
    final = line.final
    if isinstance(viewer, int) and not 0 <= viewer < final.seats:
        raise ReplayError(f"seat {viewer} is not a seat of this game")
    seat = viewer if isinstance(viewer, int) else None
    sight = Sight(seat, viewer is None or final.status == "finished")
    if turn is not None:
        start, end = _find_turn(line, turn)
        started = line.events[start]
        assert isinstance(started, TurnStarted)
        spans = command_spans(line.stored, start + 1, end)
        # A turn ended by "end" (place, draw, place): the next TurnStarted alone in its append.
        if end < len(line.events) and isinstance(line.events[end], TurnStarted):
            a, b = group_of(line.stored, end)
            if (a, b) == (end, end + 1):
                spans.append((end, end + 1))
        before_index = start + 1
        focus: dict[str, Any] = {
            "turn": started.number,
            "seat": started.seat,
            "round": line.states[start].round,
            "deadline": iso_time(started.deadline),
        }
        first_version = line.stored[start].version
        last_index = max(end, spans[-1][1]) - 1 if spans else start
        after_index = last_index + 1
    else:
        assert version is not None
        index = next((i for i, e in enumerate(line.stored) if e.version == version), None)
        if index is None:
            raise ReplayError(
                f"there is no version {version} in this game (versions 1 to "
                f"{line.stored[-1].version})"
            )
        a, b = group_of(line.stored, index)
        spans = [(a, b)]
        before_index, after_index = a, b
        state = line.states[a]
        current = state.turn
        focus = {
            "turn": current.number if current is not None else None,
            "seat": current.seat if current is not None else None,
            "round": state.round,
            "deadline": iso_time(current.deadline) if current is not None else None,
        }
        first_version = line.stored[a].version
        last_index = b - 1
    before = line.states[before_index]
    after = line.states[after_index]
    commands = [_command(line, a, b, sight) for a, b in spans]
    played = any(isinstance(line.events[i], TurnPlayed) for a, b in spans for i in range(a, b))
    diff = table_diff(before.table, after.table, focus["seat"] if played else None)
    # The table's moves over the whole span, then the cards that moved off the table.
    for a, b in spans:
        for i in range(a, b):
            if not isinstance(line.events[i], TurnPlayed):
                diff["moves"] += _card_moves(line.events[i], line.states[i], sight)
    return {
        "game_id": line.game_id,
        "rules": {"name": final.rules.name, "options": final.rules.options()},
        "players": list(final.names),
        "status": final.status,
        "viewer": label(sight),
        **focus,
        "versions": [first_version, line.stored[last_index].version],
        "before": snapshot(before, sight),
        "after": snapshot(after, sight),
        "commands": commands,
        "diff": diff,
    }
