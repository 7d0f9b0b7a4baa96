"""The archiver as a process on a real Redis and a real PostgreSQL: games played by a referee
and scoring finish, are archived and leave Redis; the archiver is SIGKILLed at random points
and its database connections are cut mid-run, and (in a second test) a PostgreSQL server of the
test's own crashes and restarts mid-run, and still no game is lost, none is half-removed and
every archived record verifies.

Redis: a redis-server of the test's own (else REDIS_URL with a key prefix of its own). The
database: one of the test's own (``tests/archive/databases.py``), dropped after.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
import redis.asyncio as aioredis

from shared.archive.postgres import PostgresArchive
from shared.audit.record import loads
from shared.audit.verify import audit_record
from shared.infra.bus import Bus, Requester
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.retention import game_data_keys
from shared.infra.store.redis import RedisEventStore
from tests.archive.databases import fresh_database, terminate_connections
from tests.archive.pgserver import PostgresServer
from tests.ports import spare_port
from tests.servers import Process, own_redis_url, until, wait_ready
from tests.services.conftest import delete_prefixed
from tests.services.driver import create_game, drive

PARTITIONS = 2
ROOT = Path(__file__).resolve().parents[2]
GAMES = 6


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with own_redis_url(tmp_path_factory.mktemp("redis")) as url:
        yield url


@dataclass
class Deployment:
    redis_url: str
    archive_url: str
    prefix: str
    tmp: Path
    services: list[Process] = field(default_factory=list)
    starts: int = 0

    def env(self) -> dict[str, str]:
        """What every process of the deployment is given."""
        return {
            **os.environ,
            "REDIS_URL": self.redis_url,
            "RUMMY_PREFIX": self.prefix,
            "RUMMY_PARTITIONS": str(PARTITIONS),
            "RUMMY_ARCHIVE_URL": self.archive_url,
            "PYTHONUNBUFFERED": "1",
        }

    def start(self, command: str, consumer: str, **extra: str) -> Process:
        port = spare_port()
        env = {
            **os.environ,
            "REDIS_URL": self.redis_url,
            "RUMMY_PREFIX": self.prefix,
            "RUMMY_PARTITIONS": str(PARTITIONS),
            "RUMMY_HTTP_HOST": "127.0.0.1",
            "RUMMY_HTTP_PORT": str(port),
            "RUMMY_CONSUMER": consumer,
            "RUMMY_CLAIM_IDLE_MS": "500",
            "RUMMY_LEASE_MS": "600",
            "RUMMY_DRAIN_SECONDS": "5",
            "RUMMY_ARCHIVE_URL": self.archive_url,
            "RUMMY_RETAIN_SECONDS": "1",
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
        self.starts += 1
        args = [sys.executable, "-m", "services.main", command]
        service = Process(consumer, args, env, self.tmp, port, append=True)
        self.services.append(service)
        return service

    def stop_all(self) -> None:
        for service in self.services:
            service.close()


@pytest.fixture
async def deployment(redis_url: str, tmp_path: Path) -> AsyncIterator[Deployment]:
    prefix = f"a{uuid.uuid4().hex[:10]}:"
    with fresh_database("processes") as archive_url:
        built = Deployment(redis_url, archive_url, prefix, tmp_path)
        try:
            yield built
        finally:
            built.stop_all()
            client = aioredis.Redis.from_url(redis_url)
            try:
                await delete_prefixed(client, prefix)
            finally:
                await client.aclose()


async def held_keys(client: aioredis.Redis, keys: Keys, game_id: str) -> int:
    return int(await client.exists(*game_data_keys(keys, game_id)))


async def whole_somewhere(
    client: aioredis.Redis, keys: Keys, archive: PostgresArchive, game_id: str
) -> None:
    """The game is whole in Redis (log, head and commands together), or archived."""
    log = int(await client.exists(keys.events(game_id), keys.head(game_id), keys.commands(game_id)))
    if log == 3:
        return
    assert log == 0, f"game {game_id} is half-removed from Redis ({log} of its 3 log keys)"
    entry = await archive.entry(game_id)
    assert entry is not None, f"game {game_id} left Redis without its archive row"


@pytest.mark.slow
async def test_games_are_archived_through_kills_and_a_lost_database(
    deployment: Deployment,
) -> None:
    referee = deployment.start("referee", "referee-0")
    scoring = deployment.start("scoring", "scoring-0")
    archiver = deployment.start("archiver", "archiver-0")
    client = aioredis.Redis.from_url(deployment.redis_url)
    keys = Keys(deployment.prefix)
    requester = Requester(Bus(client, keys, PARTITIONS), f"driver-{uuid.uuid4().hex[:6]}")
    games = GameLog(RedisEventStore(client, deployment.prefix))
    rng = random.Random(23)
    archive = PostgresArchive(deployment.archive_url)
    try:
        async with aiohttp.ClientSession() as session:
            for service in (referee, scoring, archiver):
                await wait_ready(session, service)
            ids = [
                await create_game(requester, "robbers", 2, {"match_rounds": 1})
                for _ in range(GAMES)
            ]
            # The games start one after another, so that they end (and are archived) while
            # the archiver is killed.

            async def play(n: int, game_id: str) -> None:
                await asyncio.sleep(n * 1.5)
                await drive(requester, games, game_id, ["greedy", "greedy"], seed=n)

            driving = [asyncio.create_task(play(n, g)) for n, g in enumerate(ids)]
            await archive.open()
            # While the games are played, end and are archived, the archiver is killed at
            # random points of its work and restarted, and its database connections are cut
            # under it. After every kill each game is whole in Redis or in the archive.
            kills = 0
            cuts = 0
            while not all(task.done() for task in driving) or kills < 6:
                await wait_ready(session, archiver)
                await asyncio.sleep(rng.uniform(0.0, 1.0))
                if kills % 2 == 1:
                    cuts += terminate_connections(deployment.archive_url) > 0
                    await asyncio.sleep(rng.uniform(0.0, 0.3))
                archiver.popen.send_signal(signal.SIGKILL)
                archiver.popen.wait(5)
                kills += 1
                for game_id in ids:
                    await whole_somewhere(client, keys, archive, game_id)
                archiver = deployment.start("archiver", "archiver-0")
            for task in driving:
                await task
            await wait_ready(session, archiver)
            # Cut again under the last archiver: it must finish regardless.
            terminate_connections(deployment.archive_url)

            async def all_moved() -> bool:
                for game_id in ids:
                    if await held_keys(client, keys, game_id):
                        return False
                return await archive.count() == GAMES

            await until(all_moved, 90, every=0.2)

            async def commands_trimmed() -> bool:
                lengths = [await client.xlen(keys.command_stream(p)) for p in range(PARTITIONS)]
                return sum(lengths) <= PARTITIONS  # each keeps its group's last delivered one

            await until(commands_trimmed, 30, every=0.5)
            assert cuts, "the database connections were never cut while the archiver ran"

            # Gone from Redis, the games are still listed, viewed, replayed and exported by a
            # gateway process, and exported and audited by id on the command line.
            gateway = deployment.start("gateway", "gateway-0")
            await wait_ready(session, gateway)
            base = f"http://127.0.0.1:{gateway.port}/api/games"
            async with session.get(f"{base}?status=finished&limit=50") as listed:
                assert listed.status == 200
                assert {g["game_id"] for g in (await listed.json())["games"]} == set(ids)
            for game_id in ids:
                async with session.get(f"{base}/{game_id}") as view:
                    assert view.status == 200 and (await view.json())["status"] == "finished"
                async with session.get(f"{base}/{game_id}/replay?turn=2") as replay:
                    assert replay.status == 200, await replay.text()
                async with session.get(f"{base}/{game_id}/export") as exported:
                    assert exported.status == 200
                    assert audit_record(loads(await exported.text())).ok
            game_id = ids[0]
            env = {**deployment.env(), "RUMMY_LOG_LEVEL": "warning"}
            done = subprocess.run(
                [sys.executable, "-m", "services.main", "audit", game_id],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0 and "every check holds" in done.stdout, done.stderr
            done = subprocess.run(
                [sys.executable, "-m", "services.main", "export", game_id],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            entry = await archive.entry(game_id)
            assert entry is not None
            assert loads(done.stdout).head == (entry.events, entry.head)
        for game_id in ids:
            record = await archive.fetch(game_id)
            assert record is not None, game_id
            assert audit_record(record).ok, game_id
            assert [e.type for e in record.events][-2:] == ["MatchEnded", "SeedRevealed"]
            assert not await client.sismember(keys.games(), game_id)
            assert await client.zscore(keys.archive_kept(), game_id) is None
            assert await client.zscore(keys.archive_due(), game_id) is None
        assert archiver.alive
        assert archiver.stop() == 0
    finally:
        await archive.close()
        await requester.close()
        await client.aclose()


@pytest.fixture
async def crashable(
    redis_url: str, tmp_path: Path
) -> AsyncIterator[tuple[Deployment, PostgresServer]]:
    """A deployment whose archive is a PostgreSQL server of the test's own, which it crashes."""
    prefix = f"a{uuid.uuid4().hex[:10]}:"
    with PostgresServer() as server:
        built = Deployment(redis_url, server.url, prefix, tmp_path)
        try:
            yield built, server
        finally:
            built.stop_all()
            client = aioredis.Redis.from_url(redis_url)
            try:
                await delete_prefixed(client, prefix)
            finally:
                await client.aclose()


async def whole_in_either(
    client: aioredis.Redis, keys: Keys, url: str, game_ids: list[str]
) -> None:
    """``whole_somewhere`` for each game, through a fresh connection to the archive (the
    server was restarted under any connection kept)."""
    archive = PostgresArchive(url)
    await archive.open()
    try:
        for game_id in game_ids:
            await whole_somewhere(client, keys, archive, game_id)
    finally:
        await archive.close()


@pytest.mark.slow
async def test_games_are_archived_through_database_crashes_and_restarts(
    crashable: tuple[Deployment, PostgresServer],
) -> None:
    deployment, server = crashable
    referee = deployment.start("referee", "referee-0")
    scoring = deployment.start("scoring", "scoring-0")
    archiver = deployment.start("archiver", "archiver-0")
    client = aioredis.Redis.from_url(deployment.redis_url)
    keys = Keys(deployment.prefix)
    requester = Requester(Bus(client, keys, PARTITIONS), f"driver-{uuid.uuid4().hex[:6]}")
    games = GameLog(RedisEventStore(client, deployment.prefix))
    rng = random.Random(29)
    try:
        async with aiohttp.ClientSession() as session:
            for service in (referee, scoring, archiver):
                await wait_ready(session, service)
            ids = [
                await create_game(requester, "robbers", 2, {"match_rounds": 1})
                for _ in range(GAMES)
            ]

            async def play(n: int, game_id: str) -> None:
                await asyncio.sleep(n * 1.5)
                await drive(requester, games, game_id, ["greedy", "greedy"], seed=100 + n)

            driving = [asyncio.create_task(play(n, g)) for n, g in enumerate(ids)]
            # While games end and are archived, the database crashes (no clean shutdown) and
            # is down a while, then recovers; once, the archiver is killed while it is down.
            crashes = 0
            while not all(task.done() for task in driving) or crashes < 3:
                await wait_ready(session, archiver)
                await asyncio.sleep(rng.uniform(0.2, 1.5))
                server.crash()
                crashes += 1
                await asyncio.sleep(rng.uniform(0.5, 2.0))
                if crashes == 2:
                    archiver.popen.send_signal(signal.SIGKILL)
                    archiver.popen.wait(5)
                    archiver = deployment.start("archiver", "archiver-0")
                server.start()
                await whole_in_either(client, keys, server.url, ids)
            for task in driving:
                await task
            # Ready again with no restart of its own after the last crash.
            await wait_ready(session, archiver)

            async def all_moved() -> bool:
                for game_id in ids:
                    if await held_keys(client, keys, game_id):
                        return False
                return True

            await until(all_moved, 90, every=0.2)
        archive = PostgresArchive(server.url)
        await archive.open()
        try:
            assert await archive.count() == GAMES
            for game_id in ids:
                record = await archive.fetch(game_id)
                assert record is not None, game_id
                assert audit_record(record).ok, game_id
        finally:
            await archive.close()
        assert archiver.alive
        assert archiver.stop() == 0
    finally:
        await requester.close()
        await client.aclose()
