"""Decision 14 in the audit: self-played games whose ``stubborn`` bots run into
``max_rejections`` in every turn shape audit clean, replay turn by turn, and a forged or
mutilated forfeit is caught."""

from __future__ import annotations

from typing import Any

import pytest

from shared.audit.replay import replay
from shared.audit.verify import Audit, audit_log
from shared.infra.stored import StoredEvent
from tests.audit.games import Game, play_game, rechain, with_data

STUBBORN = ("stubborn", "random", "stubborn")
# Every turn shape: play-or-draw (robbers, rummikub with its timer), place-draw-place, the pile.
SHAPES: list[tuple[str, dict[str, Any], tuple[str, ...], float]] = [
    ("robbers", {"match_rounds": 1}, STUBBORN, 0.0),
    ("robbers", {"match_rounds": 1, "max_rejections": 0, "failed_turn_draw": 2}, STUBBORN, 0.0),
    ("rummikub", {"match_rounds": 1}, STUBBORN, 0.05),
    ("robbers-classic", {}, STUBBORN, 0.0),
    ("robbers", {"discard_pile": True, "match": "single"}, STUBBORN, 0.0),
]


@pytest.fixture(scope="module")
def forfeiting() -> list[Game]:
    """One finished game of each shape, each with forfeited turns."""
    out = []
    for index, (rules, options, bots, timeouts) in enumerate(SHAPES):
        game = play_game(700 + index, rules, options, bots, timeouts)
        assert game.report.finished and not game.report.violations, (rules, options)
        assert any(e.type == "TurnForfeited" for e in game.events), (rules, options)
        out.append(game)
    return out


def _audit(game: Game, events: list[StoredEvent]) -> Audit:
    return audit_log(events, game_id=game.game_id, head=(events[-1].version, events[-1].hash))


def test_games_with_forfeited_turns_audit_clean(forfeiting: list[Game]) -> None:
    for game in forfeiting:
        audit = _audit(game, game.events)
        assert audit.ok, audit.to_json()
        limit = game.report.state.rules.max_rejections
        for i, event in enumerate(game.events):
            if event.type == "TurnForfeited":
                before = game.events[i - 1]
                assert before.type == "CommandRejected" and before.command_id == event.command_id
                assert event.data["rejected"] == limit + 1


def test_a_forfeit_replays_as_the_rejected_command_that_ended_the_turn(
    forfeiting: list[Game],
) -> None:
    for game in forfeiting:
        forfeit = next(e for e in game.events if e.type == "TurnForfeited")
        shown = replay(game.events, version=forfeit.version)
        [command] = shown["commands"]
        kinds = [e["type"] for e in command["events"]]
        assert kinds[:2] == ["CommandRejected", "TurnForfeited"]
        assert kinds[-1] in ("TurnStarted", "RoundEnded"), kinds
        assert (command["kind"], command["outcome"], command["agrees"]) == (
            "play",
            "rejected",
            True,
        )


def test_a_forged_forfeit_is_caught(forfeiting: list[Game]) -> None:
    """A forfeit claimed before the limit (one of its rejected attempts deleted), or with a
    rejection count that is not the turn's, fails the replay check at the forfeit."""
    game = forfeiting[0]
    at = next(i for i, e in enumerate(game.events) if e.type == "TurnForfeited")
    deleted = rechain(game.events[: at - 2] + game.events[at - 1 :], at - 2)
    audit = _audit(game, deleted)
    bad = audit.first_bad()
    assert bad is not None and bad.check == "replay", audit.to_json()
    assert bad.version == game.events[at - 1].version and "TurnForfeited" in bad.message

    edited = list(game.events)
    edited[at] = with_data(edited[at], rejected=9)
    audit = _audit(game, rechain(edited, at))
    bad = audit.first_bad()
    assert bad is not None and (bad.check, bad.version) == ("replay", game.events[at].version)
