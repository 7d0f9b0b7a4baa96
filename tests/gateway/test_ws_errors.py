"""A socket is never left with nothing: a catch-up whose events cannot be had, or that fails, is
answered with an error frame (and the socket may ask again); a binary frame is answered like any
frame that is not JSON, and counts toward closing a socket that does not read."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiohttp import WSMsgType
from redis.exceptions import ConnectionError as RedisConnectionError

from services.gateway.outbox import TOO_SLOW, TOO_SLOW_REASON
from services.gateway.state import GATEWAY
from tests.gateway.api import Json, check_error, new_id
from tests.gateway.conftest import MakeStack, Stack
from tests.gateway.test_slow_sockets import Stall

WAIT = 10.0  # a safety net: a socket that sends nothing fails, nothing is timed


async def receive(ws: Any) -> Json:
    message = await asyncio.wait_for(ws.receive(), WAIT)
    assert message.type == WSMsgType.TEXT, message
    doc = message.json()
    assert isinstance(doc, dict)
    return doc


async def caught_up(ws: Any) -> tuple[list[Json], Json]:
    """The events frames, then the view that ends them."""
    events: list[Json] = []
    doc = await receive(ws)
    while doc["type"] == "events":
        events += doc["events"]
        doc = await receive(ws)
    assert doc["type"] == "view", doc
    return events, doc["view"]


class Short:
    """The gateway's log as seen after it lost events (a Redis restarted empty under a cached
    game): every read finds nothing, or fails."""

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails

    async def read(self, game_id: str, after: int = 0, limit: int | None = None) -> list[Any]:
        if self.fails:
            raise RedisConnectionError("Redis went away")
        return []


@pytest.mark.parametrize("fails", [False, True], ids=["no-events", "read-fails"])
async def test_a_catch_up_without_its_events_is_an_error_frame_and_may_be_asked_again(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    api, gw = stack.api, stack.server.app[GATEWAY]
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    log = gw.frames.store
    monkeypatch.setattr(gw.frames, "store", Short(fails))
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?after=0&token={tokens[0]}")
    error = await receive(ws)
    assert error["type"] == "error", error
    code = "unavailable" if fails else "internal"  # Redis's failure, or events missing
    check_error(error, code)
    # The socket is still open: a sync is answered too, the same way while the log is short.
    await ws.send_json({"type": "sync", "after": 0})
    check_error(await receive(ws), code)
    monkeypatch.setattr(gw.frames, "store", log)
    await ws.send_json({"type": "sync", "after": 0})
    events, view = await caught_up(ws)
    assert events == await api.events(game_id, tokens[0])
    assert view == await api.view(game_id, tokens[0])
    await ws.close()


async def test_a_binary_frame_is_answered_with_an_error_frame(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    seat = (await api.view(game_id))["turn"]["seat"]
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[seat]}")
    view = (await receive(ws))["view"]
    # A valid command, but as a binary frame: refused, nothing done.
    await ws.send_bytes(b'{"id": "%s", "type": "draw"}' % new_id().encode())
    error = await receive(ws)
    assert error["type"] == "error", error
    check_error(error, "bad_json")
    assert "text frames of JSON" in error["error"]["message"]
    assert await api.view(game_id, tokens[seat]) == view
    # The same command as text is taken.
    await ws.send_json({"id": new_id(), "type": "draw"})
    answer = await receive(ws)
    assert answer["type"] == "answer" and answer["status"] == 200, answer
    await ws.close()


async def test_binary_frames_fill_the_queue_of_a_socket_that_does_not_read(
    make_stack: MakeStack,
) -> None:
    """As frames that are not JSON do: each is an error frame in the socket's queue, so a client
    that sends them and reads nothing is closed with TOO_SLOW once they fill it."""
    stack = await make_stack(socket_queue=4)
    api, gw = stack.api, stack.server.app[GATEWAY]
    game_id, _, tokens = await api.new_game("robbers", 2)
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[0]}")
    await receive(ws)
    (watcher,) = gw.hub.watchers[game_id]
    stall = Stall(watcher.outbox.ws)
    for n in range(8):
        await ws.send_bytes(b"binary %d" % n)

    async def closing() -> None:
        while not watcher.outbox.closing:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(closing(), WAIT)
    stall.release()
    message = await asyncio.wait_for(ws.receive(), WAIT)
    if message.type == WSMsgType.TEXT:  # the frame the writer had taken before the close
        check_error(message.json(), "bad_json")
        message = await asyncio.wait_for(ws.receive(), WAIT)
    assert message.type == WSMsgType.CLOSE, message
    assert (message.data, message.extra) == (TOO_SLOW, TOO_SLOW_REASON)
