"""Finished games through the API after they left Redis: listed, viewed, their events paged,
replayed, exported and verified by id, all from the archive (``services/gateway/archived.py``).
And the scoring projections rebuilt from the archive and the live logs together."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.gateway.state import GATEWAY
from shared.archive.sqlite import SqliteArchive
from shared.audit.record import loads
from shared.audit.verify import audit_record
from shared.infra.keys import Keys
from tests.archive.letting_go import archive_games
from tests.gateway.api import play_to_end
from tests.gateway.conftest import MakeStack, make_stack

__all__ = ["make_stack"]  # the gateway tests' fixture, used here too


async def test_a_finished_game_is_served_from_the_archive_once_redis_let_it_go(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    url = f"sqlite://{tmp_path}/archive.db"
    stack = await make_stack(archive_url=url, retain_seconds=0.0)
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    played = await play_to_end(api, game_id, tokens, ["greedy", "greedy"], seed=3)
    final = played.final
    events_before = await api.events(game_id)
    seatings = await stack.server.app[GATEWAY].store.read_types(game_id, {"PlayerSeated"})
    assert [e.data["seat"] for e in seatings] == [0, 1]
    keys = Keys(stack.settings.prefix)
    path = f"{tmp_path}/archive.db"
    await archive_games(stack.redis, stack.settings, SqliteArchive(path), [game_id])
    assert not await stack.redis.sismember(keys.games(), game_id)
    # Listed from the summary its referee kept, the archive not read (a cold gateway).
    gw = stack.server.app[GATEWAY]
    gw.games.forget(game_id)
    fetched: list[str] = []

    async def fetch(archived_id: str) -> Any:
        fetched.append(archived_id)
        raise AssertionError("the lobby read an archived game")

    real_fetch, gw.store.archived = gw.store.archived, fetch  # type: ignore[attr-defined]
    summary = await api.call("GET", "/api/games?status=finished")
    gw.store.archived = real_fetch  # type: ignore[attr-defined]
    assert summary.status == 200 and fetched == []
    assert [g["game_id"] for g in summary.body["games"]] == [game_id]
    # A fresh view (not the gateway's cached state): from the archive.
    stack.server.app[GATEWAY].games.forget(game_id)
    view = await api.view(game_id)
    assert view == final
    # The seat's token still works on its finished game.
    assert (await api.view(game_id, tokens[0]))["status"] == "finished"
    assert await api.events(game_id) == events_before
    # The seatings (an account's seat token reads them) from the archive, as from Redis.
    assert await gw.store.read_types(game_id, {"PlayerSeated"}) == seatings
    listed = await api.call("GET", "/api/games?status=finished")
    assert listed.status == 200
    assert [g["game_id"] for g in listed.body["games"]] == [game_id]
    assert listed.body["games"][0]["names"] == ["p0", "p1"]
    won_by = [["p0", "p1"][seat] for seat in final["winner"]]
    assert listed.body["games"][0]["won_by"] == won_by  # the archived game's winners too
    replay = await api.call("GET", f"/api/games/{game_id}/replay?turn=1")
    assert replay.status == 200, replay
    exported = await api.call("GET", f"/api/games/{game_id}/export")
    assert exported.status == 200
    record = loads(exported.body if isinstance(exported.body, str) else _text(exported))
    assert audit_record(record).ok
    assert record.head == (final["version"], final["head"])
    # The cross-game figures rebuilt from the archive with the live logs say what the live
    # projections said.
    archive = SqliteArchive(path)
    await archive.open()
    report = await stack.scoring.rebuild(archive)
    await archive.close()
    assert report["archived"] == 1 and report["differences"] == []


def _text(reply: Any) -> str:
    raise AssertionError(f"the export is not text: {reply!r}")
