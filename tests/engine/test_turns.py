"""Scripted turns on hand-built positions: the shape of a turn in every preset, rejected layouts
and the failed-turn draw (Decision 5), passing and stalling with an empty stock (Decision 7),
going out, turn timers (Decision 6), the discard-pile variant (Decision 10), drawn cards that wait
for the next turn (Decision 13) and joker redemption (Decisions 4 and 9)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.core.cards import JOKER
from shared.core.commands import Discard, Draw, End, Pass, Play, Timeout
from shared.core.events import (
    CardDiscarded,
    CardDrawn,
    CommandRejected,
    Event,
    RoundEnded,
    StockReshuffled,
    TurnPassed,
    TurnPlayed,
    TurnStarted,
    TurnTimedOut,
)
from shared.core.shuffle import shuffle_key

from .helpers import SEED, T0, Game, cards, hand_text, melds, start_game, table_text
from .test_setup import rr_key, rr_shuffle

FILLER = "2C 3C 9S"  # a hand that plays nothing


def position(
    rules: str,
    options: dict[str, Any] | None = None,
    seats: int = 2,
    *,
    now: float = T0,
    **setup: Any,
) -> Game:
    """A started game with the position replaced (see ``Game.setup``); by default everybody has
    opened and it is seat 0's turn."""
    game = start_game(rules, options, seats, now=now)
    setup.setdefault("opened", [True] * seats)
    game.setup(**setup)
    return game


def types(events: list[Event]) -> list[str]:
    """The event types, for comparing shapes."""
    return [e.TYPE for e in events]


# --- whose turn --------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", ["robbers", "robbers-classic", "rummikub"])
def test_not_your_turn(rules: str) -> None:
    """Every seat command from a seat whose turn it is not is refused without an event."""
    game = position(rules, hands=["5H 6H 7H", FILLER], stock="4D 5D")
    for command in (
        Play(1, melds("2C 3C 4C")),
        Draw(1),
        End(1),
        Pass(1),
        Discard(1, cards("2C")[0]),
    ):
        game.refuse(command, "not_your_turn")


# --- robbers: a play or a draw ends the turn ---------------------------------------------------


def test_robbers_play_ends_the_turn() -> None:
    """In robbers a legal play is recorded with the new table, the cards played and their points,
    and the next seat's turn starts at once."""
    game = position("robbers", hands=["5H 6H 7H 9C KS", FILLER], stock="4D 5D")
    events = game.do(Play(0, melds("7H 5H 6H")))
    assert events == [
        TurnPlayed(0, melds("5H 6H 7H"), cards("5H 6H 7H"), (), 18, False, 0),
        TurnStarted(1, 2, None),
    ]
    assert hand_text(game.state.hands[0]) == ["KS", "9C"]
    assert table_text(game.state.table) == [["5H", "6H", "7H"]]
    game.refuse(Draw(0), "not_your_turn")


def test_robbers_opening_needs_40_points_from_the_hand() -> None:
    """An opening below 40 is an illegal layout (``opening_too_low``); one of 40 or more opens
    the seat and is marked as the opening."""
    game = position(
        "robbers", hands=["JH QH KH 10S 10H 10D 2C", FILLER], stock="4D 5D", opened=[False] * 2
    )
    [rejected] = game.do(Play(0, melds("JH QH KH")))
    assert isinstance(rejected, CommandRejected) and rejected.detail == "opening_too_low"
    played, _ = game.do(Play(0, melds("JH QH KH", "10S 10H 10D")))
    assert isinstance(played, TurnPlayed)
    assert played.opening and played.points == 60
    assert game.state.opened == (True, False)


def test_robbers_draw_ends_the_turn() -> None:
    """A draw takes the top card of the stock and ends the turn."""
    game = position("robbers", hands=["5H 6H", FILLER], stock="4D 5D 6D")
    assert game.do(Draw(0)) == [
        CardDrawn(0, cards("4D"), "stock", False),
        TurnStarted(1, 2, None),
    ]
    assert hand_text(game.state.hands[0]) == ["5H", "6H", "4D"]
    assert game.state.stock == cards("5D 6D")


# --- rejected layouts and the failed-turn draw (Decision 5) --------------------------------------


@pytest.mark.parametrize(
    ("rules", "table", "hand", "layout", "detail"),
    [
        ("robbers", [], "5H 6H 8H", ["5H 6H 8H"], "invalid_meld"),
        ("robbers", [], "5H 6H 8H", ["5H 6H"], "meld_too_small"),
        ("robbers", ["5S 6S 7S"], "8H", ["5S 6S", "7S 8H"], "meld_too_small"),
        ("robbers", ["5S 6S 7S"], "9H", ["5S 6S 9H"], "table_card_missing"),
        ("robbers", ["5S 6S 7S"], "9H", ["5S 6S 7S"], "no_card_played"),
        ("robbers", [], "5H 6H", ["5H 6H 7H"], "card_not_in_hand"),
        ("robbers", ["6D 7D 8D JK"], "QS QH QD", ["6D 7D 8D", "QS QH QD"], "joker_not_redeemed"),
        ("rummikub", ["6D JK 8D"], "7D", ["6D 7D 8D"], "joker_left_table"),
        ("robbers-classic", ["6D JK 8D"], "7D", ["6D 7D 8D"], "joker_left_table"),
    ],
)
def test_illegal_layout_is_recorded_and_the_turn_stays_open(
    rules: str, table: list[str], hand: str, layout: list[str], detail: str
) -> None:
    """An illegal layout is refused *and* recorded: one ``CommandRejected`` with code
    ``illegal_layout``, the rules core's detail code, the reason and the layout; the table and
    the hands are unchanged and it is still the same seat's turn (Decision 5)."""
    game = position(rules, hands=[hand, FILLER], table=table, stock="4D 5D")
    before = game.state
    events = game.do(Play(0, melds(*layout)))
    [event] = events
    assert isinstance(event, CommandRejected)
    assert (event.seat, event.command, event.code, event.detail) == (
        0,
        "play",
        "illegal_layout",
        detail,
    )
    assert event.reason and event.layout == melds(*layout)
    after = game.state
    assert after.table == before.table and after.hands == before.hands
    assert after.stock == before.stock
    assert after.turn is not None and after.turn.seat == 0 and after.turn.rejected == 1
    assert after.rejected == before.rejected + 1


@pytest.mark.parametrize(
    ("rules", "options", "count"),
    [
        ("robbers", {}, 1),
        ("robbers", {"failed_turn_draw": 3}, 3),
        ("rummikub", {}, 3),
        ("robbers-classic", {}, 1),
        ("robbers-classic", {"failed_turn_draw": 2}, 2),
    ],
)
def test_draw_after_a_rejected_play_is_the_failed_turn_draw(
    rules: str, options: dict[str, Any], count: int
) -> None:
    """Decision 5: a turn with a rejected layout that ends by drawing draws the rule set's
    failed-manipulation count (robbers 1, strict option 3, rummikub 3), marked as a penalty."""
    game = position(rules, options, hands=["5H 6H 8H", FILLER], stock="4D 5D 6D 7D 8D")
    game.do(Play(0, melds("5H 6H 8H")))
    events = game.do(Draw(0))
    assert events[0] == CardDrawn(0, cards("4D 5D 6D 7D")[:count], "stock", True)
    assert len(game.state.hands[0]) == 3 + count
    assert len(game.state.stock) == 5 - count


@pytest.mark.parametrize(
    ("rules", "options"),
    [("robbers", {}), ("robbers", {"failed_turn_draw": 3}), ("rummikub", {})],
)
def test_draw_without_a_rejection_is_one_card(rules: str, options: dict[str, Any]) -> None:
    """Without a rejected layout a draw is one card, not a penalty; refusals that are not an
    illegal layout (another seat's attempt, a draw out of turn) do not count as one."""
    game = position(rules, options, hands=["5H 6H 8H", "2C 3C 4C"], stock="4D 5D 6D 7D")
    game.refuse(Play(1, melds("2C 3C 4C")), "not_your_turn")
    game.refuse(End(0), "not_in_these_rules")
    events = game.do(Draw(0))
    assert events[0] == CardDrawn(0, cards("4D"), "stock", False)


def test_a_legal_play_after_a_rejection_is_an_ordinary_play() -> None:
    """After a rejected layout the seat may still submit a legal one, which ends the turn as
    usual; the next turn starts with a clean slate."""
    game = position("robbers", hands=["5H 6H 7H 8H", FILLER], stock="4D 5D")
    game.do(Play(0, melds("5H 6H 8H")))
    game.do(Play(0, melds("5H 7H 8H")))
    assert game.state.turn is not None and game.state.turn.rejected == 2
    events = game.do(Play(0, melds("5H 6H 7H")))
    assert types(events) == ["TurnPlayed", "TurnStarted"]
    assert game.state.turn is not None and game.state.turn.rejected == 0


# --- rummikub: the draw ends the turn (Decision 13) ---------------------------------------------


def test_rummikub_drawn_tile_waits_for_the_next_turn() -> None:
    """Decision 13: in rummikub the draw ends the turn, so the drawn tile cannot be played in the
    same turn; it can on the seat's next turn."""
    game = position("rummikub", hands=["5H 6H", FILLER], stock="7H 4D 5D")
    assert game.do(Draw(0)) == [
        CardDrawn(0, cards("7H"), "stock", False),
        TurnStarted(1, 2, 1_700_000_060.0),
    ]
    game.refuse(Play(0, melds("5H 6H 7H")), "not_your_turn")
    game.do(Draw(1))
    events = game.do(Play(0, melds("5H 6H 7H")))
    assert types(events) == ["TurnPlayed", "RoundEnded"]


# --- robbers-classic: place, draw, place, end ----------------------------------------------------


def test_classic_place_draw_place_end() -> None:
    """robbers-classic: placing does not end the turn, the seat may then draw one card and play
    it at once (Decision 13), place again, and ``end`` passes the turn on."""
    game = position("robbers-classic", hands=["5H 6H 7H 9S 10S 2D", FILLER], stock="JS 4D 5D")
    assert types(game.do(Play(0, melds("5H 6H 7H")))) == ["TurnPlayed"]
    assert game.do(Draw(0)) == [CardDrawn(0, cards("JS"), "stock", False)]
    game.refuse(Draw(0), "already_drawn")
    assert types(game.do(Play(0, melds("5H 6H 7H", "9S 10S JS")))) == ["TurnPlayed"]
    assert hand_text(game.state.hands[0]) == ["2D"]
    assert game.do(End(0)) == [TurnStarted(1, 2, None)]


def test_classic_draw_then_end() -> None:
    """robbers-classic: a seat that places nothing draws and ends; ``end`` with neither a
    placement nor a draw is refused (``must_draw_or_place``)."""
    game = position("robbers-classic", hands=["5H 6H", FILLER], stock="4D 5D")
    game.refuse(End(0), "must_draw_or_place")
    assert game.do(Draw(0)) == [CardDrawn(0, cards("4D"), "stock", False)]
    assert game.state.turn is not None and game.state.turn.seat == 0
    assert game.do(End(0)) == [TurnStarted(1, 2, None)]


def test_classic_place_then_end_without_drawing() -> None:
    """robbers-classic: whoever placed may stop without drawing."""
    game = position("robbers-classic", hands=["5H 6H 7H 2D", FILLER], stock="4D 5D")
    game.do(Play(0, melds("5H 6H 7H")))
    assert game.do(End(0)) == [TurnStarted(1, 2, None)]
    assert game.state.stock == cards("4D 5D")


@pytest.mark.parametrize("rules", ["robbers", "rummikub"])
def test_end_does_not_exist_where_a_play_ends_the_turn(rules: str) -> None:
    """``end`` is not a move of robbers or rummikub."""
    game = position(rules, hands=["5H 6H", FILLER], stock="4D 5D")
    game.refuse(End(0), "not_in_these_rules")


def test_classic_wrap_around_run() -> None:
    """robbers-classic plays wrap-around runs (``ace: wrap``), robbers does not."""
    game = position("robbers-classic", hands=["QH KH AH 2H 5C", FILLER], stock="4D")
    assert types(game.do(Play(0, melds("QH KH AH 2H")))) == ["TurnPlayed"]
    game = position("robbers", hands=["QH KH AH 2H 5C", FILLER], stock="4D")
    [event] = game.do(Play(0, melds("QH KH AH 2H")))
    assert isinstance(event, CommandRejected) and event.detail == "invalid_meld"


# --- empty stock: pass and stall (Decision 7) ----------------------------------------------------


@pytest.mark.parametrize("rules", ["robbers", "robbers-classic", "rummikub"])
def test_pass_needs_an_empty_stock(rules: str) -> None:
    """``pass`` is refused while the stock holds cards; with an empty stock ``draw`` is refused
    (``stock_empty``) and ``pass`` ends the turn."""
    game = position(rules, hands=["5H 6H", FILLER], stock="4D")
    game.refuse(Pass(0), "stock_not_empty")
    game = position(rules, hands=["5H 6H", FILLER], stock="")
    game.refuse(Draw(0), "stock_empty")
    events = game.do(Pass(0))
    assert events[0] == TurnPassed(0)
    assert events[1] == TurnStarted(1, 2, game.state.turn.deadline if game.state.turn else None)


@pytest.mark.parametrize("rules", ["robbers", "robbers-classic", "rummikub"])
def test_stall_when_every_seat_passes_in_a_row(rules: str) -> None:
    """Decision 7: the round stalls when every seat has passed in a row; the ``RoundEnded`` says
    so, with nobody out and every hand left."""
    hands = ["5H 6H", "2C 3C 9S", "KD"]
    game = position(rules, seats=3, hands=hands, stock="")
    game.do(Pass(0))
    game.do(Pass(1))
    events = game.do(Pass(2))
    assert events == [
        TurnPassed(2),
        RoundEnded(1, "stalled", None, (0, 1, 2), tuple(cards(h) for h in hands), None, (0, 0, 0)),
    ]
    assert game.state.phase == "scoring" and game.state.turn is None
    game.refuse(Pass(0), "round_over")


@pytest.mark.parametrize("rules", ["robbers", "rummikub"])
def test_a_play_between_passes_resets_the_count(rules: str) -> None:
    """Decision 7: a play between passes starts the count again, so every seat must pass once
    more after it; the stalled round remembers who made the last play (the tie-break)."""
    hands = ["5H 6H", "2C 3C 4C 9S", "KD"]
    game = position(rules, seats=3, hands=hands, stock="")
    game.do(Pass(0))
    game.do(Play(1, melds("2C 3C 4C")))
    assert types(game.do(Pass(2))) == ["TurnPassed", "TurnStarted"]
    assert types(game.do(Pass(0))) == ["TurnPassed", "TurnStarted"]
    events = game.do(Pass(1))
    assert types(events) == ["TurnPassed", "RoundEnded"]
    ended = events[1]
    assert isinstance(ended, RoundEnded)
    assert ended.reason == "stalled" and ended.out is None and ended.last_player == 1
    assert ended.hands == (cards("5H 6H"), cards("9S"), cards("KD"))


def test_classic_placing_then_ending_resets_the_count() -> None:
    """robbers-classic with an empty stock: a seat that places and ends has played, so the
    passes before it do not count towards a stall."""
    game = position("robbers-classic", seats=2, hands=["5H 6H", "2C 3C 4C 9S"], stock="")
    game.do(Pass(0))
    game.refuse(End(1), "must_draw_or_place")
    game.do(Play(1, melds("2C 3C 4C")))
    game.refuse(Pass(1), "not_in_these_rules")
    game.do(End(1))
    assert types(game.do(Pass(0))) == ["TurnPassed", "TurnStarted"]
    assert types(game.do(Pass(1))) == ["TurnPassed", "RoundEnded"]


# --- going out ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", ["robbers", "robbers-classic", "rummikub"])
def test_going_out_ends_the_round(rules: str) -> None:
    """A play that empties the hand ends the round at once: ``RoundEnded`` with reason ``out``,
    the hands left (the out seat's empty) and no further turn."""
    hands = ["5H 6H 7H", "2C 3C 9S", "KD QD"]
    game = position(rules, seats=3, hands=hands, stock="4D 5D")
    events = game.do(Play(0, melds("5H 6H 7H")))
    assert types(events) == ["TurnPlayed", "RoundEnded"]
    assert events[1] == RoundEnded(
        1, "out", 0, (0, 1, 2), ((), cards("2C 3C 9S"), cards("KD QD")), 0, (0, 0, 0)
    )
    assert game.state.phase == "scoring" and game.state.turn is None
    game.refuse(Draw(1), "round_over")
    game.refuse(Play(1, melds("2C 3C 4C")), "round_over")


# --- timers (Decision 6) -------------------------------------------------------------------------


def test_turn_deadline_is_now_plus_turn_seconds() -> None:
    """``TurnStarted.deadline`` is the time of the command that started the turn plus
    ``turn_seconds``; without a timer there is no deadline."""
    game = start_game("robbers", {"turn_seconds": 120}, now=T0)
    started = game.events[-1]
    assert isinstance(started, TurnStarted) and started.deadline == T0 + 120
    game = start_game("rummikub", now=T0 + 5)
    started = game.events[-1]
    assert isinstance(started, TurnStarted) and started.deadline == T0 + 65
    game = start_game("robbers", now=T0)
    started = game.events[-1]
    assert isinstance(started, TurnStarted) and started.deadline is None


def test_timeout_before_the_deadline_or_for_another_turn_is_refused() -> None:
    """``timer_not_expired`` before the deadline (or without a timer); ``stale_timeout`` for a
    turn number that is not the current turn's."""
    game = position("robbers", {"turn_seconds": 120}, hands=["5H 6H", FILLER], stock="4D")
    game.refuse(Timeout(1), "timer_not_expired", now=T0 + 119.9)
    game.refuse(Timeout(2), "stale_timeout", now=T0 + 500)
    game.refuse(Timeout(0), "stale_timeout", now=T0 + 500)
    untimed = position("robbers", hands=["5H 6H", FILLER], stock="4D")
    untimed.refuse(Timeout(1), "timer_not_expired", now=T0 + 10_000)


def test_timeout_at_the_deadline_draws_one() -> None:
    """Decision 6: at the deadline the referee records ``TurnTimedOut`` and ends the turn as a
    draw of one card; the next deadline counts from then. A second timeout is stale."""
    game = position("robbers", {"turn_seconds": 120}, hands=["5H 6H", FILLER], stock="4D 5D")
    events = game.do(Timeout(1), now=T0 + 120)
    assert events == [
        TurnTimedOut(0, 1),
        CardDrawn(0, cards("4D"), "stock", False),
        TurnStarted(1, 2, T0 + 240),
    ]
    game.refuse(Timeout(1), "stale_timeout", now=T0 + 1000)


@pytest.mark.parametrize(
    ("rules", "options", "count"),
    [("rummikub", {}, 3), ("robbers", {"turn_seconds": 120}, 1)],
)
def test_timeout_after_a_rejected_layout_is_the_failed_turn_draw(
    rules: str, options: dict[str, Any], count: int
) -> None:
    """Decision 5 and 6: a timer that runs out after a rejected layout draws the failed-turn
    count (3 in rummikub)."""
    game = position(rules, options, hands=["5H 6H 8H", FILLER], stock="4D 5D 6D 7D")
    game.do(Play(0, melds("5H 6H 8H")))
    deadline = game.state.turn.deadline if game.state.turn else None
    assert deadline is not None
    events = game.do(Timeout(1), now=deadline)
    assert events[:2] == [
        TurnTimedOut(0, 1),
        CardDrawn(0, cards("4D 5D 6D")[:count], "stock", True),
    ]
    assert types(events)[2:] == ["TurnStarted"]


def test_timeout_with_an_empty_stock_is_a_pass() -> None:
    """Decision 6: with an empty stock the timer ends the turn as a pass, which counts towards a
    stall like any pass."""
    game = position("rummikub", hands=["5H 6H", FILLER], stock="")
    events = game.do(Timeout(1), now=T0 + 60)
    assert types(events) == ["TurnTimedOut", "TurnPassed", "TurnStarted"]
    events = game.do(Timeout(2), now=T0 + 120)
    assert types(events) == ["TurnTimedOut", "TurnPassed", "RoundEnded"]


def test_classic_timeout_after_placing_just_ends_the_turn() -> None:
    """robbers-classic with a timer: a seat that placed and then ran out of time simply ends its
    turn (placing was its move; no draw is forced)."""
    game = position(
        "robbers-classic", {"turn_seconds": 30}, hands=["5H 6H 7H 2D", FILLER], stock="4D"
    )
    game.do(Play(0, melds("5H 6H 7H")))
    assert game.do(Timeout(1), now=T0 + 30) == [TurnTimedOut(0, 1), TurnStarted(1, 2, T0 + 60)]
    assert game.state.stock == cards("4D")


# --- the discard-pile variant (Decision 10) ------------------------------------------------------

PILE = {"discard_pile": True}


def test_discard_pile_turn_begins_with_a_draw() -> None:
    """Decision 10: nothing but a draw opens the turn (``must_draw_first``), and ``pass`` needs
    an empty stock; ``end`` is not a move of robbers."""
    game = position("robbers", PILE, hands=["5H 6H 7H 9C", FILLER], stock="4D", discard="8D QC")
    game.refuse(Play(0, melds("5H 6H 7H")), "must_draw_first")
    game.refuse(Discard(0, cards("9C")[0]), "must_draw_first")
    game.refuse(Pass(0), "stock_not_empty")
    game.refuse(End(0), "not_in_these_rules")


def test_discard_pile_draw_from_pile_play_and_discard() -> None:
    """Decision 10: the seat takes the pile's top card, may play (the turn goes on), cannot
    discard the card it took (``card_taken_from_pile``) or a card it lacks, and ends the turn by
    discarding another card."""
    game = position(
        "robbers", PILE, hands=["5H 6H 7H 9C KS", FILLER], stock="4D 5D", discard="8D QC"
    )
    assert game.do(Draw(0, "pile")) == [CardDrawn(0, cards("QC"), "pile", False)]
    assert game.state.discard == cards("8D")
    game.refuse(Draw(0), "already_drawn")
    game.refuse(Draw(0, "pile"), "already_drawn")
    game.refuse(Discard(0, cards("QC")[0]), "card_taken_from_pile")
    game.refuse(Discard(0, cards("2D")[0]), "card_not_in_hand")
    game.refuse(Pass(0), "stock_not_empty")
    assert types(game.do(Play(0, melds("5H 6H 7H")))) == ["TurnPlayed"]
    game.refuse(Draw(0), "already_drawn")
    assert game.do(Discard(0, cards("9C")[0])) == [
        CardDiscarded(0, cards("9C")[0]),
        TurnStarted(1, 2, None),
    ]
    assert game.state.discard == cards("8D 9C")
    assert hand_text(game.state.hands[0]) == ["KS", "QC"]


def test_discard_pile_taken_card_with_a_twin_may_go() -> None:
    """Holding the other copy of the card taken from the pile, the seat may discard that copy."""
    game = position("robbers", PILE, hands=["QC 5S", FILLER], stock="4D", discard="QC")
    game.do(Draw(0, "pile"))
    assert types(game.do(Discard(0, cards("QC")[0]))) == ["CardDiscarded", "TurnStarted"]


def test_discard_pile_draw_from_stock_then_discard() -> None:
    """A stock draw in the discard-pile variant does not end the turn; the discard does."""
    game = position("robbers", PILE, hands=["5H 9C", FILLER], stock="4D 5D", discard="8D")
    assert game.do(Draw(0)) == [CardDrawn(0, cards("4D"), "stock", False)]
    game.refuse(End(0), "not_in_these_rules")
    assert types(game.do(Discard(0, cards("4D")[0]))) == ["CardDiscarded", "TurnStarted"]


def test_discard_pile_empty_pile() -> None:
    """An empty pile cannot be drawn from; there is no pile outside the variant."""
    game = position("robbers", PILE, hands=["5H 9C", FILLER], stock="4D", discard="")
    game.refuse(Draw(0, "pile"), "pile_empty")
    plain = position("robbers", hands=["5H 9C", FILLER], stock="4D")
    plain.refuse(Draw(0, "pile"), "not_in_these_rules")
    plain.refuse(Discard(0, cards("9C")[0]), "not_in_these_rules")


def test_discard_pile_going_out() -> None:
    """Decision 10: a seat goes out by playing its last cards (no discard follows), or by
    discarding its last card."""
    game = position("robbers", PILE, hands=["5H 6H 7H", FILLER], stock="8H 4D", discard="2D")
    game.do(Draw(0))
    events = game.do(Play(0, melds("5H 6H 7H 8H")))
    assert types(events) == ["TurnPlayed", "RoundEnded"]
    game = position("robbers", PILE, hands=["5H 6H 7H", FILLER], stock="KD 4D", discard="2D")
    game.do(Draw(0))
    game.do(Play(0, melds("5H 6H 7H")))
    events = game.do(Discard(0, cards("KD")[0]))
    assert types(events) == ["CardDiscarded", "RoundEnded"]
    ended = events[1]
    assert isinstance(ended, RoundEnded) and ended.out == 0 and ended.hands[0] == ()
    assert game.state.discard == cards("2D KD")


def test_discard_pile_reshuffle_when_the_stock_runs_out() -> None:
    """Decision 10: when the stock is empty, the pile except its top card is shuffled by the
    game's seeded shuffle (purpose ``reshuffle/<turn>``) into a new stock, recorded in
    ``StockReshuffled``, and the draw comes from it; replaying needs no seed."""
    game = position("robbers", PILE, hands=["5H 9C", FILLER], stock="", discard="2D 3D 4D 5D 6D")
    game.refuse(Pass(0), "stock_not_empty")
    key = rr_key(SEED, "g1", game.state.seeds)
    assert shuffle_key(SEED, "g1", game.state.seeds) == key
    expected = tuple(rr_shuffle(list(cards("2D 3D 4D 5D")), key, "reshuffle/1"))
    events = game.do(Draw(0))
    assert events == [StockReshuffled(expected), CardDrawn(0, expected[:1], "stock", False)]
    assert game.state.stock == expected[1:]
    assert game.state.discard == cards("6D")
    answer = game.decide(Draw(0))
    assert not isinstance(answer, list) and answer.code == "already_drawn"
    game.do(Discard(0, cards("9C")[0]))
    assert game.do(Draw(1)) == [CardDrawn(1, expected[1:2], "stock", False)]


def test_discard_pile_reshuffle_needs_the_seed() -> None:
    """The reshuffle is a random choice, so it needs the secret seed (checked against the
    commitment) like the deal."""
    game = position("robbers", PILE, hands=["5H 9C", FILLER], stock="", discard="2D 3D 4D")
    game.seed = b"not the seed"
    game.refuse(Draw(0), "bad_seed")


def test_discard_pile_pass_only_when_no_card_can_come_from_the_stock() -> None:
    """With an empty stock and a pile of one card nothing can be reshuffled: ``draw`` from the
    stock is ``stock_empty`` and ``pass`` is allowed."""
    game = position("robbers", PILE, hands=["5H 9C", FILLER], stock="", discard="2D")
    game.refuse(Draw(0), "stock_empty")
    assert types(game.do(Pass(0))) == ["TurnPassed", "TurnStarted"]


def test_discard_pile_timeout_after_drawing_discards() -> None:
    """A timer that runs out after the draw ends the turn with a discard, never of the card
    taken from the pile."""
    game = position(
        "robbers",
        {**PILE, "turn_seconds": 60},
        hands=["KS 5H", FILLER],
        stock="4D",
        discard="2D KH",
    )
    game.do(Draw(0, "pile"))
    events = game.do(Timeout(1), now=T0 + 60)
    assert types(events) == ["TurnTimedOut", "CardDiscarded", "TurnStarted"]
    discarded = events[1]
    assert isinstance(discarded, CardDiscarded) and discarded.card != cards("KH")[0]
    assert cards("KH")[0] in game.state.hands[0]


# --- joker redemption (Decisions 4 and 9) ---------------------------------------------------------


def test_robbers_joker_redeemed_to_hand() -> None:
    """robbers (``to_hand``): after opening, the natural card a table joker stands for swaps in
    and the joker goes to the hand; ``TurnPlayed.redeemed`` counts it and so does the state."""
    game = position("robbers", hands=["8D 2C 3C", FILLER], table=["7D JK 9D"], stock="4D")
    [played, _] = game.do(Play(0, melds("7D 8D 9D")))
    assert played == TurnPlayed(0, melds("7D 8D 9D"), cards("8D"), (JOKER,), 8, False, 1)
    assert hand_text(game.state.hands[0]) == ["2C", "3C", "JK"]
    assert game.state.redeemed == (1, 0)


@pytest.mark.parametrize("natural", ["7D", "7C"])
def test_robbers_joker_in_a_three_card_set_either_missing_suit(natural: str) -> None:
    """In a 3-card set either missing suit redeems the joker."""
    game = position("robbers", hands=[f"{natural} 2C", FILLER], table=["7S 7H JK"], stock="4D")
    [played, _] = game.do(Play(0, melds(f"7S 7H {natural}")))
    assert isinstance(played, TurnPlayed) and played.redeemed == 1
    assert played.to_hand == (JOKER,)


def test_robbers_redeemed_joker_replayed_at_once_still_counts() -> None:
    """Decision 9 counts a redeemed joker kept or replayed: swapping it out and using it in a
    new meld in the same play is one redemption, and nothing goes to the hand."""
    game = position("robbers", hands=["8D 4S 5S 2C", FILLER], table=["7D JK 9D"], stock="4D")
    [played, _] = game.do(Play(0, melds("7D 8D 9D", "4S 5S JK")))
    assert isinstance(played, TurnPlayed)
    assert played.redeemed == 1 and played.to_hand == ()
    assert game.state.redeemed == (1, 0)


def test_redemption_before_opening_is_refused() -> None:
    """Decision 4: nobody moves a table card, joker or not, before opening."""
    game = position(
        "robbers", hands=["8D 2C 3C", FILLER], table=["7D JK 9D"], stock="4D", opened=[False] * 2
    )
    [event] = game.do(Play(0, melds("7D 8D 9D")))
    assert isinstance(event, CommandRejected)
    assert event.detail == "table_touched_before_opening"


def test_going_out_with_a_redemption_counts_it_in_the_round_end() -> None:
    """A play that redeems a joker and empties the hand carries the redemption into
    ``RoundEnded.redeemed`` (the score sheet needs it, Decision 9)."""
    game = position("robbers", hands=["8D 4S 5S", FILLER], table=["7D JK 9D"], stock="4D")
    events = game.do(Play(0, melds("7D 8D 9D", "4S 5S JK")))
    ended = events[-1]
    assert isinstance(ended, RoundEnded)
    assert ended.out == 0 and ended.redeemed == (1, 0)
    assert game.state.rounds[-1].redeemed == (1, 0)


def test_discard_pile_play_may_not_strand_the_taken_card() -> None:
    """Decision 10 (found by these tests): a seat that took the pile's top card must still end
    its turn with a discard, and that card cannot be it; a play that would leave only the taken
    card is refused (``card_taken_from_pile``, nothing recorded), so the seat is never stuck and
    the timer always has a card to discard. Keeping another card, or playing them all, is fine."""
    options = {**PILE, "turn_seconds": 60}
    game = position("robbers", options, hands=["5H 6H 7H", FILLER], stock="4D", discard="2D KS")
    game.do(Draw(0, "pile"))
    game.refuse(Play(0, melds("5H 6H 7H")), "card_taken_from_pile")
    assert game.state.table == () and len(game.state.hands[0]) == 4
    events = game.do(Timeout(1), now=T0 + 60)
    assert types(events) == ["TurnTimedOut", "CardDiscarded", "TurnStarted"]
    game = position("robbers", options, hands=["5H 6H 7H", FILLER], stock="4D", discard="8H")
    game.do(Draw(0, "pile"))
    assert types(game.do(Play(0, melds("5H 6H 7H 8H")))) == ["TurnPlayed", "RoundEnded"]
    game = position("robbers", options, hands=["5H 6H 7H 9C", FILLER], stock="4D", discard="KS")
    game.do(Draw(0, "pile"))
    assert types(game.do(Play(0, melds("5H 6H 7H")))) == ["TurnPlayed"]
    assert types(game.do(Discard(0, cards("9C")[0]))) == ["CardDiscarded", "TurnStarted"]


def test_discard_pile_timeout_discarding_the_last_card_goes_out() -> None:
    """Decision 10 with a timer (found by the long self-play run): a seat that drew, played all
    but one card and ran out of time has its last card discarded by the referee, which empties
    its hand: it has gone out, exactly as if it had discarded that card itself. (Before the fix
    the round went on with an empty hand and its score sheet could not be made.)"""
    options = {**PILE, "turn_seconds": 60}
    game = position("robbers", options, hands=["5H 6H 7H", FILLER], stock="4D 5D", discard="2D")
    game.do(Draw(0))
    game.do(Play(0, melds("5H 6H 7H")))
    events = game.do(Timeout(1), now=T0 + 60)
    assert events == [
        TurnTimedOut(0, 1),
        CardDiscarded(0, cards("4D")[0]),
        RoundEnded(1, "out", 0, (0, 1), ((), cards(FILLER)), 0, (0, 0)),
    ]
    assert game.state.phase == "scoring"
