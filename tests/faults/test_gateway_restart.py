"""A gateway restarted (SIGTERM, then a new process on the same port) twice while a game is
played (through another gateway, so it goes on meanwhile) and watched over WebSockets.

Each watcher (every seat, and a spectator) connects with ``?after=0``, counts every event it is
sent, and when its socket closes reconnects with backoff with ``?after=<last version seen>``.
It must see each close as GOING_AWAY (1001), and across the reconnects get every version of
the game exactly once, in order, with its view ending at the game's last version (and equal to
what a fresh request for its view returns).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import WSCloseCode, WSMsgType

from tests.faults.conftest import MakeDeployment
from tests.faults.harness import Client, Json, Ledger, check_logs, play
from tests.servers import until, wait_ready

pytestmark = pytest.mark.slow

RESTARTS = 2
PLAYED = 20  # commands played with the gateway up, then as many with it down, at each restart
PACE = 0.03  # seconds after each command: the watchers see the game move


@dataclass
class Watcher:
    """A WebSocket client that reconnects and catches up, as the web client does."""

    port: int
    game_id: str
    token: str | None
    versions: list[int] = field(default_factory=list)  # every event version received
    view: Json | None = None
    closes: list[int | None] = field(default_factory=list)
    connects: int = 0

    @property
    def last(self) -> int:
        return self.versions[-1] if self.versions else 0

    async def run(self, session: aiohttp.ClientSession, done: asyncio.Event) -> None:
        delay = 0.05
        while not done.is_set():
            query = f"after={self.last}" + (f"&token={self.token}" if self.token else "")
            url = f"http://127.0.0.1:{self.port}/api/games/{self.game_id}/ws?{query}"
            try:
                ws = await session.ws_connect(url, heartbeat=5)
            except (aiohttp.ClientError, OSError):
                await asyncio.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            self.connects += 1
            delay = 0.05
            async with ws:
                closed = asyncio.create_task(done.wait())
                try:
                    while True:
                        receiving = asyncio.create_task(ws.receive())
                        await asyncio.wait({receiving, closed}, return_when="FIRST_COMPLETED")
                        if not receiving.done():
                            receiving.cancel()
                            with contextlib.suppress(asyncio.CancelledError):
                                await receiving
                            return
                        message = receiving.result()
                        if message.type != WSMsgType.TEXT:
                            # What the server said: the code of its close frame (aiohttp's
                            # close_code turns 1006 if the reply to it finds the socket shut).
                            closing = message.type == WSMsgType.CLOSE
                            self.closes.append(message.data if closing else ws.close_code)
                            break
                        self.take(message.json())
                finally:
                    closed.cancel()

    def take(self, doc: Json) -> None:
        if doc["type"] == "events":
            self.versions.extend(event["version"] for event in doc["events"])
        elif doc["type"] == "view":
            self.view = doc["view"]


async def test_websocket_clients_reconnect_to_a_restarted_gateway_and_miss_nothing(
    make_deployment: MakeDeployment,
) -> None:
    deployment = make_deployment()
    gateway = deployment.start("gateway", "gateway-0")
    port = gateway.port  # the watchers' gateway, restarted on this port
    other = deployment.start("gateway", "gateway-other")  # the player's: play goes on meanwhile
    referee = deployment.start("referee", "referee")
    scoring = deployment.start("scoring", "scoring")
    ledger = Ledger()
    missed = []  # versions appended while the watchers' gateway was away
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, gateway, other, referee, scoring)
        client = Client(session, other.port, ledger, patience=60)
        game_id, tokens = await client.new_game("robbers", 3, {"match_rounds": 2})
        watchers = [Watcher(port, game_id, token) for token in [*tokens, None]]
        done = asyncio.Event()
        watching = [asyncio.create_task(w.run(session, done)) for w in watchers]
        bots = ["greedy", "random", "greedy"]

        async def play_some(seed: int) -> int:
            """``PLAYED`` commands of the game (not its end: a game of three over two rounds
            takes a few hundred); the version they reached."""
            shown = await play(client, game_id, tokens, bots, seed, PACE, stop_after=PLAYED)
            assert shown["status"] != "finished", "the game ended before the restarts"
            return int(shown["version"])

        try:
            for restart in range(1, RESTARTS + 1):
                # Played on while every watcher is connected to this gateway...
                await until(lambda r=restart: all(w.connects == r for w in watchers), 30)
                await play_some(seed=restart)
                assert all(w.connects == restart for w in watchers), [w.connects for w in watchers]
                assert gateway.stop(signal.SIGTERM) == 0, gateway.output()[-3000:]
                before = (await client.view(game_id))["version"]
                # ... and while it is away.
                missed.append(await play_some(seed=100 + restart) - before)
                gateway = deployment.start("gateway", f"gateway-{restart}", port=port)
                await wait_ready(session, gateway)
            final = await asyncio.wait_for(play(client, game_id, tokens, bots, 3, PACE), 120)
            version = final["version"]
            await until(lambda: _caught_up(watchers, version), 15)
        finally:
            done.set()
            await asyncio.gather(*watching, return_exceptions=True)
        assert final["status"] == "finished"
        assert all(n > 0 for n in missed), missed  # there was something to catch up on

        for watcher in watchers:
            who = f"watcher {watcher.token and watcher.token[:6]}"
            # Noticed each restart as the server going away, and reconnected each time.
            assert watcher.closes == [WSCloseCode.GOING_AWAY] * RESTARTS, (who, watcher.closes)
            assert watcher.connects == RESTARTS + 1, who
            # Every version exactly once, in order, across the reconnects.
            assert watcher.versions == list(range(1, version + 1)), (who, _gaps(watcher.versions))
            assert watcher.view is not None and watcher.view["version"] == version, who
            assert watcher.view == await client.view(game_id, watcher.token), who

    await check_logs(deployment.redis.url, deployment.prefix, [game_id], ledger)
    print(
        f"\n{len(watchers)} watchers, {RESTARTS} gateway restarts ({missed} versions appended "
        f"while it was away), {version} versions each, exactly once"
    )


async def _caught_up(watchers: list[Watcher], version: int) -> bool:
    return all(w.last >= version and w.view and w.view["version"] >= version for w in watchers)


def _gaps(versions: list[int]) -> dict[str, Any]:
    """What is wrong with a version list: repeats and holes."""
    seen = set(versions)
    return {
        "repeated": sorted({v for v in versions if versions.count(v) > 1}),
        "missing": [v for v in range(1, max(seen, default=0) + 1) if v not in seen],
        "out_of_order": any(b < a for a, b in itertools.pairwise(versions)),
    }
