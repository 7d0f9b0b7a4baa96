"""Load figures over the public API (issue 6 and 9): bot clients playing concurrent games.

Runs `rummy loadtest` against (1) separate gateway, referee x2 and scoring processes on a private
redis-server, and (2) `rummy serve` (everything in one process on the embedded stand-in), in
closed loop (saturation) and open loop (each game moving once a second). Everything it starts
listens on loopback spare ports and is stopped at the end.

    python tests/bench/load.py [--games 200] [--duration 10] [--open-games 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUMMY = [sys.executable, "-m", "shared.cli.main"]


def spare_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not become ready")


@contextmanager
def processes(env: dict[str, str], commands: list[list[str]]) -> Iterator[None]:
    procs = [
        subprocess.Popen(c, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for c in commands
    ]
    try:
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()


@contextmanager
def redis_server() -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        raise RuntimeError("redis-server is not on the PATH")
    port = spare_port()
    folder = tempfile.mkdtemp()
    proc = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            folder,
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(0.5)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def loadtest(url: str, games: int, duration: float, pace: float | None, metrics: list[str]) -> dict:
    command = [*RUMMY, "loadtest", "--url", url, "--games", str(games), "--duration", str(duration)]
    if pace:
        command += ["--pace", str(pace)]
    for m in metrics:
        command += ["--metrics", m]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def show(label: str, result: dict) -> None:
    lat = result["latency_ms"]
    memory = {
        k.split(":")[-1].split("/")[0]: round((v or 0) / 2**20)
        for k, v in result["memory_bytes"].items()
    }
    print(
        f"{label:<44} {result['accepted_per_second']:>8.1f} turns/s  p50 {lat['p50']:>7.1f} ms"
        f"  p99 {lat['p99']:>7.1f} ms  max {lat['max']:>7.1f} ms  errors {result['errors']}"
        f"  RSS MiB by port {memory}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--open-games", type=int, default=300)
    args = parser.parse_args()
    base = {
        **os.environ,
        "RUMMY_LOG_LEVEL": "warning",
        "RUMMY_RATE_PER_SECOND": "0",
        "PYTHONPATH": str(ROOT),
    }

    with redis_server() as redis_url:
        gw, r1, r2, sc = spare_port(), spare_port(), spare_port(), spare_port()
        env = {**base, "REDIS_URL": redis_url, "RUMMY_PREFIX": "bench:"}
        commands = [
            [*RUMMY, "gateway", "--port", str(gw)],
            ["env", f"RUMMY_HTTP_PORT={r1}", "RUMMY_CONSUMER=ref1", *RUMMY, "referee"],
            ["env", f"RUMMY_HTTP_PORT={r2}", "RUMMY_CONSUMER=ref2", *RUMMY, "referee"],
            ["env", f"RUMMY_HTTP_PORT={sc}", *RUMMY, "scoring"],
        ]
        with processes(env, commands):
            for port in (gw, r1, r2, sc):
                wait_ready(f"http://127.0.0.1:{port}/readyz")
            url = f"http://127.0.0.1:{gw}"
            metrics = [f"http://127.0.0.1:{p}/metrics" for p in (gw, r1, r2, sc)]
            show(
                f"separate processes, closed loop, {args.games} games",
                loadtest(url, args.games, args.duration, None, metrics),
            )
            show(
                f"separate processes, open loop 1/s, {args.open_games} games",
                loadtest(url, args.open_games, args.duration, 1.0, metrics),
            )

    port = spare_port()
    env = {k: v for k, v in base.items() if k != "REDIS_URL"}
    with processes(env, [[*RUMMY, "serve", "--port", str(port)]]):
        wait_ready(f"http://127.0.0.1:{port}/readyz")
        url = f"http://127.0.0.1:{port}"
        show(
            f"rummy serve, closed loop, {args.games} games",
            loadtest(url, args.games, args.duration, None, [f"{url}/metrics"]),
        )


if __name__ == "__main__":
    main()
