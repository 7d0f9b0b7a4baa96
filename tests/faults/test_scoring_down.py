"""The scoring service down for a while (killed with SIGKILL mid-play, started again later as a
new process).

Meanwhile every game plays to the end of its first round and waits there: a command answers
409 ``round_over``, the versions stay put, the referee and the gateway stay ready and nothing
crashes. When scoring returns it records the missing score sheets (once each), the games deal
on and finish, every log audits clean (the ``scores`` check re-derives every sheet), nothing is
left awaiting scores, and the projections equal a full rebuild (`rummy rebuild` reports no
differences).
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis

from shared.infra.bus import SCORING
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.store.redis import RedisEventStore
from tests.faults.conftest import MakeDeployment
from tests.faults.harness import ROOT, Client, Deployment, Ledger, check_logs, metric, play
from tests.servers import http_status, until, wait_ready

pytestmark = pytest.mark.slow

GAMES = 4
ROUNDS = 2
DOWN_SECONDS = 3.0


async def phases(games: GameLog, game_ids: list[str]) -> list[tuple[str, int]]:
    """(phase, version) of each game, from its log."""
    out = []
    for game_id in game_ids:
        loaded = await games.load(game_id, fresh=True)
        out.append((loaded.state.phase, loaded.version))
    return out


async def feed_settled(client: Any, deployment: Deployment) -> bool:
    """Scoring has read and acknowledged every feed entry."""
    keys = Keys(deployment.prefix)
    for partition in range(deployment.partitions):
        stream = keys.feed(partition)
        if not await client.exists(stream):
            continue
        if int((await client.xpending(stream, SCORING))["pending"]):
            return False
        groups = await client.xinfo_groups(stream)
        mine = [g for g in groups if g["name"] in (SCORING, SCORING.encode())]
        info = await client.xinfo_stream(stream)
        if not mine or info["last-generated-id"] != mine[0]["last-delivered-id"]:
            return False
    return True


async def test_games_wait_while_scoring_is_down_and_catch_up_when_it_returns(
    make_deployment: MakeDeployment,
) -> None:
    deployment = make_deployment(RUMMY_CLAIM_IDLE_MS="500")
    gateway = deployment.start("gateway", "gateway")
    referee = deployment.start("referee", "referee")
    scoring = deployment.start("scoring", "scoring-0")
    ledger = Ledger()
    redis_client = aioredis.Redis.from_url(deployment.redis.url)
    logs = GameLog(RedisEventStore(redis_client, deployment.prefix))
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, gateway, referee, scoring)
            client = Client(session, gateway.port, ledger, patience=60)
            games = [
                await client.new_game("robbers", 2, {"match_rounds": ROUNDS}) for _ in range(GAMES)
            ]
            game_ids = [g for g, _ in games]
            playing = [
                asyncio.create_task(
                    play(client, g, t, ["greedy", "random"], seed=n, between_rounds=90)
                )
                for n, (g, t) in enumerate(games)
            ]
            try:
                await until(lambda: _true(len(ledger.acks) >= 2 * GAMES), 30)
                scoring.stop(signal.SIGKILL)
                down = time.monotonic()

                # Every game plays its first round to the end and waits for its score sheet.
                async def all_waiting() -> bool:
                    return all(p == "scoring" for p, _ in await phases(logs, game_ids))

                await until(all_waiting, 90, message="not every game reached its round end")
                waiting = await phases(logs, game_ids)
                for game_id, tokens in games:
                    view = await client.view(game_id)
                    assert view["turn"] is None and view["status"] == "playing", view
                    body = {"id": "early", "type": "draw", "expected_version": view["version"]}
                    status, doc = await client.command(game_id, 0, tokens[0], body)
                    assert status == 409 and doc["error"]["code"] == "round_over", (status, doc)
                await asyncio.sleep(DOWN_SECONDS)
                # Waiting is all they did: nothing moved, nothing crashed, all still ready.
                assert await phases(logs, game_ids) == waiting
                assert not any(task.done() for task in playing)
                for service in (referee, gateway):
                    assert service.alive, service.output()[-3000:]
                    status, detail = await http_status(session, service.port, "/readyz")
                    assert status == 200, (service.name, status, detail)

                scoring = deployment.start("scoring", "scoring-1")
                back = time.monotonic()
                await wait_ready(session, scoring)
                finals = await asyncio.gather(*playing)
            finally:
                for task in playing:
                    task.cancel()
                await asyncio.gather(*playing, return_exceptions=True)
            assert all(final["status"] == "finished" for final in finals)
            assert ledger.refusals["round_over"] == GAMES

            # Scoring caught up: every feed entry handled, no round left awaiting its sheet.
            await until(lambda: feed_settled(redis_client, deployment), 20)
            awaiting = Keys(deployment.prefix).awaiting_scores()
            await until(lambda: _zero(redis_client.scard(awaiting)), 20)
            _, text = await http_status(session, scoring.port, "/metrics")
            assert metric(text, "scoring_sheets_total") >= GAMES * ROUNDS, text

        logs_by_game = await check_logs(deployment.redis.url, deployment.prefix, game_ids, ledger)
        for game_id, events in logs_by_game.items():
            types = [e.type for e in events]
            assert types.count("ScoresRecorded") == types.count("RoundEnded") >= ROUNDS, game_id

        # The live projections are what a rebuild from the logs gives.
        rebuild = subprocess.run(
            [sys.executable, "-m", "services.main", "rebuild"],
            cwd=ROOT,
            env=deployment.env("rebuild", 0),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert rebuild.returncode == 0, (rebuild.stdout, rebuild.stderr)
        report = json.loads(rebuild.stdout.strip().splitlines()[-1])
        assert report == {"games": GAMES, "differences": [], "games_differing": []}, report
        standings = Keys(deployment.prefix).standings
        for game_id in game_ids:
            doc = json.loads(await redis_client.hget(standings(game_id), "standings"))
            assert doc["status"] == "finished" and doc["rounds"] >= ROUNDS, doc
        print(
            f"\nscoring down {back - down:.1f} s; {GAMES} games waited at their first round's "
            f"end ({ledger.refusals['round_over']} commands refused round_over) and finished"
        )
    finally:
        await redis_client.aclose()


async def _true(value: bool) -> bool:
    return value


async def _zero(count: Any) -> bool:
    return int(await count) == 0
