"""The director's rulings: each is an event in the log, each shows in the standings' history
with its reason, and annulments and forfeits change the standings as documented (a verdict
only notes what was found)."""

from __future__ import annotations

import pytest

from shared.tournament.commands import SERVICE, TournamentError
from shared.tournament.events import RulingRecorded, StandingsRecorded, TournamentFinished
from shared.tournament.state import fold
from tests.tournament.desk import Desk, player

P0, P1, P2, P3 = (player(i) for i in range(4))


def played_round(rules: str = "rummikub", rounds: int = 2) -> Desk:
    """Four entrants at two tables of two, round 1 over: p0 beat p1 (3-1, +30), p2 beat p3
    (2-2 on wins but +10)."""
    desk = Desk().open(4, rules=rules, rounds=rounds, ratings=[4, 3, 2, 1])
    first, second = desk.pair()
    if rules == "robbers":
        desk.finish(first, [{"total": 5, "outs": 2, "winner": True}, {"total": 60}])
        desk.finish(second, [{"total": 20, "outs": 1, "winner": True}, {"total": 25}])
    else:
        desk.finish(first, [{"wins": 3, "total": 30, "winner": True}, {"wins": 1, "total": -30}])
        desk.finish(second, [{"wins": 2, "total": 10, "winner": True}, {"wins": 2, "total": -10}])
    return desk


def test_a_forfeit_changes_the_standings_and_is_in_the_log_with_its_reason() -> None:
    desk = played_round()
    before = [r.player for r in desk.state.standings]
    assert before == [P0, P2, P3, P1]
    events = desk.send(
        "rule", {"kind": "forfeit", "round": 1, "table": 1, "player": P0, "reason": "no show"}
    )
    assert isinstance(events[0], RulingRecorded) and events[0].reason == "no show"
    assert isinstance(events[1], StandingsRecorded) and events[1].round == 1
    after = desk.state.standings
    assert [r.player for r in after] == [P2, P3, P1, P0]
    forfeited = next(r for r in after if r.player == P0)
    assert forfeited.keys[:2] == (0.0, -30.0)  # last at the table: no wins, its lowest score
    assert forfeited.forfeits == 1
    assert forfeited.notes == (f"round 1 table 1: forfeit against {P0}, scored as last (no show)",)
    # The history keeps both: the standings before the ruling and after, each as recorded.
    assert [number for number, _ in desk.state.history] == [1, 1]
    assert desk.state.history[0][1] != desk.state.history[1][1]
    assert fold(desk.log) == desk.state


def test_a_forfeit_in_robbers_scores_the_tables_highest_penalty() -> None:
    desk = played_round("robbers")
    desk.send("rule", {"kind": "forfeit", "round": 1, "table": 1, "player": P0, "reason": "x"})
    row = next(r for r in desk.state.standings if r.player == P0)
    assert row.score == 60.0 and row.keys[1] == 0.0
    assert desk.state.standings[-1].player == P0


def test_an_annulled_table_counts_for_nobody_its_entrants_score_the_rounds_mean() -> None:
    desk = played_round()
    desk.send("rule", {"kind": "annul", "round": 1, "table": 1, "reason": "misdeal"})
    rows = {r.player: r for r in desk.state.standings}
    # the round's mean line is now that of the one table that counts: 2 wins, 0
    assert rows[P0].keys[:2] == rows[P1].keys[:2] == (2.0, 0.0)
    assert rows[P0].notes == ("round 1 table 1: annulled, scored as the round's mean (misdeal)",)
    assert desk.state.table(1, 1).status == "annulled"  # type: ignore[union-attr]
    # they did not meet, as far as the pairing goes: they may sit together again
    from shared.tournament.standings import meetings

    assert (min(P0, P1), max(P0, P1)) not in meetings(desk.state)


def test_annulling_a_table_in_play_ends_the_round_and_its_result_is_refused() -> None:
    desk = Desk().open(4, rounds=2, ratings=[4, 3, 2, 1])
    first, second = desk.pair()
    desk.finish(first, [{"wins": 3, "winner": True}, {"wins": 1}])
    events = desk.send("rule", {"kind": "annul", "round": 1, "table": 2, "reason": "dispute"})
    assert [type(e).__name__ for e in events] == ["RulingRecorded", "StandingsRecorded"]
    assert desk.state.round_over()
    with pytest.raises(TournamentError) as refused:
        desk.finish(second, [{"wins": 2}, {"wins": 2}])
    assert refused.value.code == "table_annulled"
    assert desk.pair()  # round 2 can be paired


def test_a_verdict_is_noted_in_the_history_and_changes_no_value() -> None:
    desk = played_round()
    before = desk.state.standings
    desk.send(
        "rule",
        {
            "kind": "verdict",
            "round": 1,
            "table": 2,
            "turn": 17,
            "verdict": "the layout was legal; the result stands",
            "reason": "p3 disputed turn 17",
        },
    )
    after = desk.state.standings
    assert [(r.player, r.keys) for r in after] == [(r.player, r.keys) for r in before]
    note = "round 1 table 2: verdict on turn 17: the layout was legal; the result stands "
    note += "(p3 disputed turn 17)"
    assert next(r for r in after if r.player == P3).notes == (note,)
    assert next(r for r in after if r.player == P2).notes == (note,)
    assert next(r for r in after if r.player == P0).notes == ()
    assert len(desk.state.history) == 2


def test_a_ruling_repeated_is_refused_and_recorded_once() -> None:
    desk = played_round()
    ruling = {"kind": "forfeit", "round": 1, "table": 1, "player": P1, "reason": "late"}
    desk.send("rule", ruling)
    version = desk.state.version
    with pytest.raises(TournamentError) as refused:
        desk.send("rule", ruling)
    assert refused.value.code == "ruling_recorded"
    assert desk.state.version == version
    assert sum(isinstance(e, RulingRecorded) for e in desk.log) == 1


@pytest.mark.parametrize(
    ("payload", "code", "field"),
    [
        (
            {"kind": "forfeit", "round": 1, "table": 1, "player": P2, "reason": "x"},
            "not_at_table",
            "player",
        ),
        ({"kind": "annul", "round": 1, "table": 3, "reason": "x"}, "no_such_table", "table"),
        ({"kind": "annul", "round": 2, "table": 1, "reason": "x"}, "no_such_table", "round"),
        ({"kind": "annul", "round": 1, "table": 1}, "bad_command", "reason"),
        ({"kind": "verdict", "round": 1, "table": 1, "reason": "x"}, "bad_command", "turn"),
        ({"kind": "void", "round": 1, "table": 1, "reason": "x"}, "bad_command", "kind"),
        (
            {"kind": "annul", "round": 1, "table": 1, "reason": "x", "player": P0},
            "bad_command",
            "player",
        ),
    ],
)
def test_a_bad_ruling_is_refused_naming_the_field(
    payload: dict[str, object], code: str, field: str
) -> None:
    desk = played_round()
    version = desk.state.version
    with pytest.raises(TournamentError) as refused:
        desk.send("rule", payload)
    assert (refused.value.code, refused.value.field) == (code, field)
    assert desk.state.version == version


def test_only_the_director_rules() -> None:
    desk = played_round()
    for actor in (P0, SERVICE):
        with pytest.raises(TournamentError) as refused:
            desk.send("rule", {"kind": "annul", "round": 1, "table": 1, "reason": "x"}, actor)
        assert refused.value.code == "not_director"


def test_a_ruling_after_the_finish_corrects_the_final_standings() -> None:
    desk = played_round(rounds=1)
    desk.send("finish", {}, SERVICE)
    assert desk.state.status == "finished" and desk.state.standings[0].player == P0
    events = desk.send(
        "rule", {"kind": "forfeit", "round": 1, "table": 1, "player": P0, "reason": "appeal"}
    )
    assert [type(e) for e in events] == [RulingRecorded, StandingsRecorded, TournamentFinished]
    assert desk.state.standings[0].player == P2
    assert desk.state.status == "finished"
