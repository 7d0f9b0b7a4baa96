"""The tournament service as a real process beside real `rummy referee`, `rummy scoring` and
`rummy bots` processes on a redis-server of the test's own: killed (SIGKILL) mid-round, with
tables seated and games in play, and started again, it finishes the tournament with every
round paired once and every table played once; stopped with SIGTERM it drains and exits 0."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest

from shared.infra.client import RedisClient
from shared.infra.connection import connect
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from shared.infra.stored import StoredEvent
from shared.infra.tournaments import TournamentDesk
from tests.faults.harness import Deployment
from tests.servers import RedisServer, until, wait_ready
from tests.tournament.test_service import BOTS, DIRECTOR, TOURNAMENT

pytestmark = pytest.mark.slow

ROUNDS = 3


@pytest.fixture
def deployment(tmp_path: Path) -> Iterator[Deployment]:
    server = RedisServer(tmp_path / "redis")
    made = Deployment(
        server,
        tmp_path,
        {"RUMMY_BOT_DELAY_SECONDS": "0", "RUMMY_TOURNAMENT_SWEEP_SECONDS": "0.5"},
    )
    server.start()
    try:
        yield made
    finally:
        made.close()
        server.close()


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as opened:
        yield opened


async def test_killed_mid_round_and_started_again_nothing_is_lost_or_doubled(
    deployment: Deployment, session: aiohttp.ClientSession
) -> None:
    services = [
        deployment.start("referee", "referee-0"),
        deployment.start("scoring", "scoring-0"),
        deployment.start("bots", "bots-0"),
    ]
    first = deployment.start("tournaments", "tournaments-0")
    await wait_ready(session, *services, first)
    client = connect(Settings(redis_url=deployment.redis.url))
    keys = Keys(deployment.prefix)
    desk = TournamentDesk(client, keys, "test")
    try:
        create = {
            "name": "Club night",
            "rules": "robbers",
            "options": {"match_rounds": 1},
            "format": "swiss",
            "rounds": ROUNDS,
            "table_seats": 2,
            "fill": "byes",
        }
        steps: list[tuple[str, str, dict[str, object]]] = [
            ("create", "create", create),
            ("open", "open", {}),
            *(("register", f"register-{b}", {"player": f"bot:{b}", "name": b}) for b in BOTS),
            ("close", "close", {}),
        ]
        for kind, cid, payload in steps:
            answer = await desk.send(TOURNAMENT, kind, cid, payload, DIRECTOR)
            assert answer["status"] == "accepted", answer

        async def log_types() -> list[str]:
            return [e.type for e in await desk.log.store.read(TOURNAMENT)]

        async def mid_round() -> bool:
            types = await log_types()
            in_play = types.count("TableStarted") > types.count("TableFinished")
            return in_play and types.count("RoundPaired") >= 2

        await until(mid_round, 90)
        first.popen.send_signal(signal.SIGKILL)
        first.popen.wait()
        second = deployment.start("tournaments", "tournaments-1")
        await wait_ready(session, second)

        async def finished() -> bool:
            state = await desk.load(TOURNAMENT)
            return state is not None and state.status == "finished"

        await until(finished, 180)
        log = await desk.log.store.read(TOURNAMENT)
        paired = [e for e in log if e.type == "RoundPaired"]
        assert [e.data["round"] for e in paired] == list(range(1, ROUNDS + 1))
        tables = sorted((e.data["round"], t["table"]) for e in paired for t in e.data["tables"])
        started = sorted(
            (e.data["round"], e.data["table"]) for e in log if e.type == "TableStarted"
        )
        done = sorted((e.data["round"], e.data["table"]) for e in log if e.type == "TableFinished")
        assert tables == started == done
        for event in log:
            if event.type == "TableFinished":
                game = [g.type for g in await _game(client, keys, event.data["game_id"])]
                assert game.count("GameCreated") == 1 and game.count("MatchEnded") == 1
                assert game.count("GameStarted") == 1
        assert [e.type for e in log].count("TournamentFinished") == 1
        assert second.stop(signal.SIGTERM) == 0
    finally:
        await desk.close()
        await client.aclose()


async def _game(client: RedisClient, keys: Keys, game_id: str) -> list[StoredEvent]:
    return await RedisEventStore(client, keys.prefix).read(game_id)
