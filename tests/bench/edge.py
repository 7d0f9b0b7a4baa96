"""The public edge under attack: what one hostile client does to everyone else.

For each attack, against real processes (`rummy gateway`, `rummy referee`, `rummy scoring` on a
private redis-server, a fresh deployment per attack so one attack's leftovers cannot spoil the
next), the same run measures an unrelated client before and during the attack:

* its latency: spectator GETs of another game and ``/healthz``, p50 and p99;
* the share of another game's pushes delivered: a watcher socket on that game while a steady
  player plays it; a push counts when it reaches the watcher within ``--push-grace`` seconds of
  the command's answer (a stalled push that comes after the attack is not a push delivered);
* for the hint attack, each hint's answer time and status.

The windows without and with the attack come in turns (``--rounds``, each a share of
``--seconds``, with ``--push-grace`` between them for the attack's leftovers to settle): on a
machine shared with other work, a burst of someone else's load falls on both sides of the ratio
rather than on one. The p99s are of all the rounds' samples together; each round's are printed too,
and so is the CPU each process used (gateway, referee, scoring, the attacker: a share of one
core, without and with), a figure the machine's other load blurs far less than a tail latency.

Attacks (each from one address, in a process of its own so its clients do not slow the
measuring ones): ``hint`` (hints on a hostile rummikub deal: 52-card hands, 8 jokers, short
melds), ``slow`` (sockets that send syncs and never read, on a game that moves), ``replay`` (20
concurrent live replays of a long game), ``spam`` (a seat sending illegal layouts in a loop),
``create`` (a flood of game creations). 429 and 503 answers to the attacker are the defences
working, and counted. The gateway trusts ``X-Forwarded-For`` from 127.0.0.1
(``RUMMY_TRUSTED_PROXIES``): every client sends an address of its own, so per-address limits
meet the attacker, not the client it is compared with.

Targets: during an attack the unrelated p99 is at most 3x its p99 without; 100% of the other
game's pushes are delivered; every hint is answered or refused within its budget
(``RUMMY_HINT_SECONDS``) plus 0.5 s. Printed as a table, not asserted: timings are the
machine's. Only 127.0.0.1 is contacted; everything started is stopped at the end.

    python tests/bench/edge.py [--seconds 8] [--rounds 4] [--attacks hint,slow,replay,spam,create]
                               [--replay-events 1000] [--slow-events 600] [--hint-seconds 2]
                               [--push-grace 2] [--pace 0.04] [--player-pace 0.75]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from shared.core.commands import command_json  # noqa: E402
from shared.core.rulesets import rule_set  # noqa: E402
from shared.core.views import seat_view_from_json  # noqa: E402
from shared.infra.settings import Settings  # noqa: E402
from shared.play.bots import BOTS  # noqa: E402
from tests.faults.harness import NO_ADDRESS_LIMITS, Deployment, Service  # noqa: E402
from tests.servers import RedisServer, wait_ready  # noqa: E402

Json = dict[str, Any]
ATTACKS = ("hint", "slow", "replay", "spam", "create")

# Every client's own address (X-Forwarded-For; the gateway trusts it from 127.0.0.1).
SETUP, UNRELATED, STEADY, WATCHER = "198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"
ATTACKER = "203.0.113.66"

HOSTILE = {
    "jokers": 8,
    "run_max": 3,
    "set_max": 3,
    "ace": "wrap",
    "joker_policy": "to_hand",
    "hand_size": 52,
    "opening_points": 0,
}
"""A rummikub deal that makes the exact solver's search explode."""

UNBOUNDED = {  # the builder's gateway only: a long game is built quickly, then it is stopped
    "RUMMY_RATE_PER_SECOND": "1000000",
    "RUMMY_LIMIT_ADDRESS_PER_SECOND": "1000000",
    "RUMMY_LIMIT_CREATE_PER_MINUTE": "1000000",
    "RUMMY_LIMIT_SEAT_PER_MINUTE": "1000000",
    "RUMMY_LIMIT_READ_PER_SECOND": "0",
}

DEFAULT_ADDRESS_LIMITS = {
    name: str(getattr(Settings(), name[6:].lower())) for name in NO_ADDRESS_LIMITS
}
"""The per-address limits at their defaults (the fault harness's deployments turn them off)."""

P99_LIMIT = 3.0  # the unrelated p99 during an attack, at most this times its p99 without
HINT_SLACK = 0.5  # a hint is answered or refused within its budget plus this


# --- a client with an address of its own ---------------------------------------------------


class Api:
    """HTTP calls to the gateway as one client (one address, its own connections)."""

    def __init__(self, session: aiohttp.ClientSession, base: str, address: str) -> None:
        self.session = session
        self.base = base
        self.address = address

    async def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        timeout: float = 30.0,
    ) -> tuple[int, Any]:
        headers = {"X-Forwarded-For": self.address}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        async with self.session.request(
            method,
            self.base + path,
            json=body,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=timeout),
        ) as response:
            text = await response.text()
            try:
                doc = json.loads(text) if text else None
            except ValueError:
                doc = text
            return response.status, doc

    async def new_game(self, rules: str, seats: int, options: Json) -> tuple[str, list[str]]:
        """Create, seat and start a game: its id and the seats' tokens."""
        status, doc = await self.call(
            "POST", "/api/games", {"rules": rules, "seats": seats, "options": options}
        )
        assert status == 201, (status, doc)
        game_id, host = doc["game_id"], doc["host_token"]
        tokens = [""] * seats
        for n in range(seats):
            status, doc = await self.call("POST", f"/api/games/{game_id}/seats", {"name": f"p{n}"})
            assert status == 201, (status, doc)
            tokens[doc["seat"]] = doc["token"]
        status, doc = await self.call("POST", f"/api/games/{game_id}/start", {}, host)
        assert status == 200, (status, doc)
        return game_id, tokens


def answer_kind(status: int | str, doc: Any) -> str:
    """``200``, ``422 illegal_layout``, ``429 rate_limited``, ``timeout``..."""
    if isinstance(status, str):
        return status
    code = doc.get("error", {}).get("code") if isinstance(doc, dict) else None
    return f"{status} {code}" if code else str(status)


async def bot_move(
    api: Api, game_id: str, tokens: list[str], bots: list[Any], rng: random.Random
) -> tuple[int, Any] | None:
    """One bot command for the seat to move (None: nobody's turn now, or the game is over)."""
    status, spectator = await api.call("GET", f"/api/games/{game_id}")
    if status != 200 or spectator["status"] != "playing" or spectator["turn"] is None:
        return None
    seat = spectator["turn"]["seat"]
    status, view = await api.call("GET", f"/api/games/{game_id}", token=tokens[seat])
    if status != 200 or view["turn"] is None or view["turn"]["seat"] != seat:
        return None
    rules = rule_set(view["rules"]["name"], view["rules"]["options"])
    command = bots[seat].choose(seat_view_from_json(view, rules), rng)
    body = command_json(command, with_seat=False) | {
        "id": uuid.uuid4().hex,
        "expected_version": view["version"],
    }
    return await api.call("POST", f"/api/games/{game_id}/commands", body, tokens[seat])


async def illegal_layout(api: Api, game_id: str, token: str) -> tuple[int, Any]:
    """A play the rules refuse (a one-card meld): a rejected attempt, recorded in the log."""
    status, view = await api.call("GET", f"/api/games/{game_id}", token=token)
    if status != 200 or not view.get("hand"):
        return status, view
    body = {"id": uuid.uuid4().hex, "type": "play", "layout": [*view["table"], [view["hand"][0]]]}
    return await api.call("POST", f"/api/games/{game_id}/commands", body, token)


def seat_to_move(view: Json) -> int | None:
    turn = view.get("turn")
    return int(turn["seat"]) if turn else None


# --- the unrelated client, the steady player and the watcher --------------------------------


@dataclass
class Measures:
    """What the unrelated client saw, with the time of each observation."""

    latency: list[tuple[float, float, str]] = field(default_factory=list)  # start, s, answer
    answered: list[tuple[float, int]] = field(default_factory=list)  # the steady player's
    seen: dict[int, float] = field(default_factory=dict)  # version -> when the watcher got it
    player_answers: Counter[str] = field(default_factory=Counter)
    watcher_closed: list[str] = field(default_factory=list)


async def probe(api: Api, game_id: str, pace: float, stop: asyncio.Event, into: Measures) -> None:
    """Spectator GETs of the game and /healthz in turn, one at a time, every ``pace`` s."""
    paths = [f"/api/games/{game_id}", "/healthz"]
    n = 0
    while not stop.is_set():
        started = time.monotonic()
        try:
            status, doc = await api.call("GET", paths[n % 2], timeout=10.0)
            kind = answer_kind(status, doc)
        except TimeoutError:
            kind = "timeout"
        except aiohttp.ClientError as err:
            kind = type(err).__name__
        into.latency.append((started, time.monotonic() - started, kind))
        n += 1
        await asyncio.sleep(max(0.0, pace - (time.monotonic() - started)))


async def steady_player(
    api: Api, game_id: str, tokens: list[str], pace: float, stop: asyncio.Event, into: Measures
) -> None:
    """Bots play the game, one command every ``pace`` s; each answer's version noted."""
    rng = random.Random(7)
    bots = [BOTS["greedy"]() for _ in tokens]
    while not stop.is_set():
        started = time.monotonic()
        try:
            answer = await bot_move(api, game_id, tokens, bots, rng)
        except (TimeoutError, aiohttp.ClientError) as err:
            into.player_answers[type(err).__name__] += 1
            answer = None
        if answer is not None:
            status, doc = answer
            into.player_answers[answer_kind(status, doc)] += 1
            if isinstance(doc, dict) and isinstance(doc.get("version"), int):
                into.answered.append((time.monotonic(), doc["version"]))
        await asyncio.sleep(max(0.0, pace - (time.monotonic() - started)))


async def watcher(
    session: aiohttp.ClientSession,
    base: str,
    game_id: str,
    after: int,
    stop: asyncio.Event,
    into: Measures,
) -> None:
    """A socket on the game from ``after`` (so it gets every event): when each version came."""
    url = f"{base}/api/games/{game_id}/ws?after={after}"
    async with session.ws_connect(url, headers={"X-Forwarded-For": WATCHER}) as ws:
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                receiving = asyncio.ensure_future(ws.receive())
                await asyncio.wait([receiving, stopping], return_when=asyncio.FIRST_COMPLETED)
                if not receiving.done():
                    receiving.cancel()
                    break
                message = receiving.result()
                if message.type != aiohttp.WSMsgType.TEXT:
                    into.watcher_closed.append(f"{message.type.name} {message.data!r}")
                    break
                now = time.monotonic()
                doc = json.loads(message.data)
                versions = [e["version"] for e in doc.get("events", ())]
                if doc.get("type") == "view":
                    versions.append(doc["view"]["version"])
                for version in versions:
                    into.seen.setdefault(version, now)
        finally:
            stopping.cancel()


# --- the attacks (each runs in a process of its own: `edge.py attack SPEC`) -----------------


class Tally:
    """The attacker's answers and timings."""

    def __init__(self) -> None:
        self.answers: Counter[str] = Counter()
        self.seconds: list[float] = []
        self.notes: dict[str, Any] = {}

    async def timed(self, call: Awaitable[tuple[int, Any]], timeout_kind: str = "timeout") -> None:
        started = time.monotonic()
        try:
            status, doc = await call
            kind = answer_kind(status, doc)
        except TimeoutError:
            kind = timeout_kind
        except aiohttp.ClientError as err:
            kind = type(err).__name__
        self.answers[kind] += 1
        self.seconds.append(time.monotonic() - started)

    def result(self) -> Json:
        return {"answers": dict(self.answers), "seconds": self.seconds, **self.notes}


async def until_deadline(deadline: float, loops: int, body: Callable[[], Awaitable[None]]) -> None:
    """``loops`` concurrent loops of ``body`` until ``deadline`` (what is in flight is cut)."""

    async def loop() -> None:
        while time.monotonic() < deadline:
            await body()

    tasks = [asyncio.create_task(loop()) for _ in range(loops)]
    await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def attack_hint(api: Api, spec: Json, deadline: float, tally: Tally) -> None:
    """Hints on the hostile deal, a few at a time; each one's time and status. A hint still
    unanswered when the window closes is noted with how long it had waited."""
    budget = spec["hint_seconds"]
    pending: dict[int, float] = {}
    hints: list[tuple[float, str]] = []

    async def one() -> None:
        key = id(asyncio.current_task())
        pending[key] = time.monotonic()
        try:
            status, doc = await api.call(
                "GET",
                f"/api/games/{spec['game']}/hint",
                token=spec["tokens"][0],
                timeout=budget + 30.0,
            )
            kind = answer_kind(status, doc)
        except TimeoutError:
            kind = "timeout"
        except aiohttp.ClientError as err:
            kind = type(err).__name__
        hints.append((time.monotonic() - pending.pop(key), kind))

    await until_deadline(deadline, spec["concurrency"], one)
    now = time.monotonic()
    hints.extend((now - started, "unanswered") for started in pending.values())
    tally.answers.update(kind for _, kind in hints)
    tally.seconds = [s for s, _ in hints]
    tally.notes["hints"] = hints


async def attack_replay(api: Api, spec: Json, deadline: float, tally: Tally) -> None:
    """Concurrent live replays of the long game's turns (as a spectator)."""
    turns = spec["turns"]
    n = 0

    async def one() -> None:
        nonlocal n
        n += 1
        turn = turns[n % len(turns)]
        await tally.timed(
            api.call("GET", f"/api/games/{spec['game']}/replay?turn={turn}", timeout=60.0)
        )

    await until_deadline(deadline, spec["concurrency"], one)


async def attack_spam(api: Api, spec: Json, deadline: float, tally: Tally) -> None:
    """The seat to move sends illegal layouts in a loop (each a rejected attempt, an event and
    a log line); when its turn passes (a cap on rejections), the next seat goes on."""
    game, tokens = spec["game"], spec["tokens"]
    seat = [spec["seat"]]

    async def one() -> None:
        started = time.monotonic()
        try:
            status, doc = await illegal_layout(api, game, tokens[seat[0]])
            kind = answer_kind(status, doc)
        except TimeoutError:
            kind = "timeout"
        except aiohttp.ClientError as err:
            kind = type(err).__name__
        tally.answers[kind] += 1
        tally.seconds.append(time.monotonic() - started)
        if kind.startswith("409"):
            status, view = await api.call("GET", f"/api/games/{game}")
            moving = seat_to_move(view) if status == 200 else None
            if moving is None:
                await asyncio.sleep(0.1)
            else:
                seat[0] = moving

    await until_deadline(deadline, spec["concurrency"], one)


async def attack_create(api: Api, spec: Json, deadline: float, tally: Tally) -> None:
    """Game creations in a loop, several at a time, from one address."""
    body = {"rules": "robbers", "seats": 2}

    async def one() -> None:
        await tally.timed(api.call("POST", "/api/games", body))

    await until_deadline(deadline, spec["concurrency"], one)


class SlowSocket:
    """A WebSocket client that sends and never reads (a raw socket with a small receive
    buffer: what the server sends piles up on the server's side)."""

    def __init__(self, port: int, path: str) -> None:
        self.port = port
        self.path = path
        self.writer: asyncio.StreamWriter | None = None
        self.closed_after: float | None = None

    async def open(self) -> None:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
        reader, self.writer = await asyncio.open_connection(sock=sock, limit=4096)
        key = base64.b64encode(os.urandom(16)).decode()
        self.writer.write(
            (
                f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
                f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                f"Sec-WebSocket-Version: 13\r\nX-Forwarded-For: {ATTACKER}\r\n\r\n"
            ).encode()
        )
        await self.writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(f"no WebSocket: {head[:200]!r}")
        # From here on nothing is read: the kernel's small buffer fills, then the server's.

    async def send(self, text: str, started: float) -> bool | None:
        """One masked text frame: True sent, None not taken (the server reads no more from
        this socket), False the server has closed it."""
        assert self.writer is not None
        if self.closed_after is not None:
            return False
        payload = text.encode()
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        assert len(payload) < 126
        try:
            self.writer.write(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
            await asyncio.wait_for(self.writer.drain(), 0.5)
        except TimeoutError:
            return None  # the server stopped reading too; try again later
        except (ConnectionError, OSError):
            self.closed_after = time.monotonic() - started
            return False
        if self.writer.transport.is_closing():
            self.closed_after = time.monotonic() - started
            return False
        return True

    def abort(self) -> None:
        if self.writer is not None:
            self.writer.transport.abort()


async def attack_slow(api: Api, spec: Json, deadline: float, tally: Tally) -> None:
    """Sockets on the attacker's game that send ``sync`` from 0 and never read, while the
    attacker keeps that game moving (illegal layouts: news, so the gateway pushes to them)."""
    game, tokens = spec["game"], spec["tokens"]
    started = time.monotonic()
    sockets = [SlowSocket(spec["port"], f"/api/games/{game}/ws") for _ in range(spec["sockets"])]
    for s in sockets:
        await s.open()
    sync = json.dumps({"type": "sync", "after": 0})

    async def syncing(s: SlowSocket) -> None:
        while time.monotonic() < deadline:
            sent = await s.send(sync, started)
            if sent is False:
                return
            tally.answers["sync sent" if sent else "sync not taken"] += 1
            await asyncio.sleep(0.05)

    async def moving() -> None:
        seat = spec["seat"]
        while time.monotonic() < deadline:
            try:
                status, doc = await illegal_layout(api, game, tokens[seat])
                kind = answer_kind(status, doc)
            except (TimeoutError, aiohttp.ClientError) as err:
                kind = type(err).__name__
            tally.answers[f"move {kind}"] += 1
            if kind.startswith("409"):
                status, view = await api.call("GET", f"/api/games/{game}")
                seat = (seat_to_move(view) if status == 200 else None) or seat
            await asyncio.sleep(0.1)

    tasks = [asyncio.create_task(syncing(s)) for s in sockets]
    tasks.append(asyncio.create_task(moving()))
    await asyncio.wait(tasks, timeout=max(0.0, deadline - time.monotonic()))
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    closed = [s.closed_after for s in sockets if s.closed_after is not None]
    tally.notes["sockets_closed_by_server"] = len(closed)
    tally.notes["closed_after_s"] = [round(c, 2) for c in closed]
    for s in sockets:
        s.abort()


ATTACK_RUNNERS: dict[str, Callable[[Api, Json, float, Tally], Awaitable[None]]] = {
    "hint": attack_hint,
    "slow": attack_slow,
    "replay": attack_replay,
    "spam": attack_spam,
    "create": attack_create,
}


async def run_attack(spec: Json) -> Json:
    """The attacker's process: say "ready", attack for ``seconds``, print what it was told."""
    tally = Tally()
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        api = Api(session, spec["base"], ATTACKER)
        print("ready", flush=True)
        cpu = time.process_time()
        deadline = time.monotonic() + spec["seconds"]
        await ATTACK_RUNNERS[spec["kind"]](api, spec, deadline, tally)
    # Its own CPU time over the attack (its /proc entry is gone once it has exited).
    return tally.result() | {"cpu_seconds": time.process_time() - cpu}


# --- one attack against a fresh deployment ---------------------------------------------------


def quantile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def delivered(into: Measures, start: float, end: float, grace: float) -> tuple[int, int]:
    """(pushes delivered in time, pushes due) for the steady player's answers in the window."""
    due = [(t, v) for t, v in into.answered if start <= t < end]
    arrivals = sorted(into.seen.items())  # by version
    done = 0
    for t, version in due:
        if any(v >= version and seen <= t + grace for v, seen in arrivals):
            done += 1
    return done, len(due)


@dataclass
class Outcome:
    attack: str
    without: list[float]
    with_: list[float]
    unrelated_errors: Counter[str]
    pushes_without: tuple[int, int]
    pushes_with: tuple[int, int]
    attacker: Json
    hint_budget: float
    logs_per_s: tuple[float, float]
    notes: list[str] = field(default_factory=list)
    rounds: list[tuple[float, float]] = field(default_factory=list)  # p99 without, with
    # The share of a core each process used (gateway, referee, scoring, attacker).
    cpu: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))


def halt(service: Service, patience: float = 10.0) -> bool:
    """SIGTERM, and SIGKILL if it has not exited within ``patience`` s; whether it obeyed."""
    if service.popen.poll() is None:
        service.popen.send_signal(signal.SIGTERM)
    try:
        service.popen.wait(patience)
        obeyed = True
    except subprocess.TimeoutExpired:
        service.popen.kill()
        service.popen.wait()
        obeyed = False
    service.close()
    return obeyed


def cpu_seconds(pids: list[int]) -> list[float]:
    """Each process's CPU time so far (user and system, from /proc; 0 where unreadable)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            out.append((int(fields[11]) + int(fields[12])) / tick)
        except (OSError, IndexError, ValueError):
            out.append(0.0)
    return out


def log_lines(services: list[Service]) -> int:
    return sum(s.output().count("\n") for s in services)


async def build_long_game(
    deployment: Deployment, session: aiohttp.ClientSession, events: int, budget_s: float
) -> tuple[str, list[str], list[int]]:
    """A live game with about ``events`` events: each turn, rejected layouts before the bots'
    moves. Built through a gateway of its own without limits, stopped afterwards."""
    builder = deployment.start("gateway", "builder", None, **UNBOUNDED)
    await wait_ready(session, builder)
    api = Api(session, f"http://127.0.0.1:{builder.port}", SETUP)
    game_id, tokens = await api.new_game("robbers", 2, {"match_rounds": 20})
    rng = random.Random(3)
    bots = [BOTS["greedy"]() for _ in tokens]
    deadline = time.monotonic() + budget_s
    version, turns = 0, set()
    while version < events and time.monotonic() < deadline:
        status, view = await api.call("GET", f"/api/games/{game_id}")
        if view["status"] != "playing":
            break
        seat = seat_to_move(view)
        if seat is None:
            await asyncio.sleep(0.05)
            continue
        turns.add(view["turn"]["number"])
        for _ in range(20):
            status, doc = await illegal_layout(api, game_id, tokens[seat])
            if status != 422:
                break
            version = doc["version"]
        answer = await bot_move(api, game_id, tokens, bots, rng)
        if answer is not None and isinstance(answer[1], dict):
            version = answer[1].get("version", version)
    halt(builder)
    return game_id, tokens, sorted(turns)


async def one_attack(
    kind: str, redis: RedisServer, logs: Path, args: argparse.Namespace
) -> Outcome:
    settings = {
        # The limits as deployed (the fault harness turns those per address off for its tests'
        # players, who all come from 127.0.0.1; here every client has an address of its own).
        **DEFAULT_ADDRESS_LIMITS,
        "RUMMY_TRUSTED_PROXIES": "127.0.0.1",
        "RUMMY_HINT_SECONDS": str(args.hint_seconds),
        "RUMMY_LOG_LEVEL": "info",
    }
    deployment = Deployment(redis, logs, settings)
    notes: list[str] = []
    connector = aiohttp.TCPConnector(limit=0)
    try:
        async with aiohttp.ClientSession(connector=connector) as session:
            referee = deployment.start("referee", f"referee-{kind}")
            scoring = deployment.start("scoring", f"scoring-{kind}")
            await wait_ready(session, referee, scoring)
            spec: Json = {"kind": kind, "seconds": args.seconds}
            if kind in ("replay", "slow"):  # a long game: a replay re-judges many commands,
                # a sync from 0 sends many events
                events = args.replay_events if kind == "replay" else args.slow_events
                game, tokens, turns = await build_long_game(
                    deployment, session, events, max(30.0, args.seconds * 6)
                )
                spec |= {"game": game, "tokens": tokens, "turns": turns}
                spec |= {"concurrency": 20} if kind == "replay" else {"sockets": 4}
            gateway = deployment.start("gateway", f"gateway-{kind}")
            await wait_ready(session, gateway)
            base = f"http://127.0.0.1:{gateway.port}"
            spec |= {"base": base, "port": gateway.port, "nice": args.attacker_nice}
            setup = Api(session, base, SETUP)
            if kind == "hint":
                game, tokens = await setup.new_game("rummikub", 2, HOSTILE)
                spec |= {
                    "game": game,
                    "tokens": tokens,
                    "concurrency": 3,
                    "hint_seconds": args.hint_seconds,
                }
            elif kind == "spam":
                game, tokens = await setup.new_game("robbers", 2, {"match_rounds": 20})
                spec |= {"game": game, "tokens": tokens, "concurrency": 4}
            if kind in ("spam", "slow"):
                _, view = await setup.call("GET", f"/api/games/{spec['game']}")
                spec["seat"] = seat_to_move(view) or 0
            elif kind == "create":
                spec |= {"concurrency": 8}

            other, other_tokens = await setup.new_game("robbers", 2, {"match_rounds": 20})
            _, view = await setup.call("GET", f"/api/games/{other}")
            measures = Measures()
            stop = asyncio.Event()
            own = [aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) for _ in range(3)]
            tasks = [
                asyncio.create_task(
                    probe(Api(own[0], base, UNRELATED), other, args.pace, stop, measures)
                ),
                asyncio.create_task(
                    steady_player(
                        Api(own[1], base, STEADY),
                        other,
                        other_tokens,
                        args.player_pace,
                        stop,
                        measures,
                    )
                ),
                asyncio.create_task(watcher(own[2], base, other, view["version"], stop, measures)),
            ]
            services = [gateway, referee, scoring]
            rounds: list[Round] = []
            attacker: Json = {}
            try:
                await asyncio.sleep(1.0)  # warm: connections made, caches filled
                window_s = args.seconds / args.rounds
                for _ in range(args.rounds):
                    # Without, then with, in turn: a minute of the machine's own noise (other
                    # processes on its cores) falls on both sides, not on one.
                    pids = [service.pid for service in services]
                    lines0, t0, cpu0 = log_lines(services), time.monotonic(), cpu_seconds(pids)
                    await asyncio.sleep(window_s)
                    lines1, t1, cpu1 = log_lines(services), time.monotonic(), cpu_seconds(pids)
                    one = await attacker_process(spec | {"seconds": window_s}, services)
                    t2, t3 = one.pop("window")
                    cpu2, cpu3 = one.pop("cpu")
                    lines3 = log_lines(services)
                    rounds.append(
                        Round(
                            t0,
                            t1,
                            t2,
                            t3,
                            lines1 - lines0,
                            lines3 - lines1,
                            [b - a for a, b in zip(cpu0, cpu1, strict=True)] + [0.0],
                            [b - a for a, b in zip(cpu2, cpu3, strict=True)],
                        )
                    )
                    attacker = merge_attacker(attacker, one)
                    # The attack's leftovers (sockets it dropped, pushes still due) settle
                    # outside both windows.
                    await asyncio.sleep(args.push_grace)
            finally:
                stop.set()
                await asyncio.wait(tasks, timeout=15)
                for task in tasks:
                    task.cancel()
                results = await asyncio.gather(*tasks, return_exceptions=True)
                for s in own:
                    await s.close()
            for result in results:
                if isinstance(result, BaseException) and not isinstance(
                    result, asyncio.CancelledError
                ):
                    notes.append(f"a measuring client failed: {result!r}")
            if measures.watcher_closed:
                notes.append(f"the watcher's socket ended: {measures.watcher_closed[0]}")
            if not halt(gateway):
                notes.append("the gateway ignored SIGTERM (killed)")
            halt(referee)
            halt(scoring)
    finally:
        deployment.close()

    def window(a: float, b: float) -> list[float]:
        return [s for started, s, _ in measures.latency if a <= started < b]

    def pushes(windows: list[tuple[float, float]]) -> tuple[int, int]:
        done = [delivered(measures, a, b, args.push_grace) for a, b in windows]
        return sum(d for d, _ in done), sum(n for _, n in done)

    errors = Counter(
        k
        for started, _, k in measures.latency
        if k != "200" and any(r.t2 <= started < r.t3 for r in rounds)
    )
    seconds_without = sum(r.t1 - r.t0 for r in rounds)
    seconds_with = sum(r.t3 - r.t2 for r in rounds)
    return Outcome(
        attack=kind,
        without=[x for r in rounds for x in window(r.t0, r.t1)],
        with_=[x for r in rounds for x in window(r.t2, r.t3)],
        unrelated_errors=errors,
        pushes_without=pushes([(r.t0, r.t1) for r in rounds]),
        pushes_with=pushes([(r.t2, r.t3) for r in rounds]),
        attacker=attacker,
        hint_budget=args.hint_seconds,
        logs_per_s=(
            sum(r.lines_without for r in rounds) / max(1e-9, seconds_without),
            sum(r.lines_with for r in rounds) / max(1e-9, seconds_with),
        ),
        notes=notes,
        rounds=[
            (quantile(window(r.t0, r.t1), 0.99), quantile(window(r.t2, r.t3), 0.99)) for r in rounds
        ],
        cpu=(
            shares([r.cpu_without for r in rounds], seconds_without),
            shares([r.cpu_with for r in rounds], seconds_with),
        ),
    )


@dataclass
class Round:
    """One window without the attack, then one with it (monotonic times, log lines)."""

    t0: float
    t1: float
    t2: float
    t3: float
    lines_without: int
    lines_with: int
    cpu_without: list[float]  # CPU seconds of the gateway, the referee, scoring, the attacker
    cpu_with: list[float]


def shares(cpu: list[list[float]], seconds: float) -> list[float]:
    """Each process's CPU seconds over the rounds as a share of one core over ``seconds``."""
    return [sum(per_round) / max(1e-9, seconds) for per_round in zip(*cpu, strict=True)]


def merge_attacker(into: Json, one: Json) -> Json:
    """The attacker's figures over several rounds: counts added, lists joined."""
    merged = dict(into)
    for key, value in one.items():
        if key not in merged:
            merged[key] = value
        elif isinstance(value, dict):
            merged[key] = dict(Counter(merged[key]) + Counter(value))
        elif isinstance(value, list | int | float):
            merged[key] = merged[key] + value
    return merged


async def attacker_process(spec: Json, services: list[Service]) -> Json:
    """Run the attack in a process of its own; its figures, the window (monotonic times of
    this process) it attacked in, and the ``services``' CPU times at its start and end."""
    nice = int(spec.get("nice", 0))
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(Path(__file__)),
        "attack",
        json.dumps(spec),
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
        # An attacker on a machine of its own takes none of the server's cores: at a lower
        # priority here it takes only what the service leaves idle.
        preexec_fn=(lambda: os.nice(nice)) if nice else None,
    )
    assert child.stdout is not None
    try:
        ready = await asyncio.wait_for(child.stdout.readline(), 60)
        if ready.strip() != b"ready":
            raise RuntimeError(f"the attacker did not start: {ready!r}")
        pids = [service.pid for service in services]
        start, cpu_start = time.monotonic(), cpu_seconds(pids)
        last = await asyncio.wait_for(child.stdout.read(), spec["seconds"] + 90)
        end = min(time.monotonic(), start + spec["seconds"])
        cpu_end = cpu_seconds(pids)  # (the attack's last requests, cut: a little over)
        await child.wait()
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    result: Json = json.loads(last.strip().splitlines()[-1])
    result["window"] = (start, end)
    result["cpu"] = ([*cpu_start, 0.0], [*cpu_end, result.pop("cpu_seconds")])
    return result


# --- the table ------------------------------------------------------------------------------


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def share(pushes: tuple[int, int]) -> str:
    done, due = pushes
    return f"{100 * done / due:.0f}% ({done}/{due})" if due else "- (0/0)"


def attacker_summary(outcome: Outcome) -> str:
    answers: Counter[str] = Counter(outcome.attacker.get("answers", {}))
    shown = ", ".join(f"{k}: {v}" for k, v in answers.most_common(4))
    defended = sum(v for k, v in answers.items() if k.startswith(("429", "503")))
    extra = f"; {defended} refused (429/503)" if defended else ""
    if outcome.attack == "slow":
        closed = outcome.attacker.get("sockets_closed_by_server", 0)
        extra += f"; {closed} sockets closed by the server"
    return (shown or "none in the window") + extra  # a slow machine may answer none: said so


def hint_summary(outcome: Outcome) -> tuple[str, bool | None]:
    if outcome.attack != "hint":
        return "-", None
    hints = outcome.attacker.get("hints", [])
    limit = outcome.hint_budget + HINT_SLACK
    # A hint still in flight when the window closed is late only if it had waited too long.
    late = [(s, k) for s, k in hints if s > limit or k == "timeout"]
    longest = max((s for s, _ in hints), default=0.0)
    ok = not late and bool(hints)
    return f"{len(hints) - len(late)}/{len(hints)} within {limit:g} s (longest {longest:.1f} s)", ok


def verdict(outcome: Outcome) -> tuple[str, float]:
    p99_without, p99_with = quantile(outcome.without, 0.99), quantile(outcome.with_, 0.99)
    ratio = p99_with / p99_without if p99_without > 0 else float("inf")
    failed = []
    if not ratio <= P99_LIMIT:
        failed.append(f"p99 {ratio:.1f}x")
    done, due = outcome.pushes_with
    if due == 0 or done < due:
        failed.append("pushes lost" if due else "no pushes due")
    _, ok = hint_summary(outcome)
    if ok is False:
        failed.append("hints late")
    return ("hold" if not failed else "FAIL: " + ", ".join(failed)), ratio


HEADER = (
    "| attack | unrelated p50 ms (without / with) | unrelated p99 ms (without / with) "
    "| p99 ratio | pushes delivered (without / with) | attacker's answers | hints "
    "| log lines/s (without / with) | targets |"
)
RULE = "|---|---|---|---|---|---|---|---|---|"


def row(outcome: Outcome) -> str:
    result, ratio = verdict(outcome)
    hints, _ = hint_summary(outcome)
    p50 = f"{ms(quantile(outcome.without, 0.5))} / {ms(quantile(outcome.with_, 0.5))}"
    p99 = f"{ms(quantile(outcome.without, 0.99))} / {ms(quantile(outcome.with_, 0.99))}"
    pushes = f"{share(outcome.pushes_without)} / {share(outcome.pushes_with)}"
    logs = f"{outcome.logs_per_s[0]:.0f} / {outcome.logs_per_s[1]:.0f}"
    return (
        f"| {outcome.attack} | {p50} | {p99} | {ratio:.1f}x | {pushes} "
        f"| {attacker_summary(outcome)} | {hints} | {logs} | {result} |"
    )


async def bench(args: argparse.Namespace) -> list[Outcome]:
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="edge-bench-") as folder:
        redis = RedisServer(Path(folder) / "redis")
        redis.start()
        try:
            for kind in args.attacks:
                print(f"# {kind}: {args.seconds:g} s without, {args.seconds:g} s with", flush=True)
                outcome = await one_attack(kind, redis, Path(folder), args)
                outcomes.append(outcome)
                print(row(outcome), flush=True)
                without, with_ = (", ".join(f"{100 * c:.0f}%" for c in cs) for cs in outcome.cpu)
                print(
                    f"#   CPU, gateway, referee, scoring, attacker (without / with): "
                    f"{without} / {with_}",
                    flush=True,
                )
                if len(outcome.rounds) > 1:
                    shown = ", ".join(f"{ms(a)} / {ms(b)}" for a, b in outcome.rounds)
                    print(f"#   p99 ms by round (without / with): {shown}", flush=True)
                for note in outcome.notes:
                    print(f"#   {note}", flush=True)
                if outcome.unrelated_errors:
                    print(
                        f"#   the unrelated client's other answers during the attack: "
                        f"{dict(outcome.unrelated_errors)}",
                        flush=True,
                    )
        finally:
            redis.close()
    return outcomes


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["attack"]:
        print(json.dumps(asyncio.run(run_attack(json.loads(argv[1])))), flush=True)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seconds",
        type=float,
        default=8.0,
        help="seconds measured without the attack, and as many with it (split over --rounds)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="the windows come in this many turns (without, with, without, with...), each "
        "a share of --seconds: the machine's own noise falls on both sides",
    )
    parser.add_argument(
        "--attacks",
        default=",".join(ATTACKS),
        help=f"which attacks, in order (of {', '.join(ATTACKS)})",
    )
    parser.add_argument(
        "--replay-events", type=int, default=1000, help="events of the long game the replays are of"
    )
    parser.add_argument(
        "--slow-events",
        type=int,
        default=600,
        help="events of the game the slow sockets sync from 0 (each sync sends them all)",
    )
    parser.add_argument(
        "--hint-seconds",
        type=float,
        default=2.0,
        help="the hint budget the gateway is given (RUMMY_HINT_SECONDS)",
    )
    parser.add_argument(
        "--push-grace",
        type=float,
        default=2.0,
        help="a push counts as delivered within this many seconds",
    )
    parser.add_argument(
        "--attacker-nice",
        type=int,
        default=0,
        help="run the attacker's process this much lower in CPU priority (0-19): as if it ran "
        "on a machine of its own, taking none of the service's cores (default 0: it competes)",
    )
    parser.add_argument(
        "--pace", type=float, default=0.04, help="seconds between the unrelated client's requests"
    )
    parser.add_argument(
        "--player-pace",
        type=float,
        default=0.75,
        help="seconds between the steady player's commands",
    )
    args = parser.parse_args(argv)
    args.attacks = [a for a in args.attacks.split(",") if a]
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    unknown = set(args.attacks) - set(ATTACKS)
    if unknown:
        parser.error(f"unknown attacks {sorted(unknown)}; allowed: {', '.join(ATTACKS)}")
    if shutil.which("redis-server") is None:
        parser.error("redis-server is not on the PATH (the bench runs a private one)")
    started = time.monotonic()
    outcomes = asyncio.run(bench(args))
    print()
    print(
        f"Edge bench ({args.seconds:g} s windows, hint budget {args.hint_seconds:g} s, "
        f"targets: p99 at most {P99_LIMIT:g}x, every push within {args.push_grace:g} s, "
        f"every hint within its budget + {HINT_SLACK:g} s), {time.monotonic() - started:.0f} s:"
    )
    print(HEADER)
    print(RULE)
    for outcome in outcomes:
        print(row(outcome))
    return 0


if __name__ == "__main__":
    sys.exit(main())
