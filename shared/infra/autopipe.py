"""Auto-pipelining: the plain Redis commands that many tasks issue at the same moment travel to
Redis together, in one pipeline (one write, one read), instead of one round trip each.

Why: under load a service handles dozens of commands at once (a referee's batch of entries, a
gateway's concurrent requests). On loopback most of a round trip's CPU is the socket write and
the wake-up of the reader, paid per command; profiles showed 40% of each service's time there.
Commands queued during one turn of the event loop are sent as one pipeline on the next turn, so
the cost is paid per batch. A quiet service sees batches of one, with no added wait.

``AutoPipeline(client)`` behaves like the client for the callers of this project:

- the commands in ``COALESCED`` are queued and answered from the shared pipeline (an error
  reply raises in its own caller only; a lost connection fails every caller of that batch);
- ``pipeline(transaction=False)`` gives a group whose commands join the shared pipeline and
  whose ``execute`` answers them in order, as a pipeline's would;
- ``register_script`` gives a script that runs through the shared pipeline (``NOSCRIPT`` is
  handled by the script object, as usual);
- everything else, blocking reads above all, goes straight to the client.

Commands are not reordered: a group's commands stay together and in order, and two commands of
one task are sent in the order the task awaited them. A Redis Cluster client is used as it is
(``autopipe`` returns it unchanged): its commands go to different nodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from redis.asyncio.cluster import RedisCluster
from redis.commands.core import AsyncScript

COALESCED = frozenset(
    {
        "delete",
        "evalsha",
        "exists",
        "get",
        "hget",
        "hgetall",
        "hmget",
        "hset",
        "incr",
        "ping",
        "sadd",
        "script_load",
        "pexpire",
        "set",
        "sismember",
        "smembers",
        "srem",
        "xack",
        "xadd",
        "xlen",
        "xrange",
        "xrevrange",
        "zadd",
        "zcard",
        "zrange",
        "zrangebyscore",
        "zrem",
        "zremrangebyscore",
        "zrevrange",
        "zscore",
    }
)
"""Commands that never block and may share a pipeline with any other."""

_Call = tuple[str, tuple[Any, ...], dict[str, Any], "asyncio.Future[Any]"]


class AutoPipeline:
    """A Redis client wrapper that sends concurrent commands in shared pipelines."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._queue: list[_Call] = []
        self._flushing = False
        self.batches = 0  # pipelines sent (for tests and benchmarks)
        self.commands = 0  # commands sent through them

    def __getattr__(self, name: str) -> Any:
        if name in COALESCED:
            return self._command(name)
        return getattr(self.client, name)

    def _command(self, name: str) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self.submit([(name, args, kwargs)])[0]

        return call

    def submit(self, calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]]) -> list[Any]:
        """Queue ``calls`` (kept together, in order) for the next pipeline; their futures."""
        loop = asyncio.get_running_loop()
        futures: list[asyncio.Future[Any]] = []
        for name, args, kwargs in calls:
            future: asyncio.Future[Any] = loop.create_future()
            self._queue.append((name, args, kwargs, future))
            futures.append(future)
        if not self._flushing:
            self._flushing = True
            loop.call_soon(self._flush)
        return futures

    def _flush(self) -> None:
        calls, self._queue = self._queue, []
        self._flushing = False
        if calls:
            task = asyncio.ensure_future(self._send(calls))
            task.add_done_callback(_consume_result)

    async def _send(self, calls: list[_Call]) -> None:
        self.batches += 1
        self.commands += len(calls)
        pipe = self.client.pipeline(transaction=False)
        for name, args, kwargs, _ in calls:
            getattr(pipe, name)(*args, **kwargs)
        try:
            results = await pipe.execute(raise_on_error=False)
        except BaseException as err:
            for *_, future in calls:
                if not future.done():
                    if isinstance(err, asyncio.CancelledError):
                        future.cancel()
                    else:
                        future.set_exception(err)
            if not isinstance(err, Exception):
                raise
            return
        for (*_, future), result in zip(calls, results, strict=True):
            if future.done():
                continue  # the caller was cancelled; the command ran all the same
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    def pipeline(self, transaction: bool = True) -> Any:
        """A group of commands sent together: through the shared pipeline with
        ``transaction=False``; a transaction (MULTI/EXEC) of its own otherwise, as redis-py's
        ``pipeline()`` is by default."""
        if transaction:
            return self.client.pipeline(transaction=True)
        return Group(self)

    def register_script(self, script: str) -> AsyncScript:
        """A script whose calls travel through the shared pipeline."""
        return AsyncScript(self, script)  # type: ignore[arg-type]


class Group:
    """What ``AutoPipeline.pipeline()`` returns: records commands, sends them on ``execute``."""

    def __init__(self, owner: AutoPipeline) -> None:
        self._owner = owner
        self._calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Callable[..., Group]:
        if name not in COALESCED:
            raise AttributeError(f"{name!r} cannot be sent in an auto-pipelined group")

        def record(*args: Any, **kwargs: Any) -> Group:
            self._calls.append((name, args, kwargs))
            return self

        return record

    def __len__(self) -> int:
        return len(self._calls)

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        """Send the recorded commands; their results in order (the first error raised, unless
        ``raise_on_error`` is false, when errors are returned in place)."""
        calls, self._calls = self._calls, []
        if not calls:
            return []
        futures = self._owner.submit(calls)
        done = await asyncio.gather(*futures, return_exceptions=True)
        if raise_on_error:
            for result in done:
                if isinstance(result, BaseException):
                    raise result
        return list(done)


def autopipe(client: Any) -> Any:
    """``client`` with auto-pipelining (a cluster client, or one wrapped already, unchanged)."""
    if isinstance(client, RedisCluster | AutoPipeline):
        return client
    return AutoPipeline(client)


def raw_client(client: Any) -> Any:
    """The client under an ``AutoPipeline`` (or ``client`` itself)."""
    return client.client if isinstance(client, AutoPipeline) else client


def _consume_result(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: every caller has been told already
