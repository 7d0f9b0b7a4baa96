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

A batch goes out on the client's ``Wire`` when it has one (``shared/infra/wire.py``: one shared
socket, no redis-py machinery per round trip), else, or while the wire is down, as a redis-py
pipeline (which reconnects with backoff). Either way each reply goes through redis-py's own
response callback for its command, so callers get what redis-py would have given them.

Commands are not reordered: a group's commands stay together and in order, and two commands of
one task are sent in the order the task awaited them. A Redis Cluster client is used as it is
(``autopipe`` returns it unchanged): its commands go to different nodes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from redis.asyncio.cluster import RedisCluster
from redis.client import EMPTY_RESPONSE, NEVER_DECODE
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from shared.infra.client import CommandGroup, RedisClient
from shared.infra.wire import Receiver, Wire, WireDown, pack

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

BLOCKING = frozenset({"xread", "xreadgroup"})
"""Commands that may block: with a wire, each goes on a connection of its own, lent for it."""

_Call = tuple[str, tuple[Any, ...], dict[str, Any], "asyncio.Future[Any]"]
_Sent = tuple[_Call, tuple[Any, ...], dict[str, Any]]  # the call, its command and options


class AutoPipeline:
    """A Redis client wrapper that sends concurrent commands in shared pipelines."""

    def __init__(self, client: RedisClient) -> None:
        # redis-py's client: beyond RedisClient, its response callbacks and pipeline recording.
        self.client: Any = client
        wire = getattr(client, "wire", None)
        self.wire: Wire | None = wire if isinstance(wire, Wire) else None
        # Builds a command's arguments as redis-py would (its pipeline records, never sends).
        self._recorder: Any = client.pipeline(transaction=False) if self.wire is not None else None
        self._queue: list[_Call] = []
        self._lost: list[_Call] = []  # sent on the wire, connection lost before the reply
        self._tasks: set[asyncio.Task[None]] = set()  # batches on their way
        self._flushing = False
        self.batches = 0  # pipelines sent (for tests and benchmarks)
        self.commands = 0  # commands sent through them

    def __getattr__(self, name: str) -> Any:
        if name in COALESCED:
            call = self._command(name)
            setattr(self, name, call)  # made once per command name
            return call
        if name in BLOCKING and self.wire is not None:
            call = self._blocking_command(name)
            setattr(self, name, call)
            return call
        return getattr(self.client, name)

    def _blocking_command(self, name: str) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._blocking(name, args, kwargs)

        return call

    async def _blocking(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A blocking read on a lent connection of the wire (redis-py's way if none opens, or
        if the connection is lost before the answer: it then reconnects and asks again)."""
        assert self.wire is not None and self._recorder is not None
        socket = await self.wire.lend()
        if socket is None:
            return await getattr(self.client, name)(*args, **kwargs)
        try:
            command, options = self._build(name, args, kwargs)
        except Exception:
            self.wire.give_back(socket)
            raise
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            socket.write(pack(command), [(_One(future), None)])
            reply = await future
        except WireDown:
            return await getattr(self.client, name)(*args, **kwargs)
        finally:
            self.wire.give_back(socket)
        result = _answer(self.client.response_callbacks, command, options, reply)
        if isinstance(result, Exception):
            raise result
        return result

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
        if not calls:
            return
        self.batches += 1
        self.commands += len(calls)
        wire = self.wire
        if wire is not None and wire.ready():
            self._write(wire, calls)
            return
        if wire is not None and not wire.resting():
            self._background(self._open_and_write(wire, calls))
        else:
            self._background(self._send(calls))

    async def _open_and_write(self, wire: Wire, calls: list[_Call]) -> None:
        if await wire.open():
            self._write(wire, calls)
        else:
            await self._send(calls)

    def _write(self, wire: Wire, calls: list[_Call]) -> None:
        """Pack ``calls`` as redis-py would and write them on the wire; each reply answers its
        caller from ``answered`` (or comes back through ``lost``)."""
        assert self._recorder is not None
        packed: list[bytes] = []
        receivers: list[tuple[Receiver, Any]] = []
        for call in calls:
            name, args, kwargs, future = call
            try:
                command, options = self._build(name, args, kwargs)
                packed.append(pack(command))
            except Exception as err:  # a bad argument: its caller's error alone
                if not future.done():
                    future.set_exception(err)
                continue
            receivers.append((self, (call, command, options)))
        if packed:
            try:
                wire.send(packed, receivers)
            except WireDown:  # closing after all (Redis hung up this turn): nothing was sent
                self._background(self._send([token[0] for _, token in receivers]))

    def _build(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """A command's arguments and options as redis-py builds them (its error if it
        refuses them)."""
        assert self._recorder is not None
        try:
            getattr(self._recorder, name)(*args, **kwargs)
            return self._recorder.command_stack.pop()  # type: ignore[no-any-return]
        finally:
            self._recorder.command_stack.clear()

    def answered(self, token: _Sent, reply: Any) -> None:
        """A reply from the wire: answer its caller as redis-py's client would have."""
        (*_, future), command, options = token
        if future.done():
            return  # the caller was cancelled; the command ran all the same
        if isinstance(reply, RedisConnectionError):
            # LOADING (a restarted Redis reading its AOF) and the like: redis-py retries
            # those with backoff, so the command goes that way.
            self.lost(token)
            return
        try:
            result = _answer(self.client.response_callbacks, command, options, reply)
        except Exception as err:
            future.set_exception(err)
            return
        if isinstance(result, Exception):
            future.set_exception(result)
        else:
            future.set_result(result)

    def lost(self, token: _Sent) -> None:
        """The wire's connection failed before this reply: send the command again the
        fallback way (redis-py's pipeline, which reconnects with backoff)."""
        call = token[0]
        if call[3].done():
            return
        if self.wire is not None and self.wire.shut:  # the client is closing: no other way
            call[3].set_exception(WireDown("the Redis client was closed"))
            return
        self._lost.append(call)
        if len(self._lost) == 1:
            asyncio.get_running_loop().call_soon(self._resend)

    def _resend(self) -> None:
        calls, self._lost = self._lost, []
        self._background(self._send(calls))

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task held until it is done (the loop keeps only weak references
        to tasks); its callers learn its outcome through their futures."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_consume_result)

    async def _send(self, calls: list[_Call]) -> None:
        """Send ``calls`` as one redis-py pipeline and answer each caller."""
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

    def pipeline(self, transaction: bool = True) -> CommandGroup:
        """A group of commands sent together: through the shared pipeline with
        ``transaction=False``; a transaction (MULTI/EXEC) of its own otherwise, as redis-py's
        ``pipeline()`` is by default."""
        if transaction:
            group: CommandGroup = self.client.pipeline(transaction=True)
            return group
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


def autopipe(client: RedisClient) -> RedisClient:
    """``client`` with auto-pipelining (a cluster client, or one wrapped already, unchanged)."""
    if isinstance(client, RedisCluster | AutoPipeline):
        return client
    return AutoPipeline(client)


def raw_client(client: RedisClient) -> RedisClient:
    """The client under an ``AutoPipeline`` (or ``client`` itself)."""
    if isinstance(client, AutoPipeline):
        raw: RedisClient = client.client
        return raw
    return client


class _One:
    """A receiver that answers one future (a blocking command's)."""

    def __init__(self, future: asyncio.Future[Any]) -> None:
        self.future = future

    def answered(self, token: Any, reply: Any) -> None:
        if self.future.done():
            return
        if isinstance(reply, RedisConnectionError):  # LOADING and the like: redis-py retries
            self.future.set_exception(WireDown(str(reply)))
        else:
            self.future.set_result(reply)

    def lost(self, token: Any) -> None:
        if not self.future.done():
            self.future.set_exception(WireDown("the connection was lost"))


def _answer(callbacks: Any, command: tuple[Any, ...], options: dict[str, Any], reply: Any) -> Any:
    """A raw reply as redis-py's client would return it (its response callback applied; an
    error reply as its exception, or the command's stated empty answer)."""
    if isinstance(reply, ResponseError):
        return options.get(EMPTY_RESPONSE, reply)
    for special in ("keys", NEVER_DECODE, EMPTY_RESPONSE):
        options.pop(special, None)
    callback = callbacks.get(command[0])
    return callback(reply, **options) if callback is not None else reply


def _consume_result(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: every caller has been told already
