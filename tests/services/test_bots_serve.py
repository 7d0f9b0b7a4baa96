"""`rummy serve` plays bot seats in process: a game whose seats the host gives to bots over the
API, started, is played to its end with nobody else moving."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.ports import spare_port
from tests.servers import Process, until

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
async def test_rummy_serve_plays_a_game_of_bots_to_its_end(tmp_path: Path) -> None:
    port = spare_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RUMMY_")}
    env.pop("REDIS_URL", None)  # the embedded stand-in
    env |= {"RUMMY_BOT_DELAY_SECONDS": "0", "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, "-m", "services.main", "serve", "--port", str(port)]
    serve = Process("serve", args, env, tmp_path, port)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:

            async def call(method: str, path: str, body: Any = None, token: str = "") -> Any:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                async with http.request(method, base + path, json=body, headers=headers) as r:
                    assert r.status in (200, 201), (r.status, await r.text())
                    return await r.json()

            async def up() -> bool:
                assert serve.alive, serve.output()[-3000:]
                try:
                    async with http.get(f"{base}/readyz") as response:
                        return response.status == 200
                except aiohttp.ClientError:
                    return False

            await until(up, 60)
            body = {"rules": "robbers", "seats": 2, "options": {"match_rounds": 1}}
            created = await call("POST", "/api/games", body)
            game_id, host = created["game_id"], created["host_token"]
            for bot in ("greedy", "random"):
                seated = await call("POST", f"/api/games/{game_id}/seats", {"bot": bot}, host)
                assert seated["bot"] == bot and "token" not in seated
            await call("POST", f"/api/games/{game_id}/start", {}, host)

            async def finished() -> Any:
                view = await call("GET", f"/api/games/{game_id}")
                return view if view["status"] == "finished" else None

            view = await until(finished, 120, every=0.2)
            assert [s["bot"] for s in view["seats"]] == ["greedy", "random"]
            assert view["winner"], view
    finally:
        assert serve.stop() == 0, serve.output()[-3000:]
        serve.close()
