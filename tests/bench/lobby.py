"""Lobby figures: a cold page of finished games (a gateway that has cached none of them), built
from each game's log as before, and from the summaries kept per game, in turns in one run.

Plays ``--games`` whole games in process (robbers, 4 bots), stores their logs in a private
redis-server as the referee would, files them under finished, then times ``--rounds`` times in
turns: the page with no summary kept (each game's log read and folded: what every cold page
cost before, and what the first listing of a game an older referee ended costs), and the page
from the summaries. Prints the medians and their ratio.

    python tests/bench/lobby.py [--games 50] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import redis.asyncio as aioredis  # noqa: E402

from services.gateway.lobby import Lobby  # noqa: E402
from shared.infra.autopipe import autopipe  # noqa: E402
from shared.infra.gamelog import GameLog, to_new  # noqa: E402
from shared.infra.keys import Keys  # noqa: E402
from shared.infra.store.redis import RedisEventStore  # noqa: E402
from shared.infra.summary import summary_key  # noqa: E402
from shared.play.bots import Bot, GreedyBot, RandomBot  # noqa: E402
from shared.play.selfplay import SelfPlay  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

PREFIX = "bench-lobby:"


async def measure(url: str, games: int, rounds: int) -> None:
    client = autopipe(aioredis.Redis.from_url(url))
    keys = Keys(PREFIX)
    store = RedisEventStore(client, PREFIX)
    ids = []
    events = 0
    for number in range(games):
        seed = hashlib.sha256(f"lobby/{number}".encode()).digest()
        bots: list[Bot] = [GreedyBot(), RandomBot(), GreedyBot(), RandomBot()]
        report = SelfPlay("robbers", {}, bots, seed, random.Random(number), check=False).play()
        assert report.state.status == "finished", report.state.status
        game_id = f"lobby{number:04d}"
        new = [to_new(e, None) for e in report.events]
        for start in range(0, len(new), 200):  # appends of a bounded size
            await store.append(game_id, new[start : start + 200], expected_version=start)
        await client.zadd(keys.lobby("finished"), {game_id: float(number)})
        ids.append(game_id)
        events += len(new)
    print(f"{games} finished games, {events / games:.0f} events each on average")

    async def cold_page() -> tuple[float, int]:
        lobby = Lobby(client, keys, GameLog(store))  # nothing cached: a gateway just started
        begin = time.perf_counter()
        page = await lobby.page("finished", 0, games)
        return time.perf_counter() - begin, len(page["games"])

    from_logs, from_summaries = [], []
    for _ in range(rounds):
        await client.delete(*(summary_key(keys, game_id) for game_id in ids))
        seconds, listed = await cold_page()  # no summary: each log read and folded (and kept)
        assert listed == games
        from_logs.append(seconds)
        seconds, listed = await cold_page()  # the summaries the first page kept
        assert listed == games
        from_summaries.append(seconds)
    logs, kept = statistics.median(from_logs), statistics.median(from_summaries)
    print(f"| cold page of {games} finished games | median ms | min ms | max ms |")
    print("|---|---|---|---|")
    for name, samples in (("from the logs", from_logs), ("from the summaries", from_summaries)):
        print(
            f"| {name} | {statistics.median(samples) * 1e3:.1f} | {min(samples) * 1e3:.1f} "
            f"| {max(samples) * 1e3:.1f} |"
        )
    print(
        f"\nfrom the summaries / from the logs: {kept / logs:.4f}x; "
        f"target: under 50 ms ({'met' if kept < 0.05 else 'not met'})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on the PATH")
    folder = tempfile.mkdtemp()
    try:
        with RedisServer(Path(folder), binary=binary) as server:
            asyncio.run(measure(server.url, args.games, args.rounds))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
