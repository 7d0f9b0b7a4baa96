"""Several seed nodes for a Redis Cluster in ``REDIS_URL``, and the stream reads whose slot the
cluster client works out itself (``shared/infra/cluster.py``). No Redis is needed: the real
cluster's side is ``tests/cluster/test_cluster_client.py``."""

from __future__ import annotations

import pytest
from redis.asyncio.cluster import ClusterNode

from shared.infra.bus import read_plan
from shared.infra.cluster import ClusterClient, stream_read_keys
from shared.infra.connection import connect
from shared.infra.settings import Seeds, Settings, SettingsError, parse_seeds


@pytest.mark.parametrize(
    ("value", "nodes"),
    [
        ("redis://a:6379,redis://b:6380", (("a", 6379), ("b", 6380))),
        ("redis://a:6379,b:6380, c:7000", (("a", 6379), ("b", 6380), ("c", 7000))),
        ("rediss://u:p@a:6379/0?protocol=3,b", (("a", 6379), ("b", 6379))),
        ("redis://[::1]:7000,[::1]:7001", (("::1", 7000), ("::1", 7001))),
    ],
)
def test_a_seed_list_names_every_node(value: str, nodes: tuple[tuple[str, int], ...]) -> None:
    seeds = parse_seeds(value)
    assert seeds == Seeds(value.split(",")[0], nodes)
    settings = Settings.from_env({"REDIS_URL": value, "RUMMY_REDIS_CLUSTER": "true"})
    assert settings.redis_seeds() == seeds


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("redis://a:6379,", "empty seed"),
        ("redis://a:6379,,redis://b:6379", "empty seed"),
        ("a:6379,b:6379", "must be a URL"),
        ("redis://a:6379,rediss://b:6379", "same scheme"),
        ("redis://a:6379,http://b:6379", "redis:// or rediss://"),
        ("redis://a:6379,b:port", "a port 1-65535"),
        ("redis://a:6379,b:70000", "a port 1-65535"),
        ("redis://a:6379,redis://:6379", "needs a host"),
        ("redis://a:6379,redis://u:p@b:6379", "first seed only"),
        ("redis://a:6379,redis://b:6379/2", "first seed only"),
        ("redis://a:6379,redis://b:6379?protocol=3", "first seed only"),
    ],
)
def test_a_malformed_seed_list_is_refused(value: str, says: str) -> None:
    with pytest.raises(SettingsError, match="REDIS_URL") as refused:
        Settings.from_env({"REDIS_URL": value, "RUMMY_REDIS_CLUSTER": "true"})
    assert says in str(refused.value)


def test_a_seed_list_is_for_a_cluster_only() -> None:
    with pytest.raises(SettingsError, match="RUMMY_REDIS_CLUSTER=true"):
        Settings.from_env({"REDIS_URL": "redis://a:6379,redis://b:6379"})


def test_the_cluster_client_starts_from_every_seed() -> None:
    settings = Settings(redis_url="redis://u:pw@a:6379,b:6380,c:6381", redis_cluster=True)
    client = connect(settings)
    assert isinstance(client, ClusterClient)
    assert sorted(client.nodes_manager.startup_nodes) == ["a:6379", "b:6380", "c:6381"]
    node: ClusterNode = client.nodes_manager.startup_nodes["b:6380"]
    assert node.connection_kwargs["password"] == "pw"  # the first seed's, for every node
    single = connect(Settings(redis_url="redis://a:6379/0", redis_cluster=True))
    assert isinstance(single, ClusterClient)
    assert list(single.nodes_manager.startup_nodes) == ["a:6379"]


@pytest.mark.parametrize(
    ("command", "args", "keys"),
    [
        ("XREADGROUP", ("GROUP", "g", "c", "COUNT", 5, "STREAMS", "s1", ">"), ["s1"]),
        ("XREADGROUP", ("GROUP", "g", "c", "STREAMS", "a", "b", ">", ">"), ["a", "b"]),
        # A group or consumer named like the keyword is not the keyword.
        ("XREADGROUP", ("GROUP", "STREAMS", "streams", "streams", "k", "0"), ["k"]),
        ("xread", ("COUNT", 10, "BLOCK", 1000, b"STREAMS", b"k", b"0-0"), [b"k"]),
        ("XREAD", ("STREAMS", "streams", "0"), ["streams"]),
        ("XREAD", ("STREAMS", "k"), None),  # malformed: Redis says why
        ("XREAD", ("COUNT", 1), None),
        ("XADD", ("k", "*", "f", "v"), None),  # not a stream read: redis-py's own way
    ],
)
def test_a_stream_read_names_its_keys(command: str, args: tuple[object, ...], keys: object) -> None:
    found = stream_read_keys(command, args)
    assert (None if found is None else list(found)) == keys


async def test_a_stream_read_finds_its_slot_without_asking_a_node() -> None:
    client = ClusterClient(host="127.0.0.1", port=1)  # never connected
    slot = await client._determine_slot("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s{x}", ">")
    assert slot == client.keyslot("s{x}")
    both = ("STREAMS", "a{t}", "b{t}", "0", "0")
    assert await client._determine_slot("XREAD", *both) == client.keyslot("t")
    with pytest.raises(Exception, match="same key slot"):
        await client._determine_slot("XREAD", "STREAMS", "a", "b", "0", "0")


def test_a_cluster_reads_streams_of_one_slot_together() -> None:
    client = ClusterClient(host="127.0.0.1", port=1)
    streams = ["rr:commands:0", "rr:commands:1", "{t}:a", "{t}:b"]
    plan = read_plan(client, streams)
    assert sorted(plan) == [["rr:commands:0"], ["rr:commands:1"], ["{t}:a", "{t}:b"]]
