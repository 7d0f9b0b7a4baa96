"""A create and a sit whose answers come too late (the referee stopped with SIGSTOP past a short
``RUMMY_COMMAND_TIMEOUT``) are applied once the referee goes on; sent again with the same
``Idempotency-Key`` (the client's own, or the one a 504 named) they get the same seat or game
and a token that plays: no seat is left that no token controls, and no game is made twice."""

from __future__ import annotations

import asyncio
import json
import signal
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis

from shared.infra.keys import Keys
from tests.faults.conftest import MakeDeployment
from tests.servers import wait_ready

pytestmark = pytest.mark.slow

Json = dict[str, Any]
PATIENCE = 60.0


class Http:
    """Requests to one gateway."""

    def __init__(self, session: aiohttp.ClientSession, port: int) -> None:
        self.session = session
        self.base = f"http://127.0.0.1:{port}"

    async def call(
        self, method: str, path: str, body: Any = None, token: str = "", key: str = ""
    ) -> tuple[int, Json]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        if key:
            headers["Idempotency-Key"] = key
        async with self.session.request(
            method,
            self.base + path,
            json=body,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=30),
        ) as response:
            text = await response.text()
            return response.status, json.loads(text) if text else {}

    async def again(self, path: str, body: Json, key: str) -> tuple[int, Json]:
        """Send with ``key`` until the answer is not a timeout (the referee catching up)."""
        for _ in range(int(PATIENCE / 0.2)):  # a bounded number of tries: a hang fails
            status, doc = await self.call("POST", path, body, key=key)
            if status not in (500, 502, 503, 504):
                return status, doc
            await asyncio.sleep(0.2)
        raise AssertionError(f"still no answer but {status} after every try: {doc}")

    async def plays(self, game_id: str, tokens: dict[int, str], turns: int) -> None:
        """``turns`` turns: the seat whose turn it is draws with its token, accepted."""
        for n in range(turns):
            status, view = await self.call("GET", f"/api/games/{game_id}")
            assert status == 200, view
            seat = view["turn"]["seat"]
            body = {"id": f"draw-{n}", "type": "draw"}
            status, doc = await self.call(
                "POST", f"/api/games/{game_id}/commands", body, token=tokens[seat]
            )
            assert status == 200 and doc["accepted"] is True, (seat, status, doc)


async def test_a_late_sit_and_a_late_create_are_had_again_with_their_keys(
    make_deployment: MakeDeployment,
) -> None:
    deployment = make_deployment(RUMMY_COMMAND_TIMEOUT="1")
    gateway = deployment.start("gateway", "gateway")
    referee = deployment.start("referee", "referee")
    scoring = deployment.start("scoring", "scoring")
    redis_client = aioredis.Redis.from_url(deployment.redis.url)
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, gateway, referee, scoring)
            http = Http(session, gateway.port)
            game_body = {"rules": "robbers", "seats": 3, "options": {"match_rounds": 1}}
            status, created = await http.call("POST", "/api/games", game_body)
            assert status == 201, created
            game_id, host = created["game_id"], created["host_token"]
            seats = f"/api/games/{game_id}/seats"
            other_game = {"rules": "robbers", "seats": 2, "options": {"match_rounds": 1}}

            referee.popen.send_signal(signal.SIGSTOP)
            try:
                status, ann = await http.call("POST", seats, {"name": "ann"}, key="ann-key-1")
                assert status == 504 and ann["error"]["code"] == "timeout", (status, ann)
                assert ann["idempotency_key"] == "ann-key-1"
                status, bob = await http.call("POST", seats, {"name": "bob"})  # no key sent
                assert status == 504, (status, bob)
                bob_key = bob["idempotency_key"]
                status, late = await http.call("POST", "/api/games", other_game, key="game-1")
                assert status == 504 and late["idempotency_key"] == "game-1", (status, late)
            finally:
                referee.popen.send_signal(signal.SIGCONT)

            status, ann = await http.again(seats, {"name": "ann"}, "ann-key-1")
            assert status == 201, ann
            status, bob = await http.again(seats, {"name": "bob"}, bob_key)
            assert status == 201, bob
            status, carl = await http.call("POST", seats, {"name": "carl"})
            assert status == 201, carl
            status, full = await http.call("POST", seats, {"name": "dan"})
            assert status == 409 and full["error"]["code"] == "game_full", (status, full)
            tokens = {doc["seat"]: doc["token"] for doc in (ann, bob, carl)}
            assert len(tokens) == 3, "three sits, three seats"
            status, view = await http.call("GET", f"/api/games/{game_id}")
            names = {s["seat"]: s["name"] for s in view["seats"]}
            assert (names[ann["seat"]], names[bob["seat"]]) == ("ann", "bob"), names
            status, doc = await http.call("POST", f"/api/games/{game_id}/start", {}, token=host)
            assert status == 200, doc
            await http.plays(game_id, tokens, 3)  # every seat's token plays, the late ones too

            status, late = await http.again("/api/games", other_game, "game-1")
            assert status == 201, late
            members = await redis_client.smembers(Keys(deployment.prefix).games())
            ids = {m.decode() if isinstance(m, bytes) else m for m in members}
            assert ids == {game_id, late["game_id"]}, "the late create made one game"
            late_id = late["game_id"]
            late_tokens = {}
            for name in ("eve", "fay"):
                status, doc = await http.call("POST", f"/api/games/{late_id}/seats", {"name": name})
                assert status == 201, doc
                late_tokens[doc["seat"]] = doc["token"]
            path = f"/api/games/{late_id}/start"
            status, doc = await http.call("POST", path, {}, token=late["host_token"])
            assert status == 200, doc
            await http.plays(late_id, late_tokens, 2)
        for service in (gateway, referee, scoring):
            assert service.alive, service.output()[-3000:]
    finally:
        await redis_client.aclose()
