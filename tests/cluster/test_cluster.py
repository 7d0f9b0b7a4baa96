"""The whole service on a real three-master Redis Cluster (see ``conftest.py``): the gateway,
two referees and two scoring processes run as separate ``rummy`` processes with
``RUMMY_REDIS_CLUSTER=true``, bots play whole games through the gateway's HTTP API, and the
games' keys land on every node.

While the games are played, one game's slot is moved to another node (``CLUSTER SETSLOT``
``IMPORTING``/``MIGRATING``, ``MIGRATE``, ``SETSLOT NODE``): the services must follow the ASK and
MOVED redirections (redis-py's cluster client) and finish that game too. Every game must end
with a log whose hash chain verifies.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from redis.exceptions import ClusterCrossSlotError, MovedError, RedisClusterException

from shared.core.commands import command_json
from shared.core.rulesets import rule_set
from shared.core.views import seat_view_from_json
from shared.infra.chain import verify_chain
from shared.infra.connection import connect, disconnect
from shared.infra.keys import Keys
from shared.infra.settings import Settings
from shared.infra.store.redis import APPEND_SCRIPT, RedisEventStore
from shared.infra.stored import GENESIS_HASH
from shared.play.bots import BOTS
from tests.cluster.conftest import Cluster
from tests.ports import spare_port
from tests.servers import Process, url_ok, wait_until

PARTITIONS = 4
DRAIN_SECONDS = 5.0
GAMES_PER_NODE = 2
RULES = "robbers"
OPTIONS = {"match_rounds": 1}  # one round (and any tie-break rounds): about 130 turns a game
BOTS_BY_GAME = (["greedy", "random"], ["greedy", "clumsy"], ["random", "greedy"])


# --- the services, as separate processes ------------------------------------------------------


@dataclass
class Stack:
    cluster: Cluster
    prefix: str
    tmp: Path
    processes: list[Process] = field(default_factory=list)
    url: str = ""  # REDIS_URL (seeds); empty: the cluster's first node

    def start(self, command: str, name: str) -> Process:
        port = spare_port()
        env = {
            **os.environ,
            "REDIS_URL": self.url or self.cluster.url,
            "RUMMY_REDIS_CLUSTER": "true",
            "RUMMY_PREFIX": self.prefix,
            "RUMMY_PARTITIONS": str(PARTITIONS),
            "RUMMY_HTTP_HOST": "127.0.0.1",
            "RUMMY_HTTP_PORT": str(port),
            "RUMMY_CONSUMER": name,
            "RUMMY_CLAIM_IDLE_MS": "1000",
            "RUMMY_DRAIN_SECONDS": str(DRAIN_SECONDS),
            "RUMMY_COMMAND_TIMEOUT": "10",
            "RUMMY_RATE_PER_SECOND": "1000",
            # Every game from one address: no limits per address (the limits' script and keys
            # still run on the cluster: per token).
            "RUMMY_LIMIT_ADDRESS_PER_SECOND": "0",
            "RUMMY_LIMIT_CREATE_PER_MINUTE": "0",
            "RUMMY_LIMIT_SEAT_PER_MINUTE": "0",
            "RUMMY_LIMIT_REPLAY_PER_MINUTE": "0",
            "RUMMY_LIMIT_READ_PER_SECOND": "0",
            "PYTHONUNBUFFERED": "1",
        }
        args = [sys.executable, "-m", "services.main", command]
        process = Process(name, args, env, self.tmp, port)
        self.processes.append(process)
        return process

    def wait_ready(self, timeout: float = 60) -> None:
        for process in self.processes:

            def ready(process: Process = process) -> bool:
                if not process.alive:
                    raise AssertionError(f"{process.name} exited:\n{process.output()[-3000:]}")
                return url_ok(f"http://127.0.0.1:{process.port}/readyz")

            def why(process: Process = process) -> str:
                return f"{process.name} not ready:\n{process.output()[-3000:]}"

            wait_until(ready, timeout, every=0.1, message=why)

    @property
    def gateway(self) -> Process:
        return self.processes[0]

    def stop(self) -> dict[str, int | None]:
        """SIGTERM every process; their exit codes (None: had to be killed)."""
        codes: dict[str, int | None] = {}
        for process in self.processes:
            if process.popen.poll() is None:
                process.popen.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                codes[process.name] = process.popen.wait(DRAIN_SECONDS + 10)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()
                codes[process.name] = None
        return codes


@pytest.fixture(scope="module")
def stack(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """Gateway, two referees and two scoring processes against the cluster (as the prod overlay
    runs them); stopped (SIGTERM) at the end."""
    built = Stack(cluster, f"c{uuid.uuid4().hex[:8]}:", tmp_path_factory.mktemp("services"))
    try:
        built.start("gateway", "gateway-0")
        built.start("referee", "referee-0")
        built.start("referee", "referee-1")
        built.start("scoring", "scoring-0")
        built.start("scoring", "scoring-1")  # prod runs two: they share the feed
        built.wait_ready()
        yield built
    finally:
        built.stop()
        for process in built.processes:
            process.close()


# --- a client of the public API, with bots ----------------------------------------------------


class Api:
    def __init__(self, session: aiohttp.ClientSession, port: int) -> None:
        self.session = session
        self.base = f"http://127.0.0.1:{port}"
        self.hosts: dict[str, str] = {}

    async def call(
        self, method: str, path: str, body: Any = None, token: str | None = None
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with self.session.request(
            method, self.base + path, json=body, headers=headers
        ) as response:
            return response.status, await response.json(content_type=None)

    async def create(self) -> str:
        status, body = await self.call(
            "POST", "/api/games", {"rules": RULES, "seats": 2, "options": OPTIONS}
        )
        assert status == 201, body
        self.hosts[body["game_id"]] = body["host_token"]
        return str(body["game_id"])

    async def seat_and_start(self, game_id: str) -> list[str]:
        tokens = []
        for n in range(2):
            status, body = await self.call("POST", f"/api/games/{game_id}/seats", {"name": f"p{n}"})
            assert status == 201 and body["seat"] == n, body
            tokens.append(body["token"])
        status, body = await self.call(
            "POST", f"/api/games/{game_id}/start", {}, self.hosts[game_id]
        )
        assert status == 200, body
        return tokens

    async def view(self, game_id: str, token: str | None = None) -> dict[str, Any]:
        status, body = await self.call("GET", f"/api/games/{game_id}", token=token)
        assert status == 200, body
        return dict(body)


@dataclass
class Played:
    game_id: str
    commands: int = 0
    rejected: int = 0
    retries: int = 0
    final: dict[str, Any] = field(default_factory=dict)


async def play(api: Api, game_id: str, tokens: list[str], bots: list[str], seed: int) -> Played:
    """Play a game to its end through the API only, as clients would: a command that times out
    (504) is sent again with the same id."""
    rng = random.Random(seed)
    players = [BOTS[name]() for name in bots]
    played = Played(game_id)
    idle_since: float | None = None
    while played.commands < 3000:
        spectator = await api.view(game_id)
        if spectator["status"] == "finished":
            played.final = spectator
            return played
        turn = spectator["turn"]
        if turn is None:  # between rounds: scoring records the sheet, the referee deals on
            idle_since = idle_since or time.monotonic()
            assert time.monotonic() - idle_since < 30, f"{game_id}: no next round"
            await asyncio.sleep(0.02)
            continue
        idle_since = None
        seat = turn["seat"]
        view = await api.view(game_id, tokens[seat])
        if view["turn"] is None or view["turn"]["seat"] != seat:
            continue
        rules = rule_set(view["rules"]["name"], view["rules"]["options"])
        body = command_json(
            players[seat].choose(seat_view_from_json(view, rules), rng), with_seat=False
        )
        body["id"] = uuid.uuid4().hex
        for _attempt in range(5):
            status, answer = await api.call(
                "POST", f"/api/games/{game_id}/commands", body, tokens[seat]
            )
            if status != 504:
                break
            played.retries += 1
        played.commands += 1
        if status == 422 and answer["error"]["code"] == "illegal_layout":
            played.rejected += 1
        else:
            assert status == 200 and answer["accepted"] is True, (body, status, answer)
    raise AssertionError(f"game {game_id} did not finish")


# --- moving a slot between masters while it is in use -----------------------------------------


def migrate_slot(cluster: Cluster, slot: int, source: int, target: int) -> int:
    """Move ``slot`` from the master on port ``source`` to the one on ``target`` the way
    ``redis-cli --cluster reshard`` does; returns how many keys moved."""
    source_id, target_id = cluster.node_id(source), cluster.node_id(target)
    moved = 0
    with cluster.node(source) as src, cluster.node(target) as dst:
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        while True:
            keys = src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
            if not keys:
                break
            src.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
            moved += len(keys)
        dst.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    for port in cluster.ports:
        if port not in (source, target):
            with cluster.node(port) as other:
                other.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    return moved


# --- the tests --------------------------------------------------------------------------------


async def test_games_spread_over_the_nodes_and_every_log_verifies(
    cluster: Cluster, stack: Stack
) -> None:
    keys = Keys(stack.prefix)
    owners = cluster.slot_owners()
    assert sorted(set(owners.values())) == sorted(cluster.ports) and len(owners) == 16384

    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        api = Api(session, stack.gateway.port)

        # Create games until every master serves GAMES_PER_NODE of them (the gateway picks the
        # ids, Redis hashes them), then play exactly those.
        by_node: dict[int, list[str]] = {port: [] for port in cluster.ports}
        for _ in range(60):
            if all(len(games) >= GAMES_PER_NODE for games in by_node.values()):
                break
            game_id = await api.create()
            port = owners[cluster.keyslot(keys.events(game_id))]
            if len(by_node[port]) < GAMES_PER_NODE:
                by_node[port].append(game_id)
        assert all(len(games) == GAMES_PER_NODE for games in by_node.values()), by_node
        chosen = [game_id for games in by_node.values() for game_id in games]
        tokens = {game_id: await api.seat_and_start(game_id) for game_id in chosen}

        # Mid-game, move the first game's slot to the next master.
        moving = chosen[0]
        slot = cluster.keyslot(keys.events(moving))
        source = owners[slot]
        target = next(p for p in cluster.ports if p != source)

        async def move_when_under_way() -> int:
            while (await api.view(moving))["version"] < 40:
                await asyncio.sleep(0.05)
            return await asyncio.to_thread(migrate_slot, cluster, slot, source, target)

        started = time.monotonic()
        mover = asyncio.create_task(move_when_under_way())
        played = await asyncio.gather(
            *(
                play(api, game_id, tokens[game_id], list(BOTS_BY_GAME[n % 3]), seed=n)
                for n, game_id in enumerate(chosen)
            )
        )
        moved_keys = await asyncio.wait_for(mover, 30)
        seconds = time.monotonic() - started
        assert moved_keys >= 3  # events, head, commands, tokens, seed ...

        # The games are listed as finished by the gateway too (it learns of a game's end from
        # the feed, a moment after a player may have seen the finished view).
        listed: set[str] = set()
        for _ in range(100):
            status, page = await api.call("GET", "/api/games?status=finished&limit=200")
            assert status == 200
            listed = {g["game_id"] for g in page["games"]}
            if set(chosen) <= listed:
                break
            await asyncio.sleep(0.1)
        assert set(chosen) <= listed

    # The referees decided the commands between them, and both were live members sharing the
    # partitions. (Which referee decides a game is its partition's lease holder's affair: with
    # a handful of games both may not get one; that once failed a CI run when this asked each
    # referee to have decided some.)
    referees = [p for p in stack.processes if p.name.startswith("referee")]
    decided = 0.0
    for process in referees:
        url = f"http://127.0.0.1:{process.port}/metrics"
        with urllib.request.urlopen(url, timeout=5) as response:
            decided += metric_total(response.read().decode(), "referee_commands_total")
    assert decided > 0
    # Their time was the cluster's (one node's TIME), not their hosts'.
    for process in [p for p in stack.processes if p.name.startswith(("referee", "scoring"))]:
        text = process.log.read_text(errors="replace")
        assert "reading Redis's time failed" not in text, process.output()[-3000:]

    # Every game finished, and its log (read through the cluster client) verifies.
    client = connect(Settings(redis_url=cluster.url, redis_cluster=True, prefix=stack.prefix))
    try:
        assert await client.zcard(keys.referees()) == len(referees) == 2
        store = RedisEventStore(client, stack.prefix)
        for result in played:
            assert result.final["status"] == "finished" and result.final["winner"], result
            events = await store.read(result.game_id)
            assert verify_chain(events) is None, result.game_id
            assert [e.version for e in events] == list(range(1, len(events) + 1))
            assert events[-1].version == result.final["version"]
            assert events[-1].hash == result.final["head"]
            types = [e.type for e in events]
            assert types[0] == "GameCreated" and types[-2:] == ["MatchEnded", "SeedRevealed"]
            assert types.count("RoundEnded") == types.count("ScoresRecorded") >= 1
            assert types.count("CommandRejected") == result.rejected
    finally:
        await disconnect(client)

    # Where the games live: each game's keys all on the master that serves its slot, none on
    # the others, which answer MOVED; every master holds some of the games.
    owners = cluster.slot_owners()
    assert owners[slot] == target, "the moved slot is served by its new master"
    holders: Counter[int] = Counter()
    table = []
    for game_id in chosen:
        events_key = keys.events(game_id)
        game_slot = cluster.keyslot(events_key)
        owner = owners[game_slot]
        pattern = keys.game(game_id, "*")
        found = {port: cluster.keys_on(port, pattern) for port in cluster.ports}
        assert events_key in found[owner] and keys.head(game_id) in found[owner], found
        assert {cluster.keyslot(k) for k in found[owner]} == {game_slot}
        for port in cluster.ports:
            if port != owner:
                assert found[port] == [], (game_id, port, found)
                with cluster.node(port) as node, pytest.raises(MovedError):
                    node.xlen(events_key)
        holders[owner] += 1
        table.append((game_id, game_slot, owner, len(found[owner])))
    assert set(holders) == set(cluster.ports), holders

    # The cross-game keys (command streams, feed partitions) are single keys, spread too.
    spread = {
        port: [k for k in cluster.keys_on(port, f"{stack.prefix}*") if "{" not in k]
        for port in cluster.ports
    }
    report = {
        "seconds_playing": round(seconds, 1),
        "moved": {"game": moving, "slot": slot, "from": source, "to": target, "keys": moved_keys},
        "games": [
            {
                "game": g,
                "slot": s,
                "node": p,
                "keys": n,
                "commands": r.commands,
                "rejected": r.rejected,
                "retries": r.retries,
            }
            for (g, s, p, n), r in zip(table, played, strict=True)
        ],
        "cross_game_keys_by_node": spread,
    }
    print(json.dumps(report, indent=1))
    assert sum(len(v) for v in spread.values()) >= 2 * PARTITIONS  # commands:p and feed:p


async def test_a_script_across_slots_fails_clearly(cluster: Cluster) -> None:
    """Every key of one game shares its slot; a script given keys of two slots is refused, by
    the cluster client before it is sent and by Redis itself (CROSSSLOT)."""
    keys = Keys("x:")
    slots: dict[int, str] = {}
    while len(slots) < 2:
        game_id = f"g{uuid.uuid4().hex[:10]}"
        one_game = {cluster.keyslot(k) for k in (*keys.game_keys(game_id), keys.tokens(game_id))}
        assert len(one_game) == 1, game_id
        slots.setdefault(one_game.pop(), game_id)
    first, second = slots.values()
    crossing = [keys.events(first), keys.head(second), keys.commands(second)]
    args: list[str | int] = [0, GENESIS_HASH, "", "", "h1", "x"]

    client = connect(Settings(redis_url=cluster.url, redis_cluster=True, prefix="x:"))
    try:
        script = client.register_script(APPEND_SCRIPT)
        # redis-py refuses it before sending, or sends it and Redis answers CROSSSLOT.
        with pytest.raises(
            (RedisClusterException, ClusterCrossSlotError), match=r"same (key )?slot"
        ):
            await script(keys=crossing, args=args)
        assert await client.xlen(crossing[0]) == 0  # nothing of it ran
        # The same script over one game's keys goes through (and appends the record).
        assert await script(keys=list(keys.game_keys(first)), args=args) == [0]
    finally:
        await disconnect(client)

    owner = cluster.slot_owners()[cluster.keyslot(crossing[0])]
    with cluster.node(owner) as node, pytest.raises(ClusterCrossSlotError):  # CROSSSLOT
        node.eval(APPEND_SCRIPT, len(crossing), *crossing, *args)
    # What an operator sees with redis-cli:
    said = subprocess.run(
        ["redis-cli", "-p", str(owner), "EVAL", "return 1", str(len(crossing)), *crossing],
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert "CROSSSLOT" in said.stdout + said.stderr, said


async def test_rate_limits_and_idempotency_keys_work_on_every_node(cluster: Cluster) -> None:
    """Each bucket is one key of its own: buckets of many subjects spread over the masters and
    each check runs on its key's node, on that node's clock (Redis TIME)."""
    from services.gateway.idempotency import Idempotency
    from services.gateway.ratelimit import Limits

    prefix = f"rl{uuid.uuid4().hex[:6]}:"
    settings = Settings(
        redis_url=cluster.url, redis_cluster=True, prefix=prefix, limit_hint_per_minute=2
    )
    keys = Keys(prefix)
    client = connect(settings)
    try:
        limits = Limits(client, settings)
        subjects = [f"g{n}:0" for n in range(30)]
        owners = cluster.slot_owners()
        nodes = {owners[cluster.keyslot(keys.limit("hint", s))] for s in subjects}
        assert len(nodes) == 3, nodes
        for subject in subjects:
            assert [await limits.wait(limits.hint, subject) for _ in range(2)] == [0, 0]
            assert await limits.wait(limits.hint, subject) >= 1
        bindings = Idempotency(client, keys, 60)
        assert await bindings.create("192.0.2.1", "k", {"a": 1}, "g1") == "g1"
        assert await bindings.create("192.0.2.1", "k", {"a": 1}, "g2") == "g1"
        assert await bindings.sit("g1", "k", {"name": "x"}, "sit:1") == "sit:1"
        assert await bindings.sit("g1", "k", {"name": "x"}, "sit:2") == "sit:1"
    finally:
        await disconnect(client)


def metric_total(text: str, name: str) -> float:
    """The sum of one metric's samples in a /metrics page."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith((name + "{", name + " "))
    )


def test_every_process_drains_on_sigterm(stack: Stack) -> None:
    """SIGTERM stops every process with exit code 0 within the drain deadline, and nothing
    logged an error (run last: it stops the module's services)."""
    codes = stack.stop()
    assert codes == {p.name: 0 for p in stack.processes}, [
        p.output()[-3000:] for p in stack.processes
    ]
    for process in stack.processes:
        for line in process.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                assert json.loads(line).get("level") in ("info", "debug", "warning"), line
