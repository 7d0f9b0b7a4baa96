"""A real Redis Cluster on loopback for the cluster tests: three masters (``cluster``: no
replicas; ``replicated_cluster``: each with a replica, the append-only file on and a short
``cluster-node-timeout``, for failovers), each node a ``redis-server --cluster-enabled yes`` on a
spare port with its files in a temporary directory, assembled with ``redis-cli --cluster
create``. Stopped (and its files removed) at the end.

Skipped, saying why, only when ``redis-server`` or ``redis-cli`` is not on the PATH (``.ci/run``
installs both).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from tests.servers import START_TIMEOUT, RedisServer, redis_server_binary, wait_until

NODES = 3  # masters
FAILOVER_NODE_TIMEOUT_MS = 2000  # the replicated cluster's: a dead master's replica takes over


@dataclass
class Cluster:
    """The running cluster: its nodes' ports and how to ask each one directly."""

    nodes: list[RedisServer]
    replicas: int = 0  # per master

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    @property
    def url(self) -> str:
        """A seed node's URL: the cluster client discovers the others from it."""
        return f"redis://127.0.0.1:{self.ports[0]}/0"

    def node(self, port: int) -> redis.Redis:
        """A plain (non-cluster) client of one node: it sees MOVED instead of following it."""
        return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)

    def slot_owners(self, port: int | None = None) -> dict[int, int]:
        """Slot -> the port of the master that serves it (from CLUSTER SLOTS, asked of ``port``:
        by default the first node)."""
        with self.node(self.ports[0] if port is None else port) as node:
            ranges = node.execute_command("CLUSTER", "SLOTS")
        owners: dict[int, int] = {}
        for start, end, master, *_ in _slot_ranges(ranges):
            for slot in range(start, end + 1):
                owners[slot] = master
        return owners

    def keyslot(self, key: str) -> int:
        with self.node(self.ports[0]) as node:
            return int(node.execute_command("CLUSTER", "KEYSLOT", key))

    def masters(self) -> list[int]:
        """The ports of the nodes that serve slots now (a promoted replica among them)."""
        return sorted(set(self.slot_owners().values()))

    def server(self, port: int) -> RedisServer:
        return next(node for node in self.nodes if node.port == port)

    def node_id(self, port: int) -> str:
        with self.node(port) as node:
            raw = node.execute_command("CLUSTER", "MYID")
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def keys_on(self, port: int, pattern: str) -> list[str]:
        """The keys one node itself holds (SCAN is per node)."""
        with self.node(port) as node:
            return sorted(k.decode() for k in node.scan_iter(match=pattern, count=1000))


def _slot_ranges(reply: object) -> list[tuple[int, int, int]]:
    """CLUSTER SLOTS as (first slot, last slot, master port), whatever shape redis-py gives."""
    out: list[tuple[int, int, int]] = []
    if isinstance(reply, dict):  # parsed: {(start, end): {"primary": (host, port), ...}}
        for (start, end), info in reply.items():
            out.append((int(start), int(end), int(info["primary"][1])))
        return out
    for row in reply:  # type: ignore[attr-defined]
        out.append((int(row[0]), int(row[1]), int(row[2][1])))
    return out


def cluster_info(port: int) -> str:
    """A node's CLUSTER INFO as text (``name:value`` lines)."""
    with redis.Redis(host="127.0.0.1", port=port, socket_timeout=2) as node:
        info = node.execute_command("CLUSTER", "INFO")
        if isinstance(info, dict):
            return "\n".join(f"{k}:{v}" for k, v in info.items())
        return info.decode() if isinstance(info, bytes) else str(info)


def cluster_ok(port: int, nodes: int = NODES) -> bool:
    """Whether a node says cluster_state:ok and knows all ``nodes`` nodes."""
    text = cluster_info(port)
    return "cluster_state:ok" in text and f"cluster_known_nodes:{nodes}" in text


def replicas_in_sync(cluster: Cluster) -> bool:
    """Whether every master has its replicas attached and caught up (``master_link_status:up``
    on each replica): only then does a replica hold what its master acknowledged."""
    up = 0
    for port in cluster.ports:
        with cluster.node(port) as node:
            info = node.info("replication")
        if info.get("role") == "slave" and info.get("master_link_status") == "up":
            up += 1
    return up == NODES * cluster.replicas


def start_cluster(
    workdir: Path, replicas: int = 0, aof: bool = False, node_timeout: int = 5000
) -> Cluster:
    """Start ``NODES`` masters (and ``replicas`` replicas of each), assemble them, wait until
    every node says ok (and every replica is in sync)."""
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.skip(
            "redis-server and redis-cli are needed for a real Redis Cluster "
            "(Debian package redis-server; .ci/run installs it)"
        )
    binary = redis_server_binary("a real Redis Cluster is made of redis-server nodes")
    cluster = Cluster([], replicas)
    total = NODES * (1 + replicas)
    while len(cluster.nodes) < total:
        node = RedisServer(
            workdir / f"node-{len(cluster.nodes)}",
            aof=aof,
            fsync="everysec",
            cluster=True,
            binary=binary,
            node_timeout=node_timeout,
        )
        if node.port not in cluster.ports:
            cluster.nodes.append(node)
    try:
        for node in cluster.nodes:
            node.launch()
        for node in cluster.nodes:
            node.wait_started()
        created = subprocess.run(
            [
                cli,
                "--cluster",
                "create",
                *(f"127.0.0.1:{p}" for p in cluster.ports),
                "--cluster-replicas",
                str(replicas),
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if created.returncode != 0:
            raise RuntimeError(
                f"redis-cli --cluster create failed:\n{created.stdout}{created.stderr}"
            )
        wait_until(
            lambda: all(cluster_ok(p, total) for p in cluster.ports),
            START_TIMEOUT,
            message="the Redis Cluster did not reach cluster_state:ok",
        )
        wait_until(
            lambda: replicas_in_sync(cluster),
            START_TIMEOUT,
            message="the replicas did not sync with their masters",
        )
        return cluster
    except BaseException:
        stop_cluster(cluster)
        raise


def stop_cluster(cluster: Cluster) -> None:
    for node in cluster.nodes:
        node.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three masters on loopback, for this module; stopped at its end."""
    started = start_cluster(tmp_path_factory.mktemp("redis-cluster"))
    try:
        yield started
    finally:
        stop_cluster(started)


@pytest.fixture(scope="module")
def replicated_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Three masters with a replica each (AOF on, ``cluster-node-timeout`` 2000 ms), for this
    module; every node stopped at its end (a killed one too)."""
    started = start_cluster(
        tmp_path_factory.mktemp("redis-cluster-replicated"),
        replicas=1,
        aof=True,
        node_timeout=FAILOVER_NODE_TIMEOUT_MS,
    )
    try:
        yield started
    finally:
        stop_cluster(started)
