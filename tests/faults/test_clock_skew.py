"""Two referee processes on one real Redis, one on a host whose wall clock runs 40 s ahead; one
of them is killed (nothing given back). Every partition passes to the survivor at its first
lease refreshes after the dead one's leases ran out, and every partition's commands are answered
again.

Lease members heartbeat in Redis's time, not their host's: a member 40 s ahead used to look
alive for 40 s after it died (its peers kept their share at half and left its partitions
unread), and made its live peers look dead to it. The survivor's refreshes are counted by its
heartbeats in Redis (each refresh stamps a new score), so nothing here measures the machine.
"""

from __future__ import annotations

import signal
import uuid
from typing import Any

import aiohttp
import pytest

from shared.infra.bus import Bus, Requester, partition_of
from shared.infra.connection import connect
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys
from shared.infra.protocol import CommandEntry
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from tests.faults.conftest import MakeDeployment
from tests.faults.harness import Deployment
from tests.servers import until, wait_ready
from tests.services.driver import create_game

pytestmark = pytest.mark.slow

SKEW = "40"  # seconds the fast host's wall clock runs ahead
SAFETY = 30.0  # seconds: a hang fails (the old heartbeats needed 40 s more)


@pytest.mark.parametrize("dies", ["ahead", "right"])
async def test_a_killed_referees_partitions_pass_on_within_a_lease_whatever_its_clock(
    make_deployment: MakeDeployment, dies: str
) -> None:
    deployment = make_deployment(RUMMY_LEASE_MS="1000", RUMMY_CLAIM_IDLE_MS="1000")
    right = deployment.start("referee", "referee-right")
    ahead = deployment.start("referee", "referee-ahead", FAULTS_CLOCK_SKEW=SKEW)
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, right, ahead)
    client, keys = _client(deployment)
    requester = Requester(Bus(client, keys, deployment.partitions), "skew-test")
    games = GameLog(RedisEventStore(client, deployment.prefix))
    try:
        game_ids = [
            await _game_in(requester, deployment.partitions, p)
            for p in range(deployment.partitions)
        ]
        names = {"right": right.name, "ahead": ahead.name}

        async def split() -> bool:
            holders = await _holders(client, keys, deployment.partitions)
            return set(holders) == set(names.values()) and None not in holders

        await until(split, SAFETY, message="the two referees never shared the partitions")
        dead = right if dies == "right" else ahead
        survivor = ahead if dies == "right" else right
        dead.stop(signal.SIGKILL)

        async def expired() -> bool:  # Redis's own expiry of the dead one's leases
            return dead.name not in await _holders(client, keys, deployment.partitions)

        await until(expired, SAFETY, every=0.01, message="the dead referee's leases never ran out")
        baseline = await client.zscore(keys.referees(), survivor.name)
        beats: list[float] = []

        async def heartbeats(count: int) -> bool:
            score = await client.zscore(keys.referees(), survivor.name)
            if score is not None and score != (beats[-1] if beats else baseline):
                beats.append(score)
            return len(beats) >= count

        # The first refresh that heartbeats after the expiry takes the free leases; by the
        # next, it is done.
        await until(lambda: heartbeats(2), SAFETY, every=0.005)
        holders = await _holders(client, keys, deployment.partitions)
        assert holders == [survivor.name] * deployment.partitions, holders
        members = {m.decode() for m in await client.zrange(keys.referees(), 0, -1)}
        assert members == {survivor.name}, members

        for game_id in game_ids:  # and every partition is read again
            state = (await games.load(game_id, fresh=True)).state
            assert state.turn is not None
            seat = state.turn.seat
            draw = CommandEntry(
                game_id, "seat", f"{seat}:{uuid.uuid4().hex}", {"type": "draw"}, seat
            )
            answer = await requester.request(draw, SAFETY)
            assert answer["status"] == "accepted", answer
        assert survivor.alive
    finally:
        await requester.close()
        await client.aclose()


def _client(deployment: Deployment) -> tuple[Any, Keys]:
    settings = Settings(
        redis_url=deployment.redis.url, prefix=deployment.prefix, partitions=deployment.partitions
    )
    return connect(settings), Keys(deployment.prefix)


async def _game_in(requester: Requester, partitions: int, partition: int) -> str:
    """A started game whose commands go to ``partition``."""
    while True:
        game_id = f"g{uuid.uuid4().hex[:10]}"
        if partition_of(game_id, partitions) == partition:
            return await create_game(requester, "rummikub", 2, game_id=game_id, timeout=SAFETY)


async def _holders(client: Any, keys: Keys, partitions: int) -> list[str | None]:
    """Who holds each partition's lease (None: nobody)."""
    values = [await client.get(keys.lease(p)) for p in range(partitions)]
    return [v.decode() if v is not None else None for v in values]
