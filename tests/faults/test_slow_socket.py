"""A hostile WebSocket client against real processes (`rummy gateway`, `referee`, `scoring` on a
redis-server of the test's own): it watches a game with a long log, sends ``sync`` frames
(each asks for the whole log again) and never reads, over a connection with a small receive
buffer. The gateway closes it with 4008 once its queue is full; meanwhile every change of
another game reaches that game's watcher on the same gateway, exactly once and in order (the
old gateway stopped pushing to every game once this client's buffers were full)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid

import aiohttp
import pytest

from tests.faults.conftest import MakeDeployment
from tests.faults.harness import Client, Json, Ledger, check_logs, metric
from tests.gateway.rawsocket import CLOSE, RawSocket, close_code
from tests.servers import http_status, wait_ready

pytestmark = pytest.mark.slow

WAIT = 60.0  # safety nets only
QUEUE = 32
LONG_LOG = 120
AFTER_CLOSE = 5
MAX_ROUNDS = 3000
TOO_SLOW, TOO_SLOW_REASON = 4008, "too slow: reconnect with ?after=<version>"  # the contract
SYNC = json.dumps({"type": "sync", "after": 0})


async def reject(client: Client, game_id: str, tokens: list[str]) -> int:
    """The seat whose turn it is lays a one-card meld: refused and recorded (a change that can
    be made for ever). Returns the new version."""
    spectator = await client.view(game_id)
    seat = spectator["turn"]["seat"]
    view = await client.view(game_id, tokens[seat])
    body = {"id": uuid.uuid4().hex, "type": "play", "layout": [*view["table"], [view["hand"][0]]]}
    status, doc = await client.command(game_id, seat, tokens[seat], body)
    assert status == 422 and doc["error"]["code"] == "illegal_layout", (status, doc)
    return int(doc["version"])


async def test_a_client_that_never_reads_is_closed_and_every_push_goes_on(
    make_deployment: MakeDeployment,
) -> None:
    # The per-socket sync limit off: the slow client fills its queue with catch-ups quickly
    # (the limit has tests of its own).
    deployment = make_deployment(RUMMY_SOCKET_QUEUE=str(QUEUE), RUMMY_LIMIT_SYNC_PER_MINUTE="0")
    gateway = deployment.start("gateway", "gateway")
    referee = deployment.start("referee", "referee")
    scoring = deployment.start("scoring", "scoring")
    ledger = Ledger()
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, gateway, referee, scoring)
        client = Client(session, gateway.port, ledger)
        long_game, long_tokens = await client.new_game("robbers", 2, {})
        other, other_tokens = await client.new_game("robbers", 2, {})
        for _ in range(LONG_LOG):
            await reject(client, long_game, long_tokens)
        start = (await client.view(other))["version"]

        base = f"http://127.0.0.1:{gateway.port}/api/games"
        watching = await session.ws_connect(f"{base}/{other}/ws?after={start}")
        seen: list[int] = []
        views: list[int] = [0]

        async def follow() -> None:
            async for message in watching:
                if message.type != aiohttp.WSMsgType.TEXT:
                    return
                doc = message.json()
                if doc["type"] == "events":
                    seen.extend(e["version"] for e in doc["events"])
                elif doc["type"] == "view":
                    views.append(doc["view"]["version"])

        async def reached(version: int) -> None:
            async def poll() -> None:
                while views[-1] < version or (seen or [0])[-1] < version:
                    await asyncio.sleep(0.01)

            try:
                await asyncio.wait_for(poll(), WAIT)
            except TimeoutError:
                got = (seen or [0])[-1]
                raise AssertionError(f"never pushed: version {version} (got {got})") from None

        async def too_slow() -> float:
            status, text = await http_status(session, gateway.port, "/metrics")
            assert status == 200, text
            return metric(text, "gateway_websockets_too_slow_total")

        slow = await RawSocket.connect(
            "127.0.0.1", gateway.port, f"/api/games/{long_game}/ws?after=0"
        )
        closed_slow = asyncio.Event()

        async def spam() -> None:
            while not closed_slow.is_set():
                await slow.send_text(SYNC)
                await asyncio.sleep(0)

        async def read_once_closed() -> tuple[list[Json], tuple[int, str]]:
            while not await too_slow():
                await asyncio.sleep(0.02)
            closed_slow.set()
            frames: list[Json] = []
            while True:
                opcode, payload = await slow.receive()
                if opcode == CLOSE:
                    return frames, close_code(payload)
                frames.append(json.loads(payload))

        following = asyncio.create_task(follow())
        spamming = asyncio.create_task(spam())
        reading = asyncio.create_task(read_once_closed())
        try:
            rounds = after_close = 0
            while after_close < AFTER_CLOSE:
                await reject(client, long_game, long_tokens)
                final = await reject(client, other, other_tokens)
                await reached(final)
                rounds += 1
                assert rounds < MAX_ROUNDS, "the slow client was never closed"
                after_close += bool(await too_slow())
            assert seen == list(range(start + 1, final + 1)), "exactly once, in order"
            acked = {a.version for a in ledger.acks if a.game_id == other}
            assert acked <= set(seen)

            frames, (code, reason) = await asyncio.wait_for(reading, WAIT)
            assert (code, reason) == (TOO_SLOW, TOO_SLOW_REASON)
            sent = [e["version"] for f in frames if f["type"] == "events" for e in f["events"]]
            assert sent and sent[-1] <= (await client.view(long_game))["version"]
        finally:
            spamming.cancel()
            reading.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.gather(spamming, reading)
            slow.close()
        await watching.close()
        await asyncio.wait_for(following, WAIT)
        assert await too_slow() == 1

    logged = [line for line in gateway.log_lines() if "too slow" in str(line.get("event"))]
    assert len(logged) == 1 and logged[0]["game"] == long_game, logged
    assert gateway.stop() == 0, gateway.output()[-3000:]
    await check_logs(deployment.redis.url, deployment.prefix, [long_game, other], ledger, False)
    print(f"\nclosed after {rounds - AFTER_CLOSE} rounds; {len(frames)} frames sent before it")
