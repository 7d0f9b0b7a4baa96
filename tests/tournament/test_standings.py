"""Standings by each rule family's ranking from the source texts (Rummikub: most game wins,
then the higher cumulative score; Robbers' Rummy: the lowest cumulative penalty, then the most
rounds gone out; the classic rules: tables won), then the common tie-breaks (Buchholz,
head-to-head, rating), with byes, cancelled games and withdrawals scored as documented."""

from __future__ import annotations

from shared.tournament.events import Standing
from shared.tournament.standings import criteria, family, lines, standings
from tests.tournament.desk import Desk, player


def order(rows: tuple[Standing, ...]) -> list[str]:
    return [r.player for r in rows]


def row(rows: tuple[Standing, ...], who: str) -> Standing:
    return next(r for r in rows if r.player == who)


P0, P1, P2, P3 = (player(i) for i in range(4))


def test_rummikub_ranks_by_game_wins_then_the_higher_cumulative_score() -> None:
    desk = Desk().open(4, rules="rummikub", ratings=[4, 3, 2, 1])
    first, second = desk.pair()
    assert first.seats == (P0, P1) and second.seats == (P2, P3)
    desk.finish(first, [{"wins": 3, "total": 50, "winner": True}, {"wins": 1, "total": -50}])
    desk.finish(second, [{"wins": 3, "total": 20, "winner": True}, {"wins": 1, "total": -20}])
    rows = desk.state.standings
    assert order(rows) == [P0, P2, P3, P1]
    assert row(rows, P0).keys[:2] == (3.0, 50.0) and row(rows, P2).keys[:2] == (3.0, 20.0)
    assert criteria("rummikub")[:2] == ("game wins", "cumulative score")


def test_robbers_ranks_by_the_lowest_penalty_then_the_most_rounds_gone_out() -> None:
    desk = Desk().open(4, rules="robbers", ratings=[4, 3, 2, 1])
    first, second = desk.pair()
    desk.finish(first, [{"total": 10, "outs": 2, "winner": True}, {"total": 30, "outs": 1}])
    desk.finish(second, [{"total": 10, "outs": 3, "winner": True}, {"total": 40}])
    rows = desk.state.standings
    assert order(rows) == [P2, P0, P1, P3]
    assert [r.score for r in rows] == [10.0, 10.0, 30.0, 40.0]
    assert criteria("robbers")[:2] == ("penalty", "rounds gone out")
    assert family("vatikan") == "robbers"


def test_robbers_classic_ranks_by_tables_won_and_a_shared_win_counts_for_each() -> None:
    desk = Desk().open(4, rules="robbers-classic", ratings=[4, 3, 2, 1])
    first, second = desk.pair()
    desk.finish(first, [{"winner": True, "total": None}, {"winner": True, "total": None}])
    desk.finish(second, [{"winner": False, "total": None}, {"winner": True, "total": None}])
    rows = desk.state.standings
    assert [r.score for r in rows] == [1.0, 1.0, 1.0, 0.0]
    assert order(rows)[-1] == P2
    assert criteria("robbers-classic")[0] == "tables won"


def test_buchholz_then_head_to_head_then_rating_break_what_the_family_leaves_tied() -> None:
    """All but the last win twice at 0: p0 and p1 drew with each other (Buchholz 2: the other's
    two wins), p2 beat p3 (Buchholz 0), so p2 is third despite the best rating; p0 and p1 are
    level on head-to-head too (neither placed above the other), so the rating puts p1 first."""
    desk = Desk().open(4, ratings=[1, 2, 4, 3])
    first, second = desk.pair()
    assert first.seats == (P2, P3) and second.seats == (P1, P0)
    desk.finish(first, [{"wins": 2, "winner": True}, {"wins": 0}])
    desk.finish(second, [{"wins": 2, "winner": True}, {"wins": 2, "winner": True}])
    rows = desk.state.standings
    assert order(rows) == [P1, P0, P2, P3]
    names = criteria("rummikub")
    buchholz, h2h = names.index("Buchholz"), names.index("head-to-head")
    assert [r.keys[buchholz] for r in rows] == [2.0, 2.0, 0.0, 2.0]
    assert row(rows, P1).keys[h2h] == row(rows, P0).keys[h2h] == 0.0
    assert [r.rank for r in rows] == [1, 2, 3, 4]


def test_head_to_head_ranks_the_one_who_placed_above_the_other_where_they_met() -> None:
    """Equal wins, score and Buchholz; p0 went out more at their table, so it placed above p1
    there and ranks above it, though p1 is rated higher."""
    desk = Desk().open(2, ratings=[1, 2])
    (table,) = desk.pair()
    desk.finish(table, [{"wins": 2, "total": 5, "outs": 0}, {"wins": 2, "total": 5, "outs": 1}])
    rows = desk.state.standings
    assert table.seats == (P1, P0)
    assert order(rows) == [P0, P1]
    assert row(rows, P0).keys[criteria("rummikub").index("head-to-head")] == 1.0


def test_entrants_level_on_every_criterion_share_a_rank() -> None:
    desk = Desk().open(2, ratings=[5, 5])
    (table,) = desk.pair()
    desk.finish(table, [{"wins": 1, "total": 0}, {"wins": 1, "total": 0}])
    assert [r.rank for r in desk.state.standings] == [1, 1]
    assert order(desk.state.standings) == [P0, P1]  # then in registration order


def test_a_bye_scores_the_rounds_mean_line() -> None:
    desk = Desk().open(3, ratings=[3, 2, 1])
    (table,) = desk.pair()
    assert desk.state.played[0].byes == (player(2),)
    desk.finish(table, [{"wins": 3, "total": 30, "winner": True}, {"wins": 1, "total": -30}])
    rows = desk.state.standings
    assert order(rows) == [P0, P2, P1]
    bye = row(rows, P2)
    assert bye.keys[:2] == (2.0, 0.0) and bye.byes == 1 and bye.tables == 0
    assert bye.notes == ("round 1: bye, scored as the round's mean",)


def test_a_bye_in_robbers_scores_the_mean_penalty_not_none() -> None:
    """A bye scored as nothing would lead a lowest-penalty ranking; it scores the mean."""
    desk = Desk().open(3, rules="robbers", ratings=[3, 2, 1])
    (table,) = desk.pair()
    desk.finish(table, [{"total": 0, "winner": True, "outs": 1}, {"total": 45}])
    rows = desk.state.standings
    assert order(rows) == [P0, P2, P1]
    assert row(rows, P2).score == 22.5


def test_a_cancelled_game_counts_for_nobody_and_its_entrants_score_the_rounds_mean() -> None:
    desk = Desk().open(4, ratings=[4, 3, 2, 1])
    first, second = desk.pair()
    desk.finish(first, [{"wins": 4, "total": 40, "winner": True}, {"wins": 0, "total": -40}])
    desk.send(
        "table_finished",
        {
            "round": 1,
            "table": 2,
            "game_id": second.game_id,
            "results": [],
            "head": [7, "0" * 64],
        },
        "service",
    )
    rows = desk.state.standings
    assert row(rows, P2).keys[:2] == row(rows, P3).keys[:2] == (2.0, 0.0)
    assert row(rows, P2).notes == ("round 1 table 2: game cancelled, scored as the round's mean",)
    assert order(rows) == [P0, P2, P3, P1]


def test_a_withdrawn_entrant_scores_each_later_round_as_the_rounds_worst() -> None:
    desk = Desk().open(4, rounds=2, ratings=[4, 3, 2, 1])
    first, second = desk.pair()
    desk.finish(first, [{"wins": 3, "total": 30}, {"wins": 1, "total": -30}])
    desk.finish(second, [{"wins": 2, "total": 10}, {"wins": 2, "total": -10}])
    desk.send("withdraw", {"player": P0}, P0)
    tables = desk.pair()
    assert all(P0 not in t.seats for t in tables) and P0 not in desk.state.played[1].byes
    (table,) = tables
    desk.finish(table, [{"wins": 4, "total": 25}, {"wins": 0, "total": -25}])
    withdrawn = row(desk.state.standings, P0)
    assert withdrawn.withdrawn
    assert withdrawn.keys[:2] == (3.0, 5.0)  # round 2: no wins, the round's lowest score
    assert "round 2: withdrawn, scored as the round's worst" in withdrawn.notes
    assert [line.how for line in lines(desk.state)[P0]] == ["table", "withdrawn"]


def test_standings_count_only_rounds_that_are_over() -> None:
    desk = Desk().open(4, rounds=2, ratings=[4, 3, 2, 1])
    first, second = desk.pair()
    desk.finish(first, [{"wins": 3}, {"wins": 1}])
    assert standings(desk.state)[0].score == 0.0  # round 1 is half played
    desk.finish(second, [{"wins": 2}, {"wins": 2}])
    assert standings(desk.state)[0].score == 3.0
    recorded = [e for e in desk.log if type(e).__name__ == "StandingsRecorded"]
    assert len(recorded) == 1 and recorded[0].standings == standings(desk.state)  # type: ignore[attr-defined]
