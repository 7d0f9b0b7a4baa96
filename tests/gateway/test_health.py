"""The operational endpoints: /healthz, /readyz, /metrics, /openapi.json, the landing page; and
CORS (no cross-origin grant)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from redis.exceptions import ReadOnlyError

from services.gateway.errors import ERROR_CODES
from services.gateway.state import GATEWAY
from tests.gateway.conftest import Stack
from tests.servers import until

WAIT = 10.0  # a safety net: the gateway's own loop notices within a second or so

# The routes of the public contract (docs/api.md).
CONTRACT = {
    "/api/games",
    "/api/games/{game_id}",
    "/api/games/{game_id}/seats",
    "/api/games/{game_id}/start",
    "/api/games/{game_id}/commands",
    "/api/games/{game_id}/events",
    "/api/games/{game_id}/ws",
    "/healthz",
    "/readyz",
    "/metrics",
    "/openapi.json",
}


async def test_health_and_readiness(stack: Stack) -> None:
    reply = await stack.api.call("GET", "/healthz")
    assert reply.status == 200 and reply.body["status"] == "ok"
    reply = await stack.api.call("GET", "/readyz")
    assert reply.status == 200 and reply.body["status"] == "ready"
    # Redis gone: still alive, no longer ready once the gateway's ping (its background loop,
    # here one check of it run at once) finds it so; ready again after the next.
    gateway = stack.server.app[GATEWAY]
    stack.redis.connection_pool.connection_kwargs["server"].connected = False
    try:
        await gateway.readiness.check(gateway.heartbeat)
        assert (await stack.api.call("GET", "/healthz")).status == 200
        reply = await stack.api.call("GET", "/readyz")
        assert reply.status == 503 and reply.body["status"] == "not ready"
        assert reply.body["detail"].startswith("redis:"), reply.body
    finally:
        stack.redis.connection_pool.connection_kwargs["server"].connected = True
    await gateway.readiness.check(gateway.heartbeat)
    assert (await stack.api.call("GET", "/readyz")).status == 200


async def test_not_ready_while_redis_refuses_writes(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every command, create and limit of the gateway writes: a Redis that answers pings but
    refuses writes (a read-only replica) is no Redis to send traffic to. The readiness loop's
    round trip is a write, so the gateway's own loop finds it so (the probe calls nothing),
    and ready again once Redis takes writes."""
    gateway = stack.server.app[GATEWAY]
    writes = gateway.client.pexpire

    async def read_only(*args: Any, **kwargs: Any) -> Any:
        raise ReadOnlyError("You can't write against a read only replica.")

    async def readyz(status: str) -> Any:
        """/readyz's body once its status is ``status``."""
        body = (await stack.api.call("GET", "/readyz")).body
        return body if body["status"] == status else None

    monkeypatch.setattr(gateway.client, "pexpire", read_only)
    assert await gateway.client.ping()  # pings still answered
    refused = await until(lambda: readyz("not ready"), WAIT)
    assert refused["detail"].startswith("redis:") and "read only" in refused["detail"]
    monkeypatch.setattr(gateway.client, "pexpire", writes)
    await until(lambda: readyz("ready"), WAIT)


async def test_metrics_count_requests_by_route_and_status(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2)
    await api.view(game_id, tokens[0])
    await api.call("GET", "/api/games/gnosuchgame0000")
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws")
    await ws.receive()
    reply = await api.call("GET", "/metrics")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/plain")
    text = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
    assert "gateway_requests_total" in text
    assert re.search(r'gateway_requests_total\{route="/api/games",status="201"\} 1\.0', text)
    assert re.search(
        r'gateway_requests_total\{route="/api/games/\{game_id\}",status="404"\} 1\.0', text
    )
    assert re.search(r"gateway_websockets 1\.0", text)
    assert "gateway_request_seconds_bucket" in text and "gateway_commands_total" in text
    await ws.close()


async def test_the_openapi_document_describes_every_route(stack: Stack) -> None:
    reply = await stack.api.call("GET", "/openapi.json")
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("application/json")
    doc = reply.body
    assert isinstance(doc, dict) and doc["openapi"].startswith("3.")
    json.dumps(doc)  # plain JSON throughout
    served = {resource.canonical for resource in stack.server.app.router.resources()}
    assert served >= CONTRACT
    assert CONTRACT - {"/openapi.json"} <= set(doc["paths"]), CONTRACT - set(doc["paths"])
    for path, method in [
        ("/api/games", "post"),
        ("/api/games", "get"),
        ("/api/games/{game_id}", "get"),
        ("/api/games/{game_id}/seats", "post"),
        ("/api/games/{game_id}/start", "post"),
        ("/api/games/{game_id}/commands", "post"),
        ("/api/games/{game_id}/events", "get"),
    ]:
        assert method in doc["paths"][path], (path, method)
    schemas = doc["components"]["schemas"]
    detail = schemas["Error"]["properties"]["error"]["$ref"].rsplit("/", 1)[-1]
    assert schemas[detail]["properties"]["code"]["enum"] == sorted(ERROR_CODES)
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            assert operation.get("responses"), (path, method)


def test_the_openapi_document_is_valid_openapi() -> None:
    validator = pytest.importorskip("openapi_spec_validator")
    from services.gateway.openapi import openapi_document

    validator.validate(openapi_document())


async def test_the_landing_page_and_no_cross_origin_grant(stack: Stack) -> None:
    reply = await stack.api.call("GET", "/")
    assert reply.status == 200 and "text/html" in reply.headers["Content-Type"]
    # No CORS grant: a page elsewhere can neither read answers nor pass a preflight.
    foreign = {"Origin": "http://evil.example"}
    reply = await stack.api.call("GET", "/api/games", headers=foreign)
    assert reply.status == 200 and "Access-Control-Allow-Origin" not in reply.headers
    preflight = {
        **foreign,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    reply = await stack.api.call("OPTIONS", "/api/games", headers=preflight)
    assert reply.status >= 400 and "Access-Control-Allow-Origin" not in reply.headers
