"""The lobby lists finished games from the summary kept per game (``shared/infra/summary.py``):
the referee writes it with the game's end, a cold gateway lists the game without reading its
log, and a listing that finds no summary (or a broken one) makes it from the log and keeps it."""

from __future__ import annotations

from typing import Any

import pytest

from services.gateway.state import GATEWAY
from shared.infra import jsontext
from shared.infra.keys import Keys
from shared.infra.summary import summary_key, summary_of
from tests.gateway.api import play_to_end
from tests.gateway.conftest import Stack
from tests.servers import until


async def _finished(stack: Stack) -> str:
    """A game played to its end, filed under finished (the gateway does it on the news)."""
    game_id, _, tokens = await stack.api.new_game("robbers", 2, {"match_rounds": 1})
    await play_to_end(stack.api, game_id, tokens, ["greedy", "greedy"], seed=5)
    finished = Keys(stack.settings.prefix).lobby("finished")

    async def filed() -> bool:
        return await stack.redis.zscore(finished, game_id) is not None

    await until(filed, 10, every=0.02)
    return game_id


def _no_log_reads(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make the gateway's reads of any log fail, and count them."""
    gw = stack.server.app[GATEWAY]
    reads: list[str] = []

    async def read(game_id: str, *args: Any, **kwargs: Any) -> Any:
        reads.append(game_id)
        raise AssertionError(f"the lobby read the log of {game_id}")

    monkeypatch.setattr(gw.store, "read", read)
    return reads


async def test_a_finished_game_is_listed_from_its_summary_by_a_cold_gateway(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    game_id = await _finished(stack)
    truth = await stack.truth(game_id)
    key = summary_key(Keys(stack.settings.prefix), game_id)
    kept = jsontext.loads(await stack.redis.get(key))
    assert kept == summary_of(game_id, truth) and kept["status"] == "finished"
    assert await stack.redis.ttl(key) > 0  # kept for a while, not for ever
    stack.server.app[GATEWAY].games.forget(game_id)  # cold: nothing of it cached
    reads = _no_log_reads(stack, monkeypatch)
    listed = await stack.api.call("GET", "/api/games?status=finished")
    assert listed.status == 200 and listed.body["games"] == [kept]
    assert reads == []


@pytest.mark.parametrize("kept", [None, b"not json", b'{"game_id": "other"}'])
async def test_a_listing_without_a_sound_summary_makes_it_from_the_log(
    stack: Stack, kept: bytes | None
) -> None:
    game_id = await _finished(stack)
    key = summary_key(Keys(stack.settings.prefix), game_id)
    if kept is None:
        await stack.redis.delete(key)  # a game ended by an older referee
    else:
        await stack.redis.set(key, kept)
    stack.server.app[GATEWAY].games.forget(game_id)
    listed = await stack.api.call("GET", "/api/games?status=finished")
    expected = summary_of(game_id, await stack.truth(game_id))
    assert listed.status == 200 and listed.body["games"] == [expected]
    assert jsontext.loads(await stack.redis.get(key)) == expected  # kept for the next listing


async def test_games_still_playing_are_not_listed_from_a_summary(stack: Stack) -> None:
    game_id, _, _ = await stack.api.new_game("robbers", 2, {"match_rounds": 1})
    key = summary_key(Keys(stack.settings.prefix), game_id)
    assert await stack.redis.get(key) is None  # nothing is kept of a game that changes
    listed = await stack.api.call("GET", "/api/games?status=playing")
    assert [g["game_id"] for g in listed.body["games"]] == [game_id]
    assert listed.body["games"][0]["status"] == "playing"
    assert await stack.redis.get(key) is None
