"""Redis restarted in the middle of play, with its append-only file on: stopped, away for a
few seconds, started again on the same port and directory. Nothing restarts the services.
Three ways: ``appendfsync always`` with a clean shutdown (SIGTERM) and with the Redis process
killed (SIGKILL: no shutdown at all), and ``appendfsync everysec`` with a clean shutdown (which
flushes the file: only a crash of the machine loses the last second, see docs/durability.md).

While Redis is away every process says so on ``/readyz`` (503 while it is still away: the probe
does not wait for Redis to come back), and a command sent to the gateway then is held (the Redis
client retries with backoff) and answered once Redis is back, not failed. Afterwards every
process is ready again by itself, the games go on to their end, and no acknowledged turn is lost:
the players resend what was not answered with the same command id, and the checks hold every
acknowledgement against the logs.
"""

from __future__ import annotations

import asyncio
import random
import signal
import time
from collections.abc import Awaitable
from typing import Any

import aiohttp
import pytest

from shared.core.commands import command_json
from shared.core.rulesets import rule_set
from shared.core.views import seat_view_from_json
from shared.play.bots import BOTS
from tests.faults.conftest import MakeDeployment
from tests.faults.harness import Ack, Client, Ledger, check_logs, play
from tests.servers import http_status, until, wait_ready

pytestmark = pytest.mark.slow

GAMES = 4
OUTAGE_SECONDS = 3.0
PROBE_TIMEOUT = 15.0  # a safety net: Redis stays away until every probe has answered


@pytest.mark.parametrize(
    ("fsync", "stop"),
    [("always", signal.SIGTERM), ("always", signal.SIGKILL), ("everysec", signal.SIGTERM)],
    ids=["always-shutdown", "always-killed", "everysec-shutdown"],
)
async def test_services_ride_out_a_redis_restart_and_lose_no_acknowledged_turn(
    make_deployment: MakeDeployment, fsync: str, stop: signal.Signals
) -> None:
    deployment = make_deployment(aof=True, fsync=fsync, RUMMY_CLAIM_IDLE_MS="1000")
    gateway = deployment.start("gateway", "gateway")
    referees = [deployment.start("referee", f"referee-{n}") for n in range(2)]
    scoring = deployment.start("scoring", "scoring")
    services = [gateway, *referees, scoring]
    pids = [s.pid for s in services]
    ledger = Ledger()
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, *services)
        client = Client(session, gateway.port, ledger, patience=60)
        games = [await client.new_game("robbers", 2, {"match_rounds": 1}) for _ in range(GAMES)]
        bots = ["greedy", "random"]
        # The first game waits for the outage: its next command is sent while Redis is away.
        held_game, held_tokens = games[0]
        playing = [
            asyncio.create_task(play(client, g, t, bots, seed=n, pace=0.02))
            for n, (g, t) in enumerate(games[1:], 1)
        ]
        try:
            await until(lambda: _true(len(ledger.acks) >= 5 * GAMES), 60)
            assert not any(task.done() for task in playing), "the games ended too soon"
            seat = (await client.view(held_game))["turn"]["seat"]
            view = await client.view(held_game, held_tokens[seat])
            rules = rule_set(view["rules"]["name"], view["rules"]["options"])
            command = BOTS["greedy"]().choose(seat_view_from_json(view, rules), random.Random(1))
            body = command_json(command, with_seat=False) | {
                "id": "held",
                "expected_version": view["version"],
            }

            assert deployment.redis.stop(stop) == (0 if stop == signal.SIGTERM else -stop)
            down = time.monotonic()
            acked_before = len(ledger.acks)
            held = asyncio.create_task(
                _timed(
                    client.call("POST", f"/api/games/{held_game}/commands", body, held_tokens[seat])
                )
            )

            # Every process says it is not ready while Redis is still away (it is started again
            # only after these answers: a probe that waited for Redis would never answer). The
            # answer is the last known state, which goes stale within a couple of seconds.
            for service in services:
                seen: list[tuple[int, str]] = []

                async def not_ready(port: int = service.port, seen: list[Any] = seen) -> bool:
                    seen.append(await http_status(session, port, "/readyz", PROBE_TIMEOUT))
                    return seen[-1][0] == 503

                await until(not_ready, PROBE_TIMEOUT, message=lambda s=seen: str(s[-1:]))
            assert not held.done(), held.result()  # not failed: held

            await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - down)))
            deployment.redis.start()
            back = time.monotonic()
            await wait_ready(session, *services, timeout=20)
            ready_after = time.monotonic() - back

            # The command sent while Redis was away was held, then answered: applied (or a
            # recorded rejected attempt), not failed.
            status, doc, answered = await asyncio.wait_for(held, 20)
            assert answered > back, (status, doc)
            assert status == 200 or doc["error"]["code"] == "illegal_layout", (status, doc)
            ledger.acks.append(Ack(held_game, f"{seat}:held", status, doc["version"], doc["head"]))
            playing.append(
                asyncio.create_task(play(client, held_game, held_tokens, bots, seed=0, pace=0.02))
            )

            finals = await asyncio.gather(*playing)
        finally:
            for task in playing:
                task.cancel()
            await asyncio.gather(*playing, return_exceptions=True)
        assert all(final["status"] == "finished" for final in finals)
        assert len(ledger.acks) > acked_before  # the games went on after the restart
        # Nothing was restarted: the same processes rode it out.
        assert [s.pid for s in services] == pids and all(s.alive for s in services)
        assert deployment.redis.starts == 2

    await check_logs(deployment.redis.url, deployment.prefix, [g for g, _ in games], ledger)
    print(
        f"\nRedis away {back - down:.1f} s; every process ready {ready_after:.1f} s after it "
        f"came back; {len(ledger.acks)} acknowledged commands ({acked_before} before the stop), "
        f"{ledger.retries} retries, errors {dict(ledger.errors)}"
    )


async def test_services_ride_out_a_redis_that_comes_back_empty(
    make_deployment: MakeDeployment,
) -> None:
    """Redis restarted without its data (no append-only file: a volume lost, a restore, a
    flush). The games it held are gone with it, but the service is not: every consumer group
    is gone too, and a referee, scoring or bots process that read on with ``NOGROUP`` for ever
    would leave every later game unplayed while saying it was ready. New games, one of them
    with a bot in a seat (the bots' group), play to their end, and nothing was restarted."""
    deployment = make_deployment(aof=False, RUMMY_BOT_DELAY_SECONDS="0")
    names = ["gateway", "referee", "scoring", "bots"]
    services = [deployment.start(name, name) for name in names]
    pids = [s.pid for s in services]
    ledger = Ledger()
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, *services)
        client = Client(session, services[0].port, ledger, patience=60)
        await client.new_game("robbers", 2, {"match_rounds": 1})  # lost with Redis's data

        deployment.redis.stop(signal.SIGTERM)
        deployment.redis.start()
        await wait_ready(session, *services, timeout=30)

        game, tokens = await client.new_game("robbers", 2, {"match_rounds": 1})
        final = await play(client, game, tokens, ["greedy", "random"], seed=1)
        assert final["status"] == "finished"

        body = {"rules": "robbers", "seats": 2, "options": {"match_rounds": 1}}
        status, doc = await client.call("POST", "/api/games", body)
        assert status == 201, doc
        with_bot, host = doc["game_id"], doc["host_token"]
        status, doc = await client.call(
            "POST", f"/api/games/{with_bot}/seats", {"bot": "greedy"}, host
        )
        assert status == 201, doc
        status, doc = await client.call("POST", f"/api/games/{with_bot}/seats", {"name": "p"})
        assert status == 201, doc
        mine = doc["seat"]
        tokens = ["", ""]
        tokens[mine] = doc["token"]
        status, doc = await client.call("POST", f"/api/games/{with_bot}/start", {}, host)
        assert status == 200, doc
        # Only the person's seat is played here: the bots service plays the other.
        final = await play(client, with_bot, tokens, ["greedy", "greedy"], seed=2, seats=[mine])
        assert final["status"] == "finished"
        assert [s.pid for s in services] == pids and all(s.alive for s in services)
    await check_logs(deployment.redis.url, deployment.prefix, [game, with_bot], ledger)


async def _true(value: bool) -> bool:
    return value


async def _timed(request: Awaitable[tuple[int, Any]]) -> tuple[int, Any, float]:
    """The answer, and when it came."""
    status, doc = await request
    return status, doc, time.monotonic()
