"""One way to get a Redis client: a real Redis, a Redis Cluster, or the embedded stand-in.

``rummy serve`` runs on fakeredis (with its Lua support) so that a newcomer needs no server; the
same code talks to a real Redis or Cluster when ``REDIS_URL`` is set (for a Cluster, one seed
URL or several, comma-separated: ``Settings.redis_seeds``). fakeredis is imported only
when the stand-in is built: a service of a real Redis does not load it (nor its Lua runtime).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.utils import DEFAULT_RESP_VERSION

from shared.infra.client import RedisClient
from shared.infra.cluster import ClusterClient
from shared.infra.settings import Settings
from shared.infra.wire import Wire, pack

if TYPE_CHECKING:
    import fakeredis

_EMBEDDED: dict[str, fakeredis.FakeServer] = {}
MAX_CONNECTIONS = 512  # per client; a command waits (up to 20 s) when all are busy


def embedded_server(name: str = "default") -> fakeredis.FakeServer:
    """The in-process stand-in server shared by every service of this process."""
    import fakeredis

    if name not in _EMBEDDED:
        _EMBEDDED[name] = fakeredis.FakeServer()
    return _EMBEDDED[name]


class PackedConnection(aioredis.Connection):
    """A connection that packs commands in C (hiredis) instead of redis-py's Python loop, which
    took a sixth of a referee's time under load. Types hiredis cannot pack are a ``DataError``,
    as with redis-py's own packer (a bool is packed as 1 or 0 rather than refused)."""

    def pack_command(self, *args: Any) -> list[bytes]:
        return [pack(args)]


class WiredRedis(aioredis.Redis):
    """A client of a plain ``redis://`` Redis that also holds a ``Wire``: the one connection
    the auto-pipeline sends its batches on (``shared/infra/wire.py``). Closing the client
    closes the wire too."""

    wire: Wire

    async def aclose(self, close_connection_pool: bool | None = None) -> None:
        await self.wire.aclose()
        await super().aclose(close_connection_pool)


def _plain_tcp(url: str) -> bool:
    """A ``redis://`` URL (TLS and Unix sockets keep redis-py's own connection classes)."""
    return url.startswith("redis://")


def _embedded_client() -> aioredis.Redis:
    """A client of the process's stand-in server."""
    import fakeredis.aioredis

    return fakeredis.aioredis.FakeRedis(
        server=embedded_server(),
        connection_pool_class=aioredis.BlockingConnectionPool,
        max_connections=MAX_CONNECTIONS,
    )


async def disconnect(client: RedisClient) -> None:
    """Close a client from ``connect`` for good (a cluster client's blocking-reads client too)."""
    if isinstance(client, ClusterClient):
        await client.close_all()
    else:
        await client.aclose()


def connect(settings: Settings) -> aioredis.Redis | RedisCluster:
    """A client for the settings' Redis (reconnecting with backoff after a restart).

    A command that meets a lost connection is sent again on a new one after 0.1, 0.2, 0.4 ...
    seconds (at most 2 s apart, 8 times: about 9 s in all), so a Redis restart shorter than that
    delays commands instead of failing them. The retry must be the asyncio ``Retry``: the
    synchronous one, given to an asyncio client, returns the coroutine unawaited and so never
    retries anything.
    """
    # A blocking pool: under a burst, a command waits for a free connection (up to 20 s) rather
    # than failing at once with "Too many connections" (redis-py's plain pool raises).
    if settings.redis_url is None:
        return _embedded_client()
    retry = Retry(ExponentialBackoff(cap=2.0, base=0.05), retries=8)
    errors = [RedisConnectionError, RedisTimeoutError, ConnectionResetError]
    if settings.redis_cluster:
        # Every seed is asked for the cluster's map in turn (redis-py shuffles them): the
        # client starts while any one of them answers.
        seeds = settings.redis_seeds() if "," in settings.redis_url else None
        more = [ClusterNode(host, port) for host, port in seeds.nodes[1:]] if seeds else []
        url = seeds.url if seeds else settings.redis_url
        cluster = cast(
            ClusterClient,
            ClusterClient.from_url(
                url,
                startup_nodes=more or None,
                retry=retry,
                retry_on_error=errors,
                max_connections=MAX_CONNECTIONS,
            ),
        )
        # The auto-pipeline writes commands of known slots straight to their nodes' wires.
        cluster.wired = _plain_tcp(url)
        return cluster
    packed = {"connection_class": PackedConnection} if _plain_tcp(settings.redis_url) else {}
    blocking = aioredis.BlockingConnectionPool.from_url(
        settings.redis_url,
        **packed,
        max_connections=MAX_CONNECTIONS,
        timeout=20,
        retry=retry,
        retry_on_error=errors,
        health_check_interval=15,
        socket_keepalive=True,
    )
    if not packed:
        return aioredis.Redis.from_pool(blocking)  # closing the client closes its pool too
    client = cast(WiredRedis, WiredRedis.from_pool(blocking))
    options = blocking.connection_kwargs
    client.wire = Wire(
        options.get("host", "localhost"),
        int(options.get("port", 6379)),
        db=int(options.get("db", 0) or 0),
        username=options.get("username"),
        password=options.get("password"),
        protocol=int(options.get("protocol") or DEFAULT_RESP_VERSION),
    )
    return client
