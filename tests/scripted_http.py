"""Scripted connections under the relay's HTTP client (httpcore's mock-backend pattern).

``ScriptedBackend`` is given as the client's ``backend``: each connection the client opens is the next
``ScriptedStream``, whose answers are fed one per request the client writes. The client's own request building,
pooling, retries and reading run unchanged above it, with no socket and no server, so these tests are quick and
pin the exact bytes on the wire (``stream.sent``).

An answer is bytes (fed to the client after the request), ``END`` (the server closes), ``RESET`` (the read
fails with a reset), or a list of these in order. ``stream.feed`` puts bytes (or the end) on an idle connection,
as a server writing while the client does not read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Union

END = object()
"""The server closes its side (an orderly end)."""
RESET = object()
"""The connection is reset: the client's read fails with ConnectionResetError."""
UNWRITABLE = object()
"""The connection ended before the client's write: a write refused as NotSent."""

Step = Union[bytes, object]


class ScriptedStream:
    """One scripted connection: the client's writes kept in ``sent``; ``answers[i]`` fed after its request ``i``."""

    def __init__(self, answers: Sequence[Step | list[Step]], host: str = "", port: int = 0) -> None:
        self.answers = list(answers)
        self.host, self.port = host, port
        self.sent = bytearray()
        self.requests = 0
        self.aborted = False
        self.tls: Any = None
        self.certificate: bytes | None = None
        self.tls_error: BaseException | None = None
        self._buffer = bytearray()
        self._ended = False
        self._reset = False
        self._arrived = asyncio.Event()

    def feed(self, step: Step) -> None:
        if step is END:
            self._ended = True
        elif step is RESET:
            self._reset = True
        elif step is UNWRITABLE:
            self._ended = True
        else:
            self._buffer += step  # type: ignore[operator]
        self._arrived.set()

    async def read(self) -> bytes:
        while not self._buffer and not self._ended and not self._reset:
            self._arrived.clear()
            await self._arrived.wait()
        if self._buffer:
            data = bytes(self._buffer)
            self._buffer.clear()
            return data
        if self._reset:
            raise ConnectionResetError(104, "Connection reset by peer")
        return b""

    def write(self, data: bytes) -> None:
        from diverge_codec.relay.http_stream import NotSent

        if self.aborted or (self.answers and self.answers[0] is UNWRITABLE):
            if self.answers and self.answers[0] is UNWRITABLE:
                self.answers.pop(0)
            raise NotSent("the connection had ended before the request was written")
        self.sent += data

    async def drain(self) -> None:
        """The request went out: the script's next answer arrives."""
        self.requests += 1
        if self.answers:
            answer = self.answers.pop(0)
            for step in answer if isinstance(answer, list) else [answer]:
                self.feed(step)

    def readable(self) -> bool:
        return bool(self._buffer) or self._ended or self._reset or self.aborted

    async def start_tls(self, context: Any, server_hostname: str) -> None:
        self.tls = (context, server_hostname)
        if self.tls_error is not None:
            raise self.tls_error

    def peer_certificate(self) -> bytes | None:
        return self.certificate

    def abort(self) -> None:
        self.aborted = True


class ScriptedBackend:
    """The client's ``backend``: each ``await backend(host, port)`` is the next of ``streams`` (a connect error
    where one is an exception), every one kept in ``opened``."""

    def __init__(self, *streams: ScriptedStream | BaseException) -> None:
        self.streams = list(streams)
        self.opened: list[ScriptedStream] = []
        self.dialled: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> ScriptedStream:
        self.dialled.append((host, port))
        if not self.streams:  # nothing listens there
            raise ConnectionRefusedError(111, f"connection {len(self.dialled)}: none scripted")
        stream = self.streams.pop(0)
        if isinstance(stream, BaseException):
            raise stream
        stream.host, stream.port = host, port
        self.opened.append(stream)
        return stream


def ok(body: bytes = b"ok", *headers: str) -> bytes:
    """A 200 with ``body`` and Content-Length (and ``headers``, each ``Name: value``)."""
    extra = "".join(f"{header}\r\n" for header in headers).encode()
    return b"HTTP/1.1 200 OK\r\n" + extra + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
