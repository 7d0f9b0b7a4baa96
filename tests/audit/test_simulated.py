"""The audit passes every correct game: games between bots, played by the driver ``rummy simulate``
uses (``SelfPlay``: decide, evolve, one append per command), under every rule set and a mix of
options, audit clean, finished and while still live (seed not yet revealed).

Since the audit decides every command again with the engine itself, any disagreement here is a
game the audit would call corrupt although the rules made it: the failure this file guards
against (a discard-pile round that stalls after its last reshuffle was once reported as corrupt,
and ``rummy verify`` of its record exited 1)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

import shared.cli.audit as cli
from services.main import main
from shared.audit.record import build_record, dumps
from shared.audit.verify import Audit, audit_log
from shared.core.events import TurnPassed, event_from
from shared.core.evolve import fold
from shared.core.rulesets import RuleSetError, check_seats, rule_set
from shared.infra.stored import StoredEvent
from tests.audit.games import Game, play_game

ROOT = Path(__file__).resolve().parents[2]
PRESETS = ("robbers", "robbers-classic", "rummikub", "vatikan")
STALLED = {"discard_pile": True, "max_reshuffles": 0, "hand_size": 7, "match_rounds": 1}
# Option mixes every preset is played with: the discard pile with each reshuffle limit, timers,
# the fewest and most jokers, no opening, the ace round the corner, the redeem bonus, matches of
# several rounds.
MIXES: list[dict[str, Any]] = [
    {},
    STALLED,
    {"discard_pile": True, "max_reshuffles": 1, "hand_size": 9},
    {"discard_pile": True, "max_reshuffles": 2, "jokers": 0},
    {"discard_pile": True, "max_reshuffles": 3, "turn_seconds": 30},
    {"turn_seconds": 5, "jokers": 8},
    {"opening_points": 0, "ace": "wrap", "match_rounds": 2},
    {"redeem_bonus": 10, "match_rounds": 3, "jokers": 6},
    {"match_rounds": 4, "jokers": 0, "ace": "wrap"},
]
BOTS = ("random", "greedy", "clumsy")


def _audit(events: list[StoredEvent]) -> Audit:
    return audit_log(events, head=(events[-1].version, events[-1].hash))


def _configuration(rules: str, mix: dict[str, Any], seats: int) -> dict[str, Any] | None:
    """The options of ``mix`` for ``rules`` at ``seats`` seats (None where no deal fits)."""
    options = dict(mix)
    if rules == "robbers-classic":  # no points in these rules: nothing to open with or redeem
        options.pop("redeem_bonus", None)
        options.pop("opening_points", None)
    if seats > rule_set(rules).max_players:
        options["max_players"] = seats
    try:
        check_seats(rule_set(rules, options), seats)
    except RuleSetError:
        return None
    return options


def _cases(games_per_case: int) -> list[tuple[str, dict[str, Any], int, int]]:
    """(rules, options, seats, luck) for every preset and mix, seats going round 2-6."""
    cases = []
    number = 0
    for rules in PRESETS:
        for mix in MIXES:
            for _ in range(games_per_case):
                number += 1
                seats = 2 + number % 5
                options = _configuration(rules, mix, seats)
                if options is not None:
                    cases.append((rules, options, seats, number))
    return cases


def _play(rules: str, options: dict[str, Any], seats: int, luck: int) -> Game:
    rng = random.Random(luck)
    bots = tuple(BOTS[(seat + luck) % len(BOTS)] for seat in range(seats))
    timers = rule_set(rules, options).turn_seconds is not None
    game = play_game(luck, rules, options, bots, 0.1 if timers else 0.0, rng.randrange(10**6))
    assert game.report.finished and not game.report.violations, (rules, options, luck)
    return game


def _check(game: Game) -> None:
    """The finished game audits clean, and so does the live game before each score sheet and
    before the match's end (its seed still secret)."""
    audit = _audit(game.events)
    assert audit.ok, audit.to_json()
    assert {v.status for v in audit.verdicts} <= {"ok", "skipped"}, audit.to_json()
    ends = [i for i, e in enumerate(game.events) if e.type in ("ScoresRecorded", "MatchEnded")]
    for end in ends:
        live = _audit(game.events[:end])
        assert live.ok, live.to_json()
        assert live.verdict("seed").status == "pending", live.to_json()


@pytest.mark.parametrize(("rules", "options", "seats", "luck"), _cases(1))
def test_a_simulated_game_audits_clean(
    rules: str, options: dict[str, Any], seats: int, luck: int
) -> None:
    _check(_play(rules, options, seats, luck))


@pytest.mark.slow
@pytest.mark.parametrize(("rules", "options", "seats", "luck"), _cases(8))
def test_many_simulated_games_audit_clean(
    rules: str, options: dict[str, Any], seats: int, luck: int
) -> None:
    _check(_play(rules, options, seats, luck))


def test_the_cases_cover_every_preset_seat_count_and_reshuffle_limit() -> None:
    cases = _cases(1)
    assert {rules for rules, *_ in cases} == set(PRESETS)
    assert {seats for _, _, seats, _ in cases} == {2, 3, 4, 5, 6}
    limits = {o.get("max_reshuffles") for _, o, *_ in cases if o.get("discard_pile")}
    assert limits == {0, 1, 2, 3}


# --- the stalled discard-pile round --------------------------------------------------------------


def _stalled_game() -> Game:
    """A robbers game whose discard-pile round stalls: the stock empty, no reshuffle left, seats
    passing while the pile holds many cards."""
    for luck in range(50):
        game = play_game(900 + luck, "robbers", STALLED, ("random",) * 3, 0.0, luck)
        events = [event_from(e.type, e.data) for e in game.events]
        for i, event in enumerate(events):
            if isinstance(event, TurnPassed):
                before = fold(events[:i])
                if not before.stock and len(before.discard) > 1 and before.reshuffles == 0:
                    return game
    pytest.fail("no game of these options stalled with cards in the pile")


@pytest.fixture(scope="module")
def stalled() -> Game:
    return _stalled_game()


def test_a_stalled_discard_pile_round_audits_clean(stalled: Game) -> None:
    assert stalled.report.finished and not stalled.report.violations
    _check(stalled)


def test_rummy_verify_passes_the_record_of_a_stalled_round(stalled: Game, tmp_path: Path) -> None:
    path = tmp_path / "stalled.rrec"
    path.write_text(dumps(build_record(stalled.events, exported=0.0)), encoding="utf-8")
    clean = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("RUMMY_")}
    done = subprocess.run(
        [sys.executable, "-m", "services.main", "verify", str(path)],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every check holds" in done.stdout


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """`rummy` talks to one private fakeredis server under a unique prefix."""
    server = fakeredis.FakeServer()
    prefix = f"sim{uuid.uuid4().hex[:8]}:"
    monkeypatch.setattr(
        cli, "open_client", lambda: (fakeredis.aioredis.FakeRedis(server=server), prefix)
    )
    yield prefix


def test_rummy_audit_passes_a_stored_stalled_round(
    store: str, stalled: Game, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stalled.rrec"
    path.write_text(dumps(build_record(stalled.events, exported=0.0)), encoding="utf-8")
    assert main(["import", str(path)]) == 0
    assert main(["audit", stalled.game_id]) == 0, capsys.readouterr().out
    assert "every check holds" in capsys.readouterr().out
