"""``GET /api/games/{id}/turns/{n}.svg`` on the gateway (fakeredis, the worker pool): a stored
game's turn drawn for each kind of viewer, the secrecy of a live game kept (a seat its own hand
only, a spectator none, the operator all), every hand once it has ended; bad turn numbers, unknown
games and unknown tokens answered in the published error shape."""

from __future__ import annotations

import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import fakeredis
import pytest
from aiohttp.test_utils import TestClient, TestServer

from services.gateway.app import make_app
from services.gateway.state import GATEWAY
from shared.audit.record import build_record
from shared.audit.replay import timeline
from shared.audit.source import import_record
from shared.core.cards import cards_str
from shared.core.events import TurnStarted
from shared.infra.settings import Settings
from tests.audit.games import Game
from tests.pictures.test_turn_secrecy import SVG, pieces

OPERATOR = "operator-token-for-pictures"


@pytest.fixture
async def http() -> AsyncIterator[TestClient[Any, Any]]:
    redis = fakeredis.aioredis.FakeRedis(server=fakeredis.FakeServer())
    settings = Settings(
        prefix=f"wt-table:{uuid.uuid4().hex[:8]}:",
        operator_token=OPERATOR,
        limit_address_per_second=0,
        limit_replay_per_minute=0,
        limit_read_per_second=0,
    )
    client: TestClient[Any, Any] = TestClient(TestServer(make_app(redis, settings)))
    await client.start_server()
    yield client
    await client.close()
    await redis.aclose()


async def _store(http: TestClient[Any, Any], game: Game, cut: int | None = None) -> None:
    events = game.events[:cut] if cut is not None else game.events
    await import_record(http.app[GATEWAY].store, build_record(events, exported=0.0))


async def _get(http: TestClient[Any, Any], path: str, token: str = "") -> tuple[int, Any, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with http.get(path, headers=headers) as reply:
        kind = reply.headers.get("Content-Type", "")
        body = await reply.text()
        return reply.status, reply.headers, (await reply.json() if "json" in kind else body)


def _shown(svg: str) -> dict[int, bool]:
    root = ET.fromstring(svg)
    return {
        int(g.get("data-seat", "-1")): g.get("data-shown") == "yes"
        for g in root.iter(f"{SVG}g")
        if g.get("class") == "hand"
    }


async def test_a_live_turn_is_drawn_for_each_viewer(
    http: TestClient[Any, Any], played: list[Game]
) -> None:
    game = played[0]
    line = timeline(game.events)
    # Live: cut the log just after turn 9 began (its TurnStarted the last event).
    start = line.turn_index()[9]
    assert isinstance(line.events[start], TurnStarted)
    await _store(http, game, start + 1)
    seat_token = await http.app[GATEWAY].tokens.issue(game.game_id, "1")
    path = f"/api/games/{game.game_id}/turns/8.svg"
    status, headers, svg = await _get(http, path)
    assert status == 200 and headers["Content-Type"].startswith("image/svg+xml"), svg
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert not any(_shown(svg).values())  # a spectator: no hand
    assert not [p for p in pieces(svg) if p["data-place"] == "hand"]
    status, _, svg = await _get(http, path, seat_token)
    assert status == 200
    seat_svg = svg
    assert _shown(svg) == {seat: seat == 1 for seat in range(line.final.seats)}
    hand = line.states[start + 1].hands[1]
    drawn = Counter(p["data-card"] for p in pieces(svg) if p["data-place"] == "hand")
    assert drawn == Counter(cards_str(hand))
    status, _, svg = await _get(http, path, OPERATOR)
    assert status == 200 and all(_shown(svg).values())
    # The same question again is answered from what was kept, for that viewer only.
    assert (await _get(http, path, seat_token))[2] == seat_svg
    assert not any(_shown((await _get(http, path))[2]).values())
    status, _, body = await _get(http, path, "not-a-token-of-this-game")
    assert status == 401 and body["error"]["code"] == "unauthorized", body


async def test_an_ended_game_shows_every_hand(
    http: TestClient[Any, Any], played: list[Game]
) -> None:
    game = played[2]
    await _store(http, game)
    status, _, svg = await _get(http, f"/api/games/{game.game_id}/turns/5.svg")
    assert status == 200 and all(_shown(svg).values()) and len(_shown(svg)) >= 2
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"


async def test_bad_turns_and_unknown_games_are_json_errors(
    http: TestClient[Any, Any], played: list[Game]
) -> None:
    game = played[1]
    await _store(http, game)
    base = f"/api/games/{game.game_id}/turns"
    cases = [
        (f"{base}/0.svg", "", 422, "bad_request", "turn"),
        (f"{base}/x.svg", "", 422, "bad_request", "turn"),
        (f"{base}/-3.svg", "", 422, "bad_request", "turn"),
        (f"{base}/{'9' * 40}.svg", "", 422, "bad_request", "turn"),
        (f"{base}/99999.svg", "", 404, "not_found", "no turn 99999"),
        (f"{base}/2.png", "", 404, "not_found", "no such path"),
        ("/api/games/nope/turns/1.svg", "", 404, "not_found", "nope"),
    ]
    for path, token, status, code, said in cases:
        got, headers, body = await _get(http, path, token)
        assert got == status, (path, body)
        assert headers["Content-Type"].startswith("application/json"), path
        assert body["error"]["code"] == code and said in body["error"]["message"], (path, body)
