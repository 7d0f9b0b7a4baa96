"""A fourth master joins a replicated Redis Cluster (three masters, a replica each,
``conftest.py``) and the slots are rebalanced onto it (``redis-cli --cluster add-node`` and
``rebalance --cluster-use-empty-masters``) while careful clients play games through the
gateways.

What a rebalance does to the clients: a node they have never seen starts to serve slots (MOVED
to an unknown address), thousands of slots are migrating at once (ASK for every key already
moved, TRYAGAIN for a script whose keys are split between the two nodes), and a blocked stream
read's key can leave the node it waits on. The promises are the failover test's
(``test_failover.py``): every acknowledged command in its log exactly once, every game
finished, every process ready again without a restart, and no client error after the cluster
reports ok plus ``QUIET_REQUESTS`` answers.
"""

from __future__ import annotations

import asyncio
import shutil
from typing import Any

import pytest

from tests.cluster.conftest import Cluster, cluster_info
from tests.cluster.test_failover import (
    CountingClient,
    Outcomes,
    assert_errors_stopped,
    replicated_stack,
    report,
    under_load,
    under_way,
)
from tests.servers import RedisServer, until

pytestmark = pytest.mark.slow

__all__ = ["replicated_stack"]  # the fixture, shared with the failover tests

PATIENCE = 300.0  # for redis-cli's rebalance on a loaded machine (a safety net, not a bound)


def settled(cluster: Cluster, nodes: int, newcomer: int) -> bool:
    """Whether every node says ok and knows ``nodes`` nodes, no slot is migrating or
    importing, and the newcomer serves slots."""
    try:
        for port in cluster.ports:
            text = cluster_info(port)
            if "cluster_state:ok" not in text or f"cluster_known_nodes:{nodes}" not in text:
                return False
            with cluster.node(port) as node:
                raw = node.execute_command("CLUSTER", "NODES")
            table = raw.decode() if isinstance(raw, bytes) else str(raw)
            if "->-" in table or "-<-" in table:  # [slot->-id] / [slot-<-id]: a move open
                return False
        return newcomer in cluster.slot_owners().values()
    except Exception:  # a node busy with the change: not yet
        return False


async def redis_cli(*args: str) -> str:
    """Run ``redis-cli`` (beside the event loop, which keeps the games going); its output."""
    cli = shutil.which("redis-cli")
    assert cli is not None
    process = await asyncio.create_subprocess_exec(
        cli,
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), PATIENCE)
    text = out.decode(errors="replace")
    assert process.returncode == 0, f"redis-cli {' '.join(args)} failed:\n{text[-3000:]}"
    return text


async def test_a_master_added_and_rebalanced_under_load_loses_no_acknowledged_command(
    replicated_cluster: Cluster, replicated_stack: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    cluster, stack = replicated_cluster, replicated_stack
    seed = f"127.0.0.1:{cluster.masters()[0]}"
    newcomer = RedisServer(
        tmp_path_factory.mktemp("redis-newcomer"),
        aof=True,
        fsync="everysec",
        cluster=True,
        binary=cluster.nodes[0].binary,
        node_timeout=cluster.nodes[0].node_timeout,
    )
    cluster.nodes.append(newcomer)  # stopped with the others
    newcomer.start()
    facts: dict[str, Any] = {"newcomer": newcomer.port}

    async def grow(
        clients: list[CountingClient], games: list[tuple[str, list[str]]], outcomes: Outcomes
    ) -> int:
        await under_way(clients, games[0][0])
        at = len(outcomes.answers)
        await redis_cli("--cluster", "add-node", f"127.0.0.1:{newcomer.port}", seed)
        total = len(cluster.nodes)

        def known() -> bool:
            try:
                # ok on every node, the newcomer too: a slot migrated to a newcomer that does
                # not yet see the cluster ok is refused (MIGRATE: CLUSTERDOWN), as CI met.
                infos = [cluster_info(p) for p in cluster.ports]
                return all(
                    f"cluster_known_nodes:{total}" in info and "cluster_state:ok" in info
                    for info in infos
                )
            except Exception:
                return False

        await until(
            lambda: asyncio.to_thread(known),
            PATIENCE,
            every=0.1,
            message="the newcomer was not met",
        )
        facts["rebalance_from_answer"] = len(outcomes.answers)
        out = await redis_cli(
            "--cluster", "rebalance", seed, "--cluster-use-empty-masters", "--cluster-yes"
        )
        facts["slots_moved"] = out.count("Moving slot") or out.count("#")
        await until(
            lambda: asyncio.to_thread(settled, cluster, total, newcomer.port),
            PATIENCE,
            every=0.1,
            message="the cluster did not settle after the rebalance",
        )
        outcomes.healed_at = len(outcomes.answers)
        return at

    outcomes, ids, added_at = await under_load(cluster, stack, grow, waves=True)
    facts["games"] = len(ids)
    owners = cluster.slot_owners()
    facts["newcomer_slots"] = sum(1 for port in owners.values() if port == newcomer.port)
    # What the newcomer holds of this test's: live games' keys and streams moved to it.
    facts["newcomer_keys"] = len(cluster.keys_on(newcomer.port, f"{stack.prefix}*"))
    said = report(outcomes, added_at, **facts)
    assert facts["newcomer_slots"] >= 16384 // 4 - 64, said  # its even share, near enough
    assert facts["newcomer_keys"] >= 1, said
    assert_errors_stopped(outcomes, said)
