"""A game the gateway has not cached is read once for all the requests that want it at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from services.gateway.errors import ApiError
from services.gateway.state import GATEWAY
from tests.gateway.api import new_id
from tests.gateway.conftest import Stack


async def test_concurrent_requests_for_a_game_not_cached_share_one_read(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    view = await api.view(game_id)
    reply = await api.command(
        game_id, tokens[view["turn"]["seat"]], {"id": new_id(), "type": "draw"}
    )
    assert reply.status == 200
    gw = stack.server.app[GATEWAY]
    gw.games.forget(game_id)
    reads: list[str] = []
    read = gw.games.store.read

    async def counted(game: str, after: int = 0, limit: int | None = None) -> Any:
        reads.append(game)
        await asyncio.sleep(0.01)  # the others come while this one reads
        return await read(game, after=after, limit=limit)

    monkeypatch.setattr(gw.games.store, "read", counted)
    loads = await asyncio.gather(*(gw.load(game_id) for _ in range(10)))
    assert reads == [game_id]
    assert {loaded.version for loaded in loads} == {reply.body["version"]}
    assert gw._loading == {}  # nothing left behind


async def test_a_shared_load_of_no_such_game_is_a_404_for_each_asker(stack: Stack) -> None:
    gw = stack.server.app[GATEWAY]
    results = await asyncio.gather(
        *(gw.load("g0000000000000000") for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, ApiError) and r.status_code == 404 for r in results)
