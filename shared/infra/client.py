"""The Redis client as the services see it: the commands they send, as a type.

Why: the services are handed a redis-py client (``redis.asyncio.Redis``, fakeredis's subclass of
it, ``WiredRedis``), a ``RedisCluster``, or the ``AutoPipeline`` wrapping one of them; typed as
``Any``, a misspelt command or a wrong argument reached Redis before anyone noticed. Each of
those clients fits ``RedisClient`` (mypy checks that where they are made: ``connect``,
``autopipe``), so a call outside this list, or with arguments redis-py would refuse, is a type
error.

Parameters follow redis-py's names, positions and defaults (a parameter a service never passes
is left out); their types are the narrower ones the services use. Dictionaries are
``dict[Any, Any]``: redis-py types them as ``dict`` of its own unions, and ``dict`` is
invariant, so any narrower key or value type would refuse the real clients. Replies are ``Any``:
their shape depends on the protocol (RESP2 or RESP3) and the client's decoding, and the
services read them defensively.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from typing import Any, Protocol

from redis.commands.core import AsyncScript

Key = str | bytes
Value = str | bytes | int | float  # what Redis can be sent as an argument
StreamId = str | bytes
Bound = str | float  # a sorted-set score bound ("-inf", "(5", 5.0)


class Encoder(Protocol):
    """How a client encodes and decodes (the event store needs undecoded replies)."""

    @property
    def decode_responses(self) -> bool: ...


class CommandGroup(Protocol):
    """A pipeline: commands recorded, then sent together by ``execute`` (their replies in
    order). A recorded command answers nothing itself: it is not awaited."""

    def delete(self, *names: Key) -> object: ...

    def hset(self, name: Key, key: Value | None = None, value: Value | None = None) -> object: ...

    def sadd(self, name: Key, *values: Value) -> object: ...

    def set(self, name: Key, value: Value, ex: int | None = None) -> object: ...

    def xack(self, name: Key, groupname: str, *ids: StreamId) -> object: ...

    def xadd(
        self,
        name: Key,
        fields: dict[Any, Any],
        id: StreamId = "*",
        maxlen: int | None = None,
        approximate: bool = True,
    ) -> object: ...

    def zadd(
        self, name: Key, mapping: Mapping[str, float], nx: bool = False, xx: bool = False
    ) -> object: ...

    def zrem(self, name: Key, *values: Value) -> object: ...

    def execute(self, raise_on_error: bool = True) -> Awaitable[list[Any]]: ...


class RedisClient(Protocol):
    """The commands the services send (every one the auto-pipeline coalesces or lends a
    connection for, and the few that go straight to the client)."""

    # Keys, strings, hashes, sets.
    def delete(self, *names: Key) -> Awaitable[Any]: ...

    def exists(self, *names: Key) -> Awaitable[Any]: ...

    def get(self, name: Key) -> Awaitable[Any]: ...

    def set(
        self,
        name: Key,
        value: Value,
        ex: int | None = None,
        px: int | None = None,
        nx: bool = False,
        xx: bool = False,
    ) -> Awaitable[Any]: ...

    def incr(self, name: Key, amount: int = 1) -> Awaitable[Any]: ...

    def pexpire(
        self, name: Key, time: int, nx: bool = False, xx: bool = False
    ) -> Awaitable[Any]: ...

    def pttl(self, name: Key) -> Awaitable[Any]: ...

    def scan_iter(
        self, match: str | None = None, count: int | None = None
    ) -> AsyncIterator[Any]: ...

    def hget(self, name: Key, key: Value) -> Awaitable[Any]: ...

    def hscan_iter(
        self, name: Key, match: str | None = None, count: int | None = None
    ) -> AsyncIterator[Any]: ...

    def hgetall(self, name: Key) -> Awaitable[Any]: ...

    def hdel(self, name: Key, *keys: Value) -> Awaitable[Any]: ...

    def hmget(self, name: Key, keys: Iterable[Value], *args: Value) -> Awaitable[Any]: ...

    def hset(
        self, name: Key, key: Value | None = None, value: Value | None = None
    ) -> Awaitable[Any]: ...

    def sadd(self, name: Key, *values: Value) -> Awaitable[Any]: ...

    def srem(self, name: Key, *values: Value) -> Awaitable[Any]: ...

    def sismember(self, name: Key, value: str) -> Awaitable[Any]: ...

    def smembers(self, name: Key) -> Awaitable[Any]: ...

    def sscan_iter(
        self, name: Key, match: str | None = None, count: int | None = None
    ) -> AsyncIterator[Any]: ...

    # Sorted sets.
    def zadd(
        self,
        name: Key,
        mapping: Mapping[str, float],
        nx: bool = False,
        xx: bool = False,
        ch: bool = False,
    ) -> Awaitable[Any]: ...

    def zcard(self, name: Key) -> Awaitable[Any]: ...

    def zrange(
        self, name: Key, start: int, end: int, desc: bool = False, withscores: bool = False
    ) -> Awaitable[Any]: ...

    def zrangebyscore(
        self,
        name: Key,
        min: Bound,
        max: Bound,
        start: int | None = None,
        num: int | None = None,
        withscores: bool = False,
    ) -> Awaitable[Any]: ...

    def zrem(self, name: Key, *values: Value) -> Awaitable[Any]: ...

    def zremrangebyscore(self, name: Key, min: Bound, max: Bound) -> Awaitable[Any]: ...

    def zrevrange(
        self, name: Key, start: int, end: int, withscores: bool = False
    ) -> Awaitable[Any]: ...

    def zscore(self, name: Key, value: Value) -> Awaitable[Any]: ...

    # Streams.
    def xadd(
        self,
        name: Key,
        fields: dict[Any, Any],
        id: StreamId = "*",
        maxlen: int | None = None,
        approximate: bool = True,
    ) -> Awaitable[Any]: ...

    def xack(self, name: Key, groupname: str, *ids: StreamId) -> Awaitable[Any]: ...

    def xlen(self, name: Key) -> Awaitable[Any]: ...

    def xrange(
        self, name: Key, min: StreamId = "-", max: StreamId = "+", count: int | None = None
    ) -> Awaitable[Any]: ...

    def xrevrange(
        self, name: Key, max: StreamId = "+", min: StreamId = "-", count: int | None = None
    ) -> Awaitable[Any]: ...

    def xread(
        self, streams: dict[Any, Any], count: int | None = None, block: int | None = None
    ) -> Awaitable[Any]: ...

    def xreadgroup(
        self,
        groupname: str,
        consumername: str,
        streams: dict[Any, Any],
        count: int | None = None,
        block: int | None = None,
    ) -> Awaitable[Any]: ...

    def xautoclaim(
        self,
        name: Key,
        groupname: str,
        consumername: str,
        min_idle_time: int,
        start_id: StreamId = "0-0",
        count: int | None = None,
    ) -> Awaitable[Any]: ...

    def xpending_range(
        self,
        name: Key,
        groupname: str,
        min: StreamId,
        max: StreamId,
        count: int,
        consumername: str | None = None,
    ) -> Awaitable[Any]: ...

    def xclaim(
        self,
        name: Key,
        groupname: str,
        consumername: str,
        min_idle_time: int,
        message_ids: Any,  # (redis-py's list, invariant in its element type)
        *,
        retrycount: int | None = None,
        justid: bool = False,
    ) -> Any: ...

    def xgroup_create(
        self, name: Key, groupname: str, id: StreamId = "$", mkstream: bool = False
    ) -> Awaitable[Any]: ...

    def xinfo_groups(self, name: Key) -> Awaitable[Any]: ...

    def xinfo_consumers(self, name: Key, groupname: str) -> Awaitable[Any]: ...

    # The connection, scripts, pipelines.
    def ping(self) -> Awaitable[Any]: ...

    def time(self) -> Any: ...  # (redis-py's answer, or one to await)

    def register_script(self, script: str) -> AsyncScript: ...

    def pipeline(self, transaction: bool = True) -> CommandGroup: ...

    def get_encoder(self) -> Encoder: ...

    def aclose(self) -> Awaitable[None]: ...
