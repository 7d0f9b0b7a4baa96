"""A master leaves a replicated Redis Cluster (three masters, a replica each, ``conftest.py``)
while careful clients play games through the gateways: its slots are moved to the others
(``redis-cli --cluster rebalance --cluster-weight <id>=0``), then it and any replica still
following it are removed (``del-node``).

What this does to the clients: thousands of slots migrate away from a node they use (ASK, then
MOVED), blocked stream reads lose their node's keys, and a node every process knows (and may
have as a seed) stops being part of the cluster. The promises are the failover test's
(``test_failover.py``): every acknowledged command in its log exactly once, every game
finished, every process ready again without a restart, and no client error after the cluster
reports ok plus ``QUIET_REQUESTS`` answers.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.cluster.conftest import Cluster, cluster_info
from tests.cluster.test_add_master import PATIENCE, redis_cli
from tests.cluster.test_failover import (
    CountingClient,
    Outcomes,
    assert_errors_stopped,
    replicated_stack,
    report,
    under_load,
    under_way,
)
from tests.servers import until

pytestmark = pytest.mark.slow

__all__ = ["replicated_stack"]  # the fixture, shared with the failover tests


def followers(cluster: Cluster, master_id: str, asked: int) -> list[int]:
    """The ports of the nodes that replicate ``master_id`` now (CLUSTER NODES on ``asked``)."""
    with cluster.node(asked) as node:
        raw = node.execute_command("CLUSTER", "NODES")
    table = raw.decode() if isinstance(raw, bytes) else str(raw)
    ports = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[3] == master_id:
            ports.append(int(fields[1].split("@")[0].rsplit(":", 1)[1]))
    return ports


def shrunk(cluster: Cluster, remaining: list[int], gone: list[int]) -> bool:
    """Whether every remaining node says ok, knows only the remaining nodes, has no slot
    migrating, and no slot is served by a node that left."""
    try:
        for port in remaining:
            text = cluster_info(port)
            if "cluster_state:ok" not in text:
                return False
            if f"cluster_known_nodes:{len(remaining)}" not in text:
                return False
            with cluster.node(port) as node:
                raw = node.execute_command("CLUSTER", "NODES")
            table = raw.decode() if isinstance(raw, bytes) else str(raw)
            if "->-" in table or "-<-" in table:
                return False
        owners = cluster.slot_owners(remaining[0])
    except Exception:  # a node busy with the change: not yet
        return False
    return len(owners) == 16384 and not set(owners.values()) & set(gone)


async def test_a_master_emptied_and_removed_under_load_loses_no_acknowledged_command(
    replicated_cluster: Cluster, replicated_stack: Any
) -> None:
    cluster, stack = replicated_cluster, replicated_stack
    seed_port = cluster.masters()[0]
    seed = f"127.0.0.1:{seed_port}"
    leaving = next(port for port in cluster.masters() if port != seed_port)
    facts: dict[str, Any] = {"leaving": leaving}

    async def shrink(
        clients: list[CountingClient], games: list[tuple[str, list[str]]], outcomes: Outcomes
    ) -> int:
        await under_way(clients, games[0][0])
        at = len(outcomes.answers)
        leaving_id = cluster.node_id(leaving)
        out = await redis_cli(
            "--cluster", "rebalance", seed, "--cluster-weight", f"{leaving_id}=0", "--cluster-yes"
        )
        facts["slots_moved"] = out.count("Moving slot") or out.count("#")
        owners = cluster.slot_owners(seed_port)
        assert leaving not in owners.values(), "the rebalance left slots on the leaving master"
        # Its replica may have migrated to a master with slots on its own; one still
        # following it leaves too.
        gone = [leaving, *followers(cluster, leaving_id, seed_port)]
        for port in gone[1:]:
            await redis_cli("--cluster", "del-node", seed, cluster.node_id(port))
        await redis_cli("--cluster", "del-node", seed, leaving_id)
        facts["removed"] = gone
        remaining = [port for port in cluster.ports if port not in gone]
        await until(
            lambda: asyncio.to_thread(shrunk, cluster, remaining, gone),
            PATIENCE,
            every=0.1,
            message="the cluster did not settle after the removal",
        )
        outcomes.healed_at = len(outcomes.answers)
        return at

    try:
        outcomes, ids, removed_at = await under_load(cluster, stack, shrink, waves=True)
    except BaseException:  # what the processes said beyond their info lines, to see why
        for process in stack.processes:
            lines = [line for line in process.output().splitlines() if "[info" not in line]
            print(f"==== {process.name}", *lines[-40:], sep="\n")
        raise
    facts["games"] = len(ids)
    said = report(outcomes, removed_at, **facts)
    assert facts["slots_moved"], said
    assert_errors_stopped(outcomes, said)
