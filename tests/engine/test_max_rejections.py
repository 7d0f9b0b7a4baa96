"""Decision 14: a turn absorbs at most ``max_rejections`` rejected layouts; the one after that is
recorded and the referee ends the turn at once, as the timer would (Decision 6) after a rejected
layout: the failed-turn draw, a pass with an empty stock, a discard after a pile-variant draw,
nothing more where a place-draw-place seat has already placed or drawn."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shared.core.codes import Rejection
from shared.core.commands import CreateGame, Discard, Draw, End, Pass, Play, Timeout
from shared.core.events import (
    CardDiscarded,
    CardDrawn,
    CommandRejected,
    RoundEnded,
    TurnForfeited,
    TurnStarted,
    event_from,
    to_data,
)
from shared.core.evolve import fold
from shared.core.shuffle import commitment
from shared.core.state import GameState
from shared.core.views import event_json, view_json

from .helpers import SEED, T0, Game, cards, hand_text, melds, table_text
from .test_turns import FILLER, position, types

BAD = melds("5H 6H 8H")  # never a meld: every attempt below is an illegal layout
HAND = "5H 6H 8H"
STOCK = "4D 5D 6D 7D 8D"


def reject(game: Game, times: int, seat: int = 0) -> None:
    """``times`` rejected layouts that leave the turn open."""
    for _ in range(times):
        [event] = game.do(Play(seat, BAD))
        assert isinstance(event, CommandRejected) and event.code == "illegal_layout"


def left(game: Game, seat: int = 0) -> int:
    """``rejections_left`` as the seat's own view shows it."""
    turn = view_json(game.state, seat)["turn"]
    assert turn is not None and turn["seat"] == seat
    value = turn["rejections_left"]
    assert isinstance(value, int)
    return value


def test_the_fourth_rejected_layout_ends_the_turn_with_the_failed_turn_draw() -> None:
    """robbers (default ``max_rejections`` 3): three rejected layouts leave the turn open; the
    fourth is recorded, ``TurnForfeited`` says why the turn ended, the seat draws the failed-turn
    count (a penalty draw) and the next seat's turn starts. The table is as it was."""
    game = position("robbers", hands=[HAND, FILLER], table=["9S 10S JS"], stock=STOCK)
    assert game.state.rules.max_rejections == 3
    assert left(game) == 3
    reject(game, 3)
    assert game.state.turn is not None and game.state.turn.rejected == 3
    assert left(game) == 0
    events = game.do(Play(0, melds("9S 10S JS", HAND)))
    rejected = events[0]
    assert isinstance(rejected, CommandRejected) and rejected.detail == "invalid_meld"
    assert "max_rejections" in rejected.reason and "you drew 1 card" in rejected.reason
    assert events[1:] == [
        TurnForfeited(0, 1, "max_rejections", 4),
        CardDrawn(0, cards("4D"), "stock", True),
        TurnStarted(1, 2, None),
    ]
    assert hand_text(game.state.hands[0]) == hand_text(cards(HAND + " 4D"))
    assert table_text(game.state.table) == [["9S", "10S", "JS"]]
    game.refuse(Play(0, BAD), "not_your_turn")
    game.refuse(Draw(0), "not_your_turn")
    assert game.state.turn is not None and game.state.turn.rejected == 0


@pytest.mark.parametrize(
    ("rules", "options", "count", "deadline"),
    [
        ("robbers", {"failed_turn_draw": 3}, 3, None),
        ("rummikub", {}, 3, T0 + 60),
        ("robbers-classic", {}, 1, None),
        ("robbers-classic", {"failed_turn_draw": 2}, 2, None),
        ("robbers", {"max_rejections": 1}, 1, None),
    ],
)
def test_every_rule_family_forfeits_with_its_failed_turn_draw(
    rules: str, options: dict[str, Any], count: int, deadline: float | None
) -> None:
    """The draw that ends a forfeited turn is the rule set's ``failed_turn_draw`` (Decision 5's
    count) in every preset; in robbers-classic the turn is over too (no placing after that
    draw: the referee ended it)."""
    game = position(rules, options, hands=[HAND, FILLER], stock=STOCK)
    limit = game.state.rules.max_rejections
    reject(game, limit)
    events = game.do(Play(0, BAD))
    assert events[1:] == [
        TurnForfeited(0, 1, "max_rejections", limit + 1),
        CardDrawn(0, cards(STOCK)[:count], "stock", True),
        TurnStarted(1, 2, deadline),
    ]
    assert len(game.state.stock) == 5 - count


@pytest.mark.parametrize(("limit", "kept"), [(0, 0), (1, 1), (20, 20)])
def test_the_limit_counts_the_rejections_a_turn_survives(limit: int, kept: int) -> None:
    """``max_rejections: N`` lets N rejected layouts leave the turn open and ends it at N + 1;
    0 means the first rejected layout ends the turn (there is no unlimited value)."""
    game = position("robbers", {"max_rejections": limit}, hands=[HAND, FILLER], stock=STOCK)
    reject(game, kept)
    events = game.do(Play(0, BAD))
    assert types(events) == ["CommandRejected", "TurnForfeited", "CardDrawn", "TurnStarted"]
    assert events[1] == TurnForfeited(0, 1, "max_rejections", limit + 1)


def test_a_legal_play_or_a_draw_under_the_limit_is_unchanged() -> None:
    """Below the limit nothing changes: after three rejected layouts a legal play ends the turn
    as a play, and a draw is the ordinary failed-turn draw (Decision 5)."""
    game = position("robbers", hands=["5H 6H 7H 8H", FILLER], stock=STOCK)
    reject(game, 3)
    assert types(game.do(Play(0, melds("5H 6H 7H")))) == ["TurnPlayed", "TurnStarted"]
    game = position("robbers", hands=[HAND, FILLER], stock=STOCK)
    reject(game, 3)
    assert game.do(Draw(0)) == [
        CardDrawn(0, cards("4D"), "stock", True),
        TurnStarted(1, 2, None),
    ]


@pytest.mark.parametrize("rules", ["robbers", "robbers-classic", "rummikub"])
def test_with_an_empty_stock_the_forfeit_is_a_pass(rules: str) -> None:
    """Decision 6's rule for an empty stock: the forfeited turn ends as a pass, which counts
    towards a stall like any pass (here it is the pass that stalls the round)."""
    game = position(rules, hands=[HAND, FILLER], stock="")
    limit = game.state.rules.max_rejections
    reject(game, limit)
    events = game.do(Play(0, BAD))
    assert types(events) == ["CommandRejected", "TurnForfeited", "TurnPassed", "TurnStarted"]
    assert "a pass" in events[0].reason  # type: ignore[attr-defined]
    game.do(Pass(1))
    assert game.state.phase == "scoring"
    game = position(rules, hands=[HAND, FILLER], stock="", turn=1)
    game.do(Pass(1))
    reject(game, limit)
    events = game.do(Play(0, BAD))
    assert types(events) == ["CommandRejected", "TurnForfeited", "TurnPassed", "RoundEnded"]
    ended = events[-1]
    assert isinstance(ended, RoundEnded) and ended.reason == "stalled"


def test_classic_after_placing_the_forfeit_just_ends_the_turn() -> None:
    """robbers-classic: a seat that placed legally and then used up its rejected layouts keeps
    its placement; the turn ends with no draw, as the timer ends it (Decision 6)."""
    game = position("robbers-classic", hands=["5H 6H 7H 8H 2D", FILLER], stock=STOCK)
    game.do(Play(0, melds("5H 6H 7H")))
    reject(game, 3)
    events = game.do(Play(0, melds("5H 6H 7H", "8H 2D")))
    assert types(events) == ["CommandRejected", "TurnForfeited", "TurnStarted"]
    assert "as it stands" in events[0].reason  # type: ignore[attr-defined]
    assert table_text(game.state.table) == [["5H", "6H", "7H"]]
    assert game.state.stock == cards(STOCK)
    game.refuse(End(0), "not_your_turn")


def test_classic_after_drawing_the_forfeit_draws_nothing_more() -> None:
    """robbers-classic: a seat that drew (one card, no rejection yet) and then used up its
    rejected layouts has drawn this turn already: the turn ends without a second draw."""
    game = position("robbers-classic", hands=[HAND, FILLER], stock=STOCK)
    assert game.do(Draw(0)) == [CardDrawn(0, cards("4D"), "stock", False)]
    reject(game, 3)
    events = game.do(Play(0, BAD))
    assert types(events) == ["CommandRejected", "TurnForfeited", "TurnStarted"]
    assert game.state.stock == cards("5D 6D 7D 8D")


PILE = {"discard_pile": True}


def test_discard_pile_the_forfeit_discards_for_the_seat() -> None:
    """The discard-pile variant: a seat can only be refused after its draw, so a forfeited turn
    ends as a timed-out one does after the draw: the referee discards the seat's highest card,
    never the one taken from the pile, and the turn passes on; no penalty draw."""
    game = position("robbers", PILE, hands=["5H 6H 8H KS", FILLER], stock=STOCK, discard="2D KH")
    game.do(Draw(0, "pile"))
    reject(game, 3)
    events = game.do(Play(0, BAD))
    assert events[1:] == [
        TurnForfeited(0, 1, "max_rejections", 4),
        CardDiscarded(0, cards("KS")[0]),
        TurnStarted(1, 2, None),
    ]
    assert "discarded KS" in events[0].reason  # type: ignore[attr-defined]
    assert cards("KH")[0] in game.state.hands[0]
    assert game.state.discard == cards("2D KS")
    assert game.state.stock == cards(STOCK)


def test_discard_pile_forfeit_discarding_the_last_card_goes_out() -> None:
    """As with the timer: a seat left with one card whose turn is forfeited has that card
    discarded, which empties its hand, so it has gone out (it could have discarded it itself)."""
    game = position("robbers", PILE, hands=["5H 6H 7H", FILLER], stock="4D 5D", discard="2D")
    game.do(Draw(0))
    game.do(Play(0, melds("5H 6H 7H")))
    reject(game, 3)
    events = game.do(Play(0, melds("5H 6H 7H", "4D")))
    assert types(events) == ["CommandRejected", "TurnForfeited", "CardDiscarded", "RoundEnded"]
    ended = events[-1]
    assert isinstance(ended, RoundEnded) and ended.out == 0


def test_the_timer_of_a_forfeited_turn_is_stale() -> None:
    """Once the forfeit ended turn 1, its timer has nothing left to end."""
    game = position("rummikub", hands=[HAND, FILLER], stock=STOCK)
    reject(game, 3)
    assert "TurnForfeited" in types(game.do(Play(0, BAD)))
    game.refuse(Timeout(1), "stale_timeout", now=T0 + 61)


def test_a_forfeit_replays_from_its_events() -> None:
    """Every event of a forfeit survives its encoding and the fold of the log is the state."""
    game = position("robbers", hands=[HAND, FILLER], stock=STOCK)
    base = game.state
    log = []
    for _ in range(4):
        log += game.do(Play(0, BAD))
    for event in log:
        assert event_from(event.TYPE, to_data(event)) == event
    assert fold(log, base) == game.state


def test_only_the_seat_on_turn_sees_its_rejections_left() -> None:
    """``rejections_left`` is part of the seat's own turn view, like ``rejected``."""
    game = position("robbers", {"max_rejections": 5}, hands=[HAND, FILLER], stock=STOCK)
    reject(game, 2)
    assert left(game) == 3
    assert "rejections_left" not in view_json(game.state, 1)["turn"]
    assert "rejections_left" not in view_json(game.state, None)["turn"]


@pytest.mark.parametrize("value", [-1, 21, None, "3", True])
def test_a_game_with_a_bad_max_rejections_is_refused_naming_it(value: object) -> None:
    """Decision 12's rule for every option: the game is refused at creation, naming it."""
    answer = Game().decide(
        CreateGame("g1", "robbers", {"max_rejections": value}, 2, commitment(SEED))
    )
    assert isinstance(answer, Rejection) and answer.code == "bad_options"
    assert "'max_rejections'" in answer.message and "0 to 20" in answer.message
    assert GameState().status == "new"


def test_the_forfeiting_rejection_names_the_limit_to_the_seat_only() -> None:
    """The refusal message (the event's secret ``reason``) explains the end of the turn; the
    forfeit itself is public: others see that and why the turn ended."""
    game = position("robbers", hands=[HAND, FILLER], stock=STOCK)
    reject(game, 3)
    events = game.do(Play(0, BAD))
    assert event_json(events[0], 1, False)["reason"] is None
    shown = event_json(events[1], 1, False)
    assert shown == {
        "type": "TurnForfeited",
        "seat": 0,
        "number": 1,
        "reason": "max_rejections",
        "rejected": 4,
    }
    game.refuse(Discard(0, cards("5H")[0]), "not_your_turn")


@pytest.mark.parametrize("rules", ["robbers", "robbers-classic", "rummikub"])
def test_rummy_simulate_with_stubborn_bots_counts_forfeits(
    rules: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rummy simulate` with bots that insist on illegal layouts: games finish, every invariant
    holds (the fold equals the state, cards are conserved), and the forfeits are counted."""
    from services.main import main

    argv = ["simulate", "--rules", rules, "--players", "3", "--games", "2", "--seed", "3"]
    options = '{"match_rounds": 1}' if rules != "robbers-classic" else "{}"
    code = main([*argv, "--bots", "stubborn,random", "--options", options, "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["invariant_violations"] == 0, result["violations"]
    assert result["games"] == 2 and result["forfeits"] > 0
    assert result["rejected"] > result["forfeits"]
