"""The output of real `rummy` processes is JSON lines only, whatever happens: requests aiohttp
refuses before any middleware (answered in the published error shape), a handler that raised
(the gateway's middleware logs the traceback inside its line), a library's traceback (the event
loop's, through the standard ``logging``)."""

from __future__ import annotations

import asyncio
import json
import signal

import aiohttp
import pytest
import redis

from services.gateway.errors import ERROR_CODES
from shared.infra.keys import Keys
from tests.faults.conftest import MakeDeployment
from tests.faults.harness import Json, Service
from tests.servers import until, wait_ready

pytestmark = pytest.mark.slow

SAFETY = 20.0  # a hang fails; never the thing asserted


async def refused(port: int, request: bytes) -> tuple[int, Json]:
    """Send raw bytes; the status and the JSON body of the answer (the server closes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), SAFETY)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"application/json" in head, raw[:300]
    doc = json.loads(body)
    assert set(doc["error"]) == {"code", "message"} and doc["error"]["code"] in ERROR_CODES
    return int(head.split()[1]), doc["error"]


def json_lines(service: Service) -> list[Json]:
    """Every line of the process's output (stdout and stderr) as a JSON object."""
    docs = []
    for line in service.output().splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            raise AssertionError(
                f"{service.name} wrote a line that is not JSON: {line!r}"
            ) from None
        assert isinstance(doc, dict), line
        docs.append(doc)
    return docs


HOST = b"Host: 127.0.0.1\r\n"
OVERSIZED = [
    (b"GET /healthz HTTP/1.1\r\n" + HOST + b"X-Big: " + b"a" * 9000 + b"\r\n\r\n", 431),
    (b"GET /healthz?q=" + b"a" * 20_000 + b" HTTP/1.1\r\n" + HOST + b"\r\n", 414),
    (b"HELLO THERE\r\n" + HOST + b"\r\n", 400),
]


async def test_the_processes_write_only_json_lines(make_deployment: MakeDeployment) -> None:
    deployment = make_deployment()
    gateway = deployment.start("gateway", "gateway")
    referee = deployment.start("referee", "referee")
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, gateway, referee)

        for service in (gateway, referee):  # the API and a health port alike
            for request, status in OVERSIZED:
                assert (await refused(service.port, request))[0] == status

        # A handler raises: the game's log is not a stream (the gateway's read of it fails).
        node = redis.Redis(host="127.0.0.1", port=deployment.redis.port)
        node.set(Keys(deployment.prefix).events("broken"), "not a stream")
        node.close()
        url = f"http://127.0.0.1:{gateway.port}/api/games/broken"
        async with session.get(url) as answer:
            assert answer.status == 500
            assert (await answer.json())["error"]["code"] == "internal"

        # A library's traceback: a callback of the gateway's event loop raises.
        gateway.popen.send_signal(signal.SIGUSR2)

        async def logged_by_asyncio() -> bool:
            return any(line.get("logger") == "asyncio" for line in gateway.log_lines())

        await until(logged_by_asyncio, SAFETY, message="the loop's traceback was not logged")
        async with session.get(f"http://127.0.0.1:{gateway.port}/healthz") as answer:
            assert answer.status == 200  # it serves on

    assert gateway.stop() == 0 and referee.stop() == 0
    lines = json_lines(gateway)
    json_lines(referee)
    failed = [line for line in lines if line["event"] == "request failed"]
    assert len(failed) == 1 and failed[0]["path"] == "/api/games/broken", failed
    assert "WRONGTYPE" in failed[0]["exception"] and "Traceback" in failed[0]["exception"]
    loop = [line for line in lines if line.get("logger") == "asyncio"]
    assert len(loop) == 1 and "a fault injected by SIGUSR2" in loop[0]["exception"], loop
    refusals = [line["code"] for line in lines if line["event"] == "request refused"]
    assert refusals == ["header_too_large", "url_too_large", "bad_request"]
    assert any(line["event"] == "gateway listening" for line in lines)
