"""A WebSocket client on a raw TCP connection with a small receive buffer, written from RFC 6455,
for clients that send but do not read: what it leaves unread backs up into the server's buffers
after a few kilobytes (an aiohttp client would first take megabytes into its own). It offers no
compression, so the server's frames are as large on the wire as in the queue."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import struct

TEXT, CLOSE, PING, PONG = 0x1, 0x8, 0x9, 0xA


class RawSocket:
    """One connection: ``send_text`` frames; ``receive`` the server's frames one by one."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, host: str, port: int, path: str, buffer: int = 4096) -> RawSocket:
        """Open the socket at ``path`` (with its query); ``buffer``: SO_RCVBUF, set before
        connecting so the window the client offers stays that small."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer)
        sock.setblocking(False)
        try:
            await asyncio.get_running_loop().sock_connect(sock, (host, port))
        except BaseException:
            sock.close()
            raise
        # The stream stops reading the socket once it holds twice ``limit`` bytes.
        reader, writer = await asyncio.open_connection(sock=sock, limit=buffer)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        writer.write(request.encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            writer.close()
            raise ConnectionError(f"no WebSocket: {head.decode(errors='replace')}")
        return cls(reader, writer)

    async def send_text(self, text: str) -> None:
        """One masked text frame (a client's frames are masked)."""
        self.writer.write(_frame(TEXT, text.encode()))
        await self.writer.drain()

    async def receive(self) -> tuple[int, bytes]:
        """The next whole message (opcode, payload); a ping is answered and skipped. An
        ``asyncio.IncompleteReadError`` if the connection ends first."""
        opcode, message = 0, b""
        while True:
            first, second = await self.reader.readexactly(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
            payload = await self.reader.readexactly(length)
            kind = first & 0x0F
            if kind == PING:
                self.writer.write(_frame(PONG, payload))
                continue
            if kind == PONG:
                continue
            opcode = opcode or kind
            message += payload
            if first & 0x80:  # FIN
                return opcode, message

    def close(self) -> None:
        self.writer.close()


def close_code(payload: bytes) -> tuple[int, str]:
    """A close frame's (code, reason)."""
    (code,) = struct.unpack("!H", payload[:2])
    return code, payload[2:].decode()


def _frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    size = len(payload)
    if size < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
    elif size < 1 << 16:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return head + mask + masked
