"""`rummy audit --tournament`'s checks: a clean tournament holds; a rewritten table result, a
tampered game, a ruling whose effect is missing and a broken chain are each caught and named
(round, table, entrant, field, the recorded and the recomputed value)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from shared.audit.source import StoredGame
from shared.audit.tournament import TournamentAudit, audit_tournament, table_games
from shared.infra.stored import StoredEvent
from shared.tournament.events import Standing, StandingsRecorded, TableFinished, to_data
from shared.tournament.standings import standings
from shared.tournament.state import fold
from tests.audit.games import rechain, with_data
from tests.tournament.desk import DIRECTOR, TOURNAMENT
from tests.tournament.played import Played, played, rewritten, without


@pytest.fixture(scope="module")
def tournament() -> Played:
    """Four entrants, two rounds of two tables of two, every game self-played."""
    return played()


def audit(
    log: list[StoredEvent], games: dict[str, StoredGame | str], head: bool = True
) -> TournamentAudit:
    claimed = (log[-1].version, log[-1].hash) if head else None
    return audit_tournament(log, games, tournament_id=TOURNAMENT, head=claimed)


def versions(log: list[StoredEvent], type_name: str) -> list[int]:
    return [e.version for e in log if e.type == type_name]


def failed(result: TournamentAudit) -> list[str]:
    return [v.check for v in result.verdicts if v.failed]


def test_a_clean_tournament_audits_clean(tournament: Played) -> None:
    log = tournament.log()
    result = audit(log, dict(tournament.games))
    assert result.ok, result.differences
    assert result.differences == ()
    assert len(result.games) == 4 and all(a.ok for _, _, a in result.games)
    assert result.verdict("tables").message.startswith("4 table results")
    assert result.verdict("standings").message.startswith("3 standings")  # 2 rounds + final
    assert set(table_games(log)) == set(tournament.games)


def test_a_rewritten_table_result_is_caught_though_the_chain_holds(tournament: Played) -> None:
    log = tournament.log()
    version = versions(log, "TableFinished")[0]
    data = log[version - 1].data
    results = [dict(r) for r in data["results"]]
    results[0]["total"] = results[0]["total"] - 50
    forged = rewritten(log, version, results=results)
    result = audit(forged, dict(tournament.games))
    assert failed(result) == ["tables"]
    (difference,) = result.differences
    assert (difference.version, difference.round, difference.table) == (version, 1, 1)
    assert (difference.player, difference.field) == (results[0]["player"], "total")
    assert difference.recorded == results[0]["total"]
    assert difference.recomputed == data["results"][0]["total"]
    assert "seat 0" in difference.message


def test_a_forgery_carried_into_the_standings_shows_there_too(tournament: Played) -> None:
    """The table's result and the standings after it rewritten to agree with each other: both
    are caught, the standings per entrant and field."""
    events = list(tournament.desk.log)
    index = next(i for i, e in enumerate(events) if isinstance(e, TableFinished))
    finished = events[index]
    assert isinstance(finished, TableFinished)
    lines = list(finished.results)
    winner = next(i for i, line in enumerate(lines) if line.winner)
    lines[winner] = replace(lines[winner], total=(lines[winner].total or 0) + 200, winner=False)
    events[index] = replace(finished, results=tuple(lines))
    after = next(i for i in range(index, len(events)) if isinstance(events[i], StandingsRecorded))
    rows = standings(fold(events[:after]))
    events[after] = StandingsRecorded(1, rows)
    from tests.tournament.played import chained

    result = audit(chained(events), dict(tournament.games))
    assert failed(result) == ["tables", "standings"]
    named = {(d.check, d.field) for d in result.differences}
    assert ("tables", "total") in named and ("tables", "winner") in named
    cheat = lines[winner].player
    score = [
        d
        for d in result.differences
        if d.check == "standings" and d.player == cheat and d.field == "score"
    ]
    assert score and score[0].round == 1 and score[0].version == after + 1
    assert score[0].recorded == next(r.score for r in rows if r.player == cheat)


def test_a_tampered_game_is_caught_by_its_audit_and_its_result(tournament: Played) -> None:
    log = tournament.log()
    game_id = log[versions(log, "TableFinished")[1] - 1].data["game_id"]
    game = tournament.games[game_id]
    events = list(game.events)
    ended = next(i for i, e in enumerate(events) if e.type == "MatchEnded")
    winners = events[ended].data["winners"]
    seats = len(events[ended].data["outs"])
    events[ended] = with_data(events[ended], winners=[(winners[0] + 1) % seats])
    forged = rechain(events, ended)
    games: dict[str, StoredGame | str] = dict(tournament.games)
    games[game_id] = StoredGame(game_id, tuple(forged), (forged[-1].version, forged[-1].hash))
    result = audit(log, games)
    assert failed(result) == ["games", "tables"]
    (bad,) = [d for d in result.differences if d.check == "games"]
    assert bad.game_id == game_id and bad.field == "scores" and (bad.round, bad.table) == (1, 2)
    fields = {d.field for d in result.differences if d.check == "tables"}
    assert {"winner", "head"} <= fields  # the results and the pinned head both differ


def test_a_game_that_cannot_be_read_is_named(tournament: Played) -> None:
    log = tournament.log()
    games: dict[str, StoredGame | str] = dict(tournament.games)
    game_id = next(iter(games))
    games[game_id] = "there is no game in this store"
    result = audit(log, games)
    assert failed(result) == ["games"]
    assert result.differences[0].game_id == game_id
    assert "cannot be read" in result.differences[0].message


def ruled(tournament: Played) -> list[StoredEvent]:
    """The tournament with a forfeit ruled against round 1 table 1's winner after its end."""
    desk = replace(tournament.desk, log=list(tournament.desk.log))
    table = desk.state.table(1, 1)
    assert table is not None
    winner = next(r.player for r in table.results if r.winner)
    payload = {"kind": "forfeit", "round": 1, "table": 1, "player": winner, "reason": "no show"}
    events = desk.send("rule", payload, DIRECTOR)
    assert [type(e).__name__ for e in events] == [
        "RulingRecorded",
        "StandingsRecorded",
        "TournamentFinished",
    ]
    from tests.tournament.played import chained

    return chained(desk.log)


def test_a_ruling_audits_clean_with_its_standings(tournament: Played) -> None:
    assert audit(ruled(tournament), dict(tournament.games)).ok


def test_a_ruling_without_its_standings_is_caught(tournament: Played) -> None:
    log = ruled(tournament)
    ruling = versions(log, "RulingRecorded")[0]
    result = audit(without(log, ruling + 1), dict(tournament.games))
    assert failed(result) == ["standings"]
    (difference,) = result.differences
    assert difference.version == ruling and difference.field == "StandingsRecorded"
    assert "forfeit ruling on round 1 table 1 (no show)" in difference.message


def test_standings_that_leave_a_ruling_out_are_caught(tournament: Played) -> None:
    """The standings after the ruling rewritten to those before it (the ruling has no
    effect): each row the forfeit changed is named."""
    log = ruled(tournament)
    ruling = versions(log, "RulingRecorded")[0]
    before = log[ruling - 2]
    assert before.type == "TournamentFinished"
    stale = rewritten(log, ruling + 1, standings=before.data["standings"])
    result = audit(stale, dict(tournament.games))
    assert failed(result) == ["standings"]
    forfeited = log[ruling - 1].data["player"]
    mine = {d.field: d for d in result.differences if d.player == forfeited}
    assert {"forfeits", "notes", "score"} <= set(mine)
    assert (mine["forfeits"].recorded, mine["forfeits"].recomputed) == (0, 1)
    assert all(d.version == ruling + 1 and d.round == 2 for d in result.differences)


def test_a_broken_chain_is_named(tournament: Played) -> None:
    log = tournament.log()
    version = versions(log, "StandingsRecorded")[0]
    rows = [dict(r) for r in log[version - 1].data["standings"]]
    broken = [*log]
    broken[version - 1] = with_data(log[version - 1], standings=rows[::-1])
    result = audit(broken, dict(tournament.games))
    assert "chain" in failed(result)
    assert result.verdict("chain").version == version
    assert result.differences[0].check == "chain" and result.differences[0].version == version


def test_a_head_that_is_not_the_last_event_is_named(tournament: Played) -> None:
    log = tournament.log()
    result = audit(log[:-1], dict(tournament.games), head=False)
    assert result.ok  # no head claimed: nothing to hold against
    claimed = audit_tournament(
        log[:-1], dict(tournament.games), tournament_id=TOURNAMENT, head=(len(log), log[-1].hash)
    )
    assert failed(claimed) == ["head"]
    assert claimed.verdict("head").version == len(log)


def test_a_table_game_id_not_derived_from_the_table_is_named(tournament: Played) -> None:
    log = tournament.log()
    paired = versions(log, "RoundPaired")[0]
    tables = [dict(t) for t in log[paired - 1].data["tables"]]
    tables[1]["game_id"] = "g" + "0" * 16
    result = audit(rewritten(log, paired, tables=tables), dict(tournament.games))
    assert "events" in failed(result)
    named = [d for d in result.differences if d.check == "events"]
    assert named[0].table == 2 and named[0].field == "game_id"


def test_standing_rows_compare_every_field() -> None:
    from shared.audit.tournament import STANDING_FIELDS

    row = Standing(1, "p", "P", 1.0, (1.0,), 1, 0, 0, False, ())
    assert set(STANDING_FIELDS) == set(to_data(StandingsRecorded(1, (row,)))["standings"][0]) - {
        "player"
    }
