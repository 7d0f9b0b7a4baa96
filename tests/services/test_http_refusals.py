"""What aiohttp answers by itself, before any middleware, is in the published error shape too:
a header or a URL over the limits, a request line that is not HTTP, an unknown ``Expect``, an
unknown path of a health server, a handler that raised past every middleware. Raw sockets send
the requests (a client library would refuse to send most of them), to the gateway's app and to
a health server as ``start_http`` serves them."""

from __future__ import annotations

import asyncio
import inspect
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import fakeredis
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from services.gateway.app import make_app
from services.gateway.errors import ERROR_CODES
from shared.infra import serving
from shared.infra.observability import health_routes
from shared.infra.settings import Settings
from tests.ports import spare_port

SAFETY = 10.0  # a hang fails; never the thing asserted


async def exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as it is, read the answer to the end (the server closes after an
    error): status, headers, body."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), SAFETY)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return status, headers, body


def published(headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The body as the published error shape; its ``error``."""
    assert headers["content-type"].startswith("application/json"), (headers, body)
    doc = json.loads(body)
    assert set(doc) == {"error"} and set(doc["error"]) == {"code", "message"}, doc
    assert doc["error"]["code"] in ERROR_CODES, doc
    assert isinstance(doc["error"]["message"], str) and doc["error"]["message"], doc
    return dict(doc["error"])


async def broken(request: web.Request) -> web.Response:
    raise RuntimeError("a bug in a handler")


def health_app() -> web.Application:
    """A service's health server (no error middleware), with a route that raises."""

    async def ready() -> tuple[bool, str]:
        return True, "ok"

    app = web.Application()
    health_routes(app, CollectorRegistry(), ready)
    app.router.add_get("/broken", broken)
    return app


def gateway_app() -> web.Application:
    redis = fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())
    settings = Settings(prefix=f"hr{uuid.uuid4().hex[:8]}:", partitions=2)
    return make_app(redis, settings)


@pytest.fixture(params=["gateway", "health"])
async def port(request: pytest.FixtureRequest) -> AsyncIterator[int]:
    """The port of a served app: the gateway's, or a health server's."""
    app = gateway_app() if request.param == "gateway" else health_app()
    number = spare_port()
    runner = await serving.start_http(app, "127.0.0.1", number)
    try:
        yield number
    finally:
        await runner.cleanup()


HOST = b"Host: 127.0.0.1\r\n"


async def test_a_header_over_8_kib_is_a_json_431(port: int) -> None:
    big = b"X-Big: " + b"a" * (serving.MAX_HEADER + 1) + b"\r\n"
    status, headers, body = await exchange(
        port, b"GET /healthz HTTP/1.1\r\n" + HOST + big + b"\r\n"
    )
    assert status == 431
    assert published(headers, body)["code"] == "header_too_large"
    # just under the limit is read (and answered by the route)
    fits = b"X-Big: " + b"a" * (serving.MAX_HEADER - 100) + b"\r\n"
    close = b"Connection: close\r\n"
    status, _, _ = await exchange(
        port, b"GET /healthz HTTP/1.1\r\n" + HOST + fits + close + b"\r\n"
    )
    assert status == 200


async def test_a_20_kib_url_is_a_json_414(port: int) -> None:
    path = b"/healthz?junk=" + b"a" * 20_000
    status, headers, body = await exchange(port, b"GET " + path + b" HTTP/1.1\r\n" + HOST + b"\r\n")
    assert status == 414
    assert published(headers, body)["code"] == "url_too_large"


@pytest.mark.parametrize(
    "request_line",
    [b"GARBAGE\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n", b"GET / HTTP/9.x\r\n"],
    ids=["words", "tls-hello", "version"],
)
async def test_a_request_line_that_is_not_http_is_a_json_400(
    port: int, request_line: bytes
) -> None:
    status, headers, body = await exchange(port, request_line + HOST + b"\r\n")
    assert status == 400
    assert published(headers, body)["code"] == "bad_request"


async def test_an_unknown_expect_is_a_json_417(port: int) -> None:
    request = b"GET /healthz HTTP/1.1\r\n" + HOST + b"Expect: teapot\r\nConnection: close\r\n\r\n"
    status, headers, body = await exchange(port, request)
    assert status == 417
    error = published(headers, body)
    assert error["code"] == "bad_request" and "teapot" in error["message"]


async def test_unknown_paths_and_methods_are_json(port: int) -> None:
    close = HOST + b"Connection: close\r\n\r\n"
    status, headers, body = await exchange(port, b"GET /no/such/path HTTP/1.1\r\n" + close)
    assert status == 404 and published(headers, body)["code"] == "not_found"
    status, headers, body = await exchange(port, b"DELETE /healthz HTTP/1.1\r\n" + close)
    assert status == 405 and published(headers, body)["code"] == "bad_request"


async def test_a_handler_raising_past_every_middleware_is_a_json_500() -> None:
    number = spare_port()
    runner = await serving.start_http(health_app(), "127.0.0.1", number)
    try:
        request = b"GET /broken HTTP/1.1\r\n" + HOST + b"Connection: close\r\n\r\n"
        status, headers, body = await exchange(number, request)
        assert status == 500 and published(headers, body)["code"] == "internal"
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"http://127.0.0.1:{number}/healthz") as answer,
        ):
            assert answer.status == 200  # the server lives on
    finally:
        await runner.cleanup()


async def test_the_gateways_own_errors_pass_unchanged() -> None:
    """``published`` rewrites aiohttp's text only: an error the gateway answered already in
    JSON (an ``ApiError``, the middleware's answers) keeps its status, code and message."""
    number = spare_port()
    runner = await serving.start_http(gateway_app(), "127.0.0.1", number)
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{number}/api/games/nosuch") as answer:
                assert answer.status == 404
                doc = await answer.json()
            assert doc["error"] == {"code": "not_found", "message": "no game 'nosuch'"}
            async with session.post(f"http://127.0.0.1:{number}/api/games", data=b"[") as answer:
                assert answer.status == 400
                assert (await answer.json())["error"]["code"] == "bad_json"
    finally:
        await runner.cleanup()


# --- what start_http relies on in aiohttp (fails loudly if a new aiohttp changes it) ----------


async def test_aiohttp_still_has_what_start_http_builds_on() -> None:
    handle_error = inspect.signature(web.RequestHandler.handle_error)
    assert list(handle_error.parameters) == ["self", "request", "status", "exc", "message"], (
        "aiohttp's RequestHandler.handle_error changed: serving.JsonRefusals overrides it"
    )
    assert "__slots__" in vars(web.RequestHandler), (
        "aiohttp's RequestHandler has no __slots__ any more: JsonRefusals cannot take over a "
        "protocol's class (serving._JsonServer)"
    )

    async def handler(request: web.BaseRequest) -> web.StreamResponse:
        return web.Response()

    assert "request_handler" in vars(web.Server(handler)), (
        "aiohttp's Server.request_handler is gone: serving.start_http wraps it"
    )


async def test_start_http_serves_json_refusals() -> None:
    number = spare_port()
    runner = await serving.start_http(health_app(), "127.0.0.1", number)
    try:
        server = runner.server
        assert isinstance(server, serving._JsonServer)
        protocol = server()
        assert isinstance(protocol, serving.JsonRefusals), type(protocol)
        assert protocol.max_line_size == serving.MAX_REQUEST_LINE
        assert protocol.max_field_size == serving.MAX_HEADER
    finally:
        await runner.cleanup()


def test_every_refusal_code_is_published() -> None:
    for status in [400, 401, 403, 404, 405, 413, 414, 417, 429, 431, 500, 503, 504]:
        assert serving.code_for_status(status) in ERROR_CODES, status
    for code in ["url_too_large", "header_too_large", "bad_request", "internal"]:
        assert code in ERROR_CODES
