"""`rummy loadtest`: bot clients over the public API, playing many concurrent games.

Closed loop by default (each game sends its next command as soon as the previous one is answered);
``--pace S`` makes it open loop (each game sends one command every S seconds, late or not).
Prints accepted turns per second, p50/p99/max command latency, error counts by code, and the
resident memory and the CPU per accepted turn (over the timed run) of each service whose
/metrics URL is given (and of Redis with ``--redis``, and of the load tool), as one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import random
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from shared.core.commands import command_json
from shared.core.rulesets import rule_set
from shared.core.views import seat_view_from_json
from shared.infra import jsontext
from shared.play.bots import BOTS, Bot


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `rummy loadtest`."""
    p = sub.add_parser("loadtest", help="play many concurrent games over the API and measure")
    p.add_argument("--games", type=int, default=50, help="concurrent games")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of load")
    p.add_argument("--pace", type=float, default=None, help="open loop: seconds between commands")
    p.add_argument("--url", default="http://127.0.0.1:8080", help="the gateway")
    p.add_argument("--rules", default="robbers")
    p.add_argument("--players", type=int, default=2)
    p.add_argument("--bot", default="random", choices=sorted(BOTS))
    p.add_argument(
        "--metrics",
        action="append",
        default=[],
        help="a service's /metrics URL to read its memory and CPU from (repeatable)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--redis",
        default=None,
        help="the services' Redis URL, to report its CPU per turn too (INFO cpu)",
    )
    p.add_argument(
        "--transport",
        default="ws",
        choices=("ws", "http"),
        help="ws: a WebSocket per seat (views pushed, commands sent on it); "
        "http: GET the view, POST the command",
    )
    p.add_argument(
        "--compress",
        action="store_true",
        help="ask for WebSocket compression, as browsers do (the gateway's RUMMY_WS_COMPRESS "
        "decides whether it is used)",
    )
    p.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the run second by second (turns per second, latency) as an SVG chart",
    )


SECONDS_BAR = (
    "{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s [{elapsed}<{remaining}{postfix}]"
)


@dataclass
class Figures:
    """What the run measured."""

    latencies: list[float] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)  # each timed command's send, s into the run
    # Open loop: how late the tool sent each command after it was due (its own delay: a tool
    # too busy to send on time bunches commands up, and the bunch is measured as latency)
    late: list[float] = field(default_factory=list)
    frames: Counter[str] = field(default_factory=Counter)  # frames received, by kind
    accepted: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    games_started: int = 0
    games_finished: int = 0
    # Round ends the run's views showed (WebSockets): a window with none leaves out what a
    # round's end costs (the score sheet, the next deal: 12-15% of a turn's CPU at 200 games)
    rounds_ended: int = 0
    # (seconds into the run, accepted so far, commands timed so far), at every look of the
    # progress loop and once at the end: what --plot draws
    samples: list[tuple[float, int, int]] = field(default_factory=list)

    def sample(self, elapsed: float) -> None:
        self.samples.append((elapsed, self.accepted, len(self.latencies)))


async def _new_game(
    session: Any, args: argparse.Namespace, figures: Figures
) -> tuple[str, list[str]]:
    """Create a game, fill its seats and start it: (game id, seat tokens)."""
    while True:
        body = {"rules": args.rules, "seats": args.players}
        async with session.post(f"{args.url}/api/games", json=body) as r:
            created = await r.json()
        if r.status == 201:
            break
        figures.errors[created.get("error", {}).get("code", str(r.status))] += 1
        await asyncio.sleep(1)
    game = created["game_id"]
    tokens = []
    for i in range(args.players):
        async with session.post(
            f"{args.url}/api/games/{game}/seats", json={"name": f"bot{i}"}
        ) as r:
            tokens.append((await r.json())["token"])
    host = {"Authorization": f"Bearer {created['host_token']}"}
    async with session.post(f"{args.url}/api/games/{game}/start", headers=host):
        pass
    figures.games_started += 1
    return game, tokens


async def _play_games(
    session: Any,
    args: argparse.Namespace,
    figures: Figures,
    first: tuple[str, list[str]],
    begin: float,
    slot: int,
) -> None:
    """One game slot: play games back to back until the time is up (the first one was set up
    before the clock started)."""
    rng = random.Random(args.seed * 100_003 + slot)
    bot: Bot = BOTS[args.bot]()
    rules = rule_set(args.rules)
    end = begin + args.duration
    ready: tuple[str, list[str]] | None = first
    # Open loop: spread the games over one pace interval, so they do not all move at once.
    next_at = begin + (rng.random() * args.pace if args.pace else 0.0)
    await asyncio.sleep(max(0.0, begin - time.monotonic()))
    while time.monotonic() < end:
        game, tokens = ready or await _new_game(session, args, figures)
        ready = None
        seat = 0
        while time.monotonic() < end:
            if args.pace:
                if next_at >= end:  # due after the run: not sent (the run ends at --duration)
                    return
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            auth = {"Authorization": f"Bearer {tokens[seat]}"}
            async with session.get(f"{args.url}/api/games/{game}", headers=auth) as r:
                view = await r.json()
            if view["status"] == "finished":
                figures.games_finished += 1
                break
            turn = view.get("turn")
            if turn is None:  # between rounds: the score sheet and the next deal are on their way
                await asyncio.sleep(0.05)
                continue
            if turn["seat"] != seat:
                seat = turn["seat"]
                continue
            command = bot.choose(seat_view_from_json(view, rules), rng)
            body = {"id": next_command_id(), **command_json(command, with_seat=False)}
            if args.pace:  # (late by the view's GET too: this transport needs it first)
                figures.late.append(time.monotonic() - next_at)
                next_at += args.pace
            started, sent = time.perf_counter(), time.monotonic()
            url = f"{args.url}/api/games/{game}/commands"
            async with session.post(url, json=body, headers=auth) as r:
                answer = await r.json()
                status = r.status
            figures.latencies.append(time.perf_counter() - started)
            figures.sent.append(round(sent - begin, 3))
            if status == 200:
                figures.accepted += 1
            else:
                figures.errors[answer.get("error", {}).get("code", str(status))] += 1


START_LEAD = 0.1  # seconds from starting the slots to the run's clock, per 1,000 games (and one)
ANSWER_WAIT = 30.0  # seconds a WebSocket command may wait for its answer before it counts as lost


_COMMAND_IDS = itertools.count(1)


def next_command_id() -> str:
    """A command id no command of this run has had (each run plays games of its own, so ids
    need not differ between runs): cheaper than a random one, which the tool would pay for
    every turn of the CPU it measures."""
    return f"lt{next(_COMMAND_IDS):x}"


class _SocketGame:
    """One game played over WebSockets: a socket per seat receives that seat's views and the
    answers to its commands; the seat to move sends its bot's command on its own socket."""

    def __init__(self, session: Any, args: argparse.Namespace, game: str, tokens: list[str]):
        self.session = session
        self.args = args
        self.game = game
        self.tokens = tokens
        self.views: list[dict[str, Any] | None] = [None] * len(tokens)
        self.sockets: list[Any] = []
        self.changed = asyncio.Event()
        self.answers: dict[str, asyncio.Future[tuple[int, dict[str, Any]]]] = {}
        self.readers: list[asyncio.Task[None]] = []
        self.frames: Counter[str] = Counter()  # frames received on the game's sockets, by kind
        self.rounds_ended = 0  # seen by seat 0's views (each game's once)

    async def open(self) -> None:
        ws_url = self.args.url.replace("http", "ws", 1) + f"/api/games/{self.game}/ws"
        for seat, token in enumerate(self.tokens):
            compress = 15 if self.args.compress else 0  # (zlib's window bits a browser asks)
            ws = await self.session.ws_connect(
                ws_url, params={"token": token}, heartbeat=None, compress=compress
            )
            self.sockets.append(ws)
            self.readers.append(asyncio.create_task(self._read(seat, ws)))

    async def close(self) -> None:
        for ws in self.sockets:
            await ws.close()
        for task in self.readers:
            task.cancel()
        await asyncio.gather(*self.readers, return_exceptions=True)

    async def _read(self, seat: int, ws: Any) -> None:
        async for message in ws:
            doc = jsontext.loads(message.data)
            kind = str(doc.get("type"))
            self.frames[kind + "+view" if kind == "answer" and "view" in doc else kind] += 1
            # A view comes alone, or with the answer to this socket's command that made it.
            if doc.get("type") in ("view", "answer") and (view := doc.get("view")) is not None:
                known = self.views[seat]
                if known is None or view["version"] >= known["version"]:
                    if seat == 0 and known is not None:
                        self.rounds_ended += _round_ends(known, view)
                    self.views[seat] = view
                    self.changed.set()
            if doc.get("type") == "answer":
                future = self.answers.pop(str(doc.get("id")), None)
                if future is not None and not future.done():
                    future.set_result((doc["status"], doc["body"]))

    def start_clock(self) -> None:
        """Forget what the set-up's sockets got before the run's clock started."""
        self.frames.clear()
        self.rounds_ended = 0

    def mover(self) -> tuple[int, dict[str, Any]] | None:
        """The seat to move and its view, when its view is the newest any socket has seen."""
        known = [v for v in self.views if v is not None]
        if not known:
            return None
        newest = max(v["version"] for v in known)
        for seat, view in enumerate(self.views):
            turn = view.get("turn") if view is not None else None
            if view is not None and view["version"] == newest and turn and turn["seat"] == seat:
                return seat, view
        return None

    def finished(self) -> bool:
        return any(v is not None and v["status"] == "finished" for v in self.views)

    async def send(self, seat: int, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        future: asyncio.Future[tuple[int, dict[str, Any]]] = (
            asyncio.get_running_loop().create_future()
        )
        self.answers[body["id"]] = future
        await self.sockets[seat].send_str(jsontext.dumps(body))
        return await future


def _round_ends(before: dict[str, Any], after: dict[str, Any]) -> int:
    """Rounds that ended between two views of one seat: the round number's step, and the last
    round when the match ended."""
    ended = max(0, int(after.get("round") or 0) - int(before.get("round") or 0))
    if after.get("status") == "finished" and before.get("status") != "finished":
        ended += 1
    return ended


async def _play_games_ws(
    session: Any,
    args: argparse.Namespace,
    figures: Figures,
    first: _SocketGame,
    begin: float,
    slot: int,
    parked: list[_SocketGame] | None = None,
) -> None:
    """A game slot over WebSockets (see ``_play_games``); the first game's sockets are open.

    A game still live when the run ends is left open in ``parked`` (when given) for the caller
    to close once every slot is done: thousands of sockets closing at the end, while a last
    command of another game is in flight, would be measured as that command's latency."""
    rng = random.Random(args.seed * 100_003 + slot)
    bot: Bot = BOTS[args.bot]()
    rules = rule_set(args.rules)
    end = begin + args.duration
    ready: _SocketGame | None = first
    first.start_clock()
    next_at = begin + (rng.random() * args.pace if args.pace else 0.0)
    await asyncio.sleep(max(0.0, begin - time.monotonic()))
    while time.monotonic() < end:
        if ready is not None:
            game, ready = ready, None
        else:
            game = _SocketGame(session, args, *(await _new_game(session, args, figures)))
            await game.open()
        live_at_end = True  # its sockets stay open to the run's end (else closed when left)
        try:
            while time.monotonic() < end:
                if game.finished():
                    figures.games_finished += 1
                    live_at_end = False
                    break
                moving = game.mover()
                if moving is None:  # waiting for a push (or the next round's deal)
                    game.changed.clear()
                    # (``asyncio.timeout``, not ``wait_for``: no task per wait on Python 3.11;
                    # the tool's own CPU is counted in the stack's per turn)
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(max(0.0, end - time.monotonic())):
                            await game.changed.wait()
                    continue
                if args.pace:
                    if next_at >= end:  # due after the run: not sent (it ends at --duration);
                        # the game stays live (its sockets open) to the end, as the run's count
                        # of live games says
                        return
                    if time.monotonic() < next_at:  # the view is looked at again when due
                        await asyncio.sleep(next_at - time.monotonic())
                        continue
                    figures.late.append(time.monotonic() - next_at)
                    next_at += args.pace
                seat, view = moving
                command = bot.choose(seat_view_from_json(view, rules), rng)
                body = {"id": next_command_id(), **command_json(command, with_seat=False)}
                game.changed.clear()
                started, sent = time.perf_counter(), time.monotonic()
                try:
                    async with asyncio.timeout(ANSWER_WAIT):
                        status, answer = await game.send(seat, body)
                except (TimeoutError, ConnectionError) as err:  # a socket lost: the next game
                    figures.errors[f"no_answer ({type(err).__name__})"] += 1
                    live_at_end = False
                    break
                figures.latencies.append(time.perf_counter() - started)
                figures.sent.append(round(sent - begin, 3))
                if status == 200:
                    figures.accepted += 1
                    # Wait for the view that follows this command before choosing again.
                    while all(v is None or v["version"] < answer["version"] for v in game.views):
                        game.changed.clear()
                        left = end - time.monotonic()
                        if left <= 0:
                            break
                        with contextlib.suppress(TimeoutError):
                            async with asyncio.timeout(left):
                                await game.changed.wait()
                else:
                    figures.errors[answer.get("error", {}).get("code", str(status))] += 1
        finally:
            figures.frames.update(game.frames)
            figures.rounds_ended += game.rounds_ended
            if parked is not None and live_at_end:
                parked.append(game)
            else:
                await game.close()


async def _process_figures(session: Any, url: str) -> dict[str, float]:
    """A service's resident memory (bytes) and CPU so far (seconds), from its /metrics."""
    try:
        async with session.get(url) as r:
            text = await r.text()
    except Exception:
        return {}
    found = {}
    for line in text.splitlines():
        for name in ("process_resident_memory_bytes", "process_cpu_seconds_total"):
            if line.startswith(name + " "):
                found[name] = float(line.split()[-1])
    return found


REDIS_COUNTS = ("total_commands_processed", "total_net_input_bytes", "total_net_output_bytes")


async def _redis_figures(url: str | None) -> dict[str, float] | None:
    """The Redis server's CPU seconds (INFO cpu) and its commands and network bytes so far
    (INFO stats), or None without a URL."""
    if not url:
        return None
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        info = {**await client.info("cpu"), **await client.info("stats")}
        found = {"cpu": float(info["used_cpu_user"]) + float(info["used_cpu_sys"])}
        return found | {name: float(info[name]) for name in REDIS_COUNTS}
    finally:
        await client.aclose()


def redis_per_turn(
    before: dict[str, float] | None, after: dict[str, float] | None, turns: int
) -> dict[str, float]:
    """What Redis did per turn between two readings of its ``REDIS_COUNTS``: commands, bytes in
    and out (the INFO calls that read them included: a few commands a run)."""
    if before is None or after is None:
        return {}
    names = dict(zip(REDIS_COUNTS, ("commands", "bytes_in", "bytes_out"), strict=True))
    return {short: round((after[n] - before[n]) / turns, 2) for n, short in names.items()}


def _percentile(ordered: list[float], q: float) -> float:
    """The ``q``th percentile of the sorted seconds, in ms (the value at or below which ``q`` %
    of them are)."""
    return round(ordered[max(int(len(ordered) * q / 100) - 1, 0)] * 1000, 2)


async def loadtest(args: argparse.Namespace, figures: Figures | None = None) -> dict[str, Any]:
    """Run the load and gather the figures (into ``figures`` when given: its samples are what a
    plot draws)."""
    import aiohttp

    from shared.cli.progress import bar  # (not once the clock runs: an import takes ~40 ms)

    figures = Figures() if figures is None else figures
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # Set every game up first (50 at a time), then start the clock.
        gate = asyncio.Semaphore(50)

        async def set_up() -> Any:
            async with gate:
                game, tokens = await _new_game(session, args, figures)
                if args.transport != "ws":
                    return game, tokens
                sockets = _SocketGame(session, args, game, tokens)
                await sockets.open()  # before the clock: 2 x games handshakes are not the load
                return sockets

        firsts = await asyncio.gather(*(set_up() for _ in range(args.games)))
        # What the set-up made lives for the whole run (the sockets, their readers): out of the
        # cyclic collector's walks, or the tool's own pauses (hundreds of ms at thousands of
        # sockets) would be measured as the service's latency. For the same reason the tool
        # does not collect at all while it measures: even its young collections took 75-110 ms
        # at 10,000 sockets (each walk touches the large heap), and it makes little cyclic
        # garbage in a run's seconds.
        gc.collect()
        gc.freeze()
        collecting = gc.isenabled()
        gc.disable()
        # (before the slots start: each service renders its /metrics page on its own loop, so
        # the run's first commands would wait for it)
        cpu_before = [await _process_figures(session, url) for url in args.metrics]
        redis_before = await _redis_figures(args.redis)
        # The clock starts once every slot has been started and is waiting for it: starting
        # thousands of tasks takes the tool a while, and commands due meanwhile would go out
        # in one bunch (a burst of ~40 commands at 5,000 games, measured as 20-30 ms each).
        started = time.monotonic() + START_LEAD * (1 + args.games / 1000)
        parked: list[_SocketGame] = []  # games live at the end, closed after the figures
        play = partial(_play_games_ws, parked=parked) if args.transport == "ws" else _play_games
        slots = [
            asyncio.create_task(play(session, args, figures, firsts[i], started, i))
            for i in range(args.games)
        ]
        await asyncio.sleep(max(0.0, started - time.monotonic()))
        client_before = time.process_time()
        # The run is bounded by time: the bar counts its seconds (the ETA is what is left).
        with bar(args.duration, "load", unit="s", bar_format=SECONDS_BAR) as progress:
            while not all(t.done() for t in slots):
                await asyncio.sleep(0.5)
                figures.sample(time.monotonic() - started)
                elapsed = min(time.monotonic() - started, args.duration)
                progress.update(elapsed - progress.n)
                rate = figures.accepted / max(time.monotonic() - started, 1e-9)
                progress.set_postfix_str(f"{rate:,.0f} turns/s", refresh=False)
        for task in slots:
            if task.exception() is not None:
                figures.errors[type(task.exception()).__name__] += 1
        seconds = time.monotonic() - started
        figures.sample(seconds)
        client_cpu = time.process_time() - client_before
        if collecting:
            gc.enable()
        gc.unfreeze()
        redis_after = await _redis_figures(args.redis)
        cpu_after = [await _process_figures(session, url) for url in args.metrics]
        await asyncio.gather(*(game.close() for game in parked))
    turns = max(figures.accepted, 1)
    memory = {
        url: int(after["process_resident_memory_bytes"])
        if "process_resident_memory_bytes" in after
        else None
        for url, after in zip(args.metrics, cpu_after, strict=True)
    }
    cpu_ms: dict[str, float | None] = {}
    for url, before, after in zip(args.metrics, cpu_before, cpu_after, strict=True):
        name = "process_cpu_seconds_total"
        spent = after[name] - before[name] if name in before and name in after else None
        cpu_ms[url] = None if spent is None else round(spent / turns * 1000, 3)
    if redis_before is not None and redis_after is not None:
        cpu_ms["redis"] = round((redis_after["cpu"] - redis_before["cpu"]) / turns * 1000, 3)
    cpu_ms["loadtest"] = round(client_cpu / turns * 1000, 3)
    latencies = sorted(figures.latencies) or [0.0]
    late = sorted(figures.late) or [0.0]
    return {
        "url": args.url,
        "games": args.games,
        "duration": round(seconds, 2),
        "pace": args.pace,
        "mode": "open" if args.pace else "closed",
        "transport": args.transport,
        "accepted": figures.accepted,
        "accepted_per_second": round(figures.accepted / seconds, 1),
        "commands": len(figures.latencies),
        "latency_ms": {
            "p50": round(statistics.median(latencies) * 1000, 2),
            **{f"p{q:g}": _percentile(latencies, q) for q in (90, 95, 99, 99.9)},
            "max": round(latencies[-1] * 1000, 2),
        },
        # The slowest commands, when each was sent (s into the run) and what it took: a tail of
        # one stall, of the run's start, or spread over the run.
        "slowest": [
            [sent, round(took * 1000, 1)]
            for took, sent in sorted(zip(figures.latencies, figures.sent, strict=True))[-10:]
        ],
        # Frames received by kind ("answer+view": an answer with the view of its change), and
        # all frames over the accepted turns (three a turn with an answer apart from its view).
        "frames": dict(figures.frames),
        "frames_per_turn": round(sum(figures.frames.values()) / turns, 2),
        # Open loop: how late the tool itself sent commands after they were due
        "send_late_ms": {"p99": _percentile(late, 99), "max": round(late[-1] * 1000, 2)},
        "errors": dict(figures.errors),
        "games_started": figures.games_started,
        "games_finished": figures.games_finished,
        "rounds_ended": figures.rounds_ended,
        "memory_bytes": memory,
        "cpu_ms_per_turn": cpu_ms,
        "redis_per_turn": redis_per_turn(redis_before, redis_after, turns),
    }


def plot(result: dict[str, Any], figures: Figures) -> str:
    """The run as a chart: accepted turns per second and command latency, look by look."""
    from shared.pictures.chart import Panel, Series, chart

    rate: list[tuple[float, float]] = []
    p50: list[tuple[float, float]] = []
    top: list[tuple[float, float]] = []
    last_t, last_accepted, last_timed = 0.0, 0, 0
    for t, accepted, timed in figures.samples:
        if t <= last_t:
            continue
        rate.append((round(t, 3), (accepted - last_accepted) / (t - last_t)))
        window = sorted(figures.latencies[last_timed:timed])
        if window:
            p50.append((round(t, 3), statistics.median(window) * 1000))
            top.append((round(t, 3), window[-1] * 1000))
        last_t, last_accepted, last_timed = t, accepted, timed
    note = (
        f"{result['games']} games, {result['mode']} loop over {result['transport']}, "
        f"{result['accepted']} turns accepted in {result['duration']} s, {result['url']}"
    )
    return chart(
        "rummy loadtest",
        [
            Panel(
                "Accepted turns per second",
                "seconds into the run",
                "turns / s",
                [Series("accepted", rate)],
            ),
            Panel(
                "Command latency",
                "seconds into the run",
                "ms",
                [Series("median", p50), Series("slowest", top)],
            ),
        ],
        note,
    )


def run(args: argparse.Namespace) -> int:
    """Print the figures as one JSON object (and draw them with ``--plot``)."""
    if args.games < 1 or args.duration <= 0 or (args.pace is not None and args.pace <= 0):
        print("rummy loadtest: --games >= 1, --duration > 0, --pace > 0", file=sys.stderr)
        return 2
    figures = Figures()
    result = asyncio.run(loadtest(args, figures))
    print(json.dumps(result))
    if getattr(args, "plot", None):
        try:
            with open(args.plot, "w", encoding="utf-8") as out:
                out.write(plot(result, figures))
        except OSError as err:
            print(f"rummy loadtest: cannot write the plot: {err}", file=sys.stderr)
            return 2
    return 0
