"""Bots figures: bot moves per second through the whole service, and how many bot seats one
`rummy bots` process carries at the default pacing.

Starts a private redis-server, a referee, a scoring and one `rummy bots` process (separate
processes, loopback spare ports), fills games whose every seat is a bot (greedy) and counts, from
the processes' /metrics, the bot moves sent and the commands the referee handled over a timed
window, with the CPU each process spent:

1. unpaced (``RUMMY_BOT_DELAY_SECONDS=0``): moves per second, the bots process's CPU per move,
   and the ratio to the same bots' turns per second self-played in one process with no service
   at all (``shared/play/selfplay.py``, the baseline of the same run);
2. paced (the default, one second before each move): for each number of games, the moves per
   second against the pacing's target (each game moves about once a second, less the referee's
   and Redis's latency), the share of moves the bots process sent within 0.1 s of their due time
   (``bots_move_late_seconds``) and its CPU share; the seats it carries are the most seats at
   which at least 90 % of the moves went out on time, and the estimate at full CPU from its CPU
   per move.

    python tests/bench/bots.py [--games 20] [--paced 100,400] [--duration 8]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import random
import subprocess
import sys
import time
import urllib.request
import uuid
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from shared.infra.bus import Bus, Requester  # noqa: E402
from shared.infra.connection import connect, disconnect  # noqa: E402
from shared.infra.keys import Keys  # noqa: E402
from shared.infra.protocol import CommandEntry  # noqa: E402
from shared.infra.settings import Settings  # noqa: E402
from shared.play.bots import GreedyBot  # noqa: E402
from shared.play.selfplay import SelfPlay  # noqa: E402
from tests.bench.load import cpu_seconds, redis_server  # noqa: E402
from tests.ports import spare_port  # noqa: E402
from tests.servers import url_ok, wait_until  # noqa: E402

RUMMY = [sys.executable, "-m", "services.main"]
PARTITIONS = 8
SEATS = 2
OPTIONS = {"match_rounds": 20}  # long matches: no game ends inside the window
KEPT = 0.9  # a load is carried while this share of the moves goes out on time


def scrape(port: int) -> str:
    """A process's /metrics text."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        return str(response.read().decode())


def metric(text: str, name: str, labels: str = "") -> float:
    """The sum of a metric's samples in a /metrics text (only the sample with exactly
    ``labels``, e.g. ``le="0.1"``, when given)."""
    total = 0.0
    for line in text.splitlines():
        if labels:
            if line.startswith(f"{name}{{{labels}}} "):
                total += float(line.rsplit(" ", 1)[1])
        elif line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


LATE = "bots_move_late_seconds"
ON_TIME = 0.1  # seconds: a move sent within this of its due time is on time


def selfplay_rate(games: int = 10) -> float:
    """The baseline: greedy bots' turns per second self-played in this process (no service)."""
    rng = random.Random(5)
    turns = 0
    started = time.perf_counter()
    for g in range(games):
        seed = hashlib.sha256(f"bench-bots/{g}".encode()).digest()
        bots = [GreedyBot() for _ in range(SEATS)]
        report = SelfPlay("robbers", {"match_rounds": 1}, bots, seed, rng, check=False).play()
        turns += report.turns
    return turns / (time.perf_counter() - started)


async def fill(redis_url: str, prefix: str, games: int) -> None:
    """Create ``games`` games whose seats are all bots, and start them."""
    settings = Settings(redis_url=redis_url, prefix=prefix, partitions=PARTITIONS)
    client = connect(settings)
    requester = Requester(Bus(client, Keys(prefix), PARTITIONS), f"bench-{uuid.uuid4().hex[:6]}")
    try:

        async def one(number: int) -> None:
            game = f"bench{number}-{uuid.uuid4().hex[:6]}"
            body = {"rules": "robbers", "seats": SEATS, "options": OPTIONS}
            steps = [CommandEntry(game, "create", "create", body)]
            steps += [
                CommandEntry(game, "sit", f"sit:{s}", {"bot": "greedy"}) for s in range(SEATS)
            ]
            steps.append(CommandEntry(game, "start", "start"))
            for step in steps:
                answer = await requester.request(step, 30)
                assert answer["status"] == "accepted", answer

        for start in range(0, games, 50):
            await asyncio.gather(*(one(n) for n in range(start, min(games, start + 50))))
    finally:
        await requester.close()
        await disconnect(client)


def window(ports: dict[str, int], pids: dict[str, int], seconds: float) -> dict[str, float]:
    """Moves, referee commands and CPU seconds of each process over ``seconds``."""
    names = list(pids)
    bots0, referee0 = scrape(ports["bots"]), scrape(ports["referee"])
    cpu0 = cpu_seconds([pids[n] for n in names])
    started = time.perf_counter()
    time.sleep(seconds)
    elapsed = time.perf_counter() - started
    cpu1 = cpu_seconds([pids[n] for n in names])
    bots1, referee1 = scrape(ports["bots"]), scrape(ports["referee"])

    def grew(name: str, labels: str = "", texts: tuple[str, str] = (bots0, bots1)) -> float:
        return metric(texts[1], name, labels) - metric(texts[0], name, labels)

    figures = {
        "seconds": elapsed,
        "moves": grew("bots_moves_total"),
        "commands": grew("referee_commands_total", texts=(referee0, referee1)),
    }
    count, total = grew(f"{LATE}_count"), grew(f"{LATE}_sum")
    on_time = grew(f"{LATE}_bucket", f'le="{ON_TIME}"')
    figures["late_mean"] = total / count if count else 0.0
    figures["on_time"] = on_time / count if count else 0.0
    for name, before, after in zip(names, cpu0, cpu1, strict=True):
        figures[f"cpu_{name}"] = after - before
    return figures


def run(delay: float, games: int, duration: float) -> dict[str, float]:
    """One deployment with ``games`` all-bot games, its bots paced by ``delay``; the window's
    figures (after a warm-up of a few seconds)."""
    with redis_server() as redis_url:
        prefix = f"bench{uuid.uuid4().hex[:6]}:"
        ports = {name: spare_port() for name in ("referee", "scoring", "bots")}
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "REDIS_URL": redis_url,
            "RUMMY_PREFIX": prefix,
            "RUMMY_PARTITIONS": str(PARTITIONS),
            "RUMMY_HTTP_HOST": "127.0.0.1",
            "RUMMY_BOT_DELAY_SECONDS": str(delay),
            "RUMMY_LOG_LEVEL": "warning",
        }
        started = [
            _start([*RUMMY, name], {**env, "RUMMY_HTTP_PORT": str(port)})
            for name, port in ports.items()
        ]
        try:
            for port in ports.values():
                wait_until(partial(url_ok, f"http://127.0.0.1:{port}/readyz"), 60)
            asyncio.run(fill(redis_url, prefix, games))
            time.sleep(min(3.0, duration / 2) + delay)  # every game under way
            pids = {name: proc.pid for name, proc in zip(ports, started, strict=True)}
            return window(ports, pids, duration)
        finally:
            for proc in started:
                proc.terminate()
            for proc in started:
                try:
                    proc.wait(timeout=20)
                except Exception:
                    proc.kill()


def _start(command: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=20, help="games for the unpaced run")
    parser.add_argument("--paced", default="100,400", help="game counts at the default pacing")
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--delay", type=float, default=Settings().bot_delay_seconds)
    args = parser.parse_args()

    baseline = selfplay_rate()
    print(f"self-play baseline (greedy, {SEATS} seats, one process): {baseline:>8,.0f} turns/s")
    fast = run(0.0, args.games, args.duration)
    rate = fast["moves"] / fast["seconds"]
    per_move = fast["cpu_bots"] / max(fast["moves"], 1) * 1000
    print(
        f"unpaced, {args.games} games: {rate:>8,.0f} bot moves/s "
        f"({rate / baseline:.2f}x self-play; referee {fast['commands'] / fast['seconds']:,.0f} "
        f"commands/s), bots CPU {per_move:.2f} ms/move, referee "
        f"{fast['cpu_referee'] / max(fast['moves'], 1) * 1000:.2f} ms/move"
    )
    capacity = 1000 / per_move if per_move else 0.0
    print(
        "| pacing s | games | seats | moves/s | target/s | kept | on time | late ms (mean) "
        "| bots CPU % |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    carried = 0
    for games in (int(n) for n in args.paced.split(",") if n):
        paced = run(args.delay, games, args.duration)
        moves = paced["moves"] / paced["seconds"]
        target = games / max(args.delay, 1e-9)
        share = paced["cpu_bots"] / paced["seconds"] * 100
        print(
            f"| {args.delay:g} | {games} | {games * SEATS} | {moves:,.0f} | {target:,.0f} "
            f"| {moves / target:.2f} | {paced['on_time']:.2f} | {paced['late_mean'] * 1000:.1f} "
            f"| {share:.0f} |",
            flush=True,
        )
        if paced["on_time"] >= KEPT:
            carried = max(carried, games * SEATS)
    print(
        f"seats one bots process carried at {args.delay:g} s pacing: {carried} measured (at least "
        f"{KEPT:.0%} of its moves sent within {ON_TIME * 1000:.0f} ms of their time; 'kept' is "
        "the moves against the pacing's target, the referee's and Redis's latency included); "
        f"at one core, from its CPU per move: about {capacity * args.delay * SEATS:,.0f} seats "
        f"({capacity:,.0f} moves/s)"
    )


if __name__ == "__main__":
    main()
