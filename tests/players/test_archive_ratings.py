"""Ratings rebuilt from the archive: a rated game that left Redis counts the same in a rebuild
(`rummy rebuild` with RUMMY_ARCHIVE_URL) as it did live."""

from __future__ import annotations

from pathlib import Path

from shared.archive.sqlite import SqliteArchive
from tests.archive.letting_go import archive_games
from tests.gateway.api import play_to_end
from tests.gateway.conftest import MakeStack
from tests.players.conftest import cheapen, forget_cookies, register
from tests.servers import until


async def test_an_archived_rated_game_rebuilds_to_the_same_ratings(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    url = f"sqlite://{tmp_path}/archive.db"
    stack = cheapen(await make_stack(archive_url=url, retain_seconds=0.0))
    api = stack.api
    sessions = []
    for name in ("Sam", "Tia"):
        sessions.append((await register(api, name))[1])
        forget_cookies(stack)
    game_id, host = await api.create("rummikub", 2, {"match_rounds": 1})
    tokens = [""] * 2
    for session in sessions:
        sat = await api.call("POST", f"/api/games/{game_id}/seats", {}, token=session)
        tokens[sat.body["seat"]] = sat.body["token"]
    await api.start(game_id, host)
    await play_to_end(api, game_id, tokens, ["greedy", "stubborn"], seed=4)
    ratings = stack.scoring.projections.ratings

    async def rated() -> bool:
        return "rummikub" in await ratings.table()

    await until(rated, 20, every=0.05)
    live = await ratings.table()
    board = (await api.call("GET", "/api/leaderboard?rules=rummikub")).body
    path = f"{tmp_path}/archive.db"
    await archive_games(stack.redis, stack.settings, SqliteArchive(path), [game_id])
    archive = SqliteArchive(path)
    await archive.open()
    report = await stack.scoring.rebuild(archive)
    await archive.close()
    assert report["archived"] == 1 and report["differences"] == [], report
    assert await ratings.table() == live
    assert (await api.call("GET", "/api/leaderboard?rules=rummikub")).body == board
    # Without the archive the game is gone from the ratings: the rebuild says so.
    report = await stack.scoring.rebuild()
    assert "ratings" in report["differences"]
    assert await ratings.table() == {}
