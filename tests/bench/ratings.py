"""Ratings figures: what counting one more finished game costs as a site's past grows, against
folding every result again (what each game's end cost when the read model was one table).

Records ``--games`` two-seat results of ``--players`` accounts, in the order the games ended,
into the ratings read model on a private redis-server, and times the recording of each game at
the sizes of ``--at``; at the same sizes it times ``fold`` of every result so far (the whole
fold alone, without the read of every result and the write of the whole table that came with
it). Prints a row per size: the median of ``--rounds`` recordings around that size, and the
fold, and their ratio.

    python tests/bench/ratings.py [--games 5000] [--players 500] [--at 100,1000,5000]
"""

from __future__ import annotations

import argparse
import asyncio
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

from shared.infra.ratings import Entrant, GameResult, Ratings, fold  # noqa: E402
from tests.servers import RedisServer  # noqa: E402

PREFIX = "bench-ratings:"
ROUNDS = 9  # recordings timed around each size (their median is printed)


def results(games: int, players: int) -> list[GameResult]:
    """Two-seat games between random accounts, one a second, the first seat winning."""
    rng = random.Random(1)
    names = [f"player{n}" for n in range(players)]
    made = []
    for n in range(games):
        first, second = rng.sample(names, 2)
        entrants = (Entrant(first, 0, True), Entrant(second, 1, False))
        made.append(GameResult(f"game{n:07d}", "robbers", 1.7e9 + n, entrants))
    return made


async def measure(url: str, games: int, players: int, sizes: list[int]) -> None:
    client = aioredis.Redis.from_url(url)
    ratings = Ratings(client, PREFIX)
    made = results(games, players)
    timed: dict[int, list[float]] = {size: [] for size in sizes}
    for number, result in enumerate(made, start=1):
        begin = time.perf_counter()
        await ratings.record(result)
        seconds = time.perf_counter() - begin
        for size in sizes:
            if size - ROUNDS < number <= size:
                timed[size].append(seconds)
    await client.aclose()
    print("| results so far | counting one more, ms | folding them all, ms | ratio |")
    print("|---|---|---|---|")
    for size in sizes:
        begin = time.perf_counter()
        fold(made[:size])
        whole = time.perf_counter() - begin
        one = statistics.median(timed[size])
        print(f"| {size:,} | {one * 1e3:.2f} | {whole * 1e3:.1f} | {one / whole:.3f}x |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=5000)
    parser.add_argument("--players", type=int, default=500)
    parser.add_argument("--at", default="100,1000,5000", help="sizes to time at")
    args = parser.parse_args()
    sizes = [int(part) for part in args.at.split(",") if part]
    if not sizes or max(sizes) > args.games or min(sizes) < ROUNDS:
        raise SystemExit(f"--at: sizes from {ROUNDS} to --games ({args.games})")
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not on the PATH")
    folder = tempfile.mkdtemp()
    try:
        with RedisServer(Path(folder), binary=binary) as server:
            asyncio.run(measure(server.url, args.games, args.players, sizes))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
