"""One way to get a Redis client: a real Redis, a Redis Cluster, or the embedded stand-in.

``rummy serve`` runs on fakeredis (with its Lua support) so that a newcomer needs no server; the
same code talks to a real Redis or Cluster when ``REDIS_URL`` is set.
"""

from __future__ import annotations

from typing import Any

import fakeredis
import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from shared.infra.settings import Settings

_EMBEDDED: dict[str, fakeredis.FakeServer] = {}


def embedded_server(name: str = "default") -> fakeredis.FakeServer:
    """The in-process stand-in server shared by every service of this process."""
    if name not in _EMBEDDED:
        _EMBEDDED[name] = fakeredis.FakeServer()
    return _EMBEDDED[name]


def connect(settings: Settings) -> Any:
    """A client for the settings' Redis (reconnecting with backoff after a restart)."""
    if settings.redis_url is None:
        return fakeredis.aioredis.FakeRedis(server=embedded_server())
    retry = Retry(ExponentialBackoff(cap=2.0, base=0.05), retries=8)
    errors = [RedisConnectionError, RedisTimeoutError, ConnectionResetError]
    if settings.redis_cluster:
        return RedisCluster.from_url(settings.redis_url, retry=retry, retry_on_error=errors)
    return aioredis.Redis.from_url(
        settings.redis_url,
        retry=retry,
        retry_on_error=errors,
        health_check_interval=15,
        socket_keepalive=True,
    )
