"""The audit of games with the lifecycle's events (Decisions 15-19): a resignation, an absent
seat handed to a bot whose moves are recorded with the bot as actor, the player's return, a
forfeit, a cancelled game; each decided again from its log and found clean. A bot's move put
down as its player's is caught."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from shared.audit.replay import replay
from shared.audit.verify import Audit, audit_log
from shared.core.codes import Rejection
from shared.core.commands import (
    Cancel,
    Command,
    Context,
    Continue,
    CreateGame,
    RecordScores,
    Resign,
    Return,
    Sit,
    Start,
    Timeout,
)
from shared.core.decide import decide, round_sheet
from shared.core.evolve import evolve
from shared.core.shuffle import commitment
from shared.core.state import GameState
from shared.core.views import seat_view
from shared.infra.chain import chain
from shared.infra.gamelog import to_new
from shared.infra.stored import GENESIS_HASH, StoredEvent
from shared.play.bots import BOTS
from tests.audit.games import rechain

SEED = bytes(range(32))


class Log:
    """A game driven command by command into a stored, chained log (one append a command)."""

    def __init__(self, game_id: str) -> None:
        self.game_id = game_id
        self.state = GameState()
        self.stored: list[StoredEvent] = []
        self.now = 1_700_000_000.0
        self.rng = random.Random(7)

    def do(self, command: Command, actor: str, bot: str | None = None) -> None:
        self.now += 1
        answer = decide(self.state, command, Context(self.now, SEED, bot=bot))
        assert not isinstance(answer, Rejection), (command, answer)
        head = self.stored[-1].hash if self.stored else GENESIS_HASH
        new = [to_new(e, actor) for e in answer]
        cid = f"c{len(self.stored)}"
        self.stored += chain(self.game_id, new, len(self.stored) + 1, head, cid, self.now)
        for event in answer:
            self.state = evolve(self.state, event)

    def turn(self) -> None:
        """The seat on turn moves as a greedy bot (as the bot that plays it, if one does)."""
        turn = self.state.turn
        assert turn is not None
        bot = self.state.bot_at(turn.seat)
        command = BOTS[bot or "greedy"]().choose(seat_view(self.state, turn.seat), self.rng)
        self.do(command, f"bot:{bot}" if bot else f"seat:{turn.seat}", bot)

    def between(self) -> None:
        s = self.state
        if s.phase == "scoring":
            sheet = round_sheet(s.rules, s.rounds[-1])
            self.do(
                RecordScores(s.round, sheet.winner, sheet.went_out, sheet.seats, sheet.scores),
                "scoring",
            )
        else:
            self.do(Continue(), "continue")

    def finish(self, limit: int = 3000) -> None:
        for _ in range(limit):
            if self.state.status == "finished":
                return
            if self.state.phase == "turns":
                self.turn()
            else:
                self.between()
        raise AssertionError("the game did not finish")


def started(rules: str, options: dict[str, Any], seats: int, game_id: str) -> Log:
    log = Log(game_id)
    log.do(CreateGame(game_id, rules, options, seats, commitment(SEED)), "create")
    for seat in range(seats):
        log.do(Sit(f"p{seat}", f"s{seat}"), "sit")
    log.do(Start(), "start")
    return log


def audited(log: Log) -> Audit:
    last = log.stored[-1]
    return audit_log(log.stored, game_id=log.game_id, head=(last.version, last.hash))


def time_out(log: Log) -> None:
    turn = log.state.turn
    assert turn is not None
    if turn.deadline is None:
        log.do(Timeout(turn.number, "absent"), "timeout")
    else:
        log.now = turn.deadline
        log.do(Timeout(turn.number), "timeout")


FAMILIES = ["robbers", "robbers-classic", "rummikub"]


@pytest.mark.parametrize("rules", FAMILIES)
def test_a_game_with_a_resignation_audits_clean(rules: str) -> None:
    log = started(rules, {"match_rounds": 2} if rules != "robbers-classic" else {}, 3, "res-1")
    turn = log.state.turn
    assert turn is not None
    log.do(Resign(turn.seat), f"seat:{turn.seat}")
    log.finish()
    audit = audited(log)
    assert audit.ok, audit.to_json()
    assert any(e.type == "SeatResigned" for e in log.stored)


@pytest.mark.parametrize("rules", FAMILIES)
def test_a_seat_handed_to_a_bot_and_taken_back_audits_clean(rules: str) -> None:
    options = {"turn_seconds": None, "absent_turns": 1, "absent": "bot", "match": "single"}
    if rules == "robbers-classic":
        options.pop("match")
    log = started(rules, options, 2, "away-1")
    turn = log.state.turn
    assert turn is not None
    away = turn.seat
    time_out(log)  # the player misses a turn: its seat goes to the bot
    assert log.state.bot_at(away) == "greedy"
    for _ in range(6):  # the bot plays the seat's turns
        if log.state.phase != "turns":
            break
        log.turn()
    by_bot = [e for e in log.stored if e.actor == "bot:greedy"]
    assert by_bot
    shown = replay(log.stored, version=by_bot[0].version)  # a replay names the bot as actor
    assert shown["commands"][0]["actor"] == "bot:greedy", shown["commands"]
    if log.state.phase == "turns":
        log.do(Return(away), f"seat:{away}")
    log.finish()
    audit = audited(log)
    assert audit.ok, audit.to_json()
    # A bot's move put down as its player's own is caught: decided as the player's, it would
    # have taken the seat back first.
    # (Re-chained, as an operator rewriting the log would: only the replay can tell.)
    forged = rechain(
        [
            replace(e, actor=f"seat:{e.data.get('seat')}") if e.actor == "bot:greedy" else e
            for e in log.stored
        ]
    )
    audit = audit_log(forged, game_id=log.game_id)
    assert audit.verdict("replay").failed and not audit.verdict("chain").failed


def test_a_forfeit_and_a_cancelled_game_audit_clean() -> None:
    log = started("rummikub", {"absent_turns": 1, "absent": "forfeit"}, 3, "forfeit-1")
    time_out(log)
    assert any(e.type == "SeatResigned" for e in log.stored)
    log.finish()
    assert audited(log).ok
    waiting = Log("cancel-1")
    waiting.do(CreateGame("cancel-1", "robbers", {}, 2, commitment(SEED)), "create")
    waiting.do(Sit("p0"), "sit")
    waiting.do(Cancel(), "cancel")
    audit = audited(waiting)
    assert audit.ok, audit.to_json()
