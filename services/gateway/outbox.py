"""One WebSocket's outgoing frames: a bounded queue that the socket's own writer task drains.

Whoever has something to tell a socket (the feed follower, the socket's own message loop) puts
a frame and goes on, so nothing shared ever waits for one client's network. A client that lets
``limit`` frames pile up is closed with ``TOO_SLOW`` (it reconnects with ``?after=<version>``
and gets what it missed). A view supersedes the view still waiting to go, so a slow spectator
holds one view, not one per change (and that one view is not counted: a view never closes a
socket); events, answers and errors are never dropped or merged.
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from collections import deque
from collections.abc import Callable
from typing import Protocol

import structlog

TOO_SLOW = 4008  # an application close code: "policy" (1008) in the private range
TOO_SLOW_REASON = "too slow: reconnect with ?after=<version>"
CLOSE_SECONDS = 10.0  # a closing socket's last frame and close handshake get this long


class Socket(Protocol):
    """What the outbox needs of a WebSocket (aiohttp's ``WebSocketResponse``; a fake in tests)."""

    async def send_str(self, data: str, compress: int | None = None) -> None: ...

    async def close(self, *, code: int = ..., message: bytes = ..., drain: bool = ...) -> bool: ...


class Transport(Protocol):
    """The connection under the socket: cut off when a closing client does not read."""

    def abort(self) -> None: ...


class Outbox:
    """The frames on their way to one socket, and the task that writes them in order."""

    def __init__(
        self,
        ws: Socket,
        limit: int,
        transport: Transport | None = None,
        on_too_slow: Callable[[], None] | None = None,
        close_seconds: float = CLOSE_SECONDS,
    ) -> None:
        self.ws = ws
        self.limit = limit
        self.transport = transport
        self.on_too_slow = on_too_slow
        self.close_seconds = close_seconds
        self.close_code: int | None = None  # set once closing (by us) has begun
        self.close_reason = ""
        self._frames: deque[tuple[bool, str]] = deque()  # (a view?, the frame's text)
        self._view_queued = False
        self._wanted = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._closing: asyncio.Task[None] | None = None
        self._broken = False  # the connection failed under the writer, or the handler is done
        self.log = structlog.get_logger("gateway.outbox")

    def start(self) -> None:
        """Start the writer (once the socket is prepared)."""
        if self._writer is None:
            self._writer = asyncio.create_task(self._write())

    @property
    def closing(self) -> bool:
        """True once nothing more will be sent: closing, closed, or the connection gone."""
        return self.close_code is not None or self._broken

    @property
    def queued(self) -> int:
        """Frames waiting, the view among them (not the one being written)."""
        return len(self._frames)

    def put(self, text: str) -> bool:
        """Queue a frame. False if it will not be sent: the socket is closing, or this frame
        was one too many and closing it has just begun."""
        return self._put(False, text)

    def put_view(self, text: str) -> bool:
        """Queue a view, dropping a view still waiting to go (this one supersedes it). It goes
        last, after the events queued before it (which lead up to it)."""
        return self._put(True, text)

    def _put(self, view: bool, text: str) -> bool:
        if self.closing:
            return False
        if view and self._view_queued:
            self._frames = deque(frame for frame in self._frames if not frame[0])
            self._view_queued = False
        if not view and len(self._frames) - self._view_queued >= self.limit:
            self.close(TOO_SLOW, TOO_SLOW_REASON)
            if self.on_too_slow is not None:
                self.on_too_slow()
            return False
        self._frames.append((view, text))
        self._view_queued = self._view_queued or view
        self._wanted.set()
        return True

    def close(self, code: int, reason: str) -> None:
        """Begin closing: what is queued is dropped, the frame being written is finished, then
        the close frame. A client that has not taken that in ``close_seconds`` is cut off.
        Returns at once (``wait_closed`` waits); a second call changes nothing."""
        if self.closing:
            return
        self.close_code, self.close_reason = code, reason
        self._frames.clear()
        self._view_queued = False
        self._wanted.set()
        writer = self._writer
        if writer is None or writer.done():  # never started, or the connection is gone
            self._closing = asyncio.create_task(self._close_directly())
        else:  # the writer sends the close frame once done with the frame under way
            self._closing = asyncio.create_task(self._watch_closing(writer))

    async def wait_closed(self) -> None:
        """Until a close begun here has ended (at most ``close_seconds`` and a little)."""
        if self._closing is not None:
            await asyncio.gather(self._closing, return_exceptions=True)

    async def finish(self) -> None:
        """The socket's handler is done with it: let a close under way end, stop the writer.

        Then let go of the tasks and the callback: a stopped writer keeps its cancellation, whose
        traceback holds the writer's frame and so this outbox, and the callback holds the
        watcher, which holds this outbox. Kept, they would make a cycle of every closed socket
        (with its request, connection and buffers) that only a full collection, walking the
        whole heap, would free."""
        try:
            await self.wait_closed()
        finally:
            self._broken = True
            self._frames.clear()
            writer, self._writer, self._closing = self._writer, None, None
            self.on_too_slow = None
            if writer is not None:
                # (Also when the handler itself is cancelled here: a connection lost.)
                writer.add_done_callback(_let_go)
                writer.cancel()
                await asyncio.gather(writer, return_exceptions=True)

    async def _write(self) -> None:
        try:
            while self.close_code is None:
                if not self._frames:
                    self._wanted.clear()
                    await self._wanted.wait()
                    continue
                view, text = self._frames.popleft()
                if view:
                    self._view_queued = False
                await self.ws.send_str(text)
            message = self.close_reason.encode()
            await self.ws.close(code=self.close_code, message=message, drain=False)
        except Exception as err:  # the connection is gone: the handler's reading ends too
            self._broken = True
            self._frames.clear()
            self.log.debug("a socket's writer stopped", error=repr(err))

    async def _close_directly(self) -> None:
        with contextlib.suppress(Exception):
            message = self.close_reason.encode()
            await self.ws.close(code=self.close_code or 1000, message=message, drain=False)

    async def _watch_closing(self, writer: asyncio.Task[None]) -> None:
        done, _ = await asyncio.wait({writer}, timeout=self.close_seconds)
        if not done:
            # The client has not read what was already on its way all this time: its buffers
            # (and ours) are full, and would stay full. Cut the connection.
            self.log.info("cutting off a closing socket that does not read")
            if self.transport is not None:
                self.transport.abort()
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)


def _let_go(task: asyncio.Future[None]) -> None:
    """Clear the frames of a cancelled task's cancellation: they hold the future it was
    waiting on, which holds the cancellation (a cycle, with everything the frames hold)."""
    if not task.cancelled():
        return
    try:
        task.result()
    except asyncio.CancelledError as ended:
        traceback.clear_frames(ended.__traceback__)
