"""What only the Redis store has: its keys, stream IDs, the append script, and Cluster slots."""

from __future__ import annotations

import asyncio
import os
from typing import Any
from uuid import uuid4

import pytest
from fakeredis.aioredis import FakeRedis
from redis.asyncio import Redis
from redis.crc import key_slot
from redis.exceptions import ClusterCrossSlotError, RedisClusterException
from store_backends import Backend

from shared.infra.chain import verify_chain
from shared.infra.keys import Keys
from shared.infra.store import RedisEventStore, StoreError
from shared.infra.store.redis import APPEND_SCRIPT, _stream_entries
from shared.infra.stored import GENESIS_HASH, NewEvent


def evs(*ns: int) -> list[NewEvent]:
    return [NewEvent("TurnPlayed", {"n": n}) for n in ns]


async def _keys_under(backend: Backend) -> set[str]:
    """Every key the test created (its prefix is its own; SCAN is fine in a test, not in code)."""
    assert backend.client is not None
    found: set[str] = set()
    async for key in backend.client.scan_iter(match=f"{backend.prefix}*"):
        found.add(key.decode())
    return found


async def test_every_key_of_a_game_carries_its_hash_tag(redis_backend: Backend) -> None:
    g1, g2 = redis_backend.game(), redis_backend.game()
    store = redis_backend.store
    await store.append(g1, evs(1, 2), 0, command_id="c1")
    await store.append(g2, evs(1), 0, command_id="c1")
    await store.append(g1, evs(3), 2, command_id="c2")
    keys = Keys(redis_backend.prefix)
    per_game = {g: set(keys.game_keys(g)) for g in (g1, g2)}
    assert await _keys_under(redis_backend) == per_game[g1] | per_game[g2] | {keys.games()}
    for g, game_keys in per_game.items():
        for key in game_keys:
            assert key.startswith(f"{redis_backend.prefix}game:{{{g}}}:"), key
            assert key_slot(key.encode()) == key_slot(g.encode()), key


async def test_stream_ids_are_the_versions(redis_backend: Backend) -> None:
    g = redis_backend.game()
    await redis_backend.store.append(g, evs(1, 2), 0)
    await redis_backend.store.append(g, evs(3), 2)
    assert redis_backend.client is not None
    entries = await redis_backend.client.xrange(Keys(redis_backend.prefix).events(g))
    assert [entry_id for entry_id, _ in entries] == [b"1-0", b"2-0", b"3-0"]
    head = await redis_backend.client.hgetall(Keys(redis_backend.prefix).head(g))
    assert head == {b"version": b"3", b"hash": (await redis_backend.store.version(g))[1].encode()}


async def test_a_damaged_game_refuses_appends(redis_backend: Backend) -> None:
    """A stream longer than its head says is refused before any write (scripts do not roll
    back, so a failing XADD half-way would otherwise leave a partial append)."""
    g = redis_backend.game()
    await redis_backend.store.append(g, evs(1), 0)
    assert redis_backend.client is not None
    await redis_backend.client.xadd(Keys(redis_backend.prefix).events(g), {"e": b"x"}, id="2-0")
    with pytest.raises(StoreError, match="damaged: its stream holds 2 events, its head says 1"):
        await redis_backend.store.append(g, evs(2), 1)
    assert await redis_backend.client.xlen(Keys(redis_backend.prefix).events(g)) == 2
    assert (await redis_backend.store.version(g))[0] == 1


async def test_a_second_store_on_the_same_redis_sees_the_log(redis_backend: Backend) -> None:
    assert redis_backend.client is not None
    g = redis_backend.game()
    await redis_backend.store.append(g, evs(1, 2), 0, command_id="c")
    other = RedisEventStore(redis_backend.client, prefix=redis_backend.prefix)
    assert verify_chain(await other.read(g)) is None
    assert (await other.append(g, evs(1, 2), 0, command_id="c")).duplicate
    assert await other.list_games() == [g]


async def test_a_decoding_client_is_refused() -> None:
    client = FakeRedis(decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses=False"):
        RedisEventStore(client)
    await client.aclose()


async def test_cross_slot_keys_fail_on_the_cluster(cluster_backend: Backend) -> None:
    """Proves the cluster fixture is a real cluster: the append script given the keys of two
    games is refused by the cluster client and, sent straight to the node, by Redis itself."""
    g1, g2 = cluster_backend.game(), cluster_backend.game()
    keys = Keys(cluster_backend.prefix)
    mixed = [keys.events(g1), keys.head(g2), keys.commands(g1)]
    assert key_slot(mixed[0].encode()) != key_slot(mixed[1].encode())
    args: list[Any] = [0, GENESIS_HASH, "", "1 1 " + "0" * 64, "0" * 64, b"record"]
    store = cluster_backend.store
    assert isinstance(store, RedisEventStore)
    # Depending on the redis-py version the cluster client refuses this itself or passes on
    # the node's CROSSSLOT error; either way nothing runs.
    with pytest.raises((RedisClusterException, ClusterCrossSlotError), match=r"same .*slot"):
        await store._append(keys=mixed, args=args)

    node = Redis(host="127.0.0.1", port=cluster_backend.cluster_port)
    try:
        with pytest.raises(ClusterCrossSlotError):
            await node.eval(APPEND_SCRIPT, 3, *mixed, *args)
        # The same keys of one game go through: the script runs (and finds no such game).
        same = [keys.events(g1), keys.head(g1), keys.commands(g1)]
        assert await node.eval("return redis.call('XLEN', KEYS[1])", 3, *same) == 0
    finally:
        await node.aclose()
    assert await store.version(g1) == (0, GENESIS_HASH)
    assert await store.version(g2) == (0, GENESIS_HASH)


@pytest.mark.parametrize("server", ["fakeredis", "redis"])
async def test_a_resp3_client_works_too(server: str) -> None:
    """XREAD replies differ between RESP2 and RESP3; the store reads both."""
    if server == "redis":
        url = os.environ.get("REDIS_URL")
        if not url:
            pytest.skip("REDIS_URL is not set: no real Redis to test against")
        client: Redis = Redis.from_url(url, protocol=3)
    else:
        client = FakeRedis(protocol=3)
    prefix = f"test:{uuid4().hex[:8]}:"
    store = RedisEventStore(client, prefix=prefix, block_ms=2000)
    g = f"g-{uuid4().hex[:12]}"
    try:
        await store.append(g, evs(1, 2), 0, command_id="c", fingerprint="f")
        sub = store.subscribe(g, after=1)
        assert (await asyncio.wait_for(anext(sub), 5)).version == 2
        pending = asyncio.ensure_future(anext(sub))
        await asyncio.sleep(0.02)
        await store.append(g, evs(3), 2)
        assert (await asyncio.wait_for(pending, 5)).version == 3
        await sub.aclose()  # type: ignore[attr-defined]
        assert verify_chain(await store.read(g)) is None
        assert (await store.append(g, evs(1), 0, command_id="c")).fingerprint == "f"
        assert await store.list_games() == [g]
    finally:
        for key in (*Keys(prefix).game_keys(g), Keys(prefix).games()):
            await client.delete(key)
        await client.aclose()


@pytest.mark.parametrize(
    "reply",
    [
        [[b"k", [(b"1-0", {b"e": b"x"})]]],  # RESP2
        {b"k": [[(b"1-0", {b"e": b"x"})]]},  # RESP3 as redis-py parses it
        {b"k": [(b"1-0", {b"e": b"x"})]},  # redis-py's unified shape
    ],
)
def test_xread_reply_shapes(reply: Any) -> None:
    assert _stream_entries(reply) == [(b"1-0", {b"e": b"x"})]
    assert _stream_entries([]) == _stream_entries({}) == _stream_entries(None) == []
