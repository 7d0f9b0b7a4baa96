"""The services' cluster client against a real three-master cluster (``conftest.py``): it starts
from a list of seeds while one of them is down, its stream reads ask no node for their keys
(``COMMAND GETKEYS``), and the auto-pipeline sends concurrent commands to every node in
pipelines, each caller answered as redis-py would answer it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import (
    ClusterCrossSlotError,
    ClusterDownError,
    RedisClusterException,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError

from shared.infra import cluster as cluster_module
from shared.infra.autopipe import AutoPipeline, autopipe
from shared.infra.cluster import ClusterClient, blocking
from shared.infra.connection import connect, disconnect
from shared.infra.settings import Settings
from tests.cluster.conftest import Cluster
from tests.ports import spare_port
from tests.servers import until

GETKEYS = "cmdstat_command|getkeys"


def commandstats(cluster: Cluster) -> dict[int, dict[str, Any]]:
    """Each node's INFO commandstats."""
    stats = {}
    for port in cluster.ports:
        with cluster.node(port) as node:
            stats[port] = node.info("commandstats")
    return stats


def reset_stats(cluster: Cluster) -> None:
    for port in cluster.ports:
        with cluster.node(port) as node:
            node.config_resetstat()


def seed_list(cluster: Cluster, dead: int) -> str:
    return ",".join([f"redis://127.0.0.1:{dead}", *(f"127.0.0.1:{p}" for p in cluster.ports)])


async def test_a_client_starts_while_any_seed_answers(cluster: Cluster) -> None:
    dead = spare_port(bus=True)  # nothing listens there
    url = seed_list(cluster, dead)
    settings = Settings.from_env({"REDIS_URL": url, "RUMMY_REDIS_CLUSTER": "true"})
    key = f"seeds:{uuid.uuid4().hex}"
    # redis-py asks the seeds in a shuffled order: enough clients that the dead one comes
    # first for some of them.
    for _ in range(6):
        client = connect(settings)
        try:
            await client.set(key, "up")
            assert await client.get(key) == b"up"
        finally:
            await disconnect(client)
    only_dead = connect(
        Settings(redis_url=f"redis://127.0.0.1:{dead},127.0.0.1:{dead + 1}", redis_cluster=True)
    )
    with pytest.raises(Exception):  # noqa: B017 - redis-py's own error for no seed answering
        await asyncio.wait_for(only_dead.ping(), 60)
    await only_dead.aclose()


async def test_stream_reads_ask_no_node_for_their_keys(cluster: Cluster) -> None:
    client = connect(Settings(redis_url=cluster.url, redis_cluster=True))
    assert isinstance(client, ClusterClient)
    piped = autopipe(client)
    tag = uuid.uuid4().hex
    streams = [f"getkeys:{tag}:{n}" for n in range(6)]
    try:
        for stream in streams:
            await piped.xgroup_create(stream, "g", id="0", mkstream=True)
            await piped.xadd(stream, {"n": "1"})
        await piped.ping()
        reset_stats(cluster)
        for stream in streams:
            got = await piped.xreadgroup("g", "c", {stream: ">"}, count=10, block=10)
            assert got
            entries = next(iter(got.values())) if isinstance(got, dict) else got[0][1]
            entry_id = entries[0][0]
            assert await piped.xread({stream: "0-0"}, count=1, block=10)
            claimed = await piped.xautoclaim(stream, "g", "c2", min_idle_time=0, count=10)
            assert claimed[1]
            await piped.xpending_range(stream, "g", "-", "+", 10)
            assert await piped.xack(stream, "g", entry_id) == 1
        tagged = [f"getkeys:{{{tag}}}:a", f"getkeys:{{{tag}}}:b"]
        for stream in tagged:
            await piped.xadd(stream, {"n": "1"})
        both = await piped.xread(dict.fromkeys(tagged, "0-0"), count=5)
        assert len(both) == 2  # one read of two streams of one slot
        stats = commandstats(cluster)
        assert all(GETKEYS not in node for node in stats.values()), stats
        assert (
            sum(node.get("cmdstat_xreadgroup", {}).get("calls", 0) for node in stats.values()) == 6
        )
    finally:
        await client.delete(*streams)
        await disconnect(client)


async def test_the_auto_pipeline_batches_commands_for_every_node(cluster: Cluster) -> None:
    client = connect(Settings(redis_url=cluster.url, redis_cluster=True))
    piped = autopipe(client)
    assert isinstance(piped, AutoPipeline)
    tag = uuid.uuid4().hex
    keys = [f"pipe:{tag}:{n}" for n in range(60)]
    try:
        await piped.ping()
        assert {cluster.slot_owners()[cluster.keyslot(k)] for k in keys} == set(cluster.ports)
        reset_stats(cluster)
        before = piped.batches
        assert await asyncio.gather(*(piped.set(k, n) for n, k in enumerate(keys))) == [True] * 60
        assert piped.batches == before + 1  # one turn of the loop: one batch
        stats = commandstats(cluster)
        # Each node got its commands as one pipeline, not one round trip each: no node saw
        # more SETs than the keys it serves, and every node saw some.
        sets = [node.get("cmdstat_set", {}).get("calls", 0) for node in stats.values()]
        assert sum(sets) == 60 and all(sets)
        got = await asyncio.gather(*(piped.get(k) for k in keys), piped.incr(keys[0]))
        assert got[:-1] == [str(n).encode() for n in range(60)] and got[-1] == 1
        # An error reply fails its caller alone; commands that cannot join a cluster
        # pipeline (several nodes, several slots) go alone, in their place.
        await piped.xadd(f"pipe:{tag}:s", {"a": "1"})
        replies = await asyncio.gather(
            piped.incr(f"pipe:{tag}:s"),
            piped.exists(*keys[:10]),
            piped.ping(),
            piped.get(keys[1]),
            return_exceptions=True,
        )
        assert isinstance(replies[0], ResponseError)
        assert list(replies[1:]) == [10, True, b"1"]
        group = piped.pipeline(transaction=False)
        group.delete(*keys[:30])
        group.sadd(f"pipe:{tag}:set", "m")
        group.delete(keys[30])
        assert await group.execute() == [30, 1, 1]
        # A script whose keys span slots fails alone; its batch goes through.
        script = piped.register_script("return #KEYS")
        results = await asyncio.gather(
            script(keys=[keys[40], keys[41]]),
            script(keys=[f"{{{tag}}}a", f"{{{tag}}}b"]),
            piped.get(keys[42]),
            return_exceptions=True,
        )
        # Refused by the client (redis-py's pipeline) or by the node (on its wire): CROSSSLOT.
        assert isinstance(results[0], (RedisClusterException, ClusterCrossSlotError))
        assert list(results[1:]) == [2, b"42"], repr(results)
    finally:
        await client.delete(*keys, f"pipe:{tag}:s", f"pipe:{tag}:set")
        await disconnect(client)


def blocked_reads(cluster: Cluster, port: int) -> set[int]:
    """The ids of the node's connections blocked in XREAD (flag ``b``: the ``cmd`` column is a
    connection's last command, so an idle one whose last read is over shows ``xread`` too)."""
    with cluster.node(port) as node:
        return {
            int(c["id"])
            for c in node.client_list()
            if c.get("cmd") == "xread" and "b" in c.get("flags", "")
        }


async def test_a_reset_of_the_client_leaves_its_blocking_reads_alone(cluster: Cluster) -> None:
    """redis-py resets its cluster client (every connection closed, those in use too) after a
    cluster error; a blocking read then in flight goes on, on a client of its own, and gets
    the entry added meanwhile."""
    client = connect(Settings(redis_url=cluster.url, redis_cluster=True))
    assert isinstance(client, ClusterClient)
    stream = f"reads:{uuid.uuid4().hex}"
    try:
        await client.xadd(stream, {"n": "0"})
        owner = cluster.slot_owners()[cluster.keyslot(stream)]
        others = blocked_reads(cluster, owner)  # reads of other clients, not this one's
        read: asyncio.Future[Any] = asyncio.ensure_future(client.xread({stream: "$"}, block=20_000))
        before = await until(lambda: blocked_reads(cluster, owner) - others, 10)  # this read's
        await client.aclose()  # what redis-py does after CLUSTERDOWN or a failed pipeline
        await asyncio.sleep(0.2)  # (a torn-down read would be sent again on a new connection)
        assert before <= blocked_reads(cluster, owner)  # the same connection, still blocked
        await client.xadd(stream, {"n": "1"})  # the client reconnects for this
        reply = await asyncio.wait_for(read, 20)
        [(_, entries)] = list(reply.items()) if isinstance(reply, dict) else reply
        assert [fields for _, fields in entries] == [{b"n": b"1"}]
        assert client.reads() is not client and client.reads().reads() is client.reads()
    finally:
        await disconnect(client)


def test_only_blocking_stream_reads_go_on_the_reads_client() -> None:
    assert blocking(("XREAD", "COUNT", 5, "BLOCK", 1000, "STREAMS", "s", "$"))
    assert blocking((b"XREADGROUP", b"GROUP", b"g", b"c", b"BLOCK", 10, b"STREAMS", b"s", b">"))
    assert not blocking(("XREAD", "COUNT", 5, "STREAMS", "s", "$"))
    assert not blocking(("BLPOP", "k", 0))
    assert not blocking(("GET", "BLOCK"))


async def test_a_command_waits_out_a_failover_but_not_an_error_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a failover answers (a refused connection, CLUSTERDOWN) is asked again after a
    pause, up to ``FAILOVER_TRIES`` times in all; any other error is the caller's at once."""
    answers: list[BaseException | str] = []
    sent: list[tuple[Any, ...]] = []

    async def node_says(self: RedisCluster, *args: Any, **kwargs: Any) -> Any:
        sent.append(args)
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(RedisCluster, "execute_command", node_says)
    monkeypatch.setattr(cluster_module, "FAILOVER_PAUSE", 0.001)
    client = ClusterClient(host="127.0.0.1", port=1)
    answers[:] = [RedisConnectionError("refused"), ClusterDownError("CLUSTERDOWN"), "OK"]
    assert await client.execute_command("SET", "k", "v") == "OK"
    assert len(sent) == 3
    sent.clear()
    answers[:] = [ResponseError("WRONGTYPE"), "OK"]
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        await client.execute_command("GET", "k")
    assert len(sent) == 1
    sent.clear()
    answers[:] = [RedisConnectionError("refused")] * cluster_module.FAILOVER_TRIES
    with pytest.raises(RedisConnectionError):
        await client.execute_command("GET", "k")
    assert len(sent) == cluster_module.FAILOVER_TRIES and answers == []


async def test_commands_of_known_slots_go_on_their_nodes_wires_and_follow_a_move(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cluster.test_failover import move_slot

    client = connect(Settings(redis_url=cluster.url, redis_cluster=True))
    assert isinstance(client, ClusterClient) and client.wired
    piped = autopipe(client)
    assert isinstance(piped, AutoPipeline)
    redis_py: list[int] = []  # batches that went redis-py's way: their sizes
    sent_before = piped._send

    async def counted(calls: list[Any]) -> None:
        redis_py.append(len(calls))
        await sent_before(calls)

    monkeypatch.setattr(piped, "_send", counted)
    tag = uuid.uuid4().hex
    keys = [f"wires:{tag}:{n}" for n in range(30)]
    stream = f"wires:{tag}:stream"
    try:
        await piped.ping()  # through redis-py (every node): the client learns the map
        # A first batch goes redis-py's way while it opens the wires of its nodes.
        assert await asyncio.gather(*(piped.get(k) for k in keys)) == [None] * 30
        assert redis_py == [30]
        await until(
            lambda: len(client._wires) == 3 and all(w.ready() for w in client._wires.values()),
            5,
            every=0.01,
            message="the wires did not open",
        )
        redis_py.clear()
        assert await asyncio.gather(*(piped.set(k, n) for n, k in enumerate(keys))) == [True] * 30
        assert not redis_py
        carried = {w.port for w in client._wires.values() if w.batches}
        assert carried == set(cluster.ports)

        # A command that must go redis-py's way (a DEL of keys of two slots) is not overtaken
        # by one queued after it for a wire.
        group: Any = piped.pipeline(transaction=False)
        group.delete(keys[1], keys[2])
        group.set(keys[1], "after")
        assert await group.execute() == [2, True]
        assert await piped.get(keys[1]) == b"after"
        redis_py.clear()

        # The slot moves behind the client's back: the node's MOVED sends the command
        # redis-py's way (which mends the map); the next goes on the new node's wire.
        slot = client.keyslot(keys[0])
        source = cluster.slot_owners()[slot]
        target = next(p for p in cluster.ports if p != source)
        await asyncio.to_thread(move_slot, cluster, slot, target)
        assert await piped.get(keys[0]) == b"0"
        assert redis_py == [1]
        wire = client.node_wire(slot)
        assert wire is not None and wire.port == target
        before = wire.batches
        assert await piped.get(keys[0]) == b"0"
        assert redis_py == [1] and wire.batches == before + 1

        # A blocking read waits on a lent connection of its stream's node, not redis-py's.
        reading = asyncio.ensure_future(piped.xread({stream: "$"}, block=10_000))
        node = client.node_wire(client.keyslot(stream))
        assert node is not None
        await until(lambda: bool(node._lent), 5, every=0.01, message="no lent connection")
        entry = await piped.xadd(stream, {"n": "1"})
        [(name, entries)] = await reading
        assert name == stream.encode() and entries[0][0] == entry
        assert client._reads is None  # the reads client was never needed
    finally:
        await client.delete(*keys, stream)
        await disconnect(client)
