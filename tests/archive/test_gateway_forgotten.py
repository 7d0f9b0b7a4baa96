"""A finished game after Redis let it go, through the routes that could still change it or
stream it: a rematch is refused before any game is made (the archive's record takes no more
moves), one linked before is still joined; a WebSocket's catch-up (``?after=``, a ``sync``)
comes from the archive, as ``GET /events`` does."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType

from services.gateway.state import GATEWAY
from shared.archive.sqlite import SqliteArchive
from shared.infra.keys import Keys
from tests.archive.letting_go import archive_games
from tests.gateway.api import Json, check_error, new_id
from tests.gateway.conftest import MakeStack, Stack, make_stack
from tests.servers import until

__all__ = ["make_stack"]  # the gateway tests' fixture, used here too

WAIT = 10.0  # a safety net: a socket that sends nothing fails, nothing is timed


async def finished_game(stack: Stack) -> tuple[str, list[str]]:
    """A two-seat game that seat 0 resigned (seat 1 won): its id and seat tokens."""
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    reply = await api.command(game_id, tokens[0], {"id": new_id(), "type": "resign"})
    assert reply.status == 200, reply

    async def over() -> bool:  # (once the round's scores are recorded)
        return bool((await api.view(game_id))["status"] == "finished")

    await until(over, 20)
    return game_id, tokens


async def archive_and_forget(stack: Stack, path: Path, game_id: str) -> None:
    """Run an archiver until ``game_id`` has left Redis; the gateway forgets its cached state
    too (a cold gateway, or one that restarted)."""
    await archive_games(stack.redis, stack.settings, SqliteArchive(str(path)), [game_id])
    stack.server.app[GATEWAY].games.forget(game_id)


async def archiving(make_stack: MakeStack, tmp_path: Path, **settings: Any) -> tuple[Stack, Path]:
    """A stack whose archive (SQLite, at the returned path) takes a game at once."""
    path = tmp_path / "archive.db"
    stack = await make_stack(archive_url=f"sqlite://{path}", retain_seconds=0.0, **settings)
    return stack, path


async def forgotten_game(
    make_stack: MakeStack, tmp_path: Path, **settings: Any
) -> tuple[Stack, Path, str, list[str]]:
    """A stack, its archive's path, and a game played out, archived and let go by Redis: its
    id and seat tokens."""
    stack, path = await archiving(make_stack, tmp_path, **settings)
    game_id, tokens = await finished_game(stack)
    await archive_and_forget(stack, path, game_id)
    return stack, path, game_id, tokens


async def test_a_rematch_of_a_game_only_in_the_archive_is_refused_and_makes_no_game(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    # (A short command timeout: the link sent to a referee is what must not happen.)
    stack, _, game_id, tokens = await forgotten_game(make_stack, tmp_path, command_timeout=2)
    keys = Keys(stack.settings.prefix)
    games = await stack.redis.smembers(keys.games())
    view = await stack.api.view(game_id, tokens[1])
    assert view["status"] == "finished" and view["rematch"] is None  # (from the archive)
    for seat in (1, 0, 1):  # every click the same refusal
        reply = await stack.api.call("POST", f"/api/games/{game_id}/rematch", {}, tokens[seat])
        assert reply.status == 409, reply
        check_error(reply.body, "rematch_closed")
        assert "archived" in reply.body["error"]["message"]
    assert await stack.redis.smembers(keys.games()) == games  # no game made, none left waiting
    assert await stack.api.view(game_id, tokens[1]) == view  # the old game as it was


async def test_a_rematch_whose_link_is_refused_is_cancelled(
    make_stack: MakeStack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The game leaves Redis between the gateway's look and the link (made to happen here by
    a look that misses it): the game made for the rematch is cancelled, not left waiting."""
    stack, _, game_id, tokens = await forgotten_game(make_stack, tmp_path, command_timeout=5)
    keys = Keys(stack.settings.prefix)
    games = await stack.redis.smembers(keys.games())
    gw = stack.server.app[GATEWAY]

    async def still_held(game: str) -> bool:
        return False

    monkeypatch.setattr(gw.store, "forgotten", still_held)
    reply = await stack.api.call("POST", f"/api/games/{game_id}/rematch", {}, tokens[1])
    assert reply.status == 409, reply  # (the referee's game_archived, said as the route says it)
    check_error(reply.body, "rematch_closed")
    made = {m.decode() for m in await stack.redis.smembers(keys.games()) - games}
    assert len(made) == 1, made  # the rematch's game, made before the link was refused
    assert (await stack.api.view(made.pop()))["status"] == "cancelled"


async def test_a_rematch_linked_before_the_game_left_redis_is_still_joined(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    stack, path = await archiving(make_stack, tmp_path)
    api = stack.api
    game_id, tokens = await finished_game(stack)
    offered = await api.call("POST", f"/api/games/{game_id}/rematch", {}, tokens[1])
    assert offered.status == 201, offered
    await archive_and_forget(stack, path, game_id)
    assert (await api.view(game_id))["rematch"] == offered.body["game_id"]  # (from the archive)
    # Offered again from the archived game: the same rematch, joined.
    joined = await api.call("POST", f"/api/games/{game_id}/rematch", {}, tokens[0])
    assert joined.status == 201, joined
    assert joined.body["game_id"] == offered.body["game_id"]
    assert joined.body["seat"] != offered.body["seat"]
    assert (await api.view(offered.body["game_id"]))["status"] == "playing"


async def catch_up(ws: Any) -> tuple[list[Json], Json]:
    """The events frames a socket is sent, then the view that ends them."""
    events: list[Json] = []
    while True:
        message = await asyncio.wait_for(ws.receive(), WAIT)
        assert message.type == WSMsgType.TEXT, message
        doc = message.json()
        if doc["type"] == "view":
            return events, doc["view"]
        assert doc["type"] == "events", doc
        events += doc["events"]


async def test_a_socket_catches_up_on_a_forgotten_game_from_the_archive(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    stack, _, game_id, tokens = await forgotten_game(make_stack, tmp_path)
    api = stack.api
    final = await api.view(game_id, tokens[1])
    for after in (0, 5):
        for token in (tokens[1], None):
            query = f"?after={after}" + (f"&token={token}" if token else "")
            ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws{query}")
            events, view = await catch_up(ws)
            assert events == await api.events(game_id, token, after=after), (after, token)
            assert [e["version"] for e in events] == list(range(after + 1, final["version"] + 1))
            assert view == await api.view(game_id, token)
            # A sync from the start: the same events again, then the view.
            await ws.send_json({"type": "sync", "after": 0})
            assert await catch_up(ws) == (await api.events(game_id, token), view)
            await ws.close()


async def test_a_create_retried_after_its_game_left_redis_makes_no_other_game(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    """A create sent again with its Idempotency-Key names the same game, and the referees answer
    its command id with its first outcome, from the game's log. Once that log has left Redis,
    sent again, the create would make another game under the archived game's id (whose log the
    archive then refuses for ever): it is refused instead, and nothing is made."""
    stack, path = await archiving(make_stack, tmp_path)
    api = stack.api
    key = {"Idempotency-Key": new_id()}
    body = {"rules": "robbers", "seats": 2, "options": {"match_rounds": 1}}
    made = await api.call("POST", "/api/games", body, headers=key)
    assert made.status == 201, made
    game_id, host = made.body["game_id"], made.body["host_token"]
    tokens = [""] * 2
    for n in range(2):
        seat, token = await api.sit(game_id, f"p{n}")
        tokens[seat] = token
    await api.start(game_id, host)
    resigned = await api.command(game_id, tokens[0], {"id": new_id(), "type": "resign"})
    assert resigned.status == 200, resigned

    async def over() -> bool:
        return bool((await api.view(game_id))["status"] == "finished")

    await until(over, WAIT)
    again = await api.call("POST", "/api/games", body, headers=key)
    assert again.status == 201 and again.body["game_id"] == game_id, again  # still in Redis
    await archive_and_forget(stack, path, game_id)
    stack.referee.games.forget(game_id)  # a referee that never held it (restarted, or another)
    keys = Keys(stack.settings.prefix)
    games = await stack.redis.smembers(keys.games())
    refused = await api.call("POST", "/api/games", body, headers=key)
    assert refused.status == 409, refused
    check_error(refused.body, "game_archived")
    assert await stack.redis.smembers(keys.games()) == games
    assert not await stack.redis.exists(keys.events(game_id), keys.head(game_id))
    assert (await api.view(game_id))["status"] == "finished"  # the archived game, as it was


async def test_a_command_for_a_game_only_in_the_archive_is_refused_as_archived(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    """A referee that never held the game (restarted, or another) finds no log and would say
    the game has not started; the gateway, which reads it from the archive, says why."""
    stack, _, game_id, tokens = await forgotten_game(make_stack, tmp_path)
    stack.referee.games.forget(game_id)
    reply = await stack.api.command(game_id, tokens[1], {"id": new_id(), "type": "draw"})
    assert reply.status == 409, reply
    check_error(reply.body, "game_archived")
    assert not await stack.redis.exists(Keys(stack.settings.prefix).events(game_id))
