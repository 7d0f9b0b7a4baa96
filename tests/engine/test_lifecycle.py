"""Games that always end (Decisions 15-19), in every rule family: leaving a waiting game,
resigning one under way (scores, turn order, the last seat left), absent players under each
``absent`` policy and their return, bots in seats, cancelling, expiring and rematch offers.
Every new event survives its stored form, and a resigned seat's cards reach no other view."""

from __future__ import annotations

from typing import Any

import pytest

from shared.core.codes import Rejection
from shared.core.commands import (
    Cancel,
    Context,
    Continue,
    CreateGame,
    Draw,
    End,
    Expire,
    Leave,
    OfferRematch,
    Resign,
    Return,
    Sit,
    Start,
    Timeout,
)
from shared.core.decide import decide
from shared.core.events import (
    CardDrawn,
    Event,
    GameCancelled,
    PlayerSeated,
    RematchOffered,
    RoundDealt,
    RoundEnded,
    SeatHandedToBot,
    SeatLeft,
    SeatResigned,
    SeatReturned,
    SeatSkipped,
    TurnStarted,
    TurnTimedOut,
    event_from,
    to_data,
)
from shared.core.evolve import fold
from shared.core.scoring import hand_penalty
from shared.core.shuffle import commitment
from shared.core.views import event_json, view_json

from .helpers import SEED, T0, Game, go_out, record_scores, start_game

FAMILIES = ["robbers", "robbers-classic", "rummikub"]


def survives(events: list[Event]) -> None:
    """Each event comes back whole from its stored form."""
    for event in events:
        assert event_from(event.TYPE, to_data(event)) == event


def on_turn(game: Game) -> int:
    assert game.state.turn is not None
    return game.state.turn.seat


def time_out(game: Game) -> list[Event]:
    """End the current turn at its time limit, as the referee would."""
    turn = game.state.turn
    assert turn is not None
    if turn.deadline is not None:
        return game.do(Timeout(turn.number), now=turn.deadline + 1)
    return game.do(Timeout(turn.number, "absent"))


def waiting(rules: str, seats: int = 3, **options: Any) -> Game:
    game = Game()
    game.do(CreateGame("g1", rules, dict(options), seats, commitment(SEED)))
    return game


# --- leaving a waiting game (Decision 15) --------------------------------------------------------


@pytest.mark.parametrize("rules", FAMILIES)
def test_a_seat_left_before_the_start_goes_to_the_next_player(rules: str) -> None:
    game = waiting(rules)
    for name in ("ann", "bo", "cy"):
        game.do(Sit(name))
    assert game.do(Leave(1)) == [SeatLeft(1)]
    assert game.state.seated() == 2 and game.state.names == ("ann", "", "cy")
    game.refuse(Start(), "seats_empty")
    game.refuse(Leave(1), "not_seated")
    assert game.do(Sit("dee", "d")) == [PlayerSeated(1, "dee", "d")]
    assert game.state.names == ("ann", "dee", "cy") and game.state.seeds[1] == "d"
    game.do(Start())
    game.refuse(Leave(0), "not_waiting")
    survives(game.events)


# --- resigning (Decision 16) ---------------------------------------------------------------------


@pytest.mark.parametrize("rules", FAMILIES)
def test_a_resigned_seat_is_passed_over_and_scores_its_hand_as_a_loser(rules: str) -> None:
    game = start_game(rules, {"match": "single"} if rules != "robbers-classic" else {}, seats=3)
    quitter = on_turn(game)
    hand = game.state.hands[quitter]
    events = game.do(Resign(quitter))
    nxt = game.state.next_seat(quitter)
    assert events[0] == SeatResigned(quitter, "resigned")
    assert isinstance(events[1], TurnStarted) and (events[1].seat, events[1].number) == (nxt, 2)
    assert game.state.is_resigned(quitter) and game.state.hands[quitter] == hand
    game.refuse(Resign(quitter), "not_seated")
    game.refuse(Draw(quitter), "not_your_turn")
    # The turn goes round the two seats left, never to the resigned one.
    for _ in range(4):
        assert on_turn(game) != quitter
        draw(game)
    ended = go_out(game)
    end = next(e for e in ended if isinstance(e, RoundEnded))
    assert end.resigned == (quitter,) and quitter in end.seats
    record_scores(game)
    sheet = game.state.rounds[-1]
    assert sheet.winner != quitter
    if game.state.rules.scoring == "penalty":
        assert sheet.scores is not None
        assert sheet.scores[sheet.seats.index(quitter)] == hand_penalty(game.state.rules, hand)
    survives(game.events)


@pytest.mark.parametrize("rules", FAMILIES)
def test_the_last_seat_left_wins_the_round_and_the_match(rules: str) -> None:
    game = start_game(rules, {}, seats=3)
    first = on_turn(game)
    game.do(Resign(first))
    second = on_turn(game)
    events = game.do(Resign(second))
    assert isinstance(events[-1], RoundEnded) and events[-1].reason == "resigned"
    last = next(s for s in range(3) if s not in (first, second))
    assert events[-1].resigned == tuple(sorted((first, second)))
    record_scores(game)
    assert game.state.rounds[-1].winner == last and not game.state.rounds[-1].went_out
    game.do(Continue())
    assert game.state.status == "finished" and game.state.winners == (last,)
    survives(game.events)


def test_a_resigned_seat_plays_no_later_round_and_cannot_win_the_match() -> None:
    game = start_game("robbers", {"match_rounds": 3}, seats=3)
    quitter = (on_turn(game) + 1) % 3
    game.do(Resign(quitter))
    go_out(game)
    record_scores(game)
    game.do(Continue())
    assert game.state.round == 2 and quitter not in game.state.round_seats
    assert game.state.hands[quitter] == ()
    for _ in range(2):
        go_out(game)
        record_scores(game)
        game.do(Continue())
    assert game.state.status == "finished"
    assert quitter not in game.state.winners


def test_resigning_needs_a_round_under_way() -> None:
    game = waiting("robbers", 2)
    game.do(Sit("ann"))
    game.refuse(Resign(0), "game_not_started")
    game.do(Sit("bo"))
    game.do(Start())
    go_out(game)
    game.refuse(Resign(0), "round_over")
    game.refuse(Resign(5), "bad_command")


def test_a_resigned_seats_cards_reach_no_other_view() -> None:
    """Its hand stays face down: no other seat's view or event shows it, nor the spectator's,
    until the game ends (the round's end included)."""
    game = start_game("robbers", {"match_rounds": 2}, seats=3)
    quitter = on_turn(game)
    game.do(Draw(quitter))
    while on_turn(game) != quitter:
        draw(game)
    game.do(Resign(quitter))
    go_out(game)
    record_scores(game)
    assert game.state.status == "playing"
    for viewer in (None, *(s for s in range(3) if s != quitter)):
        view = view_json(game.state, viewer)
        assert view["seats"][quitter]["resigned"] is True
        assert "hands" not in (view["last_round"] or {})
        for event in game.events:
            data = event_json(event, viewer, finished=False)
            if isinstance(event, RoundDealt | RoundEnded):
                assert data["hands"][quitter] is None
            if isinstance(event, CardDrawn) and event.seat == quitter:
                assert data["cards"] == len(event.cards)


# --- absent players (Decision 17) ----------------------------------------------------------------


def untimed(rules: str, **options: Any) -> Game:
    return start_game(rules, {"turn_seconds": None, "absent_turns": 2, **options}, seats=3)


@pytest.mark.parametrize("rules", FAMILIES)
def test_an_untimed_turn_ends_at_its_absence_limit(rules: str) -> None:
    game = untimed(rules)
    turn = game.state.turn
    assert turn is not None and turn.deadline is None
    game.refuse(Timeout(turn.number), "timer_not_expired")  # no deadline to pass
    events = game.do(Timeout(turn.number, "absent"))
    assert events[0] == TurnTimedOut(turn.seat, turn.number, "absent")
    assert game.state.missed[turn.seat] == 1


def draw(game: Game) -> list[Event]:
    """The seat on turn draws (and ends its turn where a draw does not)."""
    seat = on_turn(game)
    made = game.do(Draw(seat))
    if game.state.rules.turn_shape == "place_draw_place" and on_turn(game) == seat:
        made += game.do(End(seat))
    return made


def miss_turns(game: Game, seat: int, count: int) -> list[Event]:
    """Let ``seat`` miss ``count`` turns in a row (the others draw on theirs)."""
    made: list[Event] = []
    while count:
        if on_turn(game) == seat:
            made += time_out(game)
            count -= 1
        else:
            made += draw(game)
    return made


@pytest.mark.parametrize("rules", FAMILIES)
def test_an_absent_seat_is_skipped_then_takes_its_seat_back(rules: str) -> None:
    game = untimed(rules, absent="skip")
    seat = on_turn(game)
    made = miss_turns(game, seat, 2)
    assert SeatSkipped(seat, "absent") in made
    assert game.state.away[seat] == "skip" and game.state.bot_at(seat) is None
    while on_turn(game) != seat:
        time_out(game)
    number = game.state.turn.number if game.state.turn else 0
    skipped = game.do(Timeout(number, "skipped"))
    assert skipped[0] == TurnTimedOut(seat, number, "skipped")
    while on_turn(game) != seat:
        time_out(game)
    back = game.do(Draw(seat))  # its own move brings the player back
    assert back[0] == SeatReturned(seat, "moved")
    assert game.state.away[seat] is None and game.state.missed[seat] == 0
    game.refuse(Return(seat), "not_away")
    survives(game.events)


@pytest.mark.parametrize("rules", FAMILIES)
def test_an_absent_seat_is_handed_to_a_bot_until_its_player_returns(rules: str) -> None:
    game = untimed(rules, absent="bot", absent_bot="solver")
    seat = on_turn(game)
    made = miss_turns(game, seat, 2)
    assert SeatHandedToBot(seat, "solver", "absent") in made
    assert game.state.bots[seat] == "solver" and game.state.away[seat] == "bot"
    view = view_json(game.state, None)
    assert view["seats"][seat]["bot"] == "solver" and view["seats"][seat]["away"] == "bot"
    while on_turn(game) != seat:
        time_out(game)
    ctx = Context(T0, SEED, bot="solver")
    if game.state.rules.turn_shape != "place_draw_place":
        assert not isinstance(decide(game.state, Draw(seat), ctx), Rejection)
    other = (seat + 1) % 3
    refused = decide(game.state, Draw(other), Context(T0, SEED, bot="solver"))
    assert isinstance(refused, Rejection) and refused.code == "not_bot_seat"
    assert game.do(Return(seat)) == [SeatReturned(seat, "returned")]
    assert game.state.bot_at(seat) is None
    refused = decide(game.state, Draw(seat), ctx)
    assert isinstance(refused, Rejection) and refused.code == "not_bot_seat"
    survives(game.events)


@pytest.mark.parametrize("rules", FAMILIES)
def test_an_absent_seat_forfeits_under_the_forfeit_policy(rules: str) -> None:
    game = untimed(rules, absent="forfeit")
    seat = on_turn(game)
    made = miss_turns(game, seat, 2)
    assert SeatResigned(seat, "absent") in made
    assert game.state.is_resigned(seat)
    assert on_turn(game) != seat
    survives(game.events)


def test_a_timed_game_counts_its_timeouts_as_missed_turns() -> None:
    game = start_game("rummikub", {"absent_turns": 1, "absent": "skip"}, seats=2)
    seat = on_turn(game)
    made = time_out(game)
    assert made[0].TYPE == "TurnTimedOut" and SeatSkipped(seat, "absent") in made


def test_moves_of_its_own_start_the_count_of_missed_turns_again() -> None:
    game = untimed("robbers", absent_turns=3)
    seat = on_turn(game)
    miss_turns(game, seat, 2)
    assert game.state.missed[seat] == 2
    while on_turn(game) != seat:
        draw(game)
    draw(game)
    assert game.state.missed[seat] == 0


# --- bots in seats -------------------------------------------------------------------------------


@pytest.mark.parametrize("rules", FAMILIES)
def test_a_bot_seated_at_the_start_plays_its_seat_only(rules: str) -> None:
    game = waiting(rules, 2)
    assert game.do(Sit("greedy bot", "", "greedy")) == [PlayerSeated(0, "greedy bot", "", "greedy")]
    game.do(Sit("ann"))
    game.refuse(Sit("hal", "", "hal-9000"), "game_full")
    game.do(Start())
    assert game.state.bots == ("greedy", None)
    seat = on_turn(game)
    draw = Draw(seat)
    answer = decide(game.state, draw, Context(T0, SEED, bot="greedy"))
    if seat == 0 and game.state.rules.turn_shape == "play_or_draw":
        assert not isinstance(answer, Rejection)
    elif seat == 1:
        assert isinstance(answer, Rejection) and answer.code == "not_bot_seat"
    assert to_data(PlayerSeated(1, "ann", "")) == {"seat": 1, "name": "ann", "seed": ""}


def test_a_bad_bot_name_is_refused() -> None:
    game = waiting("robbers", 2)
    refused = game.refuse(Sit("hal", "", "hal-9000"), "bad_command")
    assert "'greedy'" in refused.message


# --- cancelling and expiring (Decision 18) -------------------------------------------------------


@pytest.mark.parametrize("rules", FAMILIES)
def test_the_host_cancels_a_waiting_game(rules: str) -> None:
    game = waiting(rules, 2)
    game.do(Sit("ann"))
    assert game.do(Cancel()) == [GameCancelled("host")]
    assert game.state.status == "cancelled"
    game.refuse(Sit("bo"), "game_cancelled")
    game.refuse(Start(), "game_cancelled")
    game.refuse(Cancel(), "not_waiting")
    assert view_json(game.state, None)["cancelled"] == "host"


@pytest.mark.parametrize("rules", FAMILIES)
def test_waiting_and_idle_games_expire(rules: str) -> None:
    game = waiting(rules, 2)
    assert game.do(Expire()) == [GameCancelled("expired")]
    game = start_game(rules, {}, seats=2)
    assert game.do(Expire()) == [GameCancelled("expired")]
    game.refuse(Draw(0), "game_cancelled")
    game.refuse(Expire(), "not_waiting")
    started = start_game(rules, {}, seats=2)
    started.refuse(Cancel(), "not_waiting")  # the host cancels a waiting game only
    assert fold(game.events) == game.state


# --- rematches (Decision 19) ---------------------------------------------------------------------


@pytest.mark.parametrize("rules", FAMILIES)
def test_a_finished_game_links_its_rematch_once(rules: str) -> None:
    game = start_game(rules, {"match": "single"} if rules != "robbers-classic" else {}, seats=2)
    game.refuse(OfferRematch(0, "g2"), "game_not_over")
    go_out(game)
    record_scores(game)
    game.do(Continue())
    assert game.state.status == "finished"
    assert game.do(OfferRematch(1, "g2")) == [RematchOffered(1, "g2")]
    game.refuse(OfferRematch(0, "g3"), "rematch_offered")
    assert view_json(game.state, None)["rematch"] == "g2"
    rematch = Game()
    rematch.do(CreateGame("g2", rules, {}, 2, commitment(SEED), rematch_of="g1"))
    rematch.refuse(Sit("stranger"), "seat_reserved")
    rematch.do(Sit("p1", "", None, 0))
    rematch.refuse(Sit("p0", "", None, 0), "seat_taken")
    rematch.do(Sit("p0", "", None, 1))
    assert rematch.state.names == ("p1", "p0")
    assert view_json(rematch.state, None)["rematch_of"] == "g1"
    survives(rematch.events + game.events)


# --- tournament tables (Decision 20) -------------------------------------------------------------


@pytest.mark.parametrize("rules", FAMILIES)
def test_a_tournament_table_is_seated_by_its_tournament_only(rules: str) -> None:
    table = Game()
    created = table.do(CreateGame("g2", rules, {}, 2, commitment(SEED), tournament="t1"))
    assert created[0].tournament == "t1"  # type: ignore[attr-defined]
    table.refuse(Sit("stranger"), "seat_reserved")  # no seat named: not the tournament's sit
    table.do(Sit("ann", "", None, 1, "p-ann"))
    table.do(Sit("bob", "", None, 0, "p-bob"))
    assert table.state.names == ("bob", "ann") and table.state.tournament == "t1"
    table.refuse(Leave(1), "seat_reserved")  # a seat given up would keep the table from starting
    assert fold(table.events) == table.state
    survives(table.events)
    plain = Game()
    plain.do(CreateGame("g3", rules, {}, 2, commitment(SEED)))
    assert "tournament" not in to_data(plain.events[0])  # old logs stay byte for byte
