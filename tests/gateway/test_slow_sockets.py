"""A WebSocket client that sends syncs and never reads (a small receive buffer, a game with a long
log, so every sync is a large catch-up) is closed with TOO_SLOW (4008) once its queue is full,
while every change of another game (and of its own) is pushed to that game's watcher. Closed, it
reconnects with ``?after=<the last version it got>`` and gets exactly the events it missed.

What the slow client was sent before its close frame is a run of whole frames in order: each
events frame follows the one before it, or starts again from the beginning (a sync).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType

from services.gateway.outbox import TOO_SLOW, TOO_SLOW_REASON
from services.gateway.state import GATEWAY
from tests.gateway.api import Api, Json, new_id
from tests.gateway.conftest import MakeStack
from tests.gateway.rawsocket import CLOSE, RawSocket, close_code

WAIT = 60.0  # a safety net: a hang fails, nothing is timed
QUEUE = 16
LONG_LOG = 120  # changes before the slow client connects (the catch-ups it asks for are long)
AFTER_CLOSE = 5  # rounds of changes after it is closed
MAX_ROUNDS = 3000
SYNC = json.dumps({"type": "sync", "after": 0})


async def reject(api: Api, game_id: str, tokens: list[str]) -> int:
    """A change that can be made for ever: the seat whose turn it is lays a one-card meld,
    which the rules refuse (and the log records). Returns the new version."""
    spectator = await api.view(game_id)
    seat = spectator["turn"]["seat"]
    view = await api.view(game_id, tokens[seat])
    body = {"id": new_id(), "type": "play", "layout": [*view["table"], [view["hand"][0]]]}
    reply = await api.command(game_id, tokens[seat], body)
    while reply.status == 429:  # the per-token rate: the same id again is safe
        await asyncio.sleep(0.05)
        reply = await api.command(game_id, tokens[seat], body)
    assert reply.status == 422 and reply.body["error"]["code"] == "illegal_layout", reply
    return int(reply.body["version"])


@dataclass
class Follower:
    """A watcher that reads everything: the event versions and the last view it was sent."""

    versions: list[int] = field(default_factory=list)
    view_version: int = 0

    async def run(self, ws: Any) -> None:
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                return
            doc = message.json()
            if doc["type"] == "events":
                self.versions += [e["version"] for e in doc["events"]]
            elif doc["type"] == "view":
                self.view_version = doc["view"]["version"]

    async def reaches(self, version: int) -> None:
        """Until it has the events and the view of ``version`` (a hang fails)."""

        async def poll() -> None:
            while self.view_version < version or (self.versions or [0])[-1] < version:
                await asyncio.sleep(0.01)

        try:
            await asyncio.wait_for(poll(), WAIT)
        except TimeoutError:
            got = (self.versions or [0])[-1]
            raise AssertionError(f"never pushed: version {version} (got up to {got})") from None


def check_runs(frames: list[Json]) -> int:
    """Every events frame follows the one before it or starts from version 1 (the client asked
    again from 0); the views never go back. Returns the last event version received."""
    last, view = 0, 0
    for doc in frames:
        if doc["type"] == "events":
            versions = [e["version"] for e in doc["events"]]
            assert versions == list(range(versions[0], versions[-1] + 1)), versions
            assert versions[0] in (1, last + 1), (last, versions[:3])
            last = versions[-1]
        elif doc["type"] == "view":
            assert doc["view"]["version"] >= view and doc["view"]["version"] <= last
            view = doc["view"]["version"]
    return last


async def test_a_client_that_never_reads_is_closed_and_others_get_every_push(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(socket_queue=QUEUE)
    api, gw = stack.api, stack.server.app[GATEWAY]
    long_game, long_tokens = (await api.new_game("robbers", 2))[::2]
    other, other_tokens = (await api.new_game("robbers", 2))[::2]
    for _ in range(LONG_LOG):
        await reject(api, long_game, long_tokens)
    start = (await api.view(other))["version"]

    follower = Follower()
    watching = await stack.client.ws_connect(f"/api/games/{other}/ws?after={start}")
    following = asyncio.create_task(follower.run(watching))
    host, port = str(stack.server.host), int(stack.server.port or 0)
    slow = await RawSocket.connect(host, port, f"/api/games/{long_game}/ws?after=0")
    closed_slow = asyncio.Event()

    def too_slow() -> bool:
        return bool(gw.metrics.registry.get_sample_value("gateway_websockets_too_slow_total"))

    async def spam() -> None:
        while not closed_slow.is_set():
            await slow.send_text(SYNC)
            await asyncio.sleep(0)

    async def read_once_closed() -> tuple[list[Json], tuple[int, str]]:
        """Once the gateway has closed it: read what it was sent, up to the close frame."""
        while not too_slow():
            await asyncio.sleep(0.01)
        closed_slow.set()
        frames: list[Json] = []
        while True:
            opcode, payload = await slow.receive()
            if opcode == CLOSE:
                return frames, close_code(payload)
            frames.append(json.loads(payload))

    spamming = asyncio.create_task(spam())
    reading = asyncio.create_task(read_once_closed())
    try:
        # Both games change while the slow client spams, until it is closed and a few rounds
        # more: each change of the other game reaches its watcher before the next (its own
        # game's news once left the feed's follower waiting for its socket for ever).
        rounds = after_close = 0
        while after_close < AFTER_CLOSE:
            await reject(api, long_game, long_tokens)
            final = await reject(api, other, other_tokens)
            await follower.reaches(final)
            rounds += 1
            assert rounds < MAX_ROUNDS, "the slow client was never closed"
            after_close += too_slow()
        assert follower.versions == list(range(start + 1, final + 1)), "exactly once, in order"

        frames, (code, reason) = await asyncio.wait_for(reading, WAIT)
        assert (code, reason) == (TOO_SLOW, TOO_SLOW_REASON)
        assert gw.hub.watchers.get(long_game, set()) == set(), "its watcher is dropped"
        last = check_runs(frames)
        assert last > 0
    finally:
        spamming.cancel()
        reading.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.gather(spamming, reading)
        slow.close()

    # What it missed meanwhile comes on reconnecting with the last version it got.
    for _ in range(3):
        await reject(api, long_game, long_tokens)
    now = (await api.view(long_game))["version"]
    again = await stack.client.ws_connect(f"/api/games/{long_game}/ws?after={last}")
    caught_up = await asyncio.wait_for(again.receive(), WAIT)
    events = caught_up.json()
    assert events["type"] == "events"
    assert [e["version"] for e in events["events"]] == list(range(last + 1, now + 1))
    assert events["events"] == await api.events(long_game, None, after=last)
    view = (await asyncio.wait_for(again.receive(), WAIT)).json()
    assert view == {"type": "view", "view": await api.view(long_game)}
    await again.close()
    await watching.close()
    await asyncio.wait_for(following, WAIT)


class Stall:
    """Makes a socket's sends wait until ``release`` (a client that stops reading for a while)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.real = ws.send_str
        self.stuck = asyncio.Event()
        self.released = asyncio.Event()
        ws.send_str = self.send_str

    async def send_str(self, data: str, compress: int | None = None) -> None:
        self.stuck.set()
        await self.released.wait()
        await self.real(data, compress)

    def release(self) -> None:
        self.ws.send_str = self.real
        self.released.set()


async def test_a_slow_spectator_holds_one_view_and_is_not_closed(make_stack: MakeStack) -> None:
    """Views supersede each other: a spectator (no ``after``) that reads nothing for a while
    keeps one view queued however many changes come, then gets the latest."""
    stack = await make_stack(socket_queue=2)
    api, gw = stack.api, stack.server.app[GATEWAY]
    game_id, _, tokens = await api.new_game("robbers", 2)
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws")
    await asyncio.wait_for(ws.receive(), WAIT)
    (watcher,) = gw.hub.watchers[game_id]
    stall = Stall(watcher.outbox.ws)
    stuck_on = await reject(api, game_id, tokens)
    await asyncio.wait_for(stall.stuck.wait(), WAIT)  # the writer is stuck on that view
    for _ in range(10):
        version = await reject(api, game_id, tokens)
    while watcher.sent_version < version:
        await asyncio.sleep(0.01)
    assert watcher.outbox.queued == 1 and not watcher.outbox.closing
    stall.release()
    views = [(await asyncio.wait_for(ws.receive(), WAIT)).json() for _ in range(2)]
    assert [v["view"]["version"] for v in views] == [stuck_on, version]
    assert views[1]["view"] == await api.view(game_id)
    await ws.close()


async def test_answers_go_through_the_queue_too(make_stack: MakeStack) -> None:
    """A message's answer is a frame like any other: a client that sends and reads nothing is
    closed once its answers fill its queue (its messages were read meanwhile)."""
    stack = await make_stack(socket_queue=4)
    api, gw = stack.api, stack.server.app[GATEWAY]
    game_id, _, tokens = await api.new_game("robbers", 2)
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[0]}")
    await asyncio.wait_for(ws.receive(), WAIT)
    (watcher,) = gw.hub.watchers[game_id]
    stall = Stall(watcher.outbox.ws)
    for n in range(8):  # not JSON: each answered with an error frame
        await ws.send_str(f"not json {n}")
    while not watcher.outbox.closing:
        await asyncio.sleep(0.01)
    assert gw.hub.watchers.get(game_id, set()) == set(), "its watcher is dropped"
    stall.release()
    # What was queued is dropped; the frame being written (if the writer had taken one) goes.
    closing = await asyncio.wait_for(ws.receive(), WAIT)
    if closing.type == WSMsgType.TEXT:
        assert closing.json()["type"] == "error" and closing.json()["error"]["code"] == "bad_json"
        closing = await asyncio.wait_for(ws.receive(), WAIT)
    assert closing.type == WSMsgType.CLOSE, closing
    assert (closing.data, closing.extra) == (TOO_SLOW, TOO_SLOW_REASON)
    assert gw.metrics.registry.get_sample_value("gateway_websockets_too_slow_total") == 1
