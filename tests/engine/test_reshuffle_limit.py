"""Decision 10 with ``max_reshuffles``: the pile refills an empty stock at most that many times in
a round; after that an empty stock stays empty, seats pass, and the round stalls (Decision 7).
Without the cap a discard-pile round can go on for ever, the stock refilled again and again."""

from __future__ import annotations

from dataclasses import replace

from shared.core.commands import Discard, Draw, Pass
from shared.core.events import RoundDealt, RoundEnded, StockReshuffled, TurnPassed
from shared.core.evolve import evolve

from .helpers import cards
from .test_turns import FILLER, position


def test_the_cap_stops_refills_and_lets_the_round_stall() -> None:
    game = position(
        "robbers",
        {"discard_pile": True, "max_reshuffles": 1},
        hands=["5H 9C", FILLER],
        stock="",
        discard="2D 3D 4D 5D 6D",
    )
    events = game.do(Draw(0))
    assert isinstance(events[0], StockReshuffled)
    assert game.state.reshuffles == 1
    game.do(Discard(0, cards("9C")[0]))
    # Empty the refilled stock again: the cap is reached, so no second refill.
    game.state = replace(game.state, stock=())
    game.refuse(Draw(1), "stock_empty")
    assert game.do(Pass(1))[0] == TurnPassed(1)
    game.refuse(Draw(0), "stock_empty")
    stalled = game.do(Pass(0))
    assert isinstance(stalled[-1], RoundEnded) and stalled[-1].reason == "stalled"


def test_no_cap_refills_every_time() -> None:
    game = position(
        "robbers",
        {"discard_pile": True, "max_reshuffles": None},
        hands=["5H 9C", FILLER],
        stock="",
        discard="2D 3D 4D 5D 6D",
    )
    game.state = replace(game.state, reshuffles=50)
    assert isinstance(game.do(Draw(0))[0], StockReshuffled)


def test_a_cap_of_zero_never_refills() -> None:
    game = position(
        "robbers",
        {"discard_pile": True, "max_reshuffles": 0},
        hands=["5H 9C", FILLER],
        stock="",
        discard="2D 3D 4D 5D 6D",
    )
    game.refuse(Draw(0), "stock_empty")
    assert game.state.reshuffles == 0


def test_the_count_starts_again_each_round() -> None:
    game = position("robbers", {"discard_pile": True}, hands=["5H 9C", FILLER])
    dealt = RoundDealt(
        2,
        (0, 1),
        None,
        0,
        game.state.hands,
        game.state.stock,
        (),
    )
    assert evolve(replace(game.state, reshuffles=2), dealt).reshuffles == 0
