"""A master of a replicated Redis Cluster (three masters, a replica each, ``conftest.py``) is
killed (SIGKILL) while bots play games through the gateway; its replica takes over.

The players are careful clients (``tests/faults/harness.py``): every command carries an id and
is sent again with the same id until it is answered. What must hold: every acknowledged command
is in its game's log exactly once, every game finishes, every process answers ``/readyz`` 200
again without a restart, and the errors stop soon after the cluster is whole again. "Soon" is
counted in requests, not seconds: once a node says ``cluster_state:ok`` with the replica
promoted, at most ``SETTLING_REQUESTS`` more requests may fail, and none after a run of
``QUIET_REQUESTS`` successful ones.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from shared.infra.keys import Keys
from tests.cluster.conftest import NODES, Cluster, cluster_info
from tests.cluster.test_cluster import Stack
from tests.faults.harness import Client, Ledger, check_logs, play
from tests.servers import http_status, until

pytestmark = pytest.mark.slow

GAMES = 12
RULES = "robbers"
OPTIONS = {"match_rounds": 1}
BOTS_BY_GAME = (["greedy", "random"], ["greedy", "clumsy"], ["random", "greedy"])
KILL_AT_VERSION = 30  # the kill comes once the games are under way
QUIET_REQUESTS = 30  # after the cluster is ok again: this many successes in a row, then no error
PATIENCE = 120.0  # a careful client's patience for one answer (a safety net: a hang fails)


@dataclass
class Outcomes:
    """Every answer the players got, in order (True: answered), and where the cluster was
    seen whole again."""

    ledger: Ledger
    answers: list[bool] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # when each came (for the report only)
    failures: list[tuple[int, str]] = field(default_factory=list)  # (answer, what it was)
    healed_at: int | None = None  # len(answers) when the cluster was seen ok after the kill

    def errors_after_heal(self) -> list[int]:
        """Indexes (from the heal) of the answers that were errors."""
        start = self.healed_at or 0
        return [n for n, ok in enumerate(self.answers[start:]) if not ok]

    def note(self, ok: bool, what: str = "") -> None:
        if not ok:
            self.failures.append((len(self.answers), what))
        self.answers.append(ok)
        self.times.append(time.monotonic())

    def longest_silence(self, since: int) -> float:
        """The longest gap between successful answers from answer ``since`` on (reported, not
        asserted: a slow machine is not a failure)."""
        pairs = zip(self.times[since:], self.answers[since:], strict=True)
        moments = [t for t, ok in pairs if ok]
        return max((b - a for a, b in itertools.pairwise(moments)), default=0.0)

    def longest_error_run(self) -> int:
        run = best = 0
        for ok in self.answers:
            run = 0 if ok else run + 1
            best = max(best, run)
        return best


class CountingClient(Client):
    """A careful client that also notes every answer's outcome, in order."""

    def __init__(self, session: aiohttp.ClientSession, port: int, outcomes: Outcomes) -> None:
        super().__init__(session, port, outcomes.ledger, patience=PATIENCE)
        self.outcomes = outcomes

    async def call(
        self, method: str, path: str, body: object = None, token: str | None = None
    ) -> tuple[int, object]:
        try:
            status, doc = await super().call(method, path, body, token)
        except (aiohttp.ClientError, TimeoutError, OSError) as err:
            self.outcomes.note(False, f"{method} {path}: {type(err).__name__}: {err}")
            raise
        ok = status < 500 and status != 429
        self.outcomes.note(ok, "" if ok else f"{method} {path}: {status} {str(doc)[:300]}")
        return status, doc


@pytest.fixture(scope="module")
def replicated_stack(
    replicated_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    """Two gateways, two referees and a scoring process against the replicated cluster, given
    every master as a seed (as a deployment would be); stopped at the end."""
    built = Stack(
        replicated_cluster,
        f"f{uuid.uuid4().hex[:8]}:",
        tmp_path_factory.mktemp("failover-services"),
        url=seed_url(replicated_cluster.ports),
    )
    try:
        built.start("gateway", "gateway-0")
        built.start("gateway", "gateway-1")
        built.start("referee", "referee-0")
        built.start("referee", "referee-1")
        built.start("scoring", "scoring-0")
        built.wait_ready()
        yield built
    finally:
        built.stop()
        for process in built.processes:
            process.close()


def seed_url(ports: list[int]) -> str:
    """A ``REDIS_URL`` naming every one of ``ports`` as a seed."""
    return ",".join(f"redis://127.0.0.1:{p}" for p in ports)


def busiest_master(cluster: Cluster, slots: list[int]) -> int:
    """The master that serves the most of ``slots``."""
    owners = cluster.slot_owners()
    counts = {port: 0 for port in set(owners.values())}
    for slot in slots:
        counts[owners[slot]] += 1
    return max(counts, key=lambda port: counts[port])


def healed(cluster: Cluster, killed: int) -> bool:
    """Whether every live node says cluster_state:ok and no slot is served by ``killed``."""
    live = [p for p in cluster.ports if p != killed]
    try:
        if not all("cluster_state:ok" in cluster_info(p) for p in live):
            return False
        owners = cluster.slot_owners(live[0])
    except Exception:  # a node busy with the failover: not yet
        return False
    return killed not in owners.values() and len(set(owners.values())) == NODES


def rejoined(cluster: Cluster, port: int) -> bool:
    """Whether the node on ``port`` is a replica in sync with its master."""
    try:
        with cluster.node(port) as node:
            info = node.info("replication")
    except Exception:  # still loading its files
        return False
    return bool(info.get("role") == "slave" and info.get("master_link_status") == "up")


Fault = Callable[
    [list[CountingClient], list[tuple[str, list[str]]], Outcomes], Coroutine[Any, Any, Any]
]


async def under_load(
    cluster: Cluster, stack: Stack, fault: Fault, waves: bool = False
) -> tuple[Outcomes, list[str], Any]:
    """Play ``GAMES`` games to their end through the gateways while ``fault`` (given the
    clients, the games and the outcomes; it sets ``outcomes.healed_at``) runs; then every
    process must be ready again and every log check out. With ``waves``, each of the
    ``GAMES`` players starts another game as soon as one ends, for as long as the fault lasts,
    and one more after it (a fault longer than a game still meets a steady load, and the load
    goes on past the heal). The outcomes, the game ids and what ``fault`` returned."""
    outcomes = Outcomes(Ledger())
    gateways = [p for p in stack.processes if p.name.startswith("gateway")]
    ids: list[str] = []
    async with aiohttp.ClientSession() as session:
        clients = [CountingClient(session, g.port, outcomes) for g in gateways]
        games = []
        for n in range(GAMES):
            games.append(await clients[n % len(clients)].new_game(RULES, 2, OPTIONS))
        ids += [game_id for game_id, _ in games]
        faulty = asyncio.create_task(fault(clients, games, outcomes))

        async def player(n: int) -> list[dict[str, Any]]:
            client = clients[n % len(clients)]
            game_id, tokens = games[n]
            finals = []
            for wave in itertools.count():
                over = faulty.done()
                finals.append(
                    await play(
                        client,
                        game_id,
                        tokens,
                        list(BOTS_BY_GAME[n % 3]),
                        seed=n + wave * GAMES,
                        between_rounds=PATIENCE,
                    )
                )
                if not waves or over:
                    return finals
                game_id, tokens = await surely_new_game(client)
                ids.append(game_id)
            return finals

        finals = [f for some in await asyncio.gather(*map(player, range(GAMES))) for f in some]
        done = await asyncio.wait_for(faulty, PATIENCE)

        # Every process is ready again, without a restart.
        for process in stack.processes:
            assert process.alive, f"{process.name} exited:\n{process.output()[-3000:]}"

            async def ready(port: int = process.port) -> bool:
                status, _ = await http_status(session, port, "/readyz")
                return status == 200

            await until(ready, PATIENCE, every=0.2, message=f"{process.name} not ready again")

    assert all(final["status"] == "finished" for final in finals), finals
    live = [p for p in cluster.ports if cluster.server(p).alive]
    await check_logs(seed_url(live), stack.prefix, ids, outcomes.ledger, cluster=True)
    return outcomes, ids, done


async def surely_new_game(client: CountingClient) -> tuple[str, list[str]]:
    """A new game, asked for again while the answer is an error (a game left half made by a
    failed attempt is left alone: no player has it)."""
    pause = 0.05
    for _ in range(40):
        try:
            return await client.new_game(RULES, 2, OPTIONS)
        except (AssertionError, aiohttp.ClientError, TimeoutError, OSError):
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
    return await client.new_game(RULES, 2, OPTIONS)


async def under_way(clients: list[CountingClient], game_id: str) -> None:
    """Until the game is some turns in."""
    while (await clients[0].view(game_id))["version"] < KILL_AT_VERSION:
        await asyncio.sleep(0.05)


def report(outcomes: Outcomes, since: int, **more: Any) -> dict[str, Any]:
    errors_after = outcomes.errors_after_heal()
    said = {
        **more,
        "acknowledged": len(outcomes.ledger.acks),
        "answers": len(outcomes.answers),
        "fault_at_answer": since,
        "healed_at_answer": outcomes.healed_at,
        "errors": dict(outcomes.ledger.errors),
        "error_answers": outcomes.answers.count(False),
        "longest_error_run": outcomes.longest_error_run(),
        "longest_silence_seconds": round(outcomes.longest_silence(max(since - 1, 0)), 2),
        "errors_after_heal": errors_after[:50],
        "failures_after_heal": [
            what for n, what in outcomes.failures if n >= (outcomes.healed_at or 0)
        ][:20],
    }
    print(json.dumps(said, indent=1))
    return said


def assert_errors_stopped(outcomes: Outcomes, said: dict[str, Any]) -> None:
    """Once the cluster is whole again the errors stop: none after ``QUIET_REQUESTS``
    answers."""
    assert outcomes.healed_at is not None, said
    late = [n for n in outcomes.errors_after_heal() if n >= QUIET_REQUESTS]
    assert not late, said


async def test_a_master_killed_under_load_loses_no_acknowledged_command(
    replicated_cluster: Cluster, replicated_stack: Stack
) -> None:
    cluster, stack = replicated_cluster, replicated_stack
    keys = Keys(stack.prefix)
    chosen: dict[str, int] = {}

    async def kill(
        clients: list[CountingClient], games: list[tuple[str, list[str]]], outcomes: Outcomes
    ) -> int:
        slots = [cluster.keyslot(keys.events(game_id)) for game_id, _ in games]
        victim = chosen["victim"] = busiest_master(cluster, slots)
        owners = cluster.slot_owners()
        chosen["victim_games"] = sum(1 for s in slots if owners[s] == victim)
        await under_way(clients, games[0][0])
        at = len(outcomes.answers)
        cluster.server(victim).close()  # SIGKILL
        await until(
            lambda: asyncio.to_thread(healed, cluster, victim),
            PATIENCE,
            every=0.1,
            message="the replica was not promoted",
        )
        outcomes.healed_at = len(outcomes.answers)
        # The killed node comes back (its files kept, as a restarted pod's would be) and
        # rejoins as its old replica's replica, while the games go on.
        await asyncio.to_thread(cluster.server(victim).start)
        await until(
            lambda: asyncio.to_thread(rejoined, cluster, victim),
            PATIENCE,
            every=0.2,
            message="the killed master did not rejoin as a replica",
        )
        return at

    outcomes, _, killed_at = await under_load(cluster, stack, kill)
    said = report(outcomes, killed_at, **chosen)
    assert chosen["victim_games"] >= 1
    assert_errors_stopped(outcomes, said)


def move_slot(cluster: Cluster, slot: int, target: int) -> int:
    """Move ``slot`` to the master on ``target`` as ``redis-cli --cluster reshard`` does (the
    keys in batches with MIGRATE, while clients are sent ASK); how many keys moved."""
    owners = cluster.slot_owners(target)
    source = owners[slot]
    source_id, target_id = cluster.node_id(source), cluster.node_id(target)
    moved = 0
    with cluster.node(source) as src, cluster.node(target) as dst:
        dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10):
            src.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *keys)
            moved += len(keys)
        dst.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
        src.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    for port in set(owners.values()) - {source, target}:
        with cluster.node(port) as other:
            other.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    return moved


RESHARDED_GAMES = 3


async def test_live_games_resharded_under_load_lose_no_acknowledged_command(
    replicated_cluster: Cluster, replicated_stack: Stack
) -> None:
    """The slots of a few live games move to another master (MOVED and ASK for every client,
    and redis-py's resets of its client every fifth MOVED) with the same promises."""
    cluster, stack = replicated_cluster, replicated_stack
    keys = Keys(stack.prefix)
    moves: list[dict[str, Any]] = []

    async def reshard(
        clients: list[CountingClient], games: list[tuple[str, list[str]]], outcomes: Outcomes
    ) -> int:
        masters = cluster.masters()
        await under_way(clients, games[0][0])
        at = len(outcomes.answers)
        for game_id, _ in games[:RESHARDED_GAMES]:
            slot = cluster.keyslot(keys.events(game_id))
            source = cluster.slot_owners()[slot]
            target = next(p for p in masters if p != source)
            count = await asyncio.to_thread(move_slot, cluster, slot, target)
            moves.append({"game": game_id, "slot": slot, "from": source, "to": target})
            moves[-1]["keys"] = count
        outcomes.healed_at = len(outcomes.answers)
        return at

    outcomes, _, moved_at = await under_load(cluster, stack, reshard)
    said = report(outcomes, moved_at, moves=moves)
    owners = cluster.slot_owners()
    assert all(owners[m["slot"]] == m["to"] and m["keys"] >= 3 for m in moves), moves
    assert_errors_stopped(outcomes, said)
