"""One Redis connection shared by every task of a process for its plain (non-blocking) commands.

Why: redis-py spends about 100 microseconds of Python per round trip on its own machinery (a
pipeline object, a pooled connection taken and given back under a lock, a retry wrapper, a
parser loop): a sequential HGET took 141 us of CPU through the auto-pipeline on redis-py and
26 us on the wire (39 us over a bare asyncio protocol; uvloop, this machine). On a quiet
service every command is a round trip of its own, so that overhead is paid per command. A
``Wire`` writes packed commands straight to one socket (uvloop's transport) and answers them
from hiredis's reader in the order Redis replies, which is the order they were written.

The ``AutoPipeline`` sends its batches here when the client has a wire (``connect`` gives one
to clients of a plain ``redis://`` Redis) and falls back to redis-py's pipeline, with its
reconnection and backoff, while the wire is down (it rests ``REST_SECONDS`` after a failed
connect). A command whose connection dropped before its answer is sent again by that fallback,
as redis-py's own retry would.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Any, Protocol, cast

import hiredis
from redis._parsers.base import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError

NAME = "rummy-wire"
CONNECT_SECONDS = 5.0
REST_SECONDS = 1.0  # after the wire fails, batches go the fallback way this long


class WireDown(RedisConnectionError):
    """The wire could not carry a batch: send it another way."""


def pack(args: tuple[Any, ...]) -> bytes:
    """One command in Redis's protocol, packed in C. A multi-word command name ("SCRIPT LOAD")
    is split as redis-py splits it; a type Redis cannot take is a ``DataError``."""
    name = args[0]
    if isinstance(name, str):
        args = (*name.encode().split(), *args[1:])
    elif b" " in name:
        args = (*name.split(), *args[1:])
    try:
        return bytes(hiredis.pack_command(args))
    except TypeError as err:
        raise DataError(str(err)) from None


class Receiver(Protocol):
    """Who a command's reply goes to: ``answered`` with the reply (an error reply as its
    exception instance), or ``lost`` when the connection failed before it came."""

    def answered(self, token: Any, reply: Any) -> None: ...

    def lost(self, token: Any) -> None: ...


_MORE = object()  # the reader's answer when no whole reply has come yet


class _Socket(asyncio.Protocol):
    """The connection: writes what it is given, hands each reply to the oldest waiting
    receiver (Redis answers in the order it was asked)."""

    def __init__(self) -> None:
        # An error reply becomes redis-py's exception for it (NoScriptError for NOSCRIPT ...);
        # "no whole reply yet" is a sentinel, since False is a reply too (RESP3 booleans).
        self.reader = hiredis.Reader(replyError=BaseParser.parse_error, notEnoughData=_MORE)
        self.waiting: deque[tuple[Receiver, Any]] = deque()
        self.transport: asyncio.Transport | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        while True:
            try:
                reply = self.reader.gets()
            except hiredis.ProtocolError:
                self.close()
                return
            if reply is _MORE:
                return
            if isinstance(reply, hiredis.PushNotification):
                continue  # RESP3 out-of-band data (we subscribe to none): not an answer
            receiver, token = self.waiting.popleft()
            receiver.answered(token, reply)

    def eof_received(self) -> bool:
        self.closed = True  # at once: nothing more may be written (connection_lost follows)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        waiting, self.waiting = self.waiting, deque()
        for receiver, token in waiting:
            receiver.lost(token)

    def write(self, data: bytes, receivers: list[tuple[Receiver, Any]]) -> None:
        if self.closed or self.transport is None or self.transport.is_closing():
            raise WireDown("the connection to Redis is closed")
        self.waiting.extend(receivers)
        self.transport.write(data)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()  # connection_lost follows: the waiting are told


class Wire:
    """A lazily opened, shared connection to one Redis (host, port, database, credentials)."""

    def __init__(
        self,
        host: str,
        port: int,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
        protocol: int = 3,
    ) -> None:
        self.host, self.port, self.db = host, port, db
        self.protocol = protocol  # RESP version: the client's, whose callbacks expect its shapes
        self.username, self.password = username, password
        self._socket: _Socket | None = None
        self._lent: set[_Socket] = set()  # every connection made for blocking commands
        self._idle: list[_Socket] = []  # those of them free now
        self._connecting: asyncio.Lock | None = None
        self._resting_until = 0.0
        self.shut = False  # closed with its client: never opens again
        self.batches = 0  # batches carried (for tests and benchmarks)

    def resting(self) -> bool:
        """Whether the wire failed a moment ago (batches should take the fallback)."""
        return time.monotonic() < self._resting_until

    def ready(self) -> bool:
        """Whether the connection is open (``send`` writes at once)."""
        socket = self._socket
        return (
            socket is not None
            and not socket.closed
            and socket.transport is not None
            and not socket.transport.is_closing()
        )

    def send(self, commands: list[bytes], receivers: list[tuple[Receiver, Any]]) -> None:
        """Write ``commands`` (packed, one receiver each, in order) on the open connection;
        ``WireDown`` (and nothing written, no receiver kept) if it is closing after all."""
        if self._socket is None:
            raise WireDown("the connection to Redis is not open")
        self.batches += 1
        self._socket.write(b"".join(commands), receivers)

    async def open(self) -> bool:
        """Open the connection unless it is open (False when it cannot be: the wire rests)."""
        if self.ready():
            return True
        if self.resting() or self.shut:
            return False
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self.ready():
                return True
            if self.resting() or self.shut:  # the one before us just failed: no new try
                return False
            self._socket = await self._connect()
            return self._socket is not None

    async def lend(self) -> _Socket | None:
        """A connection of its own for one blocking command (``XREAD BLOCK`` would hold up
        every command behind it on the shared one): an idle one, or a new one; None when none
        can be opened (the caller then uses redis-py). Give it back with ``give_back``."""
        while self._idle:
            socket = self._idle.pop()
            if not socket.closed:
                return socket
            self._lent.discard(socket)
        if self.resting() or self.shut:
            return None
        fresh = await self._connect()
        if fresh is not None:
            self._lent.add(fresh)
        return fresh

    def give_back(self, socket: _Socket) -> None:
        """Return a lent connection whose command was answered (a cancelled one is closed:
        its reply would still come, and answer the wrong command)."""
        if socket.closed or socket.waiting or self.shut:
            socket.close()
            self._lent.discard(socket)
        else:
            self._idle.append(socket)

    async def _connect(self) -> _Socket | None:
        """A new connection, greeted; None if it fails (the wire then rests) or if the wire
        was closed meanwhile."""
        try:
            socket = await asyncio.wait_for(self._handshake(), CONNECT_SECONDS)
        except (OSError, TimeoutError, WireDown):
            self._resting_until = time.monotonic() + REST_SECONDS
            return None
        if self.shut:
            socket.close()
            return None
        return socket

    async def _handshake(self) -> _Socket:
        loop = asyncio.get_running_loop()
        _, socket = await loop.create_connection(_Socket, self.host, self.port)
        try:
            await self._greet(socket)
        except BaseException:  # refused, or the wait for it cancelled: no half-open socket
            socket.close()
            raise
        return socket

    async def _greet(self, socket: _Socket) -> None:
        """Authenticate (in HELLO for RESP3), select the database, name the connection."""
        hello: list[tuple[Any, ...]] = []
        if self.protocol == 3:
            secret = ("AUTH", self.username or "default", self.password) if self.password else ()
            hello.append(("HELLO", 3, *secret))
        elif self.password is not None:
            who = (self.username,) if self.username else ()
            hello.append(("AUTH", *who, self.password))
        if self.db:
            hello.append(("SELECT", self.db))
        hello.append(("CLIENT", "SETNAME", NAME))  # who it is, in CLIENT LIST
        replies = _Replies(len(hello))
        waiting: list[tuple[Receiver, Any]] = [(replies, i) for i in range(len(hello))]
        socket.write(b"".join(pack(c) for c in hello), waiting)
        for reply in await replies.done:
            if isinstance(reply, Exception):
                raise WireDown(f"Redis refused the connection: {reply}")

    async def aclose(self) -> None:
        """Close every connection for good (with the client: nothing is sent after this;
        commands still waiting fail rather than go another way)."""
        self.shut = True
        socket, self._socket = self._socket, None
        if socket is not None:
            socket.close()
        for lent in [*self._lent, *self._idle]:
            lent.close()
        self._lent.clear()
        self._idle.clear()


class _Replies:
    """A receiver that collects ``count`` replies into one future (the handshake's)."""

    def __init__(self, count: int) -> None:
        self.replies: list[Any] = [None] * count
        self.left = count
        self.done: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()

    def answered(self, token: Any, reply: Any) -> None:
        self.replies[token] = reply
        self.left -= 1
        if self.left == 0 and not self.done.done():
            self.done.set_result(self.replies)

    def lost(self, token: Any) -> None:
        if not self.done.done():
            self.done.set_exception(WireDown("the connection closed during the handshake"))
