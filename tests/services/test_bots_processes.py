"""`rummy bots` as a separate process, with a referee and scoring, on a real Redis: games with bots
in one to all-but-one seats (and in every seat) finish under all three rule sets, with bots
processes sharing the seats; a bots process killed with SIGKILL mid-game and started again leaves
every game finished, no bot move applied twice or at another position than its own, and every
log audits clean.

The test starts its own ``redis-server`` (no persistence, a temporary directory); without one it
uses ``REDIS_URL`` with a key prefix of its own and deletes exactly those keys; with neither it is
skipped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import aiohttp
import pytest
import redis.asyncio as aioredis

from shared.audit.verify import audit_log
from shared.infra.bus import Bus, Requester
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.store.redis import RedisEventStore
from tests.ports import spare_port
from tests.servers import Process, own_redis_url, until, wait_ready
from tests.services.bot_games import RULE_SETS, bot_commands, double_moves, play_people, seat_game
from tests.services.conftest import delete_prefixed

PARTITIONS = 4
OPTIONS = {"match_rounds": 1}

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with own_redis_url(tmp_path_factory.mktemp("redis")) as url:
        yield url


@dataclass
class Deployment:
    url: str
    prefix: str
    tmp: Path
    services: list[Process] = field(default_factory=list)

    def start(self, command: str, name: str, **settings: str) -> Process:
        port = spare_port()
        env = {
            **os.environ,
            "REDIS_URL": self.url,
            "RUMMY_PREFIX": self.prefix,
            "RUMMY_PARTITIONS": str(PARTITIONS),
            "RUMMY_HTTP_HOST": "127.0.0.1",
            "RUMMY_HTTP_PORT": str(port),
            "RUMMY_CONSUMER": name,
            "RUMMY_CLAIM_IDLE_MS": "500",
            "RUMMY_LEASE_MS": "600",
            "RUMMY_DRAIN_SECONDS": "5",
            "RUMMY_BOT_DELAY_SECONDS": "0",
            "PYTHONUNBUFFERED": "1",
            **settings,
        }
        args = [sys.executable, "-m", "services.main", command]
        # Logs kept across starts of one name (a restart appends to the killed one's).
        service = Process(name, args, env, self.tmp, port, append=True)
        self.services.append(service)
        return service

    def close(self) -> None:
        for service in self.services:
            service.close()


@pytest.fixture
async def deployment(redis_url: str, tmp_path: Path) -> AsyncIterator[Deployment]:
    built = Deployment(redis_url, f"b{uuid.uuid4().hex[:10]}:", tmp_path)
    try:
        yield built
    finally:
        built.close()
        client = aioredis.Redis.from_url(redis_url)
        try:
            await delete_prefixed(client, built.prefix)
        finally:
            await client.aclose()


@dataclass
class Client:
    """What the test plays the people's seats and reads the logs through."""

    client: aioredis.Redis
    requester: Requester
    games: GameLog

    @classmethod
    def of(cls, deployment: Deployment) -> Client:
        client = aioredis.Redis.from_url(deployment.url)
        keys = Keys(deployment.prefix)
        requester = Requester(Bus(client, keys, PARTITIONS), f"test-{uuid.uuid4().hex[:6]}")
        return cls(client, requester, GameLog(RedisEventStore(client, deployment.prefix)))

    async def close(self) -> None:
        await self.requester.close()
        await self.client.aclose()


def mixes(seats: int) -> list[dict[int, str]]:
    """Bots in 1..all-but-one of the seats, and in all of them."""
    names = ["greedy", "random", "greedy"]
    return [{s: names[s % 3] for s in range(seats - count, seats)} for count in range(1, seats + 1)]


async def check_games(client: Client, game_ids: list[str]) -> None:
    """Every game finished, no bot move applied twice or off its position, every audit clean."""
    for game_id in game_ids:
        events = await client.games.store.read(game_id)
        assert events and events[-1].type in ("SeedRevealed", "MatchEnded"), game_id
        assert double_moves(events) == [], game_id
        audit = audit_log(events, game_id=game_id, head=(events[-1].version, events[-1].hash))
        assert audit.ok, (game_id, audit.first_bad())


async def finished(client: Client, game_id: str) -> bool:
    return (await client.games.load(game_id, fresh=True)).state.status == "finished"


async def test_games_with_bots_in_any_number_of_seats_finish_for_every_rule_set(
    deployment: Deployment,
) -> None:
    services = [
        deployment.start("referee", "referee-0"),
        deployment.start("scoring", "scoring-0"),
        deployment.start("bots", "bots-0"),
        deployment.start("bots", "bots-1"),
    ]
    client = Client.of(deployment)
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, *services)
        game_ids = []
        for rules in RULE_SETS:
            for mix in mixes(3):
                game_ids.append(await seat_game(client.requester, rules, 3, mix, OPTIONS))
        await asyncio.gather(
            *(
                play_people(client.requester, client.games, g, seed=n)
                for n, g in enumerate(game_ids)
            )
        )
        for game_id in game_ids:
            await until(partial(finished, client, game_id), 60)
        await check_games(client, game_ids)
        for bots in services[2:]:
            assert bots.alive, bots.output()[-2000:]
    finally:
        await client.close()


async def test_a_killed_and_restarted_bots_process_leaves_every_game_finished_once(
    deployment: Deployment,
) -> None:
    """The only bots process is killed with SIGKILL while games are under way (the moves it had
    due, a twentieth of a second after their news, and the news it had read and not acknowledged,
    die with it), and started again under its name: every game finishes, and the logs show no
    bot move applied twice."""
    paced = {"RUMMY_BOT_DELAY_SECONDS": "0.05"}
    referee = deployment.start("referee", "referee-0")
    scoring = deployment.start("scoring", "scoring-0")
    bots = deployment.start("bots", "bots-0", **paced)
    client = Client.of(deployment)
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, referee, scoring, bots)
            game_ids = [
                await seat_game(client.requester, rules, 3, mix, OPTIONS)
                for rules in RULE_SETS
                for mix in mixes(3)[1:]  # two bots and three
            ]
            people = asyncio.gather(
                *(
                    play_people(client.requester, client.games, g, seed=n)
                    for n, g in enumerate(game_ids)
                )
            )

            async def moved(least: int) -> bool:
                total = 0
                for game_id in game_ids:
                    total += len(bot_commands(await client.games.store.read(game_id)))
                return total >= least

            for kill in range(2):
                await until(partial(moved, 20 * (kill + 1)), 120)
                bots.stop(signal.SIGKILL)
                await asyncio.sleep(0.5)  # games wait: no peer plays their bots
                bots = deployment.start("bots", "bots-0", **paced)
                await wait_ready(session, bots)
            await people
            for game_id in game_ids:
                await until(partial(finished, client, game_id), 120)
        await check_games(client, game_ids)
    finally:
        await client.close()
