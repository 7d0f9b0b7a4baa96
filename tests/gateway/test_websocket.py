"""The WebSocket: views pushed after every change to every watcher (each its own view), commands
answered as the POST would, catching up with ``?after=N``, auth by query or first message, the
Origin check, and GOING_AWAY on shutdown."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

import aiohttp
import pytest
from aiohttp import WSCloseCode, WSMsgType
from redis.exceptions import ConnectionError as RedisConnectionError

from services.gateway import state
from services.gateway.state import GATEWAY
from tests.gateway.api import Json, check_error, new_id
from tests.gateway.conftest import LimitClock, MakeStack, Stack

WAIT = 5.0


async def receive(ws: Any) -> Json:
    message = await asyncio.wait_for(ws.receive(), WAIT)
    assert message.type == WSMsgType.TEXT, message
    doc = message.json()
    assert isinstance(doc, dict) and doc.get("type") in ("view", "events", "answer", "error")
    return dict(doc)


async def view_at_least(ws: Any, version: int) -> Json:
    """The first pushed view at ``version`` or later (skipping older pushes)."""
    while True:
        doc = await receive(ws)
        if doc["type"] == "view" and doc["view"]["version"] >= version:
            return dict(doc["view"])


async def answer_and_view(ws: Any, command_id: str) -> tuple[Json, Json]:
    """The answer to ``command_id`` and the pushed view that shows its outcome (either order)."""
    answer: Json | None = None
    views: list[Json] = []
    while answer is None or not views or views[-1]["version"] < answer["body"]["version"]:
        doc = await receive(ws)
        if doc["type"] == "answer":
            assert doc["id"] == command_id
            answer = doc
            if "view" in doc:  # the view the command made, in the same frame
                views.append(doc["view"])
        elif doc["type"] == "view":
            views.append(doc["view"])
    return answer, views[-1]


def turn_of(view: Json) -> int:
    return int(view["turn"]["seat"])


async def test_commands_over_a_socket_and_views_pushed_to_every_watcher(stack: Stack) -> None:
    api = stack.api
    game_id, host, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    start = await api.view(game_id)
    seat = turn_of(start)
    path = f"/api/games/{game_id}/ws"
    mine = await stack.client.ws_connect(f"{path}?token={tokens[seat]}")
    other = await stack.client.ws_connect(f"{path}?token={tokens[1 - seat]}")
    spectator = await stack.client.ws_connect(path)
    host_ws = await stack.client.ws_connect(f"{path}?token={host}")

    first = await receive(mine)
    assert first["type"] == "view" and first["view"]["you"] == seat
    assert first["view"] == await api.view(game_id, tokens[seat])
    assert (await receive(other))["view"]["hand"] == (await api.view(game_id, tokens[1 - seat]))[
        "hand"
    ]
    for ws in (spectator, host_ws):
        view = (await receive(ws))["view"]
        assert view["you"] is None and "hand" not in view and view == start

    # A command over the socket: answered as the POST would, and every watcher gets a view.
    await mine.send_json({"id": "w1", "type": "draw", "expected_version": start["version"]})
    answer, pushed = await answer_and_view(mine, "w1")
    assert answer["status"] == 200 and answer["body"]["accepted"] is True
    version = answer["body"]["version"]
    assert version > start["version"] and set(answer["body"]) == {"accepted", "version", "head"}
    assert pushed == await api.view(game_id, tokens[seat])
    assert len(pushed["hand"]) == len(first["view"]["hand"]) + 1
    again = await api.command(
        game_id, tokens[seat], {"id": "w1", "type": "draw", "expected_version": start["version"]}
    )
    assert (again.status, again.body) == (200, answer["body"])
    seen_by_other = await view_at_least(other, version)
    assert seen_by_other["you"] == 1 - seat and "hand" in seen_by_other
    assert seen_by_other["hand"] == (await api.view(game_id, tokens[1 - seat]))["hand"]
    for ws in (spectator, host_ws):
        view = await view_at_least(ws, version)
        assert view["you"] is None and "hand" not in view

    # A change made over HTTP by another seat is pushed too.
    now = await api.view(game_id, tokens[1 - seat])
    assert turn_of(now) == 1 - seat
    bad = {"id": new_id(), "type": "play", "layout": [*now["table"], [now["hand"][0]]]}
    reply = await api.command(game_id, tokens[1 - seat], bad)
    assert reply.status == 422
    pushed = await view_at_least(mine, reply.body["version"])
    assert pushed["hand"] == (await api.view(game_id, tokens[seat]))["hand"]
    # A rejected attempt over the socket answers 422 with the receipt, like the POST.
    await other.send_json(bad | {"id": "w2"})
    answer, _ = await answer_and_view(other, "w2")
    assert answer["status"] == 422
    check_error(answer["body"], "illegal_layout")
    assert answer["body"]["version"] == reply.body["version"] + 1
    # Neither a spectator nor the host may command; a non-JSON message is an error message.
    for ws in (spectator, host_ws):
        await ws.send_json({"id": "nope", "type": "draw"})
        doc = await receive(ws)
        while doc["type"] != "answer":
            doc = await receive(ws)
        assert doc["id"] == "nope" and doc["status"] == 403
        check_error(doc["body"], "forbidden")
    await mine.send_str("{not json")
    doc = await receive(mine)
    while doc["type"] != "error":
        doc = await receive(mine)
    check_error(doc, "bad_json")
    for ws in (mine, other, spectator, host_ws):
        await ws.close()


async def test_after_n_sends_the_missed_events_filtered_then_the_view(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    for _ in range(3):  # both seats draw from the stock a few times
        view = await api.view(game_id)
        seat = turn_of(view)
        reply = await api.command(game_id, tokens[seat], {"id": new_id(), "type": "draw"})
        assert reply.status == 200
    version = (await api.view(game_id))["version"]
    for viewer, token in [(0, tokens[0]), (1, tokens[1]), (None, None)]:
        query = "?after=2" + (f"&token={token}" if token else "")
        ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws{query}")
        events = await receive(ws)
        assert events["type"] == "events"
        assert [e["version"] for e in events["events"]] == list(range(3, version + 1))
        assert events["events"] == await api.events(game_id, token, after=2)
        for event in events["events"]:
            if event["type"] == "RoundDealt":
                assert [h is not None for h in event["hands"]] == [viewer == 0, viewer == 1]
            if event["type"] == "CardDrawn":
                assert isinstance(event["cards"], list) == (event["seat"] == viewer)
        assert any(e["type"] == "CardDrawn" for e in events["events"])
        view = await receive(ws)
        assert view["type"] == "view" and view["view"] == await api.view(game_id, token)
        await ws.close()


async def test_a_long_catch_up_comes_in_pages_in_order_then_the_view(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "CATCH_UP_PAGE", 3)
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    for _ in range(4):
        seat = turn_of(await api.view(game_id))
        reply = await api.command(game_id, tokens[seat], {"id": new_id(), "type": "draw"})
        assert reply.status == 200
    version = (await api.view(game_id))["version"]
    assert version > 7  # pages of three: at least three of them
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?after=1&token={tokens[0]}")
    pages = []
    doc = await receive(ws)
    while doc["type"] == "events":
        pages.append(doc["events"])
        doc = await receive(ws)
    assert doc["type"] == "view" and doc["view"]["version"] == version
    assert [len(page) for page in pages[:-1]] == [3] * (len(pages) - 1)
    assert 1 <= len(pages[-1]) <= 3
    caught_up = [event for page in pages for event in page]
    assert [e["version"] for e in caught_up] == list(range(2, version + 1))
    assert caught_up == await api.events(game_id, tokens[0], after=1)
    await ws.close()


async def test_a_sync_again_is_served_from_the_texts_kept_and_loads_the_game_once(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "CATCH_UP_PAGE", 3)
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    for _ in range(3):
        seat = turn_of(await api.view(game_id))
        reply = await api.command(game_id, tokens[seat], {"id": new_id(), "type": "draw"})
        assert reply.status == 200
    version = (await api.view(game_id))["version"]
    gw = stack.server.app[GATEWAY]
    loads: list[str] = []
    load = gw.games.load

    async def counted(game: str, fresh: bool = False) -> Any:
        loads.append(game)
        return await load(game, fresh)

    async def sync(ws: Any) -> list[Json]:
        await ws.send_json({"type": "sync", "after": 0})
        caught_up: list[Json] = []
        doc = await receive(ws)
        while doc["type"] == "events":
            caught_up += doc["events"]
            doc = await receive(ws)
        assert doc["type"] == "view" and doc["view"]["version"] == version
        return caught_up

    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[0]}")
    await view_at_least(ws, version)
    monkeypatch.setattr(gw.games, "load", counted)
    first = await sync(ws)
    assert loads == [game_id]  # once for the sync: its pages and the push
    reads = gw.frames.reads
    assert reads >= 3  # pages of three
    again = await sync(ws)
    assert again == first == await api.events(game_id, tokens[0])
    assert gw.frames.reads == reads  # the second catch-up read no log
    # Another seat's catch-up is its own (its hand, not seat 0's).
    other = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[1]}")
    await view_at_least(other, version)
    assert await sync(other) == await api.events(game_id, tokens[1])
    assert gw.frames.reads > reads
    await ws.close()
    await other.close()


async def test_a_socket_may_authenticate_with_its_first_message(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    seat = turn_of(await api.view(game_id))
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws")
    first = (await receive(ws))["view"]
    assert first["you"] is None and "hand" not in first
    await ws.send_json({"token": "forged-token"})
    check_error(await receive(ws), "unauthorized")
    await ws.send_json({"token": tokens[seat]})
    view = (await receive(ws))["view"]
    assert view["you"] == seat and view == await api.view(game_id, tokens[seat])
    await ws.send_json({"id": "a1", "type": "draw"})
    answer, _ = await answer_and_view(ws, "a1")
    assert answer["status"] == 200 and answer["body"]["accepted"] is True
    await ws.close()
    # A bad token in the query is refused at the handshake.
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await stack.client.ws_connect(f"/api/games/{game_id}/ws?token=forged")
    assert refused.value.status == 401


async def test_a_cross_origin_socket_is_refused(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2)
    path = f"/api/games/{game_id}/ws?token={tokens[0]}"
    for origin in ["http://evil.example", "null", "https://127.0.0.1.evil.example"]:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await stack.client.ws_connect(path, headers={"Origin": origin})
        assert refused.value.status == 403, origin
    own = f"http://{stack.server.host}:{stack.server.port}"
    ws = await stack.client.ws_connect(path, headers={"Origin": own})
    assert (await receive(ws))["view"]["you"] == 0
    await ws.close()


async def test_shutdown_closes_sockets_with_going_away(make_stack: MakeStack) -> None:
    stack = await make_stack()
    game_id, _, tokens = await stack.api.new_game("robbers", 2)
    url = stack.server.make_url(f"/api/games/{game_id}/ws?token={tokens[0]}")
    async with aiohttp.ClientSession() as session:
        sockets = [await session.ws_connect(url) for _ in range(2)]
        for ws in sockets:
            await receive(ws)
        closing = asyncio.create_task(stack.server.close())
        for ws in sockets:
            message = await asyncio.wait_for(ws.receive(), WAIT)
            # The server's close frame says GOING_AWAY. (The client's own close_code may read
            # ABNORMAL_CLOSURE: aiohttp's server drops the connection without waiting for the
            # client's closing reply when a handler is reading the socket.)
            assert message.type == WSMsgType.CLOSE, message
            assert message.data == WSCloseCode.GOING_AWAY, message
        await asyncio.wait_for(closing, WAIT)


async def test_commands_over_a_socket_count_against_the_token_rate(make_stack: MakeStack) -> None:
    clock = LimitClock()
    stack = await make_stack(rate_per_second=2, limit_clock=clock)  # bursts of 4
    game_id, _, tokens = await stack.api.new_game("robbers", 2)
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[0]}")
    await receive(ws)
    count = await stack.event_count(game_id)

    async def answers(ids: list[str]) -> dict[str, Json]:
        for frame_id in ids:
            await ws.send_json({"id": frame_id, "type": "pass"})  # refused by the rules, if let by
        got: dict[str, Json] = {}
        while len(got) < len(ids):
            doc = await receive(ws)
            if doc["type"] == "answer":
                got[doc["id"]] = doc
        return got

    got = await answers([f"c{n}" for n in range(6)])
    refused = sorted(i for i, doc in got.items() if doc["status"] == 429)
    assert refused == ["c4", "c5"], got  # the burst of 4 passes, in order
    assert all(got[f"c{n}"]["status"] in (409, 422) for n in range(4)), got
    for frame_id in refused:
        check_error(got[frame_id]["body"], "rate_limited")
        assert got[frame_id]["retry_after"] == 1, got[frame_id]
    assert await stack.event_count(game_id) == count
    clock.advance(0.5)  # one more command's worth
    got = await answers(["d0", "d1"])
    assert got["d0"]["status"] in (409, 422) and got["d1"]["status"] == 429, got
    await ws.close()


async def test_a_socket_up_to_date_still_gets_its_view_and_may_resync(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2)
    view = await api.view(game_id, tokens[1])
    version = view["version"]
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?after={version}&token={tokens[1]}")
    first = await receive(ws)
    assert first == {"type": "view", "view": view}, "nothing missed: the view alone"
    await ws.send_json({"type": "sync", "after": version - 2})
    events = await receive(ws)
    assert events["type"] == "events"
    assert events["events"] == await api.events(game_id, tokens[1], after=version - 2)
    assert await receive(ws) == {"type": "view", "view": view}
    await ws.close()


async def test_a_turn_timeout_advances_the_version_and_is_pushed(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("rummikub", 2, {"turn_seconds": 5})
    view = await api.view(game_id)
    seat, number = turn_of(view), view["turn"]["number"]
    deadline = datetime.fromisoformat(view["turn"]["deadline"].replace("Z", "+00:00"))
    assert 0 < deadline.timestamp() - time.time() <= 6
    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[seat]}")
    before = (await receive(ws))["view"]

    stack.clock.offset = 10.0  # the referee's time passes the deadline
    pushed = await view_at_least(ws, before["version"] + 1)
    assert pushed["turn"]["number"] > number

    timed_out = [e for e in await api.events(game_id) if e["type"] == "TurnTimedOut"]
    assert len(timed_out) == 1 and timed_out[0]["seat"] == seat
    after = await api.view(game_id, tokens[seat])
    assert after["turn"]["seat"] == 1 - seat and after["turn"]["number"] == number + 1
    assert len(after["hand"]) == len(before["hand"]) + 1  # a timeout ends the turn as a draw
    assert after["version"] > before["version"]
    await ws.close()


async def test_pushes_go_on_after_a_failure_while_handling_news(stack: Stack) -> None:
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2)
    hub = stack.server.app[GATEWAY].hub
    real_on_news, real_push = hub.on_news, hub.push
    failures: list[str] = []

    async def on_news_failing_once(
        game: str, version: int, types: list[str], records: list[bytes]
    ) -> None:
        if not failures:
            failures.append("news")
            raise RedisConnectionError("Redis hiccup")
        await real_on_news(game, version, types, records)

    async def push_failing_once(watcher: Any) -> None:
        if len(failures) == 1:
            failures.append("push")
            raise RedisConnectionError("Redis hiccup")
        await real_push(watcher)

    ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws")
    version = (await receive(ws))["view"]["version"]
    hub.on_news, hub.push = on_news_failing_once, push_failing_once
    for _ in range(3):
        view = await api.view(game_id)
        reply = await api.command(game_id, tokens[turn_of(view)], {"id": new_id(), "type": "draw"})
        assert reply.status == 200
    assert failures == ["news", "push"]
    assert (await view_at_least(ws, reply.body["version"]))["version"] > version
    await ws.close()


async def test_a_closed_socket_leaves_no_cycle_for_the_collector(stack: Stack) -> None:
    """A socket that closes is freed by reference counting: left in a cycle, every closed
    socket (its request, connection and buffers) would wait for a full collection, which walks
    the whole heap at once (a pause that grew with the sockets and games alive)."""
    import gc

    from aiohttp.web_ws import WebSocketResponse

    from services.gateway.hub import Watcher
    from services.gateway.outbox import Outbox

    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    seat = turn_of(await api.view(game_id))
    hub = stack.client.app[GATEWAY].hub
    gc.collect()
    for query in (f"?token={tokens[seat]}", ""):  # a seat (with a command) and a spectator
        ws = await stack.client.ws_connect(f"/api/games/{game_id}/ws{query}")
        await receive(ws)
        if query:
            await ws.send_json({"id": "c1", "type": "draw"})
            await answer_and_view(ws, "c1")
        await ws.close()
    deadline = time.monotonic() + WAIT
    while hub.watchers.get(game_id) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # the handlers' last steps after leaving the hub
    assert not hub.watchers.get(game_id)
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, Outbox | Watcher | WebSocketResponse)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert left == [], kinds(left)


def kinds(objects: list[Any]) -> dict[str, int]:
    """How many of each type (for a failure's message)."""
    found: dict[str, int] = {}
    for o in objects:
        found[type(o).__qualname__] = found.get(type(o).__qualname__, 0) + 1
    return found


async def _gated_news(stack: Stack) -> asyncio.Event:
    """Hold the gateway's handling of news until the returned event is set."""
    hub = stack.client.app[GATEWAY].hub
    gate = asyncio.Event()
    handle = hub.on_news

    async def held(game: str, version: int, types: list[str], items: list[Any]) -> None:
        await gate.wait()
        await handle(game, version, types, items)

    hub.on_news = held
    return gate


async def test_the_answer_and_the_view_it_made_come_in_one_frame(stack: Stack) -> None:
    """The seat that sent a command on its socket gets one frame for it, the answer with the
    view of its change (byte for byte the view it would be pushed), even when the answer comes
    before the news; every other watcher gets the view alone: two frames a turn, not three."""
    api = stack.api
    gw = stack.client.app[GATEWAY]
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    seat = turn_of(await api.view(game_id))
    mover = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[seat]}")
    other = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[1 - seat]}")
    first = (await receive(mover))["view"]
    await receive(other)
    gate = await _gated_news(stack)
    await mover.send_json({"id": "c1", "type": "draw"})
    watcher = next(w for w in gw.hub.watchers[game_id] if w.viewer == seat)
    deadline = time.monotonic() + WAIT
    while not watcher.answers and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert watcher.answers  # answered before the news: the answer waits for its view
    gate.set()
    doc = await receive(mover)
    assert doc["type"] == "answer" and doc["id"] == "c1" and doc["status"] == 200
    version = doc["body"]["version"]
    assert version > first["version"] and doc["view"]["version"] == version
    assert doc["view"] == await api.view(game_id, tokens[seat])
    pushed = await receive(other)
    assert pushed["type"] == "view" and pushed["view"]["version"] == version
    # Nothing else came for that change: the next frame on the mover's socket answers the next
    # command (a view of that version alone would have been queued before it).
    await mover.send_json({"id": "c2", "type": "draw"})  # refused: drawn already this turn
    nxt = await receive(mover)
    assert nxt["type"] == "answer" and nxt["id"] == "c2" and nxt["status"] != 200
    assert "view" not in nxt or nxt["view"]["version"] > version
    await mover.close()
    await other.close()


async def test_an_answer_whose_news_never_comes_brings_its_view_from_the_log(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(state, "ANSWER_WAIT", 0.05)
    api = stack.api
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    seat = turn_of(await api.view(game_id))
    mover = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[seat]}")
    await receive(mover)
    await _gated_news(stack)  # never opened
    await mover.send_json({"id": "c1", "type": "draw"})
    doc = await receive(mover)
    assert doc["type"] == "answer" and doc["id"] == "c1" and doc["status"] == 200
    assert doc["view"]["version"] == doc["body"]["version"]
    assert doc["view"] == await api.view(game_id, tokens[seat])
    await mover.close()


async def test_a_view_whose_news_comes_before_the_answer_waits_for_it(stack: Stack) -> None:
    """The news of a change may reach the gateway before the answer to the command that made
    it: the view is held back for the socket that sent the command, and comes in one frame
    with the answer."""
    api = stack.api
    gw = stack.client.app[GATEWAY]
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
    seat = turn_of(await api.view(game_id))
    mover = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[seat]}")
    other = await stack.client.ws_connect(f"/api/games/{game_id}/ws?token={tokens[1 - seat]}")
    first = (await receive(mover))["view"]
    await receive(other)
    gate = asyncio.Event()
    submit = gw.submit

    async def answered_late(*args: Any) -> Any:
        answer = await submit(*args)
        await gate.wait()  # the referee has answered; the gateway hands it on only now
        return answer

    gw.submit = answered_late
    await mover.send_json({"id": "c1", "type": "draw"})
    pushed = await receive(other)  # the news came, and was pushed to the other seat
    assert pushed["type"] == "view" and pushed["view"]["version"] > first["version"]
    watchers = {w.viewer: w for w in gw.hub.watchers[game_id]}
    assert watchers[seat].held and watchers[seat].sent_version == first["version"]
    gate.set()
    doc = await receive(mover)
    assert doc["type"] == "answer" and doc["id"] == "c1" and doc["status"] == 200
    assert doc["view"]["version"] == pushed["view"]["version"]
    assert doc["view"] == await api.view(game_id, tokens[seat])
    await mover.close()
    await other.close()
