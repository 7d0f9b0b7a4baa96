"""The Redis Cluster client of the services: redis-py's, with the slot of a stream read worked
out here instead of asked of a node, blocking reads on a client of their own, and patience
through a failover.

Why: redis-py's cluster client finds a command's keys from the key positions Redis lists in
``COMMAND``; for a command whose keys move (``movablekeys``: XREAD and XREADGROUP, whose keys
follow ``STREAMS``) it asks a node with ``COMMAND GETKEYS`` before every call. Every consumer
loop's read cost one more round trip, all of them to one node (72% of that node's traffic in a
measured run). A stream read's keys are the first half of what follows ``STREAMS``, so their
slot (CRC16 of the key or its ``{hash tag}``) is computed locally; every other command is
routed as redis-py routes it.

Why a client of their own for blocking reads: on a cluster error (``CLUSTERDOWN``, a failed
pipeline, every fifth ``MOVED``) redis-py's cluster client closes every connection it holds,
those in use included. A process's blocking reads (its consumer loops, the gateway's feed and
reply followers) shared that client with every request, so one failed request broke every read
in flight, and each broken read (re-sent, failing again on the same dead node) broke the
requests in turn. The blocking reads now hold connections that a request's failure never
closes, and the other way round.

Why patience: redis-py retries a command after a connection error or ``CLUSTERDOWN`` at once,
about eight times in a few milliseconds (a dead master refuses connections at once), so every
command for a dead master's slots failed during the seconds its replica needs to take over
(``cluster-node-timeout`` and an election). Such a command is now tried again after 0.05, 0.1,
0.2 ... seconds (at most ``FAILOVER_PAUSE_CAP`` apart, ``FAILOVER_TRIES`` times, about 10 s in
all), asking for the cluster's map afresh each time, so a failover delays it instead of
failing it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from redis.asyncio.cluster import RedisCluster
from redis.exceptions import (
    AskError,
    ClusterDownError,
    ClusterError,
    MasterDownError,
    RedisClusterException,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.utils import DEFAULT_RESP_VERSION

from shared.infra.wire import Wire

STREAM_READS = {"XREAD": 0, "XREADGROUP": 3}
"""Stream reads and where their options start (XREADGROUP's ``GROUP group consumer`` first:
a group or consumer named ``STREAMS`` is not the keyword)."""


FAILOVER_ERRORS: tuple[type[Exception], ...] = (
    RedisConnectionError,  # a dead node (refused, reset), LOADING, no free connection
    RedisTimeoutError,
    ClusterDownError,  # CLUSTERDOWN: a master failed, its replica not promoted yet
    SlotNotCoveredError,
    TryAgainError,  # TRYAGAIN: a multi-key command during a slot's migration
    MasterDownError,
    ClusterError,  # redirections past redis-py's limit (the map changing under it)
)
"""What a failover (or a slot's move) answers for a while: worth asking again after a pause."""
REDIRECTS: tuple[type[Exception], ...] = (AskError, TryAgainError, ClusterDownError)
"""Error replies that say the command was not run on that node (MOVED and ASK: another node
serves its slot; TRYAGAIN: its keys are mid-move; CLUSTERDOWN, MASTERDOWN): a command sent
straight to a node's wire and answered so goes redis-py's way, which follows them."""
FAILOVER_TRIES = 15
FAILOVER_PAUSE = 0.05  # the first pause; doubled after each try
FAILOVER_PAUSE_CAP = 1.0


def blocking(args: Sequence[Any]) -> bool:
    """Whether a command (its name first) is a stream read that blocks (``BLOCK``)."""
    if not args or _word(args[0]) not in STREAM_READS:
        return False
    return any(_word(word) == "BLOCK" for word in args[1:] if isinstance(word, (str, bytes)))


def _word(value: Any) -> str:
    """A command's word in capitals, given as text or bytes."""
    return (value.decode(errors="replace") if isinstance(value, bytes) else str(value)).upper()


def stream_read_keys(command: str, args: Sequence[Any]) -> Sequence[Any] | None:
    """The keys of a stream read (``args``: what follows the command's name); None for any
    other command, or a read too malformed to tell (Redis then says what is wrong)."""
    start = STREAM_READS.get(command.upper())
    if start is None:
        return None
    for index in range(start, len(args)):
        word = args[index]
        text = word.decode(errors="replace") if isinstance(word, bytes) else str(word)
        if text.upper() == "STREAMS":
            rest = args[index + 1 :]
            if not rest or len(rest) % 2:
                return None
            return rest[: len(rest) // 2]
    return None


class ClusterClient(RedisCluster):
    """``RedisCluster`` whose stream reads find their slot without a round trip, whose blocking
    reads go on a client of their own (made at the first, with the same options), and whose
    commands wait out a failover (see the module's docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._options = (args, dict(kwargs))
        self._reads: ClusterClient | None = None
        self._reader = False  # this client is another one's reads client
        self.wired = False  # its nodes reached over wires (``connect`` sets it for redis://)
        self._wires: dict[str, Wire] = {}  # a node's name (host:port) -> its wire
        self.shut = False

    def reads(self) -> ClusterClient:
        """The client of this one's blocking reads."""
        if self._reader:
            return self
        if self._reads is None:
            args, kwargs = self._options
            self._reads = ClusterClient(*args, **kwargs)
            self._reads._reader = True
        return self._reads

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if not self._reader and blocking(args):
            return await self.reads().execute_command(*args, **kwargs)
        pause = FAILOVER_PAUSE
        for _ in range(FAILOVER_TRIES - 1):
            try:
                return await super().execute_command(*args, **kwargs)
            except FAILOVER_ERRORS:
                await asyncio.sleep(pause)
                pause = min(pause * 2, FAILOVER_PAUSE_CAP)
                self._initialize = True  # ask for the map afresh
        return await super().execute_command(*args, **kwargs)

    def node_wire(self, slot: int) -> Wire | None:
        """The wire of the master that serves ``slot`` as this client's map has it (made at
        its first use); None before the map is known, for a slot it does not cover, or when
        this client has no wires.

        Why: redis-py's cluster pipeline routes each command in Python (its command policy,
        key parser, slot map, a coroutine or two per node) for about 70 us a command, where
        a command whose slot is known can be packed in C and written on one socket per node
        (``shared/infra/wire.py``). Whatever a node answers with a redirection goes redis-py's
        way after all (``REDIRECTS``), which follows it and mends the map."""
        if not self.wired or self.shut:
            return None
        try:
            node = self.nodes_manager.get_node_from_slot(slot)
        except (SlotNotCoveredError, KeyError):
            return None
        wire = self._wires.get(node.name)
        if wire is None:
            options = self.nodes_manager.connection_kwargs
            wire = self._wires[node.name] = Wire(
                node.host,
                int(node.port),
                username=options.get("username"),
                password=options.get("password"),
                protocol=int(options.get("protocol") or DEFAULT_RESP_VERSION),
            )
        return wire

    async def close_all(self) -> None:
        """Close this client's connections, its wires and its reads client's, for good.
        (``aclose`` closes redis-py's connections alone: redis-py calls it itself to reset the
        client after a cluster error, which must leave the blocking reads alone.)"""
        self.shut = True
        for wire in self._wires.values():
            await wire.aclose()
        if self._reads is not None:
            await self._reads.aclose()
        await self.aclose()

    async def _determine_slot(self, command: str, *args: Any) -> int:
        keys = stream_read_keys(command, args)
        if keys is None:
            return await super()._determine_slot(command, *args)
        slots = {self.keyslot(key) for key in keys}
        if len(slots) != 1:
            raise RedisClusterException(f"{command} - all keys must map to the same key slot")
        return slots.pop()
