"""Backends for the event store contract tests: in-memory, fakeredis, a real Redis (REDIS_URL)
and a single-node Redis Cluster that this session starts itself when ``redis-server`` exists.

Every test gets its own key prefix and game ids, and deletes exactly the keys of the games it
used (never FLUSH: the machine's Redis is shared with others).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from uuid import uuid4

import pytest
from fakeredis.aioredis import FakeRedis
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from store_backends import ALL_BACKENDS, REDIS_BACKENDS, Backend

from tests.servers import START_TIMEOUT, RedisServer, redis_server_binary, wait_until


@pytest.fixture(scope="session")
def cluster_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A single-node Redis Cluster with every slot, started for this session and stopped after."""
    binary = redis_server_binary("no Redis Cluster to test against")
    with RedisServer(tmp_path_factory.mktemp("redis-cluster"), cluster=True, binary=binary) as node:
        with node.client() as client:
            client.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
            wait_until(
                lambda: _cluster_ok(client.execute_command("CLUSTER", "INFO")),
                START_TIMEOUT,
                every=0.02,
                message="the test Redis Cluster did not reach cluster_state:ok",
            )
        yield node.port


def _cluster_ok(info: object) -> bool:
    """Whether a CLUSTER INFO reply (raw text, or parsed into a dict) says the cluster is ok."""
    if isinstance(info, dict):
        return str(info.get("cluster_state")) == "ok"
    text = info.decode() if isinstance(info, bytes) else str(info)
    return "cluster_state:ok" in text


async def _client(name: str, request: pytest.FixtureRequest) -> tuple[Redis | RedisCluster, int]:
    if name == "fakeredis":
        return FakeRedis(), 0
    if name == "redis":
        url = os.environ.get("REDIS_URL")
        if not url:
            pytest.skip("REDIS_URL is not set: no real Redis to test against")
        return Redis.from_url(url), 0
    port: int = request.getfixturevalue("cluster_port")
    return RedisCluster(host="127.0.0.1", port=port), port


async def _backend(name: str, request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    prefix = f"test:{uuid4().hex[:8]}:"
    if name == "memory":
        yield Backend(name, prefix, None)
        return
    client, port = await _client(name, request)
    backend = Backend(name, prefix, client, port or None)
    try:
        yield backend
    finally:
        await backend.cleanup()
        await client.aclose()


@pytest.fixture(params=ALL_BACKENDS)
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    """Each event store backend in turn."""
    async for b in _backend(request.param, request):
        yield b


@pytest.fixture(params=REDIS_BACKENDS)
async def redis_backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    """Each Redis-backed event store in turn (for what only Redis has: keys, slots, scripts)."""
    async for b in _backend(request.param, request):
        yield b


@pytest.fixture
async def cluster_backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    """The event store on the session's Redis Cluster."""
    async for b in _backend("cluster", request):
        yield b
