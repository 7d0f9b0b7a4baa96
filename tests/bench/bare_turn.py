"""The bare pipeline shaped as a turn: the messages a turn of the stack makes, with no game logic.

A game is two sockets (two seats) taking turns. The mover's message goes front -> command stream
-> worker, which appends it to the game's log stream, announces it on the feed and answers on
the front's reply stream (and acknowledges the entry); the front sends the mover its answer
and, from the feed, the other seat its frame, which makes that seat the next mover. So a turn
is, as in the stack: one frame in, two frames out on two sockets, a log append, a feed entry
read by the front, an answer read by the front. Each frame carries ``PAYLOAD`` bytes of text
(about what a view of a robbers game weighs). ``tests/bench/bare.py --shape turn`` runs it;
its figures tell how much of a stack turn's cost is the shape of its messages, and how much
is what the stack does with them.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

from tests.bench.bare import answerer, follow, queued, serve

# Bytes of text in each frame out: a robbers view of two seats is 660-1,380 bytes (median 1,070,
# over the turns of 5 self-played games).
PAYLOAD = 1_000
RECEIVE_SECONDS = 10.0  # a frame that never comes fails the run rather than hanging it


async def front(port: int, url: str, prefix: str) -> None:
    """Take each mover's message, queue it, answer the mover with the worker's reply, and send
    the feed's frames to the game's other sockets."""
    import redis.asyncio as aioredis
    from aiohttp import WSMsgType, web

    pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=512, timeout=20)
    client = aioredis.Redis.from_pool(pool)
    replies = f"{prefix}replies:{uuid.uuid4().hex[:8]}"
    feed = f"{prefix}feed"
    waiting: dict[str, asyncio.Future[bytes]] = {}
    seats: dict[str, dict[int, web.WebSocketResponse]] = {}
    replies_start = await client.xadd(replies, {"c": b"{}"}, maxlen=10_000)
    feed_start = await client.xadd(feed, {"g": b"", "s": b"-1", "c": b"{}"}, maxlen=10_000)

    async def tell_the_others(fields: dict[bytes, bytes]) -> None:
        mover, text = int(fields[b"s"]), fields[b"c"].decode()
        for seat, ws in seats.get(fields[b"g"].decode(), {}).items():
            if seat != mover and not ws.closed:
                await ws.send_str(text)

    async def socket(request: web.Request) -> web.WebSocketResponse:
        game, seat = request.query["game"], int(request.query["seat"])
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        seats.setdefault(game, {})[seat] = ws
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            if not isinstance(json.loads(message.data), dict):  # as the stack parses each
                continue
            rid = uuid.uuid4().hex
            future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            waiting[rid] = future
            fields = {"c": message.data, "r": rid, "to": replies, "g": game, "s": str(seat)}
            await client.xadd(f"{prefix}commands", fields)
            await ws.send_str((await future).decode())
        seats.get(game, {}).pop(seat, None)
        return ws

    readers = [
        follow(client, replies, replies_start, answerer(waiting)),
        follow(client, feed, feed_start, tell_the_others),
    ]
    await serve(port, socket, readers)


async def worker(url: str, prefix: str) -> None:
    """For every queued message: append it to its game's log, announce it on the feed, answer
    its sender, acknowledge it; a batch at a time, in one pipeline."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    stream = f"{prefix}commands"
    padding = "x" * PAYLOAD
    async for entries in queued(client, stream):
        pipe = client.pipeline(transaction=False)
        for entry_id, fields in entries:
            game = fields[b"g"]
            echo = json.loads(fields[b"c"])["id"]
            frame = json.dumps({"type": "view", "echo": echo, "view": padding})
            pipe.xadd(f"{prefix}log:{game.decode()}", {"e": fields[b"c"]})
            pipe.xadd(f"{prefix}feed", {"g": game, "s": fields[b"s"], "c": frame}, maxlen=10_000)
            answer = json.dumps({"type": "answer", "echo": echo, "view": padding})
            pipe.xadd(fields[b"to"], {"c": answer, "r": fields[b"r"]}, maxlen=10_000)
            pipe.xack(stream, "workers", entry_id)
        await pipe.execute()


async def clients(url: str, games: int, duration: float) -> dict[str, Any]:
    """``games`` games of two sockets each, closed loop: the mover sends, gets its answer, and
    the other seat, once its frame has come, moves next."""
    import statistics

    import aiohttp

    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        tables = []
        for g in range(games):
            game = f"g{g:05d}"
            pair = [await session.ws_connect(f"{url}?game={game}&seat={s}") for s in (0, 1)]
            tables.append(pair)

        async def move(pair: list[Any], mover: int) -> float:
            started = time.perf_counter()
            await pair[mover].send_str(json.dumps({"id": uuid.uuid4().hex[:16], "type": "draw"}))
            await pair[mover].receive(timeout=RECEIVE_SECONDS)
            took = time.perf_counter() - started
            await pair[1 - mover].receive(timeout=RECEIVE_SECONDS)  # its frame: its turn now
            return took

        await asyncio.gather(*(move(pair, 0) for pair in tables))  # one turn each, unmeasured
        begin = time.monotonic()
        end = begin + duration

        async def play(pair: list[Any]) -> None:
            mover = 1
            while time.monotonic() < end:
                latencies.append(await move(pair, mover))
                mover = 1 - mover

        await asyncio.gather(*(play(pair) for pair in tables))
        seconds = time.monotonic() - begin
        for pair in tables:
            for ws in pair:
                await ws.close()
    latencies.sort()
    return {
        "clients": games,
        "mode": "closed",
        "per_second": round(len(latencies) / seconds, 1),
        "latency_ms": {
            "p50": round(statistics.median(latencies) * 1000, 2),
            "p99": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
            "max": round(latencies[-1] * 1000, 2),
        },
    }
