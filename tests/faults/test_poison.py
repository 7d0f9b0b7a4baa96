"""A poison command: one command of a live game that makes the referee fail every time it is
handled, sent over HTTP through a real gateway, on a real Redis.

No real entry does this (bad input is refused or dead-lettered as malformed without a retry),
so the referee runs in this process with its command parsing poisoned for that one command id;
everything else is real: the gateway and scoring processes, the claim of the failed entry, the
dead-letter stream, /metrics over HTTP.

The command is handled ``max_deliveries`` times, then dead-lettered (with its reason) and
counted in ``referee_dead_letters_total``; its sender gets 500 ``command_failed`` rather than
waiting out its timeout. The game is unharmed: the poison appended nothing, another game went
on meanwhile, the poisoned game plays on to its end with its next commands, and both logs audit
clean.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import aiohttp
import pytest

from services.referee.referee import Referee
from shared.core.commands import command_json
from shared.core.rulesets import rule_set
from shared.core.views import seat_view_from_json
from shared.infra.bus import REFEREES
from shared.infra.connection import connect
from shared.infra.keys import Keys
from shared.infra.process import start_health_server
from shared.infra.settings import Settings
from shared.play.bots import BOTS
from tests.faults.conftest import MakeDeployment
from tests.faults.harness import Client, Ledger, check_logs, metric, play
from tests.ports import spare_port
from tests.servers import http_status, until, wait_ready

pytestmark = pytest.mark.slow

MAX_DELIVERIES = 3
POISON_ID = "poison"


async def test_a_poison_command_is_dead_lettered_and_its_game_plays_on(
    make_deployment: MakeDeployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = make_deployment(RUMMY_COMMAND_TIMEOUT="20")
    gateway = deployment.start("gateway", "gateway")
    scoring = deployment.start("scoring", "scoring")
    settings = Settings(
        redis_url=deployment.redis.url,
        prefix=deployment.prefix,
        partitions=deployment.partitions,
        consumer="referee-in-test",
        claim_idle_ms=300,
        lease_ms=600,
        max_deliveries=MAX_DELIVERIES,
        drain_seconds=5,
    )
    redis_client = connect(settings)
    referee = Referee(redis_client, settings)
    handled: list[float] = []
    parse = referee._command

    async def poisoned(entry: Any, loaded: Any) -> Any:
        if entry.cid.endswith(f":{POISON_ID}"):
            handled.append(time.monotonic())
            raise RuntimeError("poisoned: this command crashes the referee")
        return await parse(entry, loaded)

    monkeypatch.setattr(referee, "_command", poisoned)
    port = spare_port()
    health = await start_health_server("127.0.0.1", port, referee.metrics.registry, referee.ready)
    running = asyncio.create_task(referee.run())
    ledger = Ledger()
    keys = Keys(deployment.prefix)
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, gateway, scoring)
            await until(lambda: _ready(session, port), 10)
            client = Client(session, gateway.port, ledger, patience=60)
            (poisoned_game, tokens), (other_game, other_tokens) = [
                await client.new_game("robbers", 2, {"match_rounds": 1}) for _ in range(2)
            ]
            bots = ["greedy", "random"]
            other = asyncio.create_task(
                play(client, other_game, other_tokens, bots, seed=2, pace=0.02)
            )
            await play(client, poisoned_game, tokens, bots, seed=1, stop_after=8)

            # The poison: the next command of the seat whose turn it is.
            seat = (await client.view(poisoned_game))["turn"]["seat"]
            view = await client.view(poisoned_game, tokens[seat])
            rules = rule_set(view["rules"]["name"], view["rules"]["options"])
            choice = BOTS["greedy"]().choose(seat_view_from_json(view, rules), random.Random(7))
            body = command_json(choice, with_seat=False) | {
                "id": POISON_ID,
                "expected_version": view["version"],
            }
            other_before = (await client.view(other_game))["version"]
            status, doc = await client.call(
                "POST", f"/api/games/{poisoned_game}/commands", body, tokens[seat]
            )
            other_after = (await client.view(other_game))["version"]

            # Answered as failed (not left to time out) after max_deliveries attempts.
            assert status == 500 and doc["error"]["code"] == "command_failed", (status, doc)
            assert len(handled) == MAX_DELIVERIES, handled
            # The other game went on while the poison was retried.
            assert other_after > other_before, (other_before, other_after)

            letters = await redis_client.xrange(keys.dead_letters())
            assert len(letters) == 1, letters
            letter = {k.decode(): v for k, v in letters[0][1].items()}
            assert letter["reason"] == b"failed too many times", letter
            entry = json.loads(letter["entry"])
            assert (entry["game"], entry["cid"]) == (poisoned_game, f"{seat}:{POISON_ID}")

            _, text = await http_status(session, port, "/metrics")
            assert metric(text, "referee_dead_letters_total") == 1, text
            assert metric(text, "referee_dead_letters_total", reason="failed too many times") == 1
            assert metric(text, "referee_failures_total") >= MAX_DELIVERIES
            # Nothing is left pending (the other game's commands are, for the moment each takes).
            await until(
                lambda: _nothing_pending(redis_client, keys, deployment.partitions),
                10,
                message="a command stayed pending",
            )

            # The poisoned game is where it was, and plays on to its end.
            assert (await client.view(poisoned_game))["version"] == view["version"]
            final = await play(client, poisoned_game, tokens, bots, seed=3)
            assert final["status"] == "finished"
            assert (await asyncio.wait_for(other, 120))["status"] == "finished"
            status, _ = await http_status(session, port, "/readyz")
            assert status == 200 and referee.running
    finally:
        referee.stop()
        await asyncio.wait_for(running, 15)
        await health.cleanup()
        await redis_client.aclose()

    logs = await check_logs(
        deployment.redis.url, deployment.prefix, [poisoned_game, other_game], ledger
    )
    poison_cid = f"{seat}:{POISON_ID}"
    assert all(e.command_id != poison_cid for e in logs[poisoned_game])
    print(
        f"\nthe poison was handled {len(handled)} times, dead-lettered, "
        f"answered 500 command_failed; the other game moved {other_after - other_before} "
        "versions meanwhile; both games finished and audit clean"
    )


async def _ready(session: aiohttp.ClientSession, port: int) -> bool:
    status, _ = await http_status(session, port, "/readyz")
    return status == 200


async def _nothing_pending(client: Any, keys: Keys, partitions: int) -> bool:
    for partition in range(partitions):
        summary = await client.xpending(keys.command_stream(partition), REFEREES)
        if int(summary["pending"]):
            return False
    return True
