"""What the fault tests share: a deployment of the `rummy` processes on a redis-server of the
test's own (``tests/servers.py``; stopped and started again on the same port and directory when a
test says so), bot players over HTTP that behave as a careful client does, and the checks every
test ends with.

A player sends every command with an id and ``expected_version``. An answer is an
acknowledgement only when it is 200 (accepted) or 422 ``illegal_layout`` (a rejected attempt,
recorded in the log); a 5xx, a 429 or a dropped connection is not, and the player sends the
same command again with the same id until it gets one, with backoff. Every acknowledgement goes
to a ledger, which the checks hold against the logs at the end.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
import time
import uuid
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import redis.asyncio as aioredis

from shared.audit.source import load_game
from shared.audit.verify import audit_log
from shared.core.commands import command_json
from shared.core.rulesets import rule_set
from shared.core.views import seat_view_from_json
from shared.infra.client import RedisClient
from shared.infra.connection import connect
from shared.infra.gamelog import fold_stored
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from shared.infra.stored import StoredEvent
from shared.play.bots import BOTS
from tests.ports import spare_port
from tests.servers import Process, RedisServer

ROOT = Path(__file__).resolve().parents[2]
NO_ADDRESS_LIMITS = {
    "RUMMY_LIMIT_ADDRESS_PER_SECOND": "0",
    "RUMMY_LIMIT_CREATE_PER_MINUTE": "0",
    "RUMMY_LIMIT_SEAT_PER_MINUTE": "0",
    "RUMMY_LIMIT_REPLAY_PER_MINUTE": "0",
    "RUMMY_LIMIT_READ_PER_SECOND": "0",
}
Json = dict[str, Any]


# --- the rummy processes ----------------------------------------------------------------------


class Service(Process):
    """One `rummy` process (under ``tests/faults/rummy_main.py``), its output in a file."""

    def __init__(self, name: str, command: str, env: dict[str, str], port: int, logs: Path):
        args = [sys.executable, "-m", "tests.faults.rummy_main", command]
        super().__init__(name, args, env, logs, port, append=True)

    def hung(self) -> None:
        self.popen.send_signal(signal.SIGUSR1)  # rummy_main: print where every task waits
        time.sleep(1.0)

    def stop(self, sig: int = signal.SIGTERM, shown: int = 8000) -> int:
        return super().stop(sig, shown)


@dataclass
class Deployment:
    """The processes of one test on its own Redis, all under one key prefix."""

    redis: RedisServer
    logs: Path
    settings: dict[str, str] = field(default_factory=dict)  # RUMMY_* beyond the defaults here
    prefix: str = field(default_factory=lambda: f"f{uuid.uuid4().hex[:8]}:")
    partitions: int = 4
    services: list[Service] = field(default_factory=list)

    def env(self, consumer: str, port: int, **extra: str) -> dict[str, str]:
        env = {
            k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("RUMMY_")
        }
        return env | {
            "REDIS_URL": self.redis.url,
            "RUMMY_PREFIX": self.prefix,
            "RUMMY_PARTITIONS": str(self.partitions),
            "RUMMY_HTTP_HOST": "127.0.0.1",
            "RUMMY_HTTP_PORT": str(port),
            "RUMMY_CONSUMER": consumer,
            "RUMMY_CLAIM_IDLE_MS": "1000",
            "RUMMY_LEASE_MS": "1000",
            "RUMMY_DRAIN_SECONDS": "5",
            "RUMMY_COMMAND_TIMEOUT": "5",
            "RUMMY_ALLOW_SEEDED_GAMES": "true",
            "RUMMY_LOG_LEVEL": "info",
            "PYTHONUNBUFFERED": "1",
            # The players of a test all come from 127.0.0.1: no limits per client address.
            **NO_ADDRESS_LIMITS,
            **self.settings,
            **extra,
        }

    def start(self, command: str, name: str, port: int | None = None, **extra: str) -> Service:
        """Start `rummy COMMAND` as consumer ``name`` (its health or API port: ``port``)."""
        port = port or spare_port()
        service = Service(name, command, self.env(name, port, **extra), port, self.logs)
        self.services.append(service)
        return service

    def close(self) -> None:
        for service in self.services:
            service.close()


def metric(text: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples (with those labels) in a /metrics text."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith("#") or not (line.startswith(name + "{") or line.startswith(name + " ")):
            continue
        sample, value = line.rsplit(" ", 1)
        if all(f'{k}="{v}"' in sample for k, v in labels.items()):
            total += float(value)
    return total


# --- players over HTTP ------------------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    """An acknowledged command: its events are in the log and end at ``version``:``head``."""

    game_id: str
    cid: str  # the command id in the log: "<seat>:<the client's id>"
    status: int  # 200 accepted, 422 rejected attempt
    version: int
    head: str


@dataclass
class Ledger:
    """What the players were told, across every game of a test."""

    acks: list[Ack] = field(default_factory=list)
    retries: int = 0  # requests sent again (same command id for a command)
    errors: Counter[str] = field(default_factory=Counter)  # unacknowledged answers, by kind
    refusals: Counter[str] = field(default_factory=Counter)  # 409 answers, by code


class Client:
    """A careful client of one gateway: retries what was not answered (with backoff, the same
    command id), gives up only after ``patience`` seconds without an answer."""

    def __init__(
        self, session: aiohttp.ClientSession, port: int, ledger: Ledger, patience: float = 60.0
    ) -> None:
        self.session = session
        self.base = f"http://127.0.0.1:{port}"
        self.ledger = ledger
        self.patience = patience

    async def call(
        self, method: str, path: str, body: Any = None, token: str | None = None
    ) -> tuple[int, Any]:
        """One request, no retry."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with self.session.request(
            method,
            self.base + path,
            json=body,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=30),
        ) as response:
            text = await response.text()
            try:
                doc = json.loads(text) if text else None
            except ValueError:
                doc = text
            return response.status, doc

    async def retrying(
        self, method: str, path: str, body: Any = None, token: str | None = None
    ) -> tuple[int, Any]:
        """The first answer that is not a 5xx, a 429 or a dropped connection."""
        delay = 0.05
        deadline = time.monotonic() + self.patience
        while True:
            try:
                status, doc = await self.call(method, path, body, token)
            except (aiohttp.ClientError, TimeoutError, OSError) as err:
                self.ledger.errors[f"connection: {type(err).__name__}"] += 1
            else:
                if status < 500 and status != 429:
                    return status, doc
                code = doc.get("error", {}).get("code") if isinstance(doc, dict) else None
                self.ledger.errors[f"{status} {code}"] += 1
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{method} {path}: no answer in {self.patience} s ({dict(self.ledger.errors)})"
                )
            self.ledger.retries += 1
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)

    async def view(self, game_id: str, token: str | None = None) -> Json:
        status, doc = await self.retrying("GET", f"/api/games/{game_id}", token=token)
        assert status == 200, (status, doc)
        return dict(doc)

    async def new_game(
        self, rules: str, seats: int, options: Json, seed: str | None = None
    ) -> tuple[str, list[str]]:
        """Create, seat and start a game (no retries: tests set their games up before the
        faults begin; tests/faults/test_idempotency.py retries with an Idempotency-Key)."""
        body: Json = {"rules": rules, "seats": seats, "options": options}
        if seed is not None:
            body["seed"] = seed
        status, doc = await self.call("POST", "/api/games", body)
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

    async def command(self, game_id: str, seat: int, token: str, body: Json) -> tuple[int, Json]:
        """Send one command until it is answered; note an acknowledgement in the ledger."""
        status, doc = await self.retrying("POST", f"/api/games/{game_id}/commands", body, token)
        cid = f"{seat}:{body['id']}"
        if status == 200:
            self.ledger.acks.append(Ack(game_id, cid, 200, doc["version"], doc["head"]))
        elif status == 422 and doc["error"]["code"] == "illegal_layout":
            self.ledger.acks.append(Ack(game_id, cid, 422, doc["version"], doc["head"]))
        elif status == 409:
            self.ledger.refusals[doc["error"]["code"]] += 1
        else:
            raise AssertionError(f"command {body} answered {status} {doc}")
        return status, doc


async def play(
    client: Client,
    game_id: str,
    tokens: list[str],
    bots: list[str],
    seed: int = 0,
    pace: float = 0.0,
    between_rounds: float = 60.0,
    max_commands: int = 3000,
    stop_after: int | None = None,
    seats: Collection[int] | None = None,
) -> Json:
    """Play a game to its end through the API with bots; returns the final spectator view.
    ``pace``: seconds to wait after each command (a game that lasts); ``stop_after``: return
    the spectator view after that many commands instead (call again to play on); ``seats``:
    the seats played here (None: all), the others' turns waited out (a bot's seat, which the
    bots service plays)."""
    rng = random.Random(seed)
    players = [BOTS[name]() for name in bots]
    idle_since: float | None = None
    for sent in range(max_commands):
        while True:
            spectator = await client.view(game_id)
            if spectator["status"] == "finished" or sent == stop_after:
                return spectator
            turn = spectator["turn"]
            if turn is not None and (seats is None or turn["seat"] in seats):
                idle_since = None
                break
            # Between rounds (scoring deals on) or another player's turn.
            idle_since = idle_since or time.monotonic()
            waited = time.monotonic() - idle_since
            assert waited < between_rounds, f"{game_id}: nothing to play after {waited:.0f} s"
            await asyncio.sleep(0.02)
        seat = spectator["turn"]["seat"]
        view = await client.view(game_id, tokens[seat])
        if view["turn"] is None or view["turn"]["seat"] != seat:
            continue  # it moved on between the two reads
        rules = rule_set(view["rules"]["name"], view["rules"]["options"])
        command = players[seat].choose(seat_view_from_json(view, rules), rng)
        body = command_json(command, with_seat=False) | {
            "id": uuid.uuid4().hex,
            "expected_version": view["version"],
        }
        await client.command(game_id, seat, tokens[seat], body)
        if pace:
            await asyncio.sleep(pace)
    raise AssertionError(f"game {game_id} did not end in {max_commands} commands")


# --- the checks -------------------------------------------------------------------------------


def command_runs(events: list[StoredEvent]) -> dict[str, list[list[int]]]:
    """Command id -> the runs of consecutive versions it appended (one run: applied once)."""
    runs: dict[str, list[list[int]]] = {}
    previous: str | None = None
    for event in events:
        cid = event.command_id
        if cid is not None:
            if cid == previous:
                runs[cid][-1].append(event.version)
            else:
                runs.setdefault(cid, []).append([event.version])
        previous = cid
    return runs


async def check_logs(
    url: str,
    prefix: str,
    game_ids: list[str],
    ledger: Ledger,
    finished: bool = True,
    cluster: bool = False,
) -> dict[str, list[StoredEvent]]:
    """Every game's log audits clean (chain, head, replay, seed, scores); every game is
    finished; every command id appended once; every acknowledged command is in its game's log
    with the version and head its answer named (``cluster``: ``url`` names a Redis Cluster's
    seeds). Returns the logs."""
    client: RedisClient = (
        connect(Settings(redis_url=url, redis_cluster=True, prefix=prefix))
        if cluster
        else aioredis.Redis.from_url(url)
    )
    logs: dict[str, list[StoredEvent]] = {}
    try:
        store = RedisEventStore(client, prefix)
        for game_id in game_ids:
            stored = await load_game(store, game_id)
            audit = audit_log(
                stored.events, game_id=game_id, head=stored.head, defects=stored.defects
            )
            report = [v.to_json() for v in audit.verdicts]
            assert audit.ok, (game_id, report)
            wanted = ("chain", "head", "replay", "seed", "scores") if finished else ("chain",)
            for check in wanted:
                assert audit.verdict(check).status == "ok", (game_id, check, report)
            events = await store.read(game_id)
            logs[game_id] = events
            state = fold_stored(events).state
            if finished:
                assert state.status == "finished" and state.winners, (game_id, state.status)
            for cid, runs in command_runs(events).items():
                assert len(runs) == 1, f"{game_id}: command {cid} appended {len(runs)} times"
    finally:
        await client.aclose()
    for ack in ledger.acks:
        acked = command_runs(logs[ack.game_id]).get(ack.cid)
        assert acked, f"acknowledged command {ack.cid} of {ack.game_id} is not in its log"
        last = logs[ack.game_id][acked[0][-1] - 1]
        assert (last.version, last.hash) == (ack.version, ack.head), (ack, last.version)
        if ack.status == 422:  # a recorded attempt; one past max_rejections ends the turn too
            kinds = [logs[ack.game_id][v - 1].type for v in acked[0]]
            assert kinds[:1] == ["CommandRejected"], kinds
            assert len(kinds) == 1 or kinds[1] == "TurnForfeited", kinds
    return logs
