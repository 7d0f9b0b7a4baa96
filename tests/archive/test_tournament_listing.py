"""The tournament lobby's finished and all listings go on past the rows Redis keeps with the
archived tournaments it no longer does (the gateway's ``ArchivedTournaments``): page by page,
every tournament once, none twice (one archived but still kept in Redis is listed from Redis's
row), the other listings untouched."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.gateway.archived import ArchivedTournaments
from shared.archive.sqlite import SqliteArchive
from shared.infra.keys import Keys
from shared.infra.tournaments import PAST_CURSOR, TournamentDesk
from tests.archive.test_tournament_contract import START, finished_desk, record_of
from tests.services.conftest import delete_prefixed, redis_client


@pytest.fixture
async def desk(tmp_path: Any) -> AsyncIterator[TournamentDesk]:
    """A desk on a Redis of the test's own listing, newest made first: one running and two
    finished tournaments (``r0``, ``k1``, ``k2``); the archive holding four finished ones, two
    of which (``k1``, ``k2``) Redis still keeps, finished in the order ``a3``, ``k1``, ``a4``,
    ``k2`` (newest last)."""
    client = redis_client()
    keys = Keys(f"wtl{uuid.uuid4().hex[:10]}:")
    archive = SqliteArchive(tmp_path / "archive.db")
    await archive.open()
    made = finished_desk()
    desk = TournamentDesk(client, keys, "test")
    for n, (name, status) in enumerate((("r0", "running"), ("k1", "finished"), ("k2", "finished"))):
        tid = tid_of(name)
        await desk.index.place(tid, status, 100.0 - n, {"tournament_id": tid, "status": status})
    for n, name in enumerate(("a3", "k1", "a4", "k2")):
        await archive.store_tournament(record_of(made, tid_of(name), START + 1000 * n), 1.0)
    desk.past = ArchivedTournaments(client, keys, archive)
    try:
        yield desk
    finally:
        await desk.close()
        await archive.close()
        await delete_prefixed(client, keys.prefix)
        await client.aclose()


def tid_of(name: str) -> str:
    return "t" + name.encode().hex().rjust(16, "0")


async def listed(desk: TournamentDesk, status: str, limit: int) -> list[list[str]]:
    """Every page of the listing, as the names of its tournaments."""
    pages: list[list[str]] = []
    cursor: int | None = 0
    while cursor is not None:
        page = await desk.page(status, cursor, limit)
        pages.append(
            [
                bytes.fromhex(r["tournament_id"][1:]).lstrip(b"\0").decode()
                for r in page["tournaments"]
            ]
        )
        cursor = page["next"]
    return pages


async def test_the_archived_ones_follow_redis_rows_once_each(desk: TournamentDesk) -> None:
    assert await listed(desk, "finished", 10) == [["k1", "k2", "a4", "a3"]]
    assert await listed(desk, "all", 10) == [["r0", "k1", "k2", "a4", "a3"]]
    for limit in (1, 2, 3):  # (a page passes over those Redis still lists: it may be short)
        pages = await listed(desk, "all", limit)
        assert [name for page in pages for name in page] == ["r0", "k1", "k2", "a4", "a3"]
        assert all(len(page) <= limit for page in pages)
        finished = await listed(desk, "finished", limit)
        assert [name for page in finished for name in page] == ["k1", "k2", "a4", "a3"]
    assert await listed(desk, "running", 10) == [["r0"]]
    assert await listed(desk, "created", 10) == [[]]
    # A cursor into the archive's part pages on from there.
    page = await desk.page("finished", PAST_CURSOR + 2, 10)
    assert [r["tournament_id"] for r in page["tournaments"]] == [tid_of("a3")]
    assert page["next"] is None
