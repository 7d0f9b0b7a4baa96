"""A socket's heartbeat is due at its own time, not on the loop's next whole second: aiohttp
rounds a timeout over its threshold up to a whole second, and at 10,000 sockets the 20-second
heartbeats then fired some 500 at a time, once a second, stalling every command in flight."""

from __future__ import annotations

import math

import aiohttp
from aiohttp import web

from services.gateway.routes.websocket import HEARTBEAT_SECONDS
from shared.infra import serving
from tests.ports import spare_port


async def test_start_http_leaves_a_sockets_heartbeat_unrounded() -> None:
    served: list[web.WebSocketResponse] = []

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(heartbeat=HEARTBEAT_SECONDS)
        await ws.prepare(request)
        served.append(ws)
        async for _ in ws:
            pass
        return ws

    app = web.Application()
    app.router.add_get("/ws", socket)
    number = spare_port()
    runner = await serving.start_http(app, "127.0.0.1", number)
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(3):
                async with session.ws_connect(f"http://127.0.0.1:{number}/ws") as ws:
                    await ws.send_str("hello")
                    await ws.close()
    finally:
        await runner.cleanup()
    assert len(served) == 3
    # aiohttp keeps each socket's next heartbeat's due time here (the test fails loudly if a
    # new aiohttp moves it): now + 20 s, not rounded up to a whole second of the loop's clock.
    due = [ws._heartbeat_when for ws in served]
    assert all(when > 0 for when in due), due
    assert not any(when == math.ceil(when) for when in due), due
    assert HEARTBEAT_SECONDS < serving.ROUNDED_TIMEOUTS  # the gateway's are as unrounded
