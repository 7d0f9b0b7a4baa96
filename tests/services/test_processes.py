"""Separate referee and scoring processes on a real Redis: a referee killed with SIGKILL in the
middle of a game, the other one finishes it, and nothing is lost, applied twice or reordered.

The test starts its own ``redis-server`` on a spare port (no persistence, a temporary directory)
and stops it at the end; without ``redis-server`` it uses ``REDIS_URL`` with a key prefix of its
own and deletes exactly those keys; with neither it is skipped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import redis.asyncio as aioredis

from shared.infra.bus import REFEREES, Bus, Requester, partition_of
from shared.infra.chain import verify_chain
from shared.infra.gamelog import GameLog, fold_stored
from shared.infra.keys import Keys
from shared.infra.store.redis import RedisEventStore
from tests.ports import spare_port
from tests.servers import Process, own_redis_url, until, wait_ready
from tests.services.conftest import delete_prefixed
from tests.services.driver import create_game, drive

DRAIN_SECONDS = 5.0
PARTITIONS = 2


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A private redis-server for this module, else REDIS_URL, else skip."""
    with own_redis_url(tmp_path_factory.mktemp("redis")) as url:
        yield url


@dataclass
class Deployment:
    url: str
    prefix: str
    tmp: Path
    services: list[Process] = field(default_factory=list)

    def start(self, command: str, consumer: str) -> Process:
        port = spare_port()
        env = {
            **os.environ,
            "REDIS_URL": self.url,
            "RUMMY_PREFIX": self.prefix,
            "RUMMY_PARTITIONS": str(PARTITIONS),
            "RUMMY_HTTP_HOST": "127.0.0.1",
            "RUMMY_HTTP_PORT": str(port),
            "RUMMY_CONSUMER": consumer,
            "RUMMY_CLAIM_IDLE_MS": "500",
            "RUMMY_LEASE_MS": "600",
            "RUMMY_DRAIN_SECONDS": str(DRAIN_SECONDS),
            "PYTHONUNBUFFERED": "1",
        }
        args = [sys.executable, "-m", "services.main", command]
        service = Process(consumer, args, env, self.tmp, port)
        self.services.append(service)
        return service

    def stop_all(self) -> None:
        for service in self.services:
            service.close()


@pytest.fixture
async def deployment(redis_url: str, tmp_path: Path) -> AsyncIterator[Deployment]:
    prefix = f"p{uuid.uuid4().hex[:10]}:"
    built = Deployment(redis_url, prefix, tmp_path)
    try:
        yield built
    finally:
        built.stop_all()
        client = aioredis.Redis.from_url(redis_url)
        try:
            await delete_prefixed(client, prefix)
        finally:
            await client.aclose()


async def http_get(session: aiohttp.ClientSession, service: Process, path: str) -> tuple[int, str]:
    async with session.get(f"http://127.0.0.1:{service.port}{path}") as response:
        return response.status, await response.text()


def metric_total(text: str, name: str) -> float:
    """The sum of a metric's samples in a /metrics text."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


# Looks for a moment when a referee holds the game's partition (none does between two holders).
CATCH_TRIES = 10


async def test_a_killed_referee_s_game_is_finished_by_the_other(deployment: Deployment) -> None:
    referees = [deployment.start("referee", f"referee-{n}") for n in range(2)]
    scoring = deployment.start("scoring", "scoring-0")
    client = aioredis.Redis.from_url(deployment.url)
    keys = Keys(deployment.prefix)
    requester = Requester(Bus(client, keys, PARTITIONS), f"driver-{uuid.uuid4().hex[:6]}")
    games = GameLog(RedisEventStore(client, deployment.prefix))
    try:
        async with aiohttp.ClientSession() as session:
            for service in (*referees, scoring):
                await wait_ready(session, service)
            game_id = await create_game(requester, "robbers", 3, {"match_rounds": 2})
            bots = ["greedy", "random", "greedy"]
            driving = asyncio.create_task(drive(requester, games, game_id, bots, seed=7))

            # Mid-game, freeze the referee that holds the game's partition with a command of
            # the game in its hands (read, not acknowledged), then kill it. The command is the
            # one it was reading or handling when frozen, else the driver's next one: nobody
            # else reads the partition while the frozen referee holds its lease, so it is read
            # from the group under the frozen referee's name, as its own read would have (a
            # stopped process cannot be made to read; what the stream then holds is exactly
            # what a crash between a read and its acknowledgement leaves).
            await until(lambda: _version_at_least(games, game_id, 30), 60, every=0.005)
            partition = partition_of(game_id, PARTITIONS)
            lease, stream = keys.lease(partition), keys.command_stream(partition)
            victim = None
            for _ in range(CATCH_TRIES):
                holder = await client.get(lease)
                named = [r for r in referees if holder is not None and r.name == holder.decode()]
                if not named:
                    await asyncio.sleep(0.2)  # between two holders
                    continue
                named[0].popen.send_signal(signal.SIGSTOP)
                if await client.get(lease) == holder:
                    victim = named[0]
                    break
                named[0].popen.send_signal(signal.SIGCONT)  # it lost the lease meanwhile
            assert victim is not None, "no referee held the game's partition to be frozen"
            await until(partial(_in_hands, client, stream, victim.name), 30, every=0.002)
            survivor = next(r for r in referees if r is not victim)
            victim.popen.send_signal(signal.SIGKILL)
            victim.popen.wait(5)
            killed_at = (await games.load(game_id, fresh=True)).state
            assert killed_at.status != "finished"

            driven = await asyncio.wait_for(driving, 120)

            # The survivor took over the dead referee's pending commands.
            await until(lambda: _no_pending(client, keys), 10, every=0.005)
            _, text = await http_get(session, survivor, "/metrics")
            assert metric_total(text, "referee_commands_total") > 0
            # It died with a command in its hands: the survivor claimed it.
            assert metric_total(text, "referee_claimed_total") >= 1
            status, _ = await http_get(session, scoring, "/healthz")
            assert status == 200

        events = await games.store.read(game_id)
        assert verify_chain(events) is None
        assert [e.version for e in events] == list(range(1, len(events) + 1))
        state = fold_stored(events).state
        assert state.status == "finished" and state.winners
        types = [e.type for e in events]
        assert types[-2:] == ["MatchEnded", "SeedRevealed"]
        assert types.count("RoundEnded") == types.count("ScoresRecorded") >= 2  # + tie-breaks

        # Every command applied once: its events are one contiguous append, and each answer
        # names the version and head that append produced.
        versions: dict[str, list[int]] = defaultdict(list)
        for event in events:
            if event.command_id is not None:
                versions[event.command_id].append(event.version)
        for cid, got in versions.items():
            assert got == list(range(got[0], got[0] + len(got))), (cid, got)
        sent = dict(driven.sent)
        assert len(sent) == len(driven.sent)
        applied = {cid for cid, a in driven.sent if a["status"] in ("accepted", "rejected")}
        assert applied == set(sent)
        assert {cid for cid in versions if cid in sent} == applied
        accepted = [a for a in driven.answers if a["status"] == "accepted"]
        assert len(accepted) == len({cid for cid, a in driven.sent if a["status"] == "accepted"})
        for cid, answer in driven.sent:
            last = events[versions[cid][-1] - 1]
            assert (answer["version"], answer["head"]) == (last.version, last.hash), cid
            if answer["status"] == "rejected":
                assert [events[v - 1].type for v in versions[cid]] == ["CommandRejected"]

        logged = [line for line in survivor.log_lines() if line.get("event") == "command"]
        assert logged and {"game", "command", "outcome", "ms", "level"} <= set(logged[-1])

        # SIGTERM: the others drain and exit 0 within the deadline.
        for service in (survivor, scoring):
            service.popen.send_signal(signal.SIGTERM)
        for service in (survivor, scoring):
            code = service.popen.wait(DRAIN_SECONDS + 5)
            assert code == 0, service.output()[-2000:]
        assert victim.popen.returncode == -signal.SIGKILL
    finally:
        await requester.close()
        await client.aclose()


async def _version_at_least(games: GameLog, game_id: str, version: int) -> bool:
    return (await games.store.version(game_id))[0] >= version


async def _in_hands(client: Any, stream: str, consumer: str) -> bool:
    """Whether ``consumer`` holds an entry of ``stream`` unacknowledged, reading the next one
    under its name when it holds none."""
    summary = await client.xpending(stream, REFEREES)
    held = {_name(c["name"]): int(c["pending"]) for c in summary.get("consumers") or []}
    if held.get(consumer, 0) > 0:
        return True
    return bool(await client.xreadgroup(REFEREES, consumer, {stream: ">"}, count=1))


def _name(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _no_pending(client: Any, keys: Keys) -> bool:
    for partition in range(PARTITIONS):
        summary = await client.xpending(keys.command_stream(partition), REFEREES)
        if int(summary["pending"]):
            return False
    return True
