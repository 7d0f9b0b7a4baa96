"""Rate limits: every limited route answers 429 with Retry-After once over its limit, changing
nothing, and lets the client through again once the (injected) clock has moved on by that long;
the limits hold across gateways sharing a Redis; X-Forwarded-For counts only from a trusted proxy.

The limits' clock stands still in these tests, so what passes is counted, never timed."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any
from unittest import mock

import aiohttp
import pytest
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient, TestServer, make_mocked_request

from services.gateway import client_address as client_address_module
from services.gateway.app import make_app
from services.gateway.client_address import client_address, counted_address, trusted_networks
from services.gateway.ratelimit import Limit, Limits, MemoryBuckets
from services.gateway.routes import websocket as websocket_routes
from services.gateway.state import GATEWAY
from shared.infra.keys import Keys
from shared.infra.settings import Settings, SettingsError
from tests.gateway.api import Api, Json, Reply, check_error, new_id
from tests.gateway.conftest import LimitClock, MakeStack, Stack
from tests.servers import until
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


def test_a_requests_address_is_worked_out_once_for_the_proxies_it_was_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trusted = trusted_networks("10.0.0.0/8")
    request = _request("10.0.0.2", ["203.0.113.1"])
    worked_out: list[str] = []

    def counting(request: Any, trusted: Any) -> str:
        worked_out.append(request.remote)
        return client_address(request, trusted)

    monkeypatch.setattr(client_address_module, "client_address", counting)
    assert counted_address(request, trusted) == counted_address(request, trusted) == "203.0.113.1"
    assert len(worked_out) == 1
    assert counted_address(request, ()) == "10.0.0.2"  # no trusted proxies: the peer's own
    assert len(worked_out) == 2


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


# --- each gateway's own copy of the buckets ------------------------------------------------------


class CountedScript:
    """A bucket script that counts how often Redis is asked."""

    def __init__(self, script: Any) -> None:
        self.script = script
        self.calls = 0

    async def __call__(self, **kwargs: Any) -> Any:
        self.calls += 1
        return await self.script(**kwargs)


async def test_a_flood_past_its_limit_is_refused_without_asking_redis_again() -> None:
    client = redis_client()
    settings = Settings(prefix=f"lim{uuid.uuid4().hex[:8]}:", limit_hint_per_minute=3)
    clock = LimitClock()
    one, two = Limits(client, settings, clock), Limits(client, settings, clock)
    asked_one, asked_two = CountedScript(one._script), CountedScript(two._script)
    one._script, two._script = asked_one, asked_two
    try:
        for _ in range(3):
            assert await one.wait(one.hint, "g1:0") == 0
        assert asked_one.calls == 3  # every pass is counted in Redis, where every gateway sees it
        waits = [await one.wait(one.hint, "g1:0") for _ in range(500)]
        assert waits == [20] * 500  # three a minute: the next one 20 s after
        assert asked_one.calls == 3  # its own passes filled the bucket: it knows the rest itself
        waits = [await two.wait(two.hint, "g1:0") for _ in range(500)]
        assert waits == [20] * 500  # the other gateway is refused as well ...
        assert asked_two.calls == 1  # ... by Redis once, then by what Redis told it
        clock.advance(19.5)
        assert await two.wait(two.hint, "g1:0") == 1
        assert asked_two.calls == 1
        clock.advance(0.5)
        assert await two.wait(two.hint, "g1:0") == 0  # due again: Redis is asked
        assert asked_two.calls == 2
        assert await one.wait(one.hint, "g1:0") == 20  # the other's pass counted for both
        assert asked_one.calls == 4
    finally:
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


async def test_gateways_copies_refuse_exactly_what_one_shared_bucket_refuses() -> None:
    """Three gateways on one Redis and one clock, requests in a random order among them and
    random pauses: each request passes or is refused exactly as one shared GCRA bucket decides
    (a gateway's copy never refuses what Redis would let through, nor lets through more)."""
    client = redis_client()
    settings = Settings(prefix=f"lim{uuid.uuid4().hex[:8]}:", limit_create_per_minute=6)
    clock = LimitClock()
    gateways = [Limits(client, settings, clock) for _ in range(3)]
    rng = random.Random(7)
    interval, burst = 10.0, 6 * 10.0  # six a minute, bursts of six
    full_at = clock()
    decisions = Counter[bool]()
    try:
        for _ in range(600):
            clock.advance(rng.choice([0.0, 0.0, 0.0, 0.5, 3.0, 9.9, 10.0, 25.0]))
            now = clock()
            due = max(full_at, now)
            passes = due + interval - burst - now <= 0
            if passes:
                full_at = due + interval
            gateway = rng.choice(gateways)
            wait = await gateway.wait(gateway.create, "198.51.100.7")
            assert (wait == 0) == passes, (now, full_at, wait)
            decisions[passes] += 1
        assert decisions[True] > 50 and decisions[False] > 50  # both sides were tried
    finally:
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


def test_a_gateways_copy_of_the_buckets_is_bounded() -> None:
    clock = LimitClock()
    recent = MemoryBuckets(clock, size=100)
    for n in range(1_000):
        recent.refused(f"k{n}", 1.0, 2.0, 30.0)
    assert len(recent._full_at) == 100
    assert recent.wait("k999", 1.0, 2.0) > 0  # the newest are kept
    assert recent.wait("k0", 1.0, 2.0) == 0  # the oldest forgotten: Redis is asked again
    clock.advance(31)
    assert recent.wait("k999", 1.0, 2.0) == 0
    assert "k999" not in recent._full_at  # full again: nothing left to keep


async def test_a_new_socket_may_sync_a_few_times_at_once_not_a_minutes_worth(
    make_stack: MakeStack,
) -> None:
    stack, clock = await limited(make_stack, limit_sync_per_minute=60)
    game_id, _, tokens = await stack.api.new_game("robbers", 2)
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[0]}")
    assert (await answer_or_view(ws))["type"] == "view"
    for n in range(5):
        await ws.send_json({"type": "sync", "after": 0, "id": f"s{n}"})
        assert (await answer_or_view(ws))["type"] == "view", n
    await ws.send_json({"type": "sync", "after": 0, "id": "s5"})
    refused = await answer_or_view(ws)
    assert refused["status"] == 429 and refused["retry_after"] == 1, refused
    clock.advance(1)  # then one a second (sixty a minute)
    await ws.send_json({"type": "sync", "after": 0})
    assert (await answer_or_view(ws))["type"] == "view"
    await ws.close()


async def test_one_address_holds_a_bounded_number_of_sockets(make_stack: MakeStack) -> None:
    stack = await make_stack(sockets_per_address=2, trusted_proxies="127.0.0.1")
    game_id, _, _ = await stack.api.new_game("robbers", 2)
    path = f"/api/games/{game_id}/ws"
    first = await stack.client.ws_connect(path)
    second = await stack.client.ws_connect(path)
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await stack.client.ws_connect(path)
    assert refused.value.status == 429
    third = await stack.client.get(path)  # the refusal in the published shape
    assert third.status == 429
    check_error(await third.json(), "too_many_sockets")
    elsewhere = await stack.client.ws_connect(path, headers={"X-Forwarded-For": "198.51.100.5"})
    await first.close()
    gw = stack.server.app[GATEWAY]
    await until(lambda: gw.sockets.get("127.0.0.1") == 1, 30)
    again = await stack.client.ws_connect(path)  # one closed: room for another
    for ws in (second, elsewhere, again):
        await ws.close()
    await until(lambda: gw.sockets == {}, 30)


# --- refusals held before they are answered ------------------------------------------------------


class HeldSleep:
    """The tarpit's sleep in a test: records each hold and keeps it until released."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.released = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        await self.released.wait()


async def test_a_refusal_is_held_before_it_is_answered_and_holds_are_bounded(
    make_stack: MakeStack,
) -> None:
    stack, _ = await limited(
        make_stack, limit_create_per_minute=1, refusal_delay=5, refusals_held=2
    )
    gw = stack.server.app[GATEWAY]
    sleep = gw.tarpit.sleep = HeldSleep()
    api = stack.api

    async def create() -> Reply:
        return await api.call("POST", "/api/games", {"rules": "robbers", "seats": 2})

    assert (await create()).status == 201
    held = [asyncio.create_task(create()) for _ in range(2)]
    await until(lambda: len(sleep.seconds) == 2, 30)
    assert sleep.seconds == [5, 5]  # the delay (the Retry-After, 60 s, is longer)
    at_once = await create()  # two held already: this one is answered without a hold
    assert at_once.status == 429 and len(sleep.seconds) == 2
    assert not any(task.done() for task in held)
    assert (await api.call("GET", "/api/games?status=waiting")).status == 200  # nobody else waits
    sleep.released.set()
    for reply in await asyncio.gather(*held):
        assert reply.status == 429
        check_error(reply.body, "rate_limited")
    assert gw.tarpit.held == {}


class ClockSleep:
    """The tarpit's sleep in a test: each hold moves the limits' clock on by its length."""

    def __init__(self, clock: LimitClock) -> None:
        self.clock = clock
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.seconds.append(seconds)
        self.clock.advance(seconds)


async def test_retry_after_counts_from_when_the_refusal_is_sent_after_its_hold(
    make_stack: MakeStack,
) -> None:
    stack, clock = await limited(make_stack, limit_create_per_minute=6, refusal_delay=1)
    gw = stack.server.app[GATEWAY]
    sleep = gw.tarpit.sleep = ClockSleep(clock)
    api = stack.api

    async def create() -> Reply:
        return await api.call("POST", "/api/games", {"rules": "robbers", "seats": 2})

    assert [(await create()).status for _ in range(6)] == [201] * 6
    refused = await create()  # due again in 10 s, answered after a hold of one
    assert refused.status == 429 and sleep.seconds == [1], (refused, sleep.seconds)
    assert refused.headers["Retry-After"] == "9", refused.headers
    assert refused.body["error"]["message"].endswith("retry in 9 s"), refused.body
    clock.advance(9)  # a client that waits exactly that long is let through
    assert (await create()).status == 201


async def test_a_refused_socket_frame_holds_that_sockets_reading(make_stack: MakeStack) -> None:
    stack, _ = await limited(make_stack, limit_sync_per_minute=1, refusal_delay=3)
    gw = stack.server.app[GATEWAY]
    sleep = gw.tarpit.sleep = HeldSleep()
    game_id, _, _ = await stack.api.new_game("robbers", 2)
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws")
    assert (await answer_or_view(ws))["type"] == "view"
    await ws.send_json({"type": "sync", "after": 0})
    assert (await answer_or_view(ws))["type"] == "view"
    await ws.send_json({"type": "sync", "after": 0, "id": "over"})
    refused = await answer_or_view(ws)  # the refusal is sent, then the socket's reading waits
    assert refused["status"] == 429 and refused["id"] == "over"
    await until(lambda: sleep.seconds == [3], 30)
    await ws.send_json({"type": "sync", "after": 0, "id": "later"})
    other = await stack.client.ws_connect(f"/api/games/{game_id}/ws")
    assert (await answer_or_view(other))["type"] == "view"  # other sockets are served
    sleep.released.set()
    reply = await answer_or_view(ws)
    assert reply["id"] == "later" and reply["status"] == 429  # read once the hold was over
    await ws.close()
    await other.close()


async def test_reading_views_and_the_lobby_is_limited_per_address_by_each_gateway(
    make_stack: MakeStack,
) -> None:
    stack, clock = await limited(make_stack, limit_read_per_second=2)  # bursts of four
    game_id, _, _ = await stack.api.new_game("robbers", 2)
    api = stack.api

    async def view() -> Reply:
        return await api.call("GET", f"/api/games/{game_id}")

    retry = await refused_after(view, 4)
    assert retry == 1
    lobby = await api.call("GET", "/api/games")  # the same bucket
    assert lobby.status == 429
    check_error(lobby.body, "rate_limited")
    assert "views and lobby pages" in lobby.body["error"]["message"]
    assert await stack.redis.keys(f"{stack.settings.prefix}limit:read*") == []  # in memory only
    clock.advance(0.5)
    assert (await view()).status == 200  # one every half second
    assert (await view()).status == 429
    assert (await api.call("GET", "/healthz")).status == 200  # health is never limited


async def test_a_long_catch_up_counts_as_many_syncs_as_its_pages(
    make_stack: MakeStack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(websocket_routes, "CATCH_UP_PAGE", 1)  # a page of one event
    stack, clock = await limited(make_stack, limit_sync_per_minute=60)  # bursts of five
    game_id, _, _ = await stack.api.new_game("robbers", 2)
    version = (await stack.api.view(game_id))["version"]
    assert version >= 5  # created, seated, started and dealt: five pages from 0 at least
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws")
    assert (await answer_or_view(ws))["type"] == "view"
    await ws.send_json({"type": "sync", "after": 0, "id": "whole"})
    assert (await answer_or_view(ws))["type"] == "view"  # five pages or more: a burst's worth
    await ws.send_json({"type": "sync", "after": version - 1, "id": "short"})
    refused = await answer_or_view(ws)
    assert refused["status"] == 429 and refused["id"] == "short", refused
    clock.advance(1)  # one sync a second: room for a one-page catch-up ...
    await ws.send_json({"type": "sync", "after": version - 1, "id": "short"})
    assert (await answer_or_view(ws))["type"] == "view"
    clock.advance(1)
    await ws.send_json({"type": "sync", "after": 0, "id": "whole again"})
    refused = await answer_or_view(ws)  # ... not for a long one
    assert refused["status"] == 429 and refused["retry_after"] == 4, refused
    await ws.close()
