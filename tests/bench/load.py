"""Load figures over the public API (issues 6 and 9): bot clients playing concurrent games.

Runs `rummy loadtest` (WebSocket clients) against (1) separate gateway, referee(s) and scoring
processes on a private redis-server, at growing sizes, closed loop (saturation) and open loop
(each game moving once a second); (2) the bare pipeline of ``tests/bench/bare.py`` (the same
path with no game logic) on the same Redis, for scale, and shaped as a turn (two sockets a
game, a log append, a feed entry; ``tests/bench/bare_turn.py``), which tells how much of a
turn's cost its messages are; (3) `rummy serve` (everything in one
process on the embedded stand-in). Prints one Markdown table row per run, and the table again
at the end. Everything it starts listens on loopback spare ports and is stopped at the end.

    python tests/bench/load.py [--closed 10,50,200] [--open 100,300,1000] [--serve 50]
                               [--referees 2] [--duration 30] [--no-bare]
                               [--rate 100 --live 100,1000,5000]

A run's window must hold round ends: a round's end brings work no turn does (scoring's sheet,
the next deal, its larger views), and in a 10-second closed-loop window most games never reach
one (CPU per turn 12-15% low). Each closed-loop run prints the round ends its window saw.

``--rate R --live G1,G2,..``: the tail at a fixed rate. Each count of live games moves at R
turns a second in all (each game every G/R seconds, open loop), so what grows from one row to
the next is the number of games and sockets alive, not the work; the p99 of each is printed
as a ratio of the first's, for the stack and for the bare pipeline at the same counts and rate.
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
WARM_UP_SECONDS = 3.0  # an unmeasured run of the stack before the measured ones
BARE = "bare pipeline (no game logic)"
BARE_TURN = "bare pipeline shaped as a turn (no game logic)"


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
    extra: tuple[str, ...] = (),
) -> dict:
    """One `rummy loadtest` run (its JSON: figures, memory and CPU per turn of each service);
    ``extra``: more of its arguments."""
    command = [*RUMMY, "loadtest", "--url", url, "--games", str(games), "--duration", str(duration)]
    command += extra
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


SATURATION: dict[str, tuple[float, list[float]]] = {}
"""Closed loop, by setup: the highest turns/s and that run's CPU ms a turn by process (the
clients last: the load tool, or the bare pipeline's clients)."""


def show(setup: str, mode: str, size: int, result: dict, rss: str = "") -> None:
    """Print one line of figures, and keep it as a row of the closing table."""
    lat = result["latency_ms"]
    rate = result.get("accepted_per_second", result.get("per_second"))
    if mode == "closed":
        parts = cpu_parts(result)
        best = SATURATION.get(setup, (0.0, []))
        if rate > best[0]:
            SATURATION[setup] = (rate, parts)
    errors = result.get("errors") or {}
    row = (
        f"| {setup} | {mode} | {size} | {rate:,.0f} | {lat['p50']:.1f} | {lat['p99']:.1f} "
        f"| {lat['max']:.1f} | {sum(errors.values())} | {rss} | {cpu(result)} |"
    )
    ROWS.append(row)
    MEASURED.setdefault((setup, mode), []).append((size, rate, lat["p99"]))
    print(row, flush=True)
    if frames := result.get("frames"):  # what the load tool's sockets received, by kind
        each = ", ".join(f"{kind} {count:,}" for kind, count in sorted(frames.items()))
        print(f"  frames: {each}; {result['frames_per_turn']} a turn")
    if mode == "closed" and "rounds_ended" in result:
        # (a window too short to hold round ends leaves scoring's sheets and the next deals out)
        ended = result["rounds_ended"]
        every = f", one a {result['accepted'] / ended:,.0f} turns" if ended else ""
        matches = result.get("games_finished", 0)
        print(f"  round ends in the window: {ended:,}{every}; matches ended: {matches:,}")
    if "p90" in lat:
        late = result.get("send_late_ms") or {}
        print(
            f"  latency p90 {lat['p90']:.1f}, p95 {lat['p95']:.1f}, p99.9 {lat['p99.9']:.1f} ms"
            + (
                f"; sent late by the tool: p99 {late['p99']:.1f}, max {late['max']:.1f} ms"
                if late
                else ""
            )
        )
    if redis := result.get("redis_per_turn"):
        print(
            f"  Redis a turn: {redis['commands']:.1f} commands, {redis['bytes_in']:,.0f} bytes in,"
            f" {redis['bytes_out']:,.0f} out"
        )
    if slowest := result.get("slowest"):  # (s into the run it was sent, ms it took)
        print("  slowest (sent at s: ms):", ", ".join(f"{t:g}: {ms:g}" for t, ms in slowest))


MEASURED: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
"""(setup, loop) -> (games, turns/s, p99 ms) of each run, for ``--plot``."""


def plot() -> str:
    """What the runs measured as a chart: turns a second and p99 by the number of games, a
    line per setup and loop."""
    from shared.pictures.chart import Panel, Series, chart

    lines = [(f"{setup}, {mode}", points) for (setup, mode), points in MEASURED.items()]
    return chart(
        "Whole turns through the services",
        [
            Panel(
                "Accepted turns a second",
                "games",
                "turns/s",
                [Series(name, [(g, rate) for g, rate, _ in pts]) for name, pts in lines],
            ),
            Panel(
                "Latency, p99",
                "games",
                "ms",
                [Series(name, [(g, p99) for g, _, p99 in pts]) for name, pts in lines],
            ),
        ],
    )


def memory(result: dict) -> str:
    """Resident MiB of each service (by the order the metrics URLs were given)."""
    return " / ".join(str(round((v or 0) / 2**20)) for v in result["memory_bytes"].values())


def cpu_parts(result: dict) -> list[float]:
    """CPU ms per accepted turn over the timed run: each service (in the order of the metrics
    URLs), Redis, the load tool; or, for the bare pipeline, front / worker / Redis / clients."""
    parts = result.get("cpu_ms")
    if parts is None and "cpu_ms_per_turn" in result:
        parts = [v or 0.0 for v in result["cpu_ms_per_turn"].values()]
    return list(parts or [])


def cpu(result: dict) -> str:
    """The CPU per turn of each process and their sum, as a table cell."""
    parts = cpu_parts(result)
    return " / ".join(f"{x:.3f}" for x in parts) + f" = {sum(parts):.3f}" if parts else ""


def against_bare(setup: str, baseline: str = BARE) -> str:
    """The stack's saturation and CPU per turn as ratios of a bare pipeline's, same run (the
    highest closed-loop rate of each, and the CPU per turn of that run); the CPU also without
    the clients, whose share differs in kind (the load tool's bots read every view and choose
    a move; the bare clients send a fixed message)."""
    bare = SATURATION.get(baseline)
    real = SATURATION.get(setup)
    if not bare or not real or not bare[0] or not sum(bare[1]) or not real[1]:
        return ""
    targets = (
        (" (target >= 0.6x)", " (target <= 1.5x)")
        if baseline == BARE and setup != BARE_TURN
        else ("", "")
    )
    cpu, bare_cpu = sum(real[1]), sum(bare[1])
    servers, bare_servers = sum(real[1][:-1]), sum(bare[1][:-1])
    return (
        f"{setup} against the {baseline}, same run: saturation {real[0]:,.0f} / "
        f"{bare[0]:,.0f} turns/s = {real[0] / bare[0]:.2f}x{targets[0]}; CPU per turn "
        f"{cpu:.3f} / {bare_cpu:.3f} ms = {cpu / bare_cpu:.2f}x{targets[1]}, without the "
        f"clients {servers:.3f} / {bare_servers:.3f} ms = {servers / bare_servers:.2f}x"
    )


def tail_growth(loop: str) -> list[str]:
    """For each setup run at the fixed rate: the p99 at each count of live games as a ratio of
    the p99 at the first count (target: at most 2x from 100 to 5,000 games)."""
    lines = []
    for (setup, mode), points in MEASURED.items():
        if mode != loop or len(points) < 2 or not points[0][2]:
            continue
        first = points[0]
        ratios = ", ".join(
            f"{games:,} games {p99:.1f} ms = {p99 / first[2]:.2f}x" for games, _, p99 in points
        )
        lines.append(f"{setup} at {loop}, p99 against {first[0]:,} live games: {ratios}")
    return lines


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--closed", default="10,50,200", help="closed-loop game counts")
    parser.add_argument("--open", default="100,300,1000", help="open-loop game counts (1/s)")
    parser.add_argument("--serve", default="50", help="closed-loop game counts for rummy serve")
    parser.add_argument("--referees", type=int, default=2)
    parser.add_argument(
        "--duration",
        type=float,
        default=30.0,
        help="seconds a run is measured: long enough for round ends (a closed-loop game of "
        "robbers ends a round about every 13 s at 200 games; each run prints how many it saw)",
    )
    parser.add_argument("--no-bare", action="store_true", help="skip the bare pipeline")
    parser.add_argument("--plot", type=Path, help="also draw the figures as an SVG chart here")
    parser.add_argument("--rate", type=float, default=100.0, help="turns/s in all, for --live")
    parser.add_argument("--live", default="", help="live game counts at the fixed --rate")
    parser.add_argument(
        "--compress",
        action="store_true",
        help="WebSocket compression on in the gateway and asked for by the load tool",
    )
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
        "RUMMY_LIMIT_READ_PER_SECOND": "0",
        "RUMMY_LIMIT_SYNC_PER_MINUTE": "0",
        "RUMMY_SOCKETS_PER_ADDRESS": "100000",  # two sockets a game, all from one address
        # The tree first; what the caller's path adds (a profiling hook) after it.
        "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
    }
    if args.compress:
        base["RUMMY_WS_COMPRESS"] = "true"
    tool = partial(loadtest, extra=("--compress",) if args.compress else ())
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
            # Not measured: the referees share the partitions out in their first seconds (a
            # command on a partition being handed over waits up to a second), and each
            # process's first games load what it loads lazily.
            tool(url, 20, WARM_UP_SECONDS, None, metrics, redis_url)
            for games in sizes(args.closed):
                result = tool(url, games, args.duration, None, metrics, redis_url)
                show(setup, "closed", games, result, memory(result))
            for games in sizes(args.open):
                result = tool(url, games, args.duration, 1.0, metrics, redis_url)
                show(setup, "open 1/s", games, result, memory(result))
            for games in sizes(args.live):
                pace = games / args.rate
                result = tool(url, games, args.duration, pace, metrics, redis_url)
                show(setup, f"{args.rate:g} turns/s", games, result, memory(result))
        if not args.no_bare:
            from tests.bench.bare import measure

            for games in sizes(args.closed)[-1:]:
                show(
                    BARE,
                    "closed",
                    games,
                    measure(redis_url, games, args.duration, None, REDIS_PID),
                )
                show(
                    BARE_TURN,
                    "closed",
                    games,
                    measure(redis_url, games, args.duration, None, REDIS_PID, shape="turn"),
                )
            for games in sizes(args.open)[-1:]:
                show(
                    BARE,
                    "open 1/s",
                    games,
                    measure(redis_url, games, args.duration, 1.0, REDIS_PID),
                )
            for games in sizes(args.live):
                pace = games / args.rate
                show(
                    BARE,
                    f"{args.rate:g} turns/s",
                    games,
                    measure(redis_url, games, args.duration, pace, REDIS_PID),
                )

    port = spare_port()
    env = {k: v for k, v in base.items() if k != "REDIS_URL"}
    with processes(env, [[*RUMMY, "serve", "--port", str(port)]]):
        wait_until(partial(url_ok, f"http://127.0.0.1:{port}/readyz"), 30, every=0.2)
        url = f"http://127.0.0.1:{port}"
        for games in sizes(args.serve):
            result = tool(url, games, args.duration, None, [f"{url}/metrics"])
            show(
                "rummy serve (one process, embedded Redis)", "closed", games, result, memory(result)
            )
    print("\n".join(["", HEADER, RULE, *ROWS]))
    if summary := against_bare(setup):
        print(f"\n{summary}")
    if summary := against_bare(setup, BARE_TURN):  # how much of the rest is the turn's shape
        print(summary)
    if summary := against_bare(BARE_TURN):  # a turn's messages alone, with no game logic
        print(summary)
    for line in tail_growth(f"{args.rate:g} turns/s"):
        print(line)
    if args.plot is not None:
        args.plot.write_text(plot())


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
