"""The relay's HTTP client's connections: asyncio's transport under a ``Stream`` the client reads and writes.

asyncio's ``StreamReader`` says a connection ended only once the loop has run the callback for it
(``at_eof()`` is as fresh as the last read): a pooled connection the server closed, or wrote a stale response
on, looks idle. ``SocketStream`` keeps what arrived and asks the socket itself (httpcore's check) before a
connection is reused. ``open_stream`` connects with Happy Eyeballs (RFC 8305) and sets ``SO_KEEPALIVE``. The
tests put a scripted ``Stream`` under the client instead (httpcore's mock-backend pattern).
"""

from __future__ import annotations

import asyncio
import contextlib
import select
import socket
from typing import Any, Protocol

__all__ = ["HAPPY_EYEBALLS_DELAY", "KEEPALIVE_COUNT", "KEEPALIVE_IDLE", "KEEPALIVE_INTERVAL", "NotSent", "READ_BYTES",
           "SocketStream", "Stream", "keepalive", "open_stream"]

READ_BYTES = 256 * 1024
"""The most held unread on a connection before its socket is left unread (backpressure); asyncio's own read size."""
HAPPY_EYEBALLS_DELAY = 0.25
"""Seconds before the next address is tried beside a slow one (RFC 8305's recommended 250 ms)."""
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 30, 10, 3
"""TCP keep-alive: the first probe after 30 s of silence (inside the idle timeouts of most NATs and firewalls),
then every 10 s, the connection given up after 3 unanswered: a dead peer noticed within a minute."""


class Stream(Protocol):
    """One connection's bytes, as the client uses them (``SocketStream``; the tests' scripted streams)."""

    async def read(self) -> bytes:
        """What arrived since the last read (b"" at the server's end); OSError when the connection broke."""

    def write(self, data: bytes) -> None:
        """Queue ``data``; NotSent if the connection had already ended (the request provably never left)."""

    async def drain(self) -> None:
        """Wait until what was written is handed to the OS; OSError when the connection broke."""

    def readable(self) -> bool:
        """Whether bytes or an end wait, on the socket or already read from it (a pooled connection unfit)."""

    async def start_tls(self, context: Any, server_hostname: str) -> None:
        """TLS over this connection; ``ssl.SSLError`` (an OSError) when the handshake fails."""

    def peer_certificate(self) -> bytes | None:
        """The server's certificate as DER, once TLS is on."""

    def abort(self) -> None:
        """Close at once, without waiting for what is unsent."""


class NotSent(OSError):
    """A write to a connection that had already ended: the request provably never left."""


class SocketStream(asyncio.Protocol):
    """A ``Stream`` on asyncio's transport: reads held up to ``READ_BYTES`` (then the socket is left unread), the
    end and any error kept, and ``readable`` asking the socket itself, not only what the loop has read from it."""

    def __init__(self) -> None:
        self.transport: Any = None
        self._buffer = bytearray()
        self._ended = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) >= READ_BYTES and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._ended = True
        self._wake()
        return False

    def connection_lost(self, error: BaseException | None) -> None:
        self._ended, self._error = True, error
        self._wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _broken(self) -> OSError:
        error = self._error
        return error if isinstance(error, OSError) else ConnectionResetError("the connection broke")

    async def read(self) -> bytes:
        while not self._buffer and not self._ended:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        if not self._buffer and self._error is not None:
            raise self._broken()
        data = bytes(self._buffer)
        self._buffer.clear()
        if self._paused and not self._ended:
            self._paused = False
            self.transport.resume_reading()
        return data

    def write(self, data: bytes) -> None:
        if self._ended or self.transport.is_closing():
            raise NotSent("the connection had ended before the request was written")
        self.transport.write(data)

    async def drain(self) -> None:
        if self._drained is not None:
            await self._drained
        if self._ended and self._error is not None:
            raise self._broken()

    def readable(self) -> bool:
        if self._buffer or self._ended or self.transport.is_closing():
            return True
        sock = self.transport.get_extra_info("socket")
        return sock is not None and _socket_readable(sock)

    async def start_tls(self, context: Any, server_hostname: str) -> None:
        loop = asyncio.get_running_loop()
        self.transport = await loop.start_tls(self.transport, self, context, server_hostname=server_hostname)

    def peer_certificate(self) -> bytes | None:
        tls = self.transport.get_extra_info("ssl_object")
        return tls.getpeercert(True) if tls is not None else None

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()


def _socket_readable(sock: Any) -> bool:
    """Whether the socket has bytes or an end to read now (httpcore's check: poll where there is one)."""
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock.fileno(), select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True  # a socket that cannot be asked is not reused


async def open_stream(host: str, port: int) -> Stream:
    """A TCP connection: Happy Eyeballs over the host's addresses, ``SO_KEEPALIVE`` set."""
    loop = asyncio.get_running_loop()
    transport, stream = await loop.create_connection(SocketStream, host, port, happy_eyeballs_delay=HAPPY_EYEBALLS_DELAY)
    keepalive(transport.get_extra_info("socket"))
    return stream


def keepalive(sock: Any) -> None:
    """``SO_KEEPALIVE`` on ``sock``, its timing (``KEEPALIVE_IDLE``...) where the OS lets it be set."""
    if sock is None:
        return
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for option, value in (("TCP_KEEPIDLE", KEEPALIVE_IDLE), ("TCP_KEEPALIVE", KEEPALIVE_IDLE),
                          ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL), ("TCP_KEEPCNT", KEEPALIVE_COUNT)):
        if hasattr(socket, option):  # Linux has TCP_KEEPIDLE, macOS TCP_KEEPALIVE
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)
