"""The audit of a tournament the tournament service ran (in process, beside the real referee,
scoring and bots): its log and its tables' games read back from the store audit clean, and a
table result rewritten there (the chain re-hashed) is caught."""

from __future__ import annotations

from shared.audit.source import load_game
from shared.audit.tournament import GameSource, audit_tournament, table_games
from tests.services.conftest import stack
from tests.tournament.played import rewritten
from tests.tournament.test_service import TOURNAMENT, Run, finished, open_tournament, run

__all__ = ["run", "stack"]  # the fixtures this module's tests use


async def test_a_tournament_the_service_ran_audits_clean(run: Run) -> None:
    run.start()
    await open_tournament(run)
    await run.stack.until(lambda: finished(run), timeout=120)
    log = await load_game(run.desk.log.store, TOURNAMENT)
    games: dict[str, GameSource] = {}
    for game_id in table_games(log.events):
        games[game_id] = await load_game(run.stack.games.store, game_id)
    result = audit_tournament(log.events, games, tournament_id=TOURNAMENT, head=log.head)
    assert result.ok, result.differences
    assert len(result.games) == 4  # two rounds of two tables

    events = list(log.events)
    version = next(e.version for e in events if e.type == "TableFinished")
    results = [dict(r) for r in events[version - 1].data["results"]]
    results[0]["winner"] = not results[0]["winner"]
    forged = rewritten(events, version, results=results)
    caught = audit_tournament(
        forged, games, tournament_id=TOURNAMENT, head=(forged[-1].version, forged[-1].hash)
    )
    assert [v.check for v in caught.verdicts if v.failed] == ["tables"]
    (difference,) = caught.differences
    assert (difference.version, difference.field, difference.player) == (
        version,
        "winner",
        results[0]["player"],
    )
