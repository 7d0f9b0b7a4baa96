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

On a Redis Cluster whose client has wires (``connect`` gives them for ``redis://`` nodes), each
command whose slot is known here (its key, or a script's first key) goes on the wire of the
master that serves it (``ClusterClient.node_wire``): one write per node per batch, packed in C,
and a blocking stream read on a lent connection of its streams' node. A command answered with a
redirection (MOVED, ASK, TRYAGAIN, CLUSTERDOWN: not run), or whose connection dropped, is sent
again redis-py's way, which follows it and mends the map the wires are chosen by. Otherwise (no
wires, or a command the wires do not take) a batch goes as one redis-py ``ClusterPipeline``:
its commands are grouped by the node that serves their slot, one pipeline per node, sent at
once (a MOVED or ASK answer is followed command by command, as redis-py does). A few commands
cannot join one: those sent to every node (``ping``, ``script_load``), and ``delete`` or
``exists`` of several keys (redis-py splits them by slot, one reply each); they go straight to
the client, in their place in the batch. ``evalsha``, refused by name in a cluster pipeline,
joins it as a plain command. A command whose keys span slots fails alone, not its batch. A
command that failed for a failover's reasons (a dead master, ``CLUSTERDOWN``) is sent again
after a pause, in the next pipeline of those that did, until the replica has taken over
(``shared/infra/cluster.py``).

Commands are not reordered: a group's commands stay together and in order, and two commands of
one task are sent in the order the task awaited them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import RedisCluster
from redis.client import EMPTY_RESPONSE, NEVER_DECODE
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisClusterException, ResponseError

from shared.infra.client import CommandGroup, RedisClient
from shared.infra.cluster import (
    FAILOVER_ERRORS,
    FAILOVER_PAUSE,
    FAILOVER_PAUSE_CAP,
    FAILOVER_TRIES,
    REDIRECTS,
    ClusterClient,
    stream_read_keys,
)
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
        "xautoclaim",
        "xinfo_groups",
        "xlen",
        "xpending_range",
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

CLUSTER_ALONE = frozenset({"ping", "script_load"})
"""Coalesced commands that a cluster client sends to every node: not in a cluster pipeline."""

SPLIT_BY_SLOT = frozenset({"delete", "exists"})
"""Commands a cluster pipeline splits by slot when they have several keys (a reply each)."""

BLOCKING = frozenset({"xread", "xreadgroup"})
"""Commands that may block: with a wire, each goes on a connection of its own, lent for it."""

_Call = tuple[str, tuple[Any, ...], dict[str, Any], "asyncio.Future[Any]"]
_Sent = tuple[_Call, tuple[Any, ...], dict[str, Any]]  # the call, its command and options


class AutoPipeline:
    """A Redis client wrapper that sends concurrent commands in shared pipelines."""

    def __init__(self, client: RedisClient) -> None:
        # redis-py's client: beyond RedisClient, its response callbacks and pipeline recording.
        self.client: Any = client
        self.cluster = isinstance(client, RedisCluster)
        wire = getattr(client, "wire", None)
        self.wire: Wire | None = wire if isinstance(wire, Wire) else None
        # A cluster client whose nodes have wires: commands of known slots go straight there.
        self.nodes = client if isinstance(client, ClusterClient) and client.wired else None
        # Builds a command's arguments as redis-py would (its pipeline records, never sends;
        # a plain client's, for a cluster: a cluster pipeline records commands of its own kind).
        self._recorder: Any = None
        if self.wire is not None:
            self._recorder = client.pipeline(transaction=False)
        elif self.nodes is not None:
            protocol = self.nodes.nodes_manager.connection_kwargs.get("protocol")
            self._recorder = aioredis.Redis(protocol=protocol).pipeline(transaction=False)
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
        if name in BLOCKING and (self.wire is not None or self.nodes is not None):
            call = self._blocking_command(name)
            setattr(self, name, call)
            return call
        return getattr(self.client, name)

    def _blocking_command(self, name: str) -> Callable[..., Any]:
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await self._blocking(name, args, kwargs)

        return call

    async def _blocking(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A blocking read on a lent connection of the wire (of its streams' node, on a
        cluster); redis-py's way if none opens, if the connection is lost before the answer
        (it then reconnects and asks again) or if the node redirects it."""
        assert self._recorder is not None
        command, options = self._build(name, args, kwargs)
        wire = self.wire if self.wire is not None else self._read_wire(command)
        socket = await wire.lend() if wire is not None else None
        if wire is None or socket is None:
            return await getattr(self.client, name)(*args, **kwargs)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            socket.write(pack(command), [(_One(future), None)])
            reply = await future
        except WireDown:
            return await getattr(self.client, name)(*args, **kwargs)
        finally:
            wire.give_back(socket)
        if self.nodes is not None and isinstance(reply, REDIRECTS):
            return await getattr(self.client, name)(*args, **kwargs)
        result = _answer(self.client.response_callbacks, command, options, reply)
        if isinstance(result, Exception):
            raise result
        return result

    def _read_wire(self, command: tuple[Any, ...]) -> Wire | None:
        """The wire of the node of a stream read's keys (None: keys of several slots, or no
        wire for their node)."""
        assert self.nodes is not None
        keys = stream_read_keys(str(command[0]), command[1:])
        if not keys:
            return None
        slots = {self.nodes.keyslot(key) for key in keys}
        return self.nodes.node_wire(slots.pop()) if len(slots) == 1 else None

    def _node_wire(self, call: _Call) -> Wire | None:
        """The wire of the node that serves a command's key (None: a command that goes
        redis-py's way, or a key whose node is not known)."""
        assert self.nodes is not None
        name, args, _, _ = call
        if not args or name in CLUSTER_ALONE or (name in SPLIT_BY_SLOT and len(args) != 1):
            return None
        try:
            if name == "evalsha":  # (sha, number of keys, keys..., arguments...)
                if len(args) < 3 or int(args[1]) < 1:
                    return None
                return self.nodes.node_wire(self.nodes.keyslot(args[2]))
            return self.nodes.node_wire(self.nodes.keyslot(args[0]))
        except (TypeError, ValueError):  # not a key: redis-py says what is wrong
            return None

    def _route(self, calls: list[_Call]) -> None:
        """Send a cluster batch: each command of a known node on that node's open wire (one
        write per node), the others redis-py's way. From the first command that goes
        redis-py's way on, the rest of the batch follows it there, so that no command overtakes
        one queued before it (a group's commands stay in order). A wire not yet open is opened
        for the next batches."""
        by_wire: dict[Wire, list[_Call]] = {}
        rest: list[_Call] = []
        opening: set[Wire] = set()
        for call in calls:
            wire = self._node_wire(call)
            if wire is not None and not wire.ready():
                if not wire.resting():
                    opening.add(wire)
                wire = None
            if wire is None or rest:
                rest.append(call)
            else:
                by_wire.setdefault(wire, []).append(call)
        for wire, some in by_wire.items():
            self._write(wire, some)
        for wire in opening:
            self._background(_open(wire))
        if rest:
            self._background(self._send_cluster(rest))

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
        if self.nodes is not None:
            self._route(calls)
        elif self.cluster:
            self._background(self._send_cluster(calls))
        elif wire is not None and not wire.resting():
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
        if isinstance(reply, RedisConnectionError) or (
            self.nodes is not None and isinstance(reply, REDIRECTS)
        ):
            # LOADING (a restarted Redis reading its AOF) and the like: redis-py retries
            # those with backoff, so the command goes that way; so does a command a cluster
            # node redirected (MOVED, ASK, TRYAGAIN), which redis-py follows.
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
        if (self.wire is not None and self.wire.shut) or (
            self.nodes is not None and self.nodes.shut
        ):
            # the client is closing: no other way
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
        """Send ``calls`` as one redis-py pipeline and answer each caller. On a cluster, the
        commands that failed for a failover's reasons (``cluster.FAILOVER_ERRORS``: a dead
        master, ``CLUSTERDOWN`` until its replica takes over) are sent again after a pause, as
        redis-py does with a lone command (``cluster.ClusterClient``), so a failover delays
        them instead of failing them."""
        pause = FAILOVER_PAUSE
        for _ in range(FAILOVER_TRIES - 1 if self.cluster else 0):
            calls = await self._send_once(calls, keep_failover=True)
            if not calls:
                return
            # Ask for the cluster's map afresh before the next try, as redis-py does for a
            # lone command (its pipeline does not): a master removed from the cluster answers
            # CLUSTERDOWN for every slot, never MOVED, so the map would keep sending there.
            self.client._initialize = True
            await asyncio.sleep(pause)
            pause = min(pause * 2, FAILOVER_PAUSE_CAP)
        await self._send_once(calls, keep_failover=False)

    async def _send_once(self, calls: list[_Call], keep_failover: bool) -> list[_Call]:
        """One pipeline of ``calls``; each caller answered, but (with ``keep_failover``) those
        that failed for a failover's reasons, which are returned to be sent again."""
        pipe = self.client.pipeline(transaction=False)
        recorded: list[_Call] = []
        for call in calls:
            name, args, kwargs, future = call
            try:
                if name == "evalsha" and self.cluster:
                    # Refused by name in a cluster pipeline (for scripts not loaded on every
                    # node); as a plain command it goes to its keys' node, and a NOSCRIPT
                    # answers its caller alone, whose script object loads it and asks again.
                    pipe.execute_command("EVALSHA", *args, **kwargs)
                else:
                    getattr(pipe, name)(*args, **kwargs)
            except Exception as err:  # a bad argument: its caller's error alone
                if not future.done():
                    future.set_exception(err)
                continue
            recorded.append(call)
        if not recorded:
            return []
        try:
            results = await pipe.execute(raise_on_error=False)
        except BaseException as err:
            if self.cluster and _unroutable(err):
                # A command the cluster pipeline could not route (keys of two slots), found
                # before anything was sent: each command goes alone, and fails alone.
                await asyncio.gather(*(_send_alone(self.client, call) for call in recorded))
                return []
            if keep_failover and isinstance(err, FAILOVER_ERRORS):
                return [call for call in recorded if not call[3].done()]
            for *_, future in recorded:
                if not future.done():
                    if isinstance(err, asyncio.CancelledError):
                        future.cancel()
                    else:
                        future.set_exception(err)
            if not isinstance(err, Exception):
                raise
            return []
        again: list[_Call] = []
        for call, result in zip(recorded, results, strict=True):
            future = call[3]
            if future.done():
                continue  # the caller was cancelled; the command ran all the same
            if keep_failover and isinstance(result, FAILOVER_ERRORS):
                again.append(call)
            elif isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)
        return again

    async def _send_cluster(self, calls: list[_Call]) -> None:
        """Send ``calls`` to a cluster: runs of them as cluster pipelines, in order, and each
        command that cannot join one alone, in its place."""
        run: list[_Call] = []
        for call in calls:
            name, args, _, _ = call
            if name not in CLUSTER_ALONE and not (name in SPLIT_BY_SLOT and len(args) != 1):
                run.append(call)
                continue
            if run:
                await self._send(run)
                run = []
            await _send_alone(self.client, call)
        if run:
            await self._send(run)

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
        return PipelinedScript(self, script)  # type: ignore[arg-type]


class PipelinedScript(AsyncScript):
    """A script of the auto-pipeline: called as redis-py's ``AsyncScript`` is, without its two
    checks per call of whether the client is one of redis-py's pipelines (it never is here;
    each is an ``isinstance`` against a ``Protocol`` subclass, several microseconds a call on
    the referee's append)."""

    async def __call__(self, keys: Any = None, args: Any = None, client: Any = None) -> Any:
        if client is not None:
            return await super().__call__(keys, args, client)
        keys = keys or []
        every = (*keys, *(args or []))
        owner = self.registered_client
        try:
            return await owner.evalsha(self.sha, len(keys), *every)
        except NoScriptError:
            # (A Redis that restarted, or another one: load it, as redis-py does.)
            self.sha = await owner.script_load(self.script)
            return await owner.evalsha(self.sha, len(keys), *every)


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
        # One after the other, not gathered: their replies come in one read, so every await
        # after the first finds its future done (a gather costs a future and callbacks more).
        done: list[Any] = []
        futures = self._owner.submit(calls)
        try:
            for future in futures:
                try:
                    done.append(await future)
                except Exception as err:
                    done.append(err)
        except asyncio.CancelledError:  # the rest are nobody's now (their replies are dropped)
            for future in futures:
                future.cancel()
            raise
        if raise_on_error:
            for result in done:
                if isinstance(result, BaseException):
                    raise result
        return done


def autopipe(client: RedisClient) -> RedisClient:
    """``client`` with auto-pipelining (one wrapped already unchanged)."""
    if isinstance(client, AutoPipeline):
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


def _unroutable(err: BaseException) -> bool:
    """Whether a cluster pipeline failed while routing its commands (a command's keys in two
    slots, a command for several nodes), which it does before it sends any of them; not the
    errors it retries (the map being out of date, a node down)."""
    return isinstance(err, RedisClusterException) and not isinstance(
        err, RedisCluster.ERRORS_ALLOW_RETRY
    )


async def _send_alone(client: Any, call: _Call) -> None:
    """Send one call straight to the client and answer its caller."""
    name, args, kwargs, future = call
    try:
        result = await getattr(client, name)(*args, **kwargs)
    except Exception as err:
        if not future.done():
            future.set_exception(err)
        return
    except BaseException:
        if not future.done():
            future.cancel()
        raise
    if not future.done():
        future.set_result(result)


async def _open(wire: Wire) -> None:
    """Open a wire for the batches to come (a failure makes it rest: they go redis-py's way)."""
    await wire.open()


def _consume_result(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: every caller has been told already
