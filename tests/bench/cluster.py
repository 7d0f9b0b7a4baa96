"""The same games on one Redis and on a three-master Redis Cluster, side by side: whole turns
through real gateway, referee and scoring processes (``rummy loadtest`` bots over WebSockets,
as ``tests/bench/load.py`` plays them), in one run so that the ratios compare like with like.

For each setup it prints turns a second, the CPU per accepted turn of each process (utime +
stime from ``/proc/<pid>/stat`` before and after the load; Redis's from ``INFO cpu``, every
node's summed), the idle CPU of each process over a fixed window once the load has stopped
(consumer loops, leases, health: what a quiet deployment costs), and, on the cluster, each
master's share of the calls (``INFO commandstats`` over the load). Then whether the targets are
met: cluster CPU per turn (the services' sum) within 1.5x of one Redis's, idle CPU within 2x,
no master taking more than 1.5x the mean of the others' calls. Figures are printed, never
asserted.

    python tests/bench/cluster.py [--games 40] [--duration 8] [--idle 8] [--referees 2]
                                  [--partitions 32]

Every Redis it uses is its own (``redis-server`` and ``redis-cli`` on the PATH), on spare ports,
stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from tests.bench.load import RUMMY, cpu_seconds, processes  # noqa: E402
from tests.ports import spare_port  # noqa: E402
from tests.servers import RedisServer, url_ok, wait_until  # noqa: E402

CPU_TARGET = 1.5  # cluster CPU per turn against one Redis's
IDLE_TARGET = 2.0  # cluster idle CPU against one Redis's
BALANCE_TARGET = 1.5  # a master's calls against the mean of the others'
OWN_CALLS = ("cmdstat_info", "cmdstat_config", "cmdstat_cluster")  # the bench's, not the load's


@dataclass
class Figures:
    """One setup's measurements."""

    names: list[str]
    turns: int = 0
    seconds: float = 0.0
    errors: int = 0
    cpu_ms: list[float] = field(default_factory=list)  # per turn, per process
    redis_ms: float = 0.0  # per turn, every node
    idle: list[float] = field(default_factory=list)  # % of a core, per process
    redis_idle: float = 0.0
    calls: dict[int, int] = field(default_factory=dict)  # per master: calls over the load

    @property
    def rate(self) -> float:
        return self.turns / self.seconds if self.seconds else 0.0


def node_cpu(ports: list[int]) -> float:
    """CPU seconds of every Redis node so far (INFO cpu)."""
    total = 0.0
    for port in ports:
        with redis.Redis(host="127.0.0.1", port=port) as node:
            info = node.info("cpu")
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


def node_calls(port: int) -> int:
    """Calls a node served since its last CONFIG RESETSTAT (the bench's own left out)."""
    with redis.Redis(host="127.0.0.1", port=port) as node:
        stats = node.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if not k.startswith(OWN_CALLS))


def reset_stats(ports: list[int]) -> None:
    for port in ports:
        with redis.Redis(host="127.0.0.1", port=port) as node:
            node.config_resetstat()


@contextmanager
def single_redis() -> Iterator[tuple[str, list[int], bool]]:
    """One redis-server: (REDIS_URL, its port, cluster mode off)."""
    folder = Path(tempfile.mkdtemp(prefix="cluster-bench-single-"))
    try:
        with RedisServer(folder) as server:
            yield server.url, [server.port], False
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def redis_cluster() -> Iterator[tuple[str, list[int], bool]]:
    """Three masters: (REDIS_URL naming each as a seed, their ports, cluster mode on)."""
    from tests.cluster.conftest import start_cluster, stop_cluster

    folder = Path(tempfile.mkdtemp(prefix="cluster-bench-cluster-"))
    cluster = start_cluster(folder)
    try:
        yield ",".join(f"redis://127.0.0.1:{p}" for p in cluster.ports), cluster.ports, True
    finally:
        stop_cluster(cluster)
        shutil.rmtree(folder, ignore_errors=True)


def measure(setup: str, args: argparse.Namespace) -> Figures:
    """Start the services on ``setup``'s Redis, play, idle, measure."""
    base = {
        **os.environ,
        "RUMMY_LOG_LEVEL": "warning",
        "RUMMY_RATE_PER_SECOND": "0",
        "RUMMY_LIMIT_ADDRESS_PER_SECOND": "0",
        "RUMMY_LIMIT_CREATE_PER_MINUTE": "0",
        "RUMMY_LIMIT_SEAT_PER_MINUTE": "0",
        "RUMMY_LIMIT_REPLAY_PER_MINUTE": "0",
        "RUMMY_LIMIT_READ_PER_SECOND": "0",
        "RUMMY_LIMIT_SYNC_PER_MINUTE": "0",
        "RUMMY_SOCKETS_PER_ADDRESS": "100000",  # every seat's WebSocket from one address
        "RUMMY_PARTITIONS": str(args.partitions),
        "PYTHONPATH": str(ROOT),
    }
    redis_of = single_redis if setup == "single" else redis_cluster
    with redis_of() as (url, ports, cluster):
        env = {
            **base,
            "REDIS_URL": url,
            "RUMMY_REDIS_CLUSTER": "true" if cluster else "false",
            "RUMMY_PREFIX": f"bench-{setup}:",
        }
        http = [spare_port() for _ in range(args.referees + 2)]
        names = ["gateway", "scoring"] + [f"referee-{i}" for i in range(args.referees)]
        commands = [
            [*RUMMY, "gateway", "--port", str(http[0])],
            ["env", f"RUMMY_HTTP_PORT={http[1]}", "RUMMY_CONSUMER=scoring-0", *RUMMY, "scoring"],
        ] + [
            ["env", f"RUMMY_HTTP_PORT={port}", f"RUMMY_CONSUMER=ref{i}", *RUMMY, "referee"]
            for i, port in enumerate(http[2:])
        ]
        figures = Figures(names)
        with processes(env, commands) as pids:
            for port in http:
                wait_until(partial(url_ok, f"http://127.0.0.1:{port}/readyz"), 60, every=0.2)
            reset_stats(ports)
            before, redis_before = cpu_seconds(pids), node_cpu(ports)
            result = play(f"http://127.0.0.1:{http[0]}", args)
            after, redis_after = cpu_seconds(pids), node_cpu(ports)
            figures.calls = {port: node_calls(port) for port in ports}
            figures.turns = int(result["accepted"])
            figures.seconds = float(result["duration"])
            figures.errors = sum((result.get("errors") or {}).values())
            turns = max(figures.turns, 1)
            figures.cpu_ms = [(b - a) / turns * 1000 for a, b in zip(before, after, strict=True)]
            figures.redis_ms = (redis_after - redis_before) / turns * 1000

            time.sleep(2.0)  # the load's last answers and acknowledgements settle
            before, redis_before = cpu_seconds(pids), node_cpu(ports)
            started = time.monotonic()
            time.sleep(args.idle)
            spent = time.monotonic() - started
            after, redis_after = cpu_seconds(pids), node_cpu(ports)
            figures.idle = [(b - a) / spent * 100 for a, b in zip(before, after, strict=True)]
            figures.redis_idle = (redis_after - redis_before) / spent * 100
    return figures


def play(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """One ``rummy loadtest`` run, closed loop; its JSON (what it said, if it failed)."""
    command = [*RUMMY, "loadtest", "--url", url, "--games", str(args.games)]
    command += ["--duration", str(args.duration)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"rummy loadtest failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def balance(calls: dict[int, int]) -> float:
    """The busiest node's calls against the mean of the others' (1.0 for a single node)."""
    if len(calls) < 2:
        return 1.0
    counts = sorted(calls.values())
    busiest, others = counts[-1], counts[:-1]
    mean = statistics.fmean(others)
    return busiest / mean if mean else float("inf")


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(single: Figures, cluster: Figures, args: argparse.Namespace) -> None:
    print(
        f"\n{args.games} games closed loop, {args.duration:g} s, {args.referees} referees, "
        f"{args.partitions} partitions; idle window {args.idle:g} s after the load"
    )
    head = f"{'':28}{'one Redis':>12}{'cluster':>12}{'ratio':>8}"
    print(head)

    def row(label: str, a: float, b: float, fmt: str = "{:12.2f}") -> None:
        ratio = b / a if a else float("inf")
        print(f"{label:28}{fmt.format(a)}{fmt.format(b)}{ratio:8.2f}")

    row("turns/s", single.rate, cluster.rate, "{:12.0f}")
    print(f"{'errors':28}{single.errors:12d}{cluster.errors:12d}")
    for n, name in enumerate(single.names):
        row(f"CPU ms/turn {name}", single.cpu_ms[n], cluster.cpu_ms[n])
    row("CPU ms/turn services", sum(single.cpu_ms), sum(cluster.cpu_ms))
    row("CPU ms/turn Redis (nodes)", single.redis_ms, cluster.redis_ms)
    row(
        "CPU ms/turn all",
        sum(single.cpu_ms) + single.redis_ms,
        sum(cluster.cpu_ms) + cluster.redis_ms,
    )
    for n, name in enumerate(single.names):
        row(f"idle % core {name}", single.idle[n], cluster.idle[n])
    row("idle % core services", sum(single.idle), sum(cluster.idle))
    row("idle % core Redis (nodes)", single.redis_idle, cluster.redis_idle)
    calls = ", ".join(f"{port}: {count:,}" for port, count in cluster.calls.items())
    spread = balance(cluster.calls)
    print(f"cluster calls per master: {calls}; busiest / mean of the others {spread:.2f}")

    cpu_ratio = sum(cluster.cpu_ms) / max(sum(single.cpu_ms), 1e-9)
    idle_ratio = sum(cluster.idle) / max(sum(single.idle), 1e-9)
    print(
        f"target: CPU per turn (services) within {CPU_TARGET}x: {cpu_ratio:.2f}x "
        f"{verdict(cpu_ratio <= CPU_TARGET)}"
    )
    print(
        f"target: idle CPU (services) within {IDLE_TARGET}x: {idle_ratio:.2f}x "
        f"{verdict(idle_ratio <= IDLE_TARGET)}"
    )
    print(
        f"target: no master above {BALANCE_TARGET}x the others' mean calls: {spread:.2f}x "
        f"{verdict(spread <= BALANCE_TARGET)}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--duration", type=float, default=8.0, help="seconds of load")
    parser.add_argument("--idle", type=float, default=8.0, help="seconds of the idle window")
    parser.add_argument("--referees", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=32)
    parser.add_argument(
        "--only", choices=("single", "cluster"), default=None, help="one setup (for profiling)"
    )
    args = parser.parse_args(argv)
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        raise SystemExit("tests/bench/cluster.py needs redis-server and redis-cli on the PATH")
    if args.only:
        figures = measure(args.only, args)
        print(figures)
        return
    single = measure("single", args)
    cluster = measure("cluster", args)
    report(single, cluster, args)


if __name__ == "__main__":
    main()
