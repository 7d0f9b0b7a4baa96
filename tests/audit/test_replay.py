"""The replay of turns: every turn of many self-played games replays to the recorded outcome,
each verdict re-judged agrees with the log, and a viewer sees only what it may."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from shared.audit.replay import (
    SPECTATOR,
    ReplayError,
    Sight,
    replay,
    snapshot,
    table_diff,
    timeline,
)
from shared.cli.judge import judge_turn
from shared.core.cards import cards_str, parse_cards
from shared.core.evolve import evolve
from shared.core.state import GameState
from shared.core.views import standings
from tests.audit.games import Game


def _every_turn(game: Game) -> list[dict[str, Any]]:
    line = timeline(game.events)
    return [replay(game.events, turn=n, line=line) for n in range(1, line.final.turn_number + 1)]


def test_every_turn_of_every_game_replays_to_the_recorded_outcome(games: list[Game]) -> None:
    for game in games:
        turns = _every_turn(game)
        truths = [GameState()]  # the states self-play went through, folded from its own events
        for event in game.report.events:
            truths.append(evolve(truths[-1], event))
        plays = rejected = 0
        covered: list[int] = []
        for number, turn in enumerate(turns, start=1):
            assert turn["turn"] == number
            first, last = turn["versions"]
            covered += range(first, last + 1)
            # The state after the turn is the state the game was in, folded from the events
            # self-play decided (not from the stored log the replay read).
            truth = truths[last]
            after = turn["after"]
            assert after["version"] == last
            assert after["table"] == [cards_str(m) for m in truth.table]
            assert after["hands"] == {
                str(s): cards_str(sorted(h)) for s, h in enumerate(truth.hands)
            }
            assert after["stock"] == len(truth.stock)
            assert after["scores"] == standings(truth)
            for command in turn["commands"]:
                if command["kind"] != "play":
                    assert command["verdict"] is None
                    continue
                assert command["agrees"] is True, command
                if command["outcome"] == "accepted":
                    plays += 1
                    assert command["verdict"]["legal"] is True
                    assert command["verdict"]["layout"] == command["recorded"]["layout"]
                else:
                    rejected += 1
                    assert command["verdict"]["legal"] is False
                    assert command["verdict"]["code"] == command["recorded"]["detail"]
        # Every event from the first turn on is in one turn but the deals; a TurnStarted that
        # ends a turn ("end") is in that turn and in the one it starts.
        dealt = {e.version for e in game.events if e.type == "RoundDealt"}
        start = next(e.version for e in game.events if e.type == "TurnStarted")
        twice = {v for v, n in Counter(covered).items() if n > 1}
        assert all(game.events[v - 1].type == "TurnStarted" for v in twice)
        assert set(covered) | dealt >= set(range(start, len(game.events) + 1))
        assert plays == sum(e.type == "TurnPlayed" for e in game.events)
        assert rejected == sum(e.type == "CommandRejected" for e in game.events)
        final = turns[-1]["after"]
        assert final["status"] == "finished" == game.report.state.status
        assert final["scores"] == standings(game.report.state)


def test_consecutive_turns_meet(game: Game) -> None:
    turns = _every_turn(game)
    for one, two in itertools.pairwise(turns):
        if one["round"] == two["round"]:
            assert one["after"]["table"] == two["before"]["table"]
            assert one["after"]["hands"] == two["before"]["hands"]
            assert one["after"]["stock"] == two["before"]["stock"]


def test_verdicts_have_rummy_judges_shape(game: Game) -> None:
    """Re-judging a replayed play with `rummy judge` itself gives the replay's verdict."""
    line = timeline(game.events)
    seen = set()
    for i, event in enumerate(game.events):
        if event.type not in ("TurnPlayed", "CommandRejected"):
            continue
        result = replay(game.events, version=event.version, line=line)
        (command,) = result["commands"]
        state = line.states[i]
        seat = event.data["seat"]
        doc = {
            "rules": state.rules.name,
            "options": state.rules.options(),
            "table": [cards_str(m) for m in state.table],
            "hand": cards_str(state.hands[seat]),
            "opened": state.opened[seat],
            "layout": [cards_str(m) for m in event.data["layout"]],
        }
        assert command["verdict"] == judge_turn(doc, state.rules)
        seen.add(event.type)
    assert seen == {"TurnPlayed", "CommandRejected"}


def _live(game: Game) -> tuple[list[Any], int]:
    """The game cut short in its second round, at a turn with a rejected attempt."""
    line = timeline(game.events)
    for i, event in enumerate(game.events):
        if event.type == "CommandRejected" and line.states[i].round == 2:
            cut = next(
                k for k in range(i, len(game.events)) if game.events[k].type == "TurnStarted"
            )
            return game.events[:cut], line.states[i].turn.number  # type: ignore[union-attr]
    raise AssertionError("no rejected attempt in round 2")


def test_a_seat_sees_its_own_hand_only_while_live(game: Game) -> None:
    events, number = _live(game)
    state = timeline(events).final
    assert state.status == "playing"
    for seat in range(state.seats):
        result = replay(events, turn=number, viewer=seat)
        assert result["viewer"] == seat
        for snap in (result["before"], result["after"]):
            assert "stock_cards" not in snap and "cards" not in snap["pile"]
            hands = snap["hands"]
            assert hands[str(seat)] is not None
            assert all(hands[str(s)] is None for s in range(state.seats) if s != seat)
            assert all(isinstance(n, int) for n in snap["hand_counts"])
        for command in result["commands"]:
            mine = command["seat"] == seat
            if command["outcome"] == "rejected" and not mine:
                assert "layout" not in command and command["verdict"].get("hidden") is True
                assert "reason" not in command["verdict"]
                assert all(e["layout"] is None and e["reason"] is None for e in command["events"])
            for event in command["events"]:
                if event["type"] == "CardDrawn" and event["source"] == "stock" and not mine:
                    assert isinstance(event["cards"], int)
            for move in command["moves"]:
                if move["from"] == "stock" and not mine:
                    assert isinstance(move["cards"], int)
    rejected_by = {
        c["seat"]
        for c in replay(events, turn=number, viewer=None)["commands"]
        if c["outcome"] == "rejected"
    }
    assert rejected_by
    own = replay(events, turn=number, viewer=next(iter(rejected_by)))
    mine = [c for c in own["commands"] if c["outcome"] == "rejected"]
    assert mine and all("layout" in c and "reason" in c["verdict"] for c in mine)


def test_a_spectator_sees_no_hand_and_the_operator_everything(game: Game) -> None:
    events, number = _live(game)
    spectator = replay(events, turn=number, viewer=SPECTATOR)
    assert spectator["viewer"] == SPECTATOR
    assert all(h is None for h in spectator["before"]["hands"].values())
    assert "stock_cards" not in spectator["before"]
    everything = replay(events, turn=number)
    assert everything["viewer"] == "all"
    assert all(h is not None for h in everything["before"]["hands"].values())
    assert len(everything["before"]["stock_cards"]) == everything["before"]["stock"]


def test_once_finished_everyone_sees_everything(game: Game) -> None:
    for viewer in (0, 2, SPECTATOR, None):
        result = replay(game.events, turn=5, viewer=viewer)
        assert result["viewer"] == "all"
        assert all(h is not None for h in result["before"]["hands"].values())
        assert "stock_cards" in result["before"]


def test_a_rejected_attempt_replays_by_version(game: Game) -> None:
    event = next(e for e in game.events if e.type == "CommandRejected")
    result = replay(game.events, version=event.version)
    (command,) = result["commands"]
    assert command["kind"] == "play" and command["outcome"] == "rejected"
    assert command["versions"] == [event.version, event.version]
    assert command["verdict"]["legal"] is False
    assert command["layout"] == [cards_str(m) for m in event.data["layout"]]
    assert result["before"]["table"] == result["after"]["table"]
    assert result["diff"] == {"removed": [], "added": [], "moves": []}


def test_a_turn_ended_by_end_lists_the_end(games: list[Game]) -> None:
    game = next(g for g in games if g.report.state.rules.turn_shape == "place_draw_place")
    line = timeline(game.events)
    kinds = [
        c["kind"]
        for n in range(1, line.final.turn_number + 1)
        for c in replay(game.events, turn=n, line=line)["commands"]
    ]
    assert "end" in kinds


def test_the_table_diff_names_every_move() -> None:
    before = [parse_cards(["5H", "6H", "7H"]), parse_cards(["9S", "9H", "JK"])]
    after = [parse_cards(["5H", "6H", "7H", "8H"]), parse_cards(["9S", "9H", "9D"])]
    diff = table_diff(tuple(map(tuple, before)), tuple(map(tuple, after)), 1)
    assert diff["removed"] == [
        {"meld": 1, "cards": ["5H", "6H", "7H"]},
        {"meld": 2, "cards": ["9S", "9H", "JK"]},
    ]
    assert diff["added"] == [
        {"meld": 1, "cards": ["5H", "6H", "7H", "8H"]},
        {"meld": 2, "cards": ["9S", "9H", "9D"]},
    ]
    assert diff["moves"] == [
        {"cards": ["5H", "6H", "7H"], "from": "meld 1", "to": "meld 1"},
        {"cards": ["8H"], "from": "hand of seat 1", "to": "meld 1"},
        {"cards": ["9S", "9H"], "from": "meld 2", "to": "meld 2"},
        {"cards": ["9D"], "from": "hand of seat 1", "to": "meld 2"},
        {"cards": ["JK"], "from": "meld 2", "to": "hand of seat 1"},
    ]
    unchanged = table_diff(tuple(map(tuple, before)), tuple(map(tuple, before)), 0)
    assert unchanged == {"removed": [], "added": [], "moves": []}


def test_a_play_in_a_replay_shows_where_its_cards_went(game: Game) -> None:
    event = next(e for e in game.events if e.type == "TurnPlayed")
    result = replay(game.events, version=event.version)
    played = sorted(cards_str(event.data["played"]))
    from_hand = sorted(
        c
        for move in result["diff"]["moves"]
        if move["from"] == f"hand of seat {event.data['seat']}"
        for c in move["cards"]
    )
    assert from_hand == played
    assert result["after"]["table"] == [cards_str(m) for m in event.data["layout"]]


def test_snapshot_hides_per_sight(game: Game) -> None:
    state = timeline(game.events[:60]).final
    seat = snapshot(state, Sight(1, False))
    assert seat["hands"]["1"] is not None and seat["hands"]["0"] is None
    full = snapshot(state, Sight(None, True))
    assert full["stock_cards"] == cards_str(state.stock)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"turn": 100000}, "no turn 100000"),
        ({"version": 100000}, "no version 100000"),
        ({"turn": 1, "version": 1}, "not both"),
        ({}, "not both"),
        ({"turn": 1, "viewer": 9}, "not a seat"),
        ({"turn": 1, "viewer": "host"}, "not a seat"),
    ],
)
def test_a_turn_that_is_not_there(game: Game, kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(ReplayError, match=words):
        replay(game.events, **kwargs)


def test_a_log_that_does_not_fold_is_refused_naming_the_version(game: Game) -> None:
    from dataclasses import replace

    events = list(game.events)
    events[40] = replace(events[40], type="NoSuchEvent")
    with pytest.raises(ReplayError, match="version 41"):
        replay(events, turn=30)
