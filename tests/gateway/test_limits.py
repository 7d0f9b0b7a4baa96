"""Rate limits: every limited route answers 429 with Retry-After once over its limit, changing
nothing, and lets the client through again once the (injected) clock has moved on by that long;
the limits hold across gateways sharing a Redis; X-Forwarded-For counts only from a trusted proxy.

The limits' clock stands still in these tests, so what passes is counted, never timed."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from unittest import mock

import aiohttp
import pytest
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient, TestServer, make_mocked_request

from services.gateway.app import make_app
from services.gateway.client_address import client_address, trusted_networks
from services.gateway.ratelimit import Limit, Limits
from services.gateway.state import GATEWAY
from shared.infra.keys import Keys
from shared.infra.settings import Settings, SettingsError
from tests.gateway.api import Api, Json, Reply, check_error, new_id
from tests.gateway.conftest import LimitClock, MakeStack, Stack
from tests.services.conftest import delete_prefixed, redis_client

Send = Callable[[], Awaitable[Reply]]


async def refused_after(send: Send, allowed: int) -> int:
    """``allowed`` requests pass the limit, the next is a 429 in the published shape with a
    whole-second Retry-After of at least 1 (returned)."""
    for n in range(allowed):
        reply = await send()
        assert reply.status != 429, (n, reply)
    reply = await send()
    assert reply.status == 429, reply
    check_error(reply.body, "rate_limited")
    retry = reply.headers["Retry-After"]
    assert retry.isdigit() and int(retry) >= 1, reply.headers
    return int(retry)


async def limited(make_stack: MakeStack, **settings: Any) -> tuple[Stack, LimitClock]:
    clock = LimitClock()
    return await make_stack(limit_clock=clock, **settings), clock


async def seated(stack: Stack, game_id: str) -> int:
    return len([n for n in (await stack.truth(game_id)).names if n])


# --- each route over its own limit ----------------------------------------------------------


async def test_creating_games_is_limited_per_address(make_stack: MakeStack) -> None:
    stack, clock = await limited(make_stack, limit_create_per_minute=2)
    api = stack.api

    async def create() -> Reply:
        return await api.call("POST", "/api/games", {"rules": "robbers", "seats": 2})

    retry = await refused_after(create, 2)
    assert retry == 30  # two a minute: one every 30 s
    lobby = await api.call("GET", "/api/games?status=waiting")
    assert len(lobby.body["games"]) == 2  # the refused one made no game
    clock.advance(retry - 1)
    assert (await create()).status == 429
    clock.advance(1)
    assert (await create()).status == 201
    assert (await create()).status == 429


async def test_taking_seats_is_limited_per_address(make_stack: MakeStack) -> None:
    stack, clock = await limited(make_stack, limit_seat_per_minute=2)
    api = stack.api
    game_id, _ = await api.create("robbers", 4)

    async def sit() -> Reply:
        return await api.call("POST", f"/api/games/{game_id}/seats", {"name": "p"})

    retry = await refused_after(sit, 2)
    assert retry == 30
    assert await seated(stack, game_id) == 2  # the refused sit took no seat
    clock.advance(retry)
    reply = await sit()
    assert reply.status == 201 and reply.body["seat"] == 2, reply


async def test_starting_counts_against_the_host_tokens_command_rate(make_stack: MakeStack) -> None:
    stack, clock = await limited(make_stack, rate_per_second=1)  # bursts of 2
    api = stack.api
    game_id, host = await api.create("robbers", 2)
    for n in range(2):
        await api.sit(game_id, f"p{n}")

    async def start() -> Reply:
        return await api.call("POST", f"/api/games/{game_id}/start", {}, token=host)

    retry = await refused_after(start, 2)  # a second start answers as the first did
    assert retry == 1
    assert (await stack.truth(game_id)).status == "playing"
    clock.advance(1)
    assert (await start()).status == 200


async def test_hints_are_limited_per_seat(make_stack: MakeStack) -> None:
    stack, clock = await limited(make_stack, limit_hint_per_minute=1)
    api = stack.api
    game_id, _, tokens = await api.new_game("rummikub", 2, {"opening_points": 0})

    def hint(token: str) -> Send:
        return lambda: api.call("GET", f"/api/games/{game_id}/hint", token=token)

    retry = await refused_after(hint(tokens[0]), 1)
    assert retry == 60
    assert (await hint(tokens[1])()).status == 200  # another seat has a bucket of its own
    clock.advance(retry)
    assert (await hint(tokens[0])()).status == 200


async def test_replays_exports_and_event_pages_share_a_limit_per_address(
    make_stack: MakeStack,
) -> None:
    stack, clock = await limited(make_stack, limit_replay_per_minute=3)
    api = stack.api
    game_id, _, _ = await api.new_game("robbers", 2)
    base = f"/api/games/{game_id}"
    assert (await api.call("GET", f"{base}/replay?turn=1")).status == 200
    assert (await api.call("GET", f"{base}/export")).status == 409  # not finished: counts too

    async def events() -> Reply:
        return await api.call("GET", f"{base}/events")

    retry = await refused_after(events, 1)
    assert retry == 20
    for path in (f"{base}/replay?turn=1", f"{base}/export"):
        assert (await api.call("GET", path)).status == 429
    clock.advance(retry)
    assert (await events()).status == 200


async def test_one_limit_per_address_covers_every_route_that_writes_or_computes(
    make_stack: MakeStack,
) -> None:
    stack, clock = await limited(make_stack, limit_address_per_second=2)  # bursts of 4
    api = stack.api
    game_id, host = await api.create("robbers", 2)
    await api.sit(game_id, "p0")
    await api.sit(game_id, "p1")
    assert (await api.call("GET", f"/api/games/{game_id}/events")).status == 200
    # Reads of a view are not limited.
    for _ in range(10):
        assert (await api.call("GET", f"/api/games/{game_id}")).status == 200
    reply = await api.call("POST", f"/api/games/{game_id}/start", {}, token=host)
    assert reply.status == 429, reply
    assert reply.headers["Retry-After"] == "1"
    assert (await stack.truth(game_id)).status == "waiting"  # not started
    clock.advance(0.5)
    assert (await api.call("POST", f"/api/games/{game_id}/start", {}, token=host)).status == 200


async def test_websocket_connections_and_frames_count_against_the_address(
    make_stack: MakeStack,
) -> None:
    stack, clock = await limited(make_stack)
    game_id, _, tokens = await stack.api.new_game("robbers", 2)
    # One a second, bursts of 2: set once the game is made (making it takes more than that).
    stack.server.app[GATEWAY].limits.address = Limit.per_second("address", "requests", 1)
    path = f"/api/games/{game_id}/ws?token={tokens[0]}"
    ws = await stack.client.ws_connect(path)  # 1 of a burst of 2
    assert (await answer_or_view(ws))["type"] == "view"
    await ws.send_json({"type": "sync", "after": 0})  # 2
    assert (await answer_or_view(ws))["type"] == "view"
    await ws.send_json({"type": "sync", "after": 0, "id": "s"})
    refused = await answer_or_view(ws)
    assert refused["status"] == 429 and refused["retry_after"] == 1, refused
    with pytest.raises(aiohttp.WSServerHandshakeError) as caught:
        await stack.client.ws_connect(path)
    assert caught.value.status == 429
    clock.advance(1)
    await ws.send_json({"type": "sync", "after": 0})
    assert (await answer_or_view(ws))["type"] == "view"
    await ws.close()


async def test_syncs_and_re_auths_are_limited_per_socket(make_stack: MakeStack) -> None:
    stack, clock = await limited(make_stack, limit_sync_per_minute=2)
    game_id, _, tokens = await stack.api.new_game("robbers", 2)
    path = f"/api/games/{game_id}/ws?token={tokens[0]}"
    ws = await stack.client.ws_connect(path)
    assert (await answer_or_view(ws))["type"] == "view"

    async def frame(doc: Json) -> Json:
        await ws.send_json(doc)
        return await answer_or_view(ws)

    assert (await frame({"type": "sync", "after": 0}))["type"] == "view"
    assert (await frame({"type": "auth", "token": tokens[0]}))["type"] == "view"
    refused = await frame({"type": "sync", "after": 0, "id": "s3"})
    assert refused["type"] == "answer" and refused["status"] == 429, refused
    assert refused["id"] == "s3" and refused["retry_after"] == 30, refused
    check_error(refused["body"], "rate_limited")
    refused = await frame({"type": "auth", "token": tokens[1]})
    assert refused["status"] == 429, refused
    other = await stack.client.ws_connect(path)  # another socket has a bucket of its own
    assert (await answer_or_view(other))["type"] == "view"
    await other.send_json({"type": "sync", "after": 0})
    assert (await answer_or_view(other))["type"] == "view"
    await other.close()
    clock.advance(30)
    reply = await frame({"type": "auth", "token": tokens[1]})
    assert reply["type"] == "view" and reply["view"]["you"] == 1, reply
    await ws.close()


async def answer_or_view(ws: Any) -> Json:
    """The next answer or view frame (skipping the events a sync sends before its view)."""
    while True:
        message = await ws.receive(timeout=10)
        assert message.type == WSMsgType.TEXT, message
        doc = dict(message.json())
        if doc["type"] in ("answer", "view"):
            return doc


# --- across gateways, on Redis's own clock ---------------------------------------------------


async def test_two_gateways_on_one_redis_share_the_limits() -> None:
    client = redis_client()  # the real Redis at REDIS_URL when it is set
    settings = Settings(prefix=f"lim{uuid.uuid4().hex[:8]}:", limit_replay_per_minute=2)
    clock = LimitClock()
    clients: list[TestClient[Any, Any]] = []
    try:
        for _ in range(2):
            app = make_app(client, settings, clock=clock)
            http: TestClient[Any, Any] = TestClient(TestServer(app))
            await http.start_server()
            clients.append(http)
        one, two = (Api(c) for c in clients)
        path = "/api/games/gnosuchgame/events"  # counted before the game is looked up
        assert (await one.call("GET", path)).status == 404
        assert (await two.call("GET", path)).status == 404
        for api in (one, two):
            reply = await api.call("GET", path)
            assert reply.status == 429 and reply.headers["Retry-After"] == "30", reply
        clock.advance(30)
        assert (await two.call("GET", path)).status == 404
        assert (await one.call("GET", path)).status == 429
    finally:
        for http in clients:
            await http.close()
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


async def test_on_redis_time_a_bucket_refuses_past_its_burst_and_its_key_expires() -> None:
    client = redis_client()
    settings = Settings(prefix=f"lim{uuid.uuid4().hex[:8]}:", limit_hint_per_minute=2)
    limits = Limits(client, settings)  # no clock: the script reads Redis TIME
    try:
        assert await limits.wait(limits.hint, "g1:0") == 0
        assert await limits.wait(limits.hint, "g1:0") == 0
        assert 1 <= await limits.wait(limits.hint, "g1:0") <= 30
        assert await limits.wait(limits.hint, "g1:1") == 0
        ttl = await client.pttl(Keys(settings.prefix).limit("hint", "g1:0"))
        assert 0 < ttl <= 60_000  # full again within a minute: the key goes then
    finally:
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


async def test_a_limit_of_zero_is_off(make_stack: MakeStack) -> None:
    stack, _ = await limited(make_stack, limit_create_per_minute=0, limit_address_per_second=0)
    for _ in range(40):
        reply = await stack.api.call("POST", "/api/games", {"rules": "robbers", "seats": 2})
        assert reply.status == 201, reply


def test_a_negative_or_unparsable_limit_is_refused_at_start_up() -> None:
    with pytest.raises(SettingsError, match="RUMMY_LIMIT_SEAT_PER_MINUTE"):
        Settings.from_env({"RUMMY_LIMIT_SEAT_PER_MINUTE": "-1"})
    with pytest.raises(SettingsError, match="RUMMY_RATE_PER_SECOND"):
        Settings.from_env({"RUMMY_RATE_PER_SECOND": "nan"})
    with pytest.raises(SettingsError, match=r"10\.0\.0\.0/33"):
        Settings.from_env({"RUMMY_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/33"})
    Settings.from_env({"RUMMY_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8,fd00::/8"})


# --- whose address counts ----------------------------------------------------------------------


async def test_x_forwarded_for_is_ignored_from_an_untrusted_peer(make_stack: MakeStack) -> None:
    stack, _ = await limited(make_stack, limit_replay_per_minute=1, trusted_proxies="10.0.0.0/8")
    api = stack.api
    path = "/api/games/gnosuchgame/events"
    assert (await api.call("GET", path, headers={"X-Forwarded-For": "192.0.2.1"})).status == 404
    reply = await api.call("GET", path, headers={"X-Forwarded-For": "192.0.2.2"})
    assert reply.status == 429, "a client may not pick the address it counts under"


async def test_x_forwarded_for_is_honoured_from_a_trusted_proxy(make_stack: MakeStack) -> None:
    stack, _ = await limited(
        make_stack, limit_replay_per_minute=1, trusted_proxies="127.0.0.1, 10.0.0.0/8"
    )
    api = stack.api
    path = "/api/games/gnosuchgame/events"

    async def status(forwarded: str | None) -> int:
        headers = {"X-Forwarded-For": forwarded} if forwarded is not None else {}
        return (await api.call("GET", path, headers=headers)).status

    assert await status("192.0.2.1") == 404
    assert await status("192.0.2.2") == 404  # another client behind the proxy
    assert await status("192.0.2.1") == 429
    # The right-most address that is not a trusted proxy counts: what the client wrote to the
    # left of it is ignored, the trusted hops after it are skipped.
    assert await status("198.51.100.9, 192.0.2.1") == 429
    assert await status("192.0.2.1, 10.1.2.3") == 429
    assert await status("192.0.2.3, 10.1.2.3") == 404
    assert await status(None) == 404  # the proxy's own request: its own address


def _request(peer: str, forwarded: list[str]) -> Any:
    transport = mock.Mock()
    transport.get_extra_info.side_effect = lambda name, default=None: (
        (peer, 4242) if name == "peername" else default
    )
    headers = [("X-Forwarded-For", value) for value in forwarded]
    return make_mocked_request("GET", "/", headers=headers, transport=transport)


@pytest.mark.parametrize(
    ("peer", "forwarded", "counted"),
    [
        ("192.0.2.7", ["203.0.113.1"], "192.0.2.7"),  # untrusted peer: the header is ignored
        ("10.0.0.2", [], "10.0.0.2"),
        ("10.0.0.2", ["203.0.113.1"], "203.0.113.1"),
        ("10.0.0.2", ["203.0.113.1, 10.9.9.9"], "203.0.113.1"),
        ("10.0.0.2", ["198.51.100.1", "203.0.113.1"], "203.0.113.1"),  # two headers: one list
        ("10.0.0.2", ["203.0.113.1:5555"], "203.0.113.1"),  # with a port
        ("10.0.0.2", ["[2001:db8:1:2::9]:443"], "2001:db8:1:2::/64"),
        ("10.0.0.2", ["10.0.0.5, 10.0.0.6"], "10.0.0.5"),  # every hop trusted: the farthest
        ("10.0.0.2", ["203.0.113.1, nonsense"], "10.0.0.2"),  # garbage: the hop that sent it
        ("2001:db8:5:6::1", [], "2001:db8:5:6::/64"),  # IPv6 counts by its /64
        ("::ffff:192.0.2.9", [], "192.0.2.9"),
    ],
)
def test_the_counted_address(peer: str, forwarded: list[str], counted: str) -> None:
    trusted = trusted_networks("10.0.0.0/8")
    assert client_address(_request(peer, forwarded), trusted) == counted


# --- a refused command over HTTP changes nothing (also test_errors) --------------------------


async def test_a_refused_command_appends_nothing(make_stack: MakeStack) -> None:
    stack, clock = await limited(make_stack, limit_address_per_second=1)  # bursts of 2
    api = stack.api
    game_id, host = await api.create("robbers", 2)
    await api.sit(game_id, "p0")
    clock.advance(2)
    _, token = await api.sit(game_id, "p1")
    await api.start(game_id, host)  # the bucket is empty now
    count = await stack.event_count(game_id)
    views = [await api.view(game_id, t) for t in (None, token)]
    reply = await api.command(game_id, token, {"id": new_id(), "type": "draw"})
    assert reply.status == 429, reply
    assert await stack.event_count(game_id) == count
    assert [await api.view(game_id, t) for t in (None, token)] == views
    clock.advance(1)
    reply = await api.command(game_id, token, {"id": new_id(), "type": "draw"})
    assert reply.status in (200, 409), reply  # let through (its turn or not)
