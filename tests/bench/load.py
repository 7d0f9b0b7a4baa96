"""Load figures over the public API (issues 6 and 9): bot clients playing concurrent games.

Runs `rummy loadtest` (WebSocket clients) against (1) separate gateway, referee(s) and scoring
processes on a private redis-server, at growing sizes, closed loop (saturation) and open loop
(each game moving once a second); (2) the bare pipeline of ``tests/bench/bare.py`` (the same
path with no game logic) on the same Redis, for scale; (3) `rummy serve` (everything in one
process on the embedded stand-in). Prints one Markdown table row per run, and the table again
at the end. Everything it starts listens on loopback spare ports and is stopped at the end.

    python tests/bench/load.py [--closed 10,50,200] [--open 100,300,1000] [--serve 50]
                               [--referees 2] [--duration 10] [--no-bare]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.ports import spare_port  # noqa: E402
from tests.servers import RedisServer, url_ok, wait_until  # noqa: E402

RUMMY = [sys.executable, "-m", "services.main"]


def cpu_seconds(pids: list[int]) -> list[float]:
    """User + system CPU seconds of each process so far (Linux /proc; 0 elsewhere)."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out = []
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            out.append((int(fields[11]) + int(fields[12])) / ticks)
        except (OSError, IndexError, ValueError):
            out.append(0.0)
    return out


@contextmanager
def processes(env: dict[str, str], commands: list[list[str]]) -> Iterator[list[int]]:
    procs = [
        subprocess.Popen(c, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for c in commands
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


REDIS_PID: list[int] = []  # the private redis-server's, while it runs


@contextmanager
def redis_server() -> Iterator[str]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not on the PATH")
    folder = tempfile.mkdtemp()
    try:
        with RedisServer(Path(folder), binary=binary) as server:
            assert server.proc is not None
            REDIS_PID[:] = [server.proc.pid]
            try:
                yield server.url
            finally:
                REDIS_PID.clear()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def loadtest(
    url: str,
    games: int,
    duration: float,
    pace: float | None,
    metrics: list[str],
    redis_url: str | None = None,
) -> dict:
    """One `rummy loadtest` run (its JSON: figures, memory and CPU per turn of each service)."""
    command = [*RUMMY, "loadtest", "--url", url, "--games", str(games), "--duration", str(duration)]
    if pace:
        command += ["--pace", str(pace)]
    for m in metrics:
        command += ["--metrics", m]
    if redis_url:
        command += ["--redis", redis_url]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


ROWS: list[str] = []
HEADER = (
    "| setup | loop | games | turns/s | p50 ms | p99 ms | max ms | errors | RSS MiB "
    "| CPU ms per turn |"
)
RULE = "|---|---|---|---|---|---|---|---|---|---|"


def show(setup: str, mode: str, size: int, result: dict, rss: str = "") -> None:
    """Print one line of figures, and keep it as a row of the closing table."""
    lat = result["latency_ms"]
    rate = result.get("accepted_per_second", result.get("per_second"))
    errors = result.get("errors") or {}
    row = (
        f"| {setup} | {mode} | {size} | {rate:,.0f} | {lat['p50']:.1f} | {lat['p99']:.1f} "
        f"| {lat['max']:.1f} | {sum(errors.values())} | {rss} | {cpu(result)} |"
    )
    ROWS.append(row)
    print(row, flush=True)


def memory(result: dict) -> str:
    """Resident MiB of each service (by the order the metrics URLs were given)."""
    return " / ".join(str(round((v or 0) / 2**20)) for v in result["memory_bytes"].values())


def cpu(result: dict) -> str:
    """CPU ms per accepted turn over the timed run: each service (in the order of the metrics
    URLs), Redis, the load tool; or, for the bare pipeline, front / worker / Redis / clients."""
    parts = result.get("cpu_ms")
    if parts is None and "cpu_ms_per_turn" in result:
        parts = [v or 0.0 for v in result["cpu_ms_per_turn"].values()]
    return " / ".join(f"{x:.2f}" for x in parts) + f" = {sum(parts):.2f}" if parts else ""


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--closed", default="10,50,200", help="closed-loop game counts")
    parser.add_argument("--open", default="100,300,1000", help="open-loop game counts (1/s)")
    parser.add_argument("--serve", default="50", help="closed-loop game counts for rummy serve")
    parser.add_argument("--referees", type=int, default=2)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--no-bare", action="store_true", help="skip the bare pipeline")
    args = parser.parse_args()
    base = {
        **os.environ,
        "RUMMY_LOG_LEVEL": "warning",
        "RUMMY_RATE_PER_SECOND": "0",
        # Hundreds of games from one address: no limits per address either.
        "RUMMY_LIMIT_ADDRESS_PER_SECOND": "0",
        "RUMMY_LIMIT_CREATE_PER_MINUTE": "0",
        "RUMMY_LIMIT_SEAT_PER_MINUTE": "0",
        "RUMMY_LIMIT_REPLAY_PER_MINUTE": "0",
        "RUMMY_LIMIT_SYNC_PER_MINUTE": "0",
        "PYTHONPATH": str(ROOT),
    }
    print(HEADER, RULE, sep="\n", flush=True)
    with redis_server() as redis_url:
        ports = [spare_port() for _ in range(args.referees + 2)]
        gw, sc, refs = ports[0], ports[1], ports[2:]
        env = {**base, "REDIS_URL": redis_url, "RUMMY_PREFIX": "bench:"}
        commands = [
            [*RUMMY, "gateway", "--port", str(gw)],
            ["env", f"RUMMY_HTTP_PORT={sc}", *RUMMY, "scoring"],
        ] + [
            ["env", f"RUMMY_HTTP_PORT={port}", f"RUMMY_CONSUMER=ref{i}", *RUMMY, "referee"]
            for i, port in enumerate(refs)
        ]
        setup = f"gateway + {args.referees} referees + scoring"
        with processes(env, commands):
            for port in ports:
                wait_until(partial(url_ok, f"http://127.0.0.1:{port}/readyz"), 30, every=0.2)
            url = f"http://127.0.0.1:{gw}"
            metrics = [f"http://127.0.0.1:{p}/metrics" for p in ports]
            for games in sizes(args.closed):
                result = loadtest(url, games, args.duration, None, metrics, redis_url)
                show(setup, "closed", games, result, memory(result))
            for games in sizes(args.open):
                result = loadtest(url, games, args.duration, 1.0, metrics, redis_url)
                show(setup, "open 1/s", games, result, memory(result))
        if not args.no_bare:
            from tests.bench.bare import measure

            for games in sizes(args.closed)[-1:]:
                show(
                    "bare pipeline (no game logic)",
                    "closed",
                    games,
                    measure(redis_url, games, args.duration, None, REDIS_PID),
                )
            for games in sizes(args.open)[-1:]:
                show(
                    "bare pipeline (no game logic)",
                    "open 1/s",
                    games,
                    measure(redis_url, games, args.duration, 1.0, REDIS_PID),
                )

    port = spare_port()
    env = {k: v for k, v in base.items() if k != "REDIS_URL"}
    with processes(env, [[*RUMMY, "serve", "--port", str(port)]]):
        wait_until(partial(url_ok, f"http://127.0.0.1:{port}/readyz"), 30, every=0.2)
        url = f"http://127.0.0.1:{port}"
        for games in sizes(args.serve):
            result = loadtest(url, games, args.duration, None, [f"{url}/metrics"])
            show(
                "rummy serve (one process, embedded Redis)", "closed", games, result, memory(result)
            )
    print("\n".join(["", HEADER, RULE, *ROWS]))


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
