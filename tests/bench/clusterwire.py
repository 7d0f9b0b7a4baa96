"""Commands a second and CPU per command: one Redis against a three-master Redis Cluster, with
the cluster client as it was (redis-py's ``RedisCluster``, no auto-pipeline, a ``COMMAND
GETKEYS`` before every stream read) and as it is (``connect``: ``ClusterClient`` under the
auto-pipeline). All three in one run, so their ratios compare like with like. Figures are
printed, never asserted.

Two loads, each ``--tasks`` concurrent tasks for ``--seconds``:

- ``turns``: what a referee does per command, roughly: XADD to a stream, HGET, EVALSHA of a
  small script over two keys of one tag, XACK (four commands, keys spread over every node);
- ``reads``: a consumer's XREADGROUP of one stream each (non-blocking, so the reads' own
  cost is what is measured).

    python tests/bench/clusterwire.py [--redis redis://127.0.0.1:6379/0] [--tasks 64] [--seconds 4]

The single Redis is the one given (keys under a prefix of this run, deleted at the end); the
cluster is started here (``redis-server`` and ``redis-cli`` on the PATH) and stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from redis.asyncio.cluster import RedisCluster  # noqa: E402

from shared.infra.autopipe import autopipe  # noqa: E402
from shared.infra.connection import connect  # noqa: E402
from shared.infra.settings import Settings  # noqa: E402

SCRIPT = "redis.call('HSET', KEYS[1], 'v', ARGV[1]) return redis.call('INCR', KEYS[2])"
STREAMS = 8


async def turns(client: Any, prefix: str, task: int, stop: Callable[[], bool]) -> int:
    """One task's loop of a referee-like turn; the commands it sent."""
    script = client.register_script(SCRIPT)
    stream = f"{prefix}commands:{task % STREAMS}"
    game = f"{prefix}game:{{g{task}}}"
    sent = 0
    while not stop():
        entry = await client.xadd(stream, {"c": "{}"}, maxlen=1000)
        await client.hget(f"{game}:head", "v")
        await script(keys=[f"{game}:head", f"{game}:n"], args=[sent])
        await client.xack(stream, "g", entry)
        sent += 4
    return sent


async def reads(client: Any, prefix: str, task: int, stop: Callable[[], bool]) -> int:
    """One task's loop of stream reads (its history: never empty, never blocking)."""
    stream = f"{prefix}commands:{task % STREAMS}"
    sent = 0
    while not stop():
        await client.xreadgroup("g", f"c{task}", {stream: "0"}, count=10)
        sent += 1
    return sent


Load = Callable[[Any, str, int, Callable[[], bool]], Awaitable[int]]


async def measure(
    client: Any, prefix: str, load: Load, tasks: int, seconds: float
) -> tuple[float, float]:
    """(commands a second, CPU microseconds a command) of ``load`` on ``client``."""
    for n in range(STREAMS):
        stream = f"{prefix}commands:{n}"
        try:
            await client.xgroup_create(stream, "g", id="0", mkstream=True)
        except Exception as err:  # BUSYGROUP: made by an earlier load
            if "BUSYGROUP" not in str(err):
                raise
        for task in range(tasks):  # something to read back
            await client.xreadgroup("g", f"c{task}", {stream: ">"}, count=1)
            await client.xadd(stream, {"c": "{}"})
            await client.xreadgroup("g", f"c{task}", {stream: ">"}, count=1)
    deadline = time.monotonic() + seconds
    started, cpu = time.monotonic(), time.process_time()
    done = await asyncio.gather(
        *(load(client, prefix, t, lambda: time.monotonic() > deadline) for t in range(tasks))
    )
    wall, cpu = time.monotonic() - started, time.process_time() - cpu
    total = sum(done)
    return total / wall, cpu / total * 1e6


async def cleanup(client: Any, prefix: str, tasks: int) -> None:
    keys = [f"{prefix}commands:{n}" for n in range(STREAMS)]
    for task in range(tasks):
        keys += [f"{prefix}game:{{g{task}}}:head", f"{prefix}game:{{g{task}}}:n"]
    for key in keys:
        await client.delete(key)


async def run_mode(
    name: str, make: Callable[[], Any], tasks: int, seconds: float
) -> dict[str, tuple[float, float]]:
    prefix = f"clusterwire-bench:{uuid.uuid4().hex[:8]}:"
    raw = make()
    client = autopipe(raw) if name != "cluster-before" else raw
    figures = {}
    try:
        for load_name, load in (("turns", turns), ("reads", reads)):
            figures[load_name] = await measure(client, prefix, load, tasks, seconds)
    finally:
        await cleanup(raw, prefix, tasks)
        await raw.aclose()
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0")
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=4.0)
    args = parser.parse_args(argv)

    from tests.cluster.conftest import start_cluster, stop_cluster

    cluster = start_cluster(Path(tempfile.mkdtemp(prefix="cluster-bench-")))
    try:
        modes: dict[str, Callable[[], Any]] = {
            "single": lambda: connect(Settings(redis_url=args.redis)),
            "cluster-before": lambda: RedisCluster.from_url(cluster.url, max_connections=512),
            "cluster-after": lambda: connect(Settings(redis_url=cluster.url, redis_cluster=True)),
        }
        results = {
            name: asyncio.run(run_mode(name, make, args.tasks, args.seconds))
            for name, make in modes.items()
        }
    finally:
        stop_cluster(cluster)
    print(f"{args.tasks} tasks, {args.seconds:g} s a load; commands/s, CPU us/command (client)")
    print(f"{'mode':16}{'turns cmd/s':>13}{'us/cmd':>9}{'reads/s':>10}{'us/read':>9}")
    for name, figures in results.items():
        (t_rate, t_cpu), (r_rate, r_cpu) = figures["turns"], figures["reads"]
        print(f"{name:16}{t_rate:13.0f}{t_cpu:9.0f}{r_rate:10.0f}{r_cpu:9.0f}")
    single = results["single"]
    for name in ("cluster-before", "cluster-after"):
        ratios = [
            f"{load} {results[name][load][0] / single[load][0]:.2f}x rate, "
            f"{results[name][load][1] / single[load][1]:.2f}x CPU"
            for load in ("turns", "reads")
        ]
        print(f"{name} / single: " + "; ".join(ratios))
    before, after = results["cluster-before"], results["cluster-after"]
    print(
        "cluster after / before: "
        + "; ".join(
            f"{load} {after[load][0] / before[load][0]:.2f}x rate, "
            f"{after[load][1] / before[load][1]:.2f}x CPU"
            for load in ("turns", "reads")
        )
    )


if __name__ == "__main__":
    main()
