"""The flow between rounds (the engine's side): ``RoundEnded`` -> the scoring role's
``RecordScores`` (checked against ``round_sheet``) -> ``Continue`` deals the next round or ends
the match with ``MatchEnded`` and ``SeedRevealed``; tie-break rounds among the tied seats only;
and what the views show of the last round and the standings."""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from typing import Any

import pytest

from shared.core.codes import Rejection
from shared.core.commands import Context, Continue, Draw, Pass, Play, RecordScores, Timeout
from shared.core.decide import decide, round_sheet
from shared.core.events import (
    MatchEnded,
    RoundDealt,
    RoundEnded,
    ScoresRecorded,
    SeedRevealed,
    TurnStarted,
)
from shared.core.evolve import fold
from shared.core.views import standings, view_json
from shared.play.bots import GreedyBot, RandomBot
from shared.play.selfplay import SelfPlay

from .helpers import SEED, T0, Game, go_out, melds, record_scores, start_game


def out_round(
    game: Game, seat: int, others: dict[int, str], table: list[str] | None = None
) -> None:
    """End the current round with ``seat`` going out (it plays ``5H 6H 7H``) while every other
    seat of the round holds ``others[seat]``."""
    s = game.state
    hands = ["" for _ in range(s.seats)]
    for other, hand in others.items():
        hands[other] = hand
    hands[seat] = "5H 6H 7H"
    game.setup(hands=hands, turn=seat, opened=[True] * s.seats, table=table or [])
    events = game.do(Play(seat, (*game.state.table, *melds("5H 6H 7H"))))
    assert isinstance(events[-1], RoundEnded)


def sheet_command(game: Game, **changes: Any) -> RecordScores:
    """The right score sheet of the last round, with ``changes`` applied."""
    s = game.state
    sheet = round_sheet(s.rules, s.rounds[-1])
    command = RecordScores(s.round, sheet.winner, sheet.went_out, sheet.seats, sheet.scores)
    return replace(command, **changes)


def test_continue_waits_for_the_score_sheet() -> None:
    """After ``RoundEnded`` the engine refuses to deal on (``no_scores_yet``) until the score
    sheet is recorded, so scoring may run in another process."""
    game = start_game("robbers", seats=3)
    game.refuse(Continue(), "no_scores_yet")
    out_round(game, 0, {1: "9C", 2: "KC KD"})
    assert game.state.phase == "scoring"
    game.refuse(Continue(), "no_scores_yet")
    game.refuse(Draw(1), "round_over")


def test_record_scores_is_checked_against_the_round() -> None:
    """A score sheet that differs from ``round_sheet`` in any field is ``scores_wrong``; the
    right one is recorded as ``ScoresRecorded``; a second one is ``scores_recorded``."""
    game = start_game("robbers", seats=3)
    game.refuse(RecordScores(1, 0, True, (0, 1, 2), (0, 0, 0)), "round_over")
    out_round(game, 0, {1: "9C", 2: "KC KD"})
    right = sheet_command(game)
    assert (right.winner, right.went_out, right.seats, right.scores) == (
        0,
        True,
        (0, 1, 2),
        (0, 9, 20),
    )
    for wrong in (
        replace(right, round=2),
        replace(right, winner=1),
        replace(right, went_out=False),
        replace(right, scores=(0, 9, 19)),
        replace(right, scores=None),
        replace(right, seats=(0, 1)),
    ):
        game.refuse(wrong, "scores_wrong")
    assert game.do(right) == [ScoresRecorded(1, 0, True, (0, 1, 2), (0, 9, 20))]
    assert game.state.phase == "next"
    game.refuse(right, "scores_recorded")


def test_continue_deals_the_next_round() -> None:
    """After the score sheet ``Continue`` deals round 2 from the seeded shuffle and starts its
    first turn; ``Continue`` needs the seed."""
    game = start_game("robbers", seats=3)
    out_round(game, 0, {1: "9C", 2: "KC KD"})
    record_scores(game)
    wrong = decide(game.state, Continue(), Context(T0, b"wrong"))
    assert isinstance(wrong, Rejection) and wrong.code == "bad_seed"
    deal, turn = game.do(Continue())
    assert isinstance(deal, RoundDealt) and isinstance(turn, TurnStarted)
    assert deal.round == 2 and deal.seats == (0, 1, 2)
    assert [len(h) for h in deal.hands] == [13, 13, 13]
    assert game.state.phase == "turns" and game.state.table == ()
    assert game.state.opened == (False, False, False)
    assert game.state.redeemed == (0, 0, 0)


def test_match_ends_with_the_seed_revealed() -> None:
    """After the last round ``Continue`` records ``MatchEnded`` with the standings and then
    ``SeedRevealed`` with the seed in hex, whose SHA-256 is the commitment made at creation."""
    game = start_game("robbers", {"match_rounds": 2}, seats=3)
    out_round(game, 0, {1: "9C", 2: "KC KD"})
    record_scores(game)
    game.do(Continue())
    out_round(game, 1, {0: "AS", 2: "2C"})
    record_scores(game)
    ended, revealed = game.do(Continue())
    assert ended == MatchEnded((1,), (15, 9, 22), (1, 1, 0), (1, 1, 0))
    assert isinstance(revealed, SeedRevealed)
    assert revealed.seed == SEED.hex()
    assert hashlib.sha256(bytes.fromhex(revealed.seed)).hexdigest() == game.state.commitment
    assert game.state.status == "finished" and game.state.winners == (1,)
    assert game.state.revealed_seed == SEED.hex()
    game.refuse(Draw(0), "game_finished")
    game.refuse(Timeout(game.state.turn_number), "stale_timeout")
    game.refuse(Continue(), "no_scores_yet")


def test_single_round_match_robbers_classic() -> None:
    """robbers-classic is one game: going out ends the match, with no scores kept."""
    game = start_game("robbers-classic", seats=3)
    out_round(game, 2, {0: "9C", 1: "KC KD"})
    assert record_scores(game) == [ScoresRecorded(1, 2, True, (0, 1, 2), None)]
    ended, revealed = game.do(Continue())
    assert ended == MatchEnded((2,), None, (0, 0, 1), (0, 0, 1))
    assert isinstance(revealed, SeedRevealed)


def test_rummikub_plays_as_many_games_as_seats() -> None:
    """rummikub: as many games as seats, plus/minus scores summing to zero, most wins wins."""
    game = start_game("rummikub", seats=2)
    out_round(game, 0, {1: "9C 10C"})
    assert record_scores(game) == [ScoresRecorded(1, 0, True, (0, 1), (19, -19))]
    deal, _ = game.do(Continue())
    assert isinstance(deal, RoundDealt) and deal.round == 2
    out_round(game, 0, {1: "JK"})
    assert record_scores(game) == [ScoresRecorded(2, 0, True, (0, 1), (30, -30))]
    ended, _ = game.do(Continue())
    assert ended == MatchEnded((0,), (49, -49), (2, 0), (2, 0))


def test_stalled_round_is_scored_by_the_rules() -> None:
    """A stalled round's sheet: the fewest cards wins (robbers) and has not gone out."""
    game = start_game("robbers", seats=3)
    game.setup(hands=["9C KC", "2S", "3S 4S"], stock="", turn=0, opened=[True] * 3)
    for seat in (0, 1, 2):
        game.do(Pass(seat))
    assert game.state.phase == "scoring"
    assert record_scores(game) == [ScoresRecorded(1, 1, False, (0, 1, 2), (19, 0, 7))]


def test_tie_break_round_among_the_tied_seats_only() -> None:
    """Decision 8 end to end: a tie after the agreed rounds is broken by an extra round dealt to
    the tied seats only; turns skip the other seat; its winner wins the match."""
    game = start_game("robbers", {"match_rounds": 2}, seats=3)
    out_round(game, 0, {1: "9C", 2: "KC KD"})
    record_scores(game)
    game.do(Continue())
    out_round(game, 1, {0: "9S", 2: "KC KD"})
    record_scores(game)
    deal, turn = game.do(Continue())
    assert isinstance(deal, RoundDealt) and isinstance(turn, TurnStarted)
    assert deal.round == 3 and deal.seats == (0, 1)
    assert deal.hands[2] == () and len(deal.hands[0]) == len(deal.hands[1]) == 13
    assert deal.starter in (0, 1) and turn.seat == deal.starter
    first = turn.seat
    _, after = game.do(Draw(first))
    assert isinstance(after, TurnStarted) and after.seat == 1 - first
    _, after = game.do(Draw(1 - first))
    assert isinstance(after, TurnStarted) and after.seat == first
    game.refuse(Draw(2), "not_your_turn")
    out_round(game, 0, {1: "9C"})
    assert record_scores(game) == [ScoresRecorded(3, 0, True, (0, 1), (0, 9))]
    ended, _ = game.do(Continue())
    assert ended == MatchEnded((0,), (9, 18, 40), (2, 1, 0), (2, 1, 0))


def test_redeem_bonus_reaches_the_score_sheet() -> None:
    """Decision 9 through the engine: with ``redeem_bonus`` 5 a seat that redeemed a joker and
    went out scores -5."""
    game = start_game("robbers", {"redeem_bonus": 5}, seats=2)
    game.setup(hands=["8D 4S 5S", "9C"], table=["7D JK 9D"], turn=0, opened=[True, True])
    game.do(Play(0, melds("7D 8D 9D", "4S 5S JK")))
    assert record_scores(game) == [ScoresRecorded(1, 0, True, (0, 1), (-5, 9))]


# --- views of the last round and the standings --------------------------------------------------


def test_views_show_the_last_round_and_the_standings() -> None:
    """Before the sheet the last round shows its facts (hand counts, not hands); after it the
    winner and scores, and every seat's cumulative score; the seed only once revealed."""
    game = start_game("robbers", {"match_rounds": 2}, seats=3)
    view = view_json(game.state, 0)
    assert view["last_round"] is None and [s["score"] for s in view["seats"]] == [0, 0, 0]
    out_round(game, 0, {1: "9C", 2: "KC KD"})
    shown = view_json(game.state, 1)["last_round"]
    assert shown == {
        "round": 1,
        "reason": "out",
        "out": 0,
        "winner": None,
        "went_out": False,
        "recorded": False,
        "scores": None,
        "hand_counts": {"0": 0, "1": 1, "2": 2},
    }
    record_scores(game)
    for viewer in (None, 0, 1, 2):
        view = view_json(game.state, viewer)
        last = view["last_round"]
        assert last["recorded"] and last["winner"] == 0 and last["went_out"]
        assert last["scores"] == {"0": 0, "1": 9, "2": 20}
        assert "hands" not in last
        assert [s["score"] for s in view["seats"]] == [0, 9, 20]
        assert view["seed"] is None and view["winner"] is None
    game.do(Continue())
    out_round(game, 1, {0: "AS", 2: "2C"})
    record_scores(game)
    assert standings(game.state) == [15, 9, 22]
    game.do(Continue())
    view = view_json(game.state, None)
    assert view["status"] == "finished" and view["winner"] == [1]
    assert view["seed"] == SEED.hex()
    assert view["last_round"]["hands"] == {"0": ["AS"], "1": [], "2": ["2C"]}
    assert [s["score"] for s in view["seats"]] == [15, 9, 22]


def test_classic_standings_are_empty() -> None:
    """robbers-classic keeps no score: the standings are ``None`` per seat."""
    game = start_game("robbers-classic", seats=2)
    go_out(game)
    record_scores(game)
    assert [s["score"] for s in view_json(game.state, 0)["seats"]] == [None, None]


@pytest.mark.parametrize(
    ("rules", "options", "players"),
    [
        ("robbers", {}, 3),
        ("robbers", {"match": "first_out", "match_target": 1}, 2),
        ("rummikub", {}, 3),
        ("robbers-classic", {}, 4),
    ],
)
def test_whole_match_standings_replay(rules: str, options: dict[str, Any], players: int) -> None:
    """Over a whole self-played match: every round is scored before the next is dealt, the
    match ends with ``MatchEnded`` then ``SeedRevealed`` as the last events, its totals equal
    the sum of the recorded sheets (and the views' scores), and the fold of the events
    reproduces the standings."""
    bots = [GreedyBot() if i % 2 else RandomBot() for i in range(players)]
    report = SelfPlay(rules, options, bots, SEED, random.Random(5)).play()
    assert report.finished and report.violations == []
    events = report.events
    kinds = [type(e) for e in events]
    assert kinds[-2:] == [MatchEnded, SeedRevealed]
    for i, kind in enumerate(kinds):
        if kind is RoundEnded:
            assert kinds[i + 1] is ScoresRecorded
            assert kinds[i + 2] in (RoundDealt, MatchEnded)
    ended = events[-2]
    assert isinstance(ended, MatchEnded)
    sheets = [e for e in events if isinstance(e, ScoresRecorded)]
    state = fold(events)
    if ended.totals is None:
        assert all(s.scores is None for s in sheets)
    else:
        totals = [0] * players
        for sheet in sheets:
            for seat, score in zip(sheet.seats, sheet.scores or (), strict=True):
                totals[seat] += score
        assert list(ended.totals) == totals == standings(state)
    assert state.winners == ended.winners
    assert set(ended.winners) <= set(range(players))
