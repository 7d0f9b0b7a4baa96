"""A rebuild from the logs gives the ratings the live projection holds, and old events without
an account still replay."""

from __future__ import annotations

import uuid

from shared.core.events import Event, PlayerSeated, event_from
from shared.infra.protocol import CommandEntry
from tests.services.conftest import Stack
from tests.services.driver import drive
from tests.services.test_rebuild import quiet


async def _game_with_accounts(stack: Stack, players: list[str], rules: str = "robbers") -> str:
    game_id = f"g{uuid.uuid4().hex[:10]}"
    body = {"rules": rules, "seats": len(players), "options": {"match_rounds": 1}}
    answer = await stack.requester.request(CommandEntry(game_id, "create", "create", body), 10)
    assert answer["status"] == "accepted", answer
    for seat, player in enumerate(players):
        sit_body = {"name": f"n{seat}", "player": player} if player else {"name": "guest"}
        sit = CommandEntry(game_id, "sit", f"sit:{seat}", sit_body)
        assert (await stack.requester.request(sit, 10))["status"] == "accepted"
    assert (await stack.requester.request(CommandEntry(game_id, "start", "start"), 10))[
        "status"
    ] == "accepted"
    return game_id


async def test_a_rebuild_gives_the_ratings_the_live_projection_holds(stack: Stack) -> None:
    ids = []
    for players in (["ann", "ben"], ["ben", "cat", ""], ["ann", "cat"]):
        game_id = await _game_with_accounts(stack, players)
        await drive(
            stack.requester, stack.games, game_id, ["greedy", "stubborn", "random"][: len(players)]
        )
        ids.append(game_id)
    await stack.until(lambda: quiet(stack), timeout=30)

    async def rated() -> bool:
        table = await stack.scoring.projections.ratings.table()
        return bool(sum(v["games"] for v in table.get("robbers", {}).values()) == 6)

    await stack.until(rated, timeout=30)
    live = await stack.scoring.projections.snapshot(ids)
    assert set(live["ratings"]["robbers"]) == {"ann", "ben", "cat"}  # the guest is unrated
    seated = [e for e in await _log(stack, ids[1]) if isinstance(e, PlayerSeated)]
    assert [e.player for e in seated] == ["ben", "cat", ""]
    report = await stack.scoring.rebuild()
    assert report["differences"] == [], report
    assert await stack.scoring.projections.snapshot(ids) == live


async def _log(stack: Stack, game_id: str) -> list[Event]:
    return [event_from(s.type, s.data) for s in await stack.games.store.read(game_id)]
