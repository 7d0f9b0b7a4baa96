"""The bare pipeline: the same path as a turn with no game logic at all, for scale.

client --WebSocket--> front (aiohttp) --XADD--> stream --XREADGROUP--> worker --XADD--> reply
stream --XREAD--> front --WebSocket--> client. Each piece is its own process, as in the
deployment; the worker acknowledges every entry. ``tests/bench/load.py`` runs it in the same
session as the real services, so the two figures are taken on the same machine at the same time.

    python tests/bench/bare.py --redis redis://127.0.0.1:6379/0 --clients 50 --duration 10
        [--pace 1.0]   (open loop: each client sends one message a second)
    python tests/bench/bare.py front --port P --redis URL    (one piece alone)
    python tests/bench/bare.py worker --redis URL
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from typing import Any

PREFIX = "bare:"  # a run's keys: "<prefix>commands" and "<prefix>replies:<front>"


async def front(port: int, url: str, prefix: str) -> None:
    """Take messages on WebSockets, queue them, answer each with the worker's reply."""
    import redis.asyncio as aioredis
    from aiohttp import WSMsgType, web

    # A blocking pool: hundreds of sockets send at once (the plain pool refuses past its size).
    pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=512, timeout=20)
    client = aioredis.Redis.from_pool(pool)
    replies = f"{prefix}replies:{uuid.uuid4().hex[:8]}"
    waiting: dict[str, asyncio.Future[bytes]] = {}
    start = await client.xadd(replies, {"c": b"{}"}, maxlen=10_000)

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for message in ws:
            if message.type != WSMsgType.TEXT:
                continue
            rid = uuid.uuid4().hex
            future: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
            waiting[rid] = future
            await client.xadd(f"{prefix}commands", {"c": message.data, "r": rid, "to": replies})
            await ws.send_str((await future).decode())
        return ws

    await serve(port, socket, [follow(client, replies, start, answerer(waiting))])


def answerer(
    waiting: dict[str, asyncio.Future[bytes]],
) -> Callable[[dict[bytes, bytes]], Awaitable[None]]:
    """What a front does with a reply: the answer to the message waiting under its id."""

    async def answer(fields: dict[bytes, bytes]) -> None:
        future = waiting.pop(fields[b"r"].decode(), None)
        if future is not None and not future.done():
            future.set_result(fields[b"c"])

    return answer


async def serve(port: int, socket: Any, readers: list[Coroutine[Any, Any, None]]) -> None:
    """Serve ``socket`` at ``/ws`` on ``port``, with ``readers`` running, until cancelled."""
    from aiohttp import web

    app = web.Application()
    app.router.add_get("/ws", socket)
    tasks = [asyncio.create_task(reader) for reader in readers]
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        await asyncio.Event().wait()
    finally:
        for task in tasks:
            task.cancel()


async def worker(url: str, prefix: str) -> None:
    """Answer every queued message (its id back), a batch at a time."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    stream = f"{prefix}commands"
    async for entries in queued(client, stream):
        pipe = client.pipeline(transaction=False)
        for entry_id, fields in entries:
            answer = json.dumps({"ok": True, "echo": json.loads(fields[b"c"])["id"]})
            pipe.xadd(fields[b"to"], {"c": answer, "r": fields[b"r"]}, maxlen=10_000)
            pipe.xack(stream, "workers", entry_id)
        await pipe.execute()


async def follow(
    client: Any, stream: str, after: Any, handle: Callable[[dict[bytes, bytes]], Awaitable[None]]
) -> None:
    """Read ``stream`` after entry ``after`` for ever, handing each entry's fields to
    ``handle`` (a front's reply stream, its feed)."""
    while True:
        reply = await client.xread({stream: after}, count=500, block=1000)
        for _, entries in reply or []:
            for entry_id, fields in entries:
                after = entry_id
                await handle(fields)


async def queued(client: Any, stream: str) -> AsyncIterator[list[tuple[bytes, dict[bytes, bytes]]]]:
    """The workers' group of ``stream`` (made if missing), then each batch of entries it gets."""
    try:
        await client.xgroup_create(stream, "workers", id="$", mkstream=True)
    except Exception as err:
        if "BUSYGROUP" not in str(err):
            raise
    while True:
        reply = await client.xreadgroup("workers", "w1", {stream: ">"}, count=100, block=1000)
        for _, entries in reply or []:
            yield entries


async def clients(url: str, count: int, duration: float, pace: float | None) -> dict[str, Any]:
    """``count`` WebSocket clients, closed loop (or one message per ``pace`` seconds each)."""
    import aiohttp

    latencies: list[float] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        sockets = [await session.ws_connect(url) for _ in range(count)]

        async def warm(ws: Any) -> None:  # one round trip each before the clock (connections)
            await ws.send_str(json.dumps({"id": "warm-up", "type": "draw"}))
            await ws.receive()

        await asyncio.gather(*(warm(ws) for ws in sockets))
        begin = time.monotonic()
        end = begin + duration

        async def run(ws: Any, slot: int) -> None:
            next_at = begin + (slot / count) * (pace or 0)
            while time.monotonic() < end:
                if pace:
                    await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                    next_at += pace
                started = time.perf_counter()
                await ws.send_str(json.dumps({"id": uuid.uuid4().hex[:16], "type": "draw"}))
                await ws.receive()
                latencies.append(time.perf_counter() - started)

        await asyncio.gather(*(run(ws, i) for i, ws in enumerate(sockets)))
        seconds = time.monotonic() - begin
        for ws in sockets:
            await ws.close()
    latencies.sort()
    return {
        "clients": count,
        "mode": "open" if pace else "closed",
        "per_second": round(len(latencies) / seconds, 1),
        "latency_ms": {
            "p50": round(statistics.median(latencies) * 1000, 2),
            "p99": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 2),
            "max": round(latencies[-1] * 1000, 2),
        },
    }


def redis_counts(url: str) -> dict[str, float]:
    """Commands, bytes in and bytes out of the Redis server so far (INFO stats)."""
    import redis

    from shared.cli.loadtest import REDIS_COUNTS

    plain = redis.Redis.from_url(url)
    try:
        info = plain.info("stats")
    finally:
        plain.close()
    return {name: float(info[name]) for name in REDIS_COUNTS}


def measure(
    redis_url: str,
    count: int,
    duration: float,
    pace: float | None,
    redis_pids: Sequence[int] = (),
    shape: str = "hop",
) -> dict[str, Any]:
    """Start a front and a worker (separate processes), run the clients, stop them, and delete
    the keys of this run. ``cpu_ms``: CPU milliseconds per message of the front, the worker,
    each of ``redis_pids`` and the clients. ``shape``: ``hop`` (one socket a client, a message
    and its answer) or ``turn`` (``tests/bench/bare_turn.py``: two sockets a game, closed loop
    only)."""
    import redis

    from shared.cli.loadtest import redis_per_turn
    from tests.bench.load import cpu_seconds
    from tests.ports import spare_port
    from tests.servers import listening, wait_until

    port = spare_port()
    prefix = f"{PREFIX}{uuid.uuid4().hex[:8]}:"
    me = [sys.executable, __file__]
    common = ["--redis", redis_url, "--prefix", prefix]
    pieces = ("front", "worker") if shape == "hop" else ("turn-front", "turn-worker")
    procs = [
        subprocess.Popen([*me, pieces[0], "--port", str(port), *common]),
        subprocess.Popen([*me, pieces[1], *common]),
    ]
    try:
        wait_until(lambda: listening(port), 30, every=0.1, message=f"nothing on port {port}")
        time.sleep(0.5)  # the worker's group exists before the first message
        pids = [p.pid for p in procs] + list(redis_pids)
        counted = redis_counts(redis_url)
        before, mine = cpu_seconds(pids), time.process_time()
        url = f"ws://127.0.0.1:{port}/ws"
        from tests.bench import bare_turn

        if shape == "hop":
            result = asyncio.run(clients(url, count, duration, pace))
        else:
            result = asyncio.run(bare_turn.clients(url, count, duration))
        spent = [b - a for a, b in zip(before, cpu_seconds(pids), strict=True)]
        spent.append(time.process_time() - mine)
        done = max(1, round(result["per_second"] * duration))
        result["cpu_ms"] = [round(x / done * 1000, 3) for x in spent]
        result["redis_per_turn"] = redis_per_turn(counted, redis_counts(redis_url), done)
        return result
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(timeout=10)
        plain = redis.Redis.from_url(redis_url)
        keys = list(plain.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            plain.delete(*keys)
        plain.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "piece", nargs="?", choices=("front", "worker", "turn-front", "turn-worker")
    )
    parser.add_argument("--shape", choices=("hop", "turn"), default="hop")
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--prefix", default=PREFIX)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--pace", type=float, default=None)
    args = parser.parse_args()
    from tests.bench import bare_turn

    if args.piece == "front":
        asyncio.run(front(args.port, args.redis, args.prefix))
    elif args.piece == "worker":
        asyncio.run(worker(args.redis, args.prefix))
    elif args.piece == "turn-front":
        asyncio.run(bare_turn.front(args.port, args.redis, args.prefix))
    elif args.piece == "turn-worker":
        asyncio.run(bare_turn.worker(args.redis, args.prefix))
    else:
        figures = measure(args.redis, args.clients, args.duration, args.pace, shape=args.shape)
        print(json.dumps(figures))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    main()
