"""Fixtures of the archive tests: both backends, and finished games as records."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from shared.archive.base import Archive
from shared.archive.postgres import PostgresArchive
from shared.archive.sqlite import SqliteArchive
from shared.audit.record import GameRecord, build_record
from tests.archive.databases import fresh_database
from tests.audit.games import play_game

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(params=BACKENDS)
async def archive(request: pytest.FixtureRequest, tmp_path: object) -> AsyncIterator[Archive]:
    """An opened, empty archive of each backend (a file of its own; a database of its own)."""
    if request.param == "sqlite":
        lite = SqliteArchive(f"{tmp_path}/archive.db")
        await lite.open()
        try:
            yield lite
        finally:
            await lite.close()
        return
    with fresh_database("archive") as url:
        pg = PostgresArchive(url)
        await pg.open()
        try:
            yield pg
        finally:
            await pg.close()


@pytest.fixture(scope="session")
def records() -> list[GameRecord]:
    """Five finished games of two rule sets, ending at distinct times."""
    configs = [
        ("robbers", {"match_rounds": 1}, ("clumsy", "greedy", "random")),
        ("rummikub", {}, ("clumsy", "random")),
        ("robbers", {"match_rounds": 1}, ("greedy", "greedy")),
        ("rummikub", {}, ("random", "greedy", "clumsy")),
        ("robbers", {"match_rounds": 1}, ("clumsy", "random")),
    ]
    out = []
    for number, (rules, options, bots) in enumerate(configs):
        game = play_game(900 + number, rules, options, bots)
        assert game.report.finished
        out.append(build_record(game.events, exported=1_700_000_000.0))
    return out
