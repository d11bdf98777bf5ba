"""Scripted connections under the relay's HTTP client (httpcore's mock-backend pattern).

``ScriptedBackend`` is given as the client's ``backend``: each connection the client opens is the next
``ScriptedStream``, whose answers are fed one per request the client writes. The client's own request building,
pooling, retries and reading run unchanged above it, with no socket and no server, so these tests are quick and
pin the exact bytes on the wire (``stream.sent``).

An answer is bytes (fed to the client after the request), ``END`` (the server closes), ``RESET`` (the read
fails with a reset), or a list of these in order. ``stream.feed`` puts bytes (or the end) on an idle connection,
as a server writing while the client does not read.

``serving(handle)`` scripts a whole server the same way, for the drivers' tests: every connection an
``HttpClient`` opens inside it is a ``HandlerStream``, which parses the client's bytes as a server's h11 does and
gives each request (``Request``: method, URL, headers, body as they came off the wire) to ``handle``, whose
``Response`` it writes back. Nothing beside the client answers for it: what a test asserts about headers, statuses
and timing went through the client's own request building, pooling and reading.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Union, cast
from urllib.parse import urlsplit

import h11

from diverge_codec.relay.http_client import Headers
from diverge_codec.relay.http_stream import NotSent

END = object()
"""The server closes its side (an orderly end)."""
RESET = object()
"""The connection is reset: the client's read fails with ConnectionResetError."""
UNWRITABLE = object()
"""The connection ended before the client's write: a write refused as NotSent."""

Step = Union[bytes, object]


class _Incoming:
    """What a scripted connection holds for the client to read: bytes, an end or a reset, each waking a read."""

    def __init__(self) -> None:
        self.aborted = False
        self._buffer = bytearray()
        self._ended = self._reset = False
        self._arrived = asyncio.Event()
        self._read = asyncio.Event()  # set each time the client took what was there

    async def read(self) -> bytes:
        while not self._buffer and not self._ended and not self._reset:
            self._arrived.clear()
            await self._arrived.wait()
        if self._buffer:
            data = bytes(self._buffer)
            self._buffer.clear()
            self._read.set()
            return data
        if self._reset:
            raise ConnectionResetError(104, "Connection reset by peer")
        return b""

    def readable(self) -> bool:
        return bool(self._buffer) or self._ended or self._reset or self.aborted


class ScriptedStream(_Incoming):
    """One scripted connection: the client's writes kept in ``sent``; ``answers[i]`` fed after its request ``i``."""

    def __init__(self, answers: Sequence[Step | list[Step]], host: str = "", port: int = 0) -> None:
        self.answers = list(answers)
        self.host, self.port = host, port
        super().__init__()
        self.sent = bytearray()
        self.requests = 0
        self.tls: Any = None
        self.certificate: bytes | None = None
        self.tls_error: BaseException | None = None

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

    def write(self, data: bytes) -> None:
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


# A scripted server's handler, answering each request the client built and sent, under the client.

class Request:
    """A request as a scripted server received it off the wire: what the client's own building sent."""

    __slots__ = ("content", "headers", "method", "url")

    def __init__(self, method: str, url: str, headers: Any, content: bytes) -> None:
        self.method, self.url, self.headers, self.content = method, url, headers, content

    @property
    def path(self) -> str:
        return urlsplit(self.url).path


class Response:
    """A scripted server's answer: ``content`` is bytes (sent with its ``Content-Length``) or pieces, an iterable
    or an async iterator (sent chunked as they come, unless ``headers`` frame it); a body that raises resets the
    connection, as a server that fails mid-body does."""

    def __init__(self, status_code: int, headers: Any = (), content: Any = b"") -> None:
        self.status_code = status_code
        self.headers: list[tuple[bytes, bytes]] = [(_latin(name).lower(), _latin(value)) for name, value in (
            headers.items() if isinstance(headers, Mapping) else headers)]
        self.content = content


Handler = Callable[[Request], Union[Response, Awaitable[Response]]]


def _latin(text: bytes | str) -> bytes:
    return text if isinstance(text, bytes) else text.encode("latin-1")


class HandlerStream(_Incoming):
    """One connection to a scripted server: the client's bytes parsed by a server's h11, each request given to
    ``handle`` in turn and its ``Response`` written back, a streamed body piece by piece as it is produced."""

    def __init__(self, handle: Handler, host: str, port: int) -> None:
        super().__init__()
        self.handle, self.host, self.port = handle, host, port
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=256 * 1024)
        self.tls: Any = None
        self._serving: asyncio.Task[None] | None = None
        self._head: h11.Request | None = None
        self._body = bytearray()

    def write(self, data: bytes) -> None:
        if self.aborted or self._ended or self._reset:
            raise NotSent("the connection had ended before the request was written")
        self.h11.receive_data(data)
        self._next()

    async def drain(self) -> None:
        """Nothing to wait for: the server took the bytes as they were written."""

    def _next(self) -> None:
        """Read the client's bytes to a whole request, then serve it (one at a time, as HTTP/1.1 does)."""
        while self._serving is None:
            event = self.h11.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Request):
                self._head, self._body = event, bytearray()
            elif isinstance(event, h11.Data):
                self._body += event.data
            elif isinstance(event, h11.EndOfMessage):
                self._serving = asyncio.get_running_loop().create_task(self._serve(self._request()))
            elif isinstance(event, h11.ConnectionClosed):
                return

    def _request(self) -> Request:
        head = cast(h11.Request, self._head)
        target = head.target.decode("latin-1")
        if not target.startswith(("http://", "https://")):  # origin form; absolute form is a proxy's
            host = dict(head.headers).get(b"host", b"").decode("latin-1")
            target = f"{'https' if self.tls else 'http'}://{host}{target}"
        return Request(head.method.decode(), target, Headers(head.headers), bytes(self._body))

    async def _serve(self, request: Request) -> None:
        try:
            answer = self.handle(request)
            response = cast(Response, await answer if isinstance(answer, Awaitable) else answer)
        except Exception:
            self._fail()  # the server failed before answering: the connection is reset
            return
        headers, content = list(response.headers), response.content
        framed = any(name in (b"content-length", b"transfer-encoding") for name, _ in headers)
        if isinstance(content, (bytes, bytearray)) and not framed and response.status_code not in (204, 304):
            headers.append((b"content-length", str(len(content)).encode()))
        self._send(h11.Response(status_code=response.status_code, headers=headers))
        try:
            async for piece in _pieces(content):
                if piece:
                    self._send(h11.Data(data=piece))
                    await self._taken()
        except Exception:
            self._fail()  # the server failed mid-body
            return
        self._send(h11.EndOfMessage())
        if self.h11.our_state is h11.MUST_CLOSE:
            self.feed_end()
            return
        self.h11.start_next_cycle()
        self._serving = None
        self._next()

    def _send(self, event: Any) -> None:
        data = self.h11.send(event)
        if data:
            self._buffer += data
            self._arrived.set()

    async def _taken(self) -> None:
        """Wait until the client has read what was written: the next piece is made only then, as a server's
        writes block on a socket the client does not read (no buffer, so a test can count what was pulled)."""
        while self._buffer:
            self._read.clear()
            await self._read.wait()

    def _fail(self) -> None:
        self._reset = True
        self._arrived.set()

    def feed_end(self) -> None:
        self._ended = True
        self._arrived.set()

    async def start_tls(self, context: Any, server_hostname: str) -> None:
        self.tls = (context, server_hostname)

    def peer_certificate(self) -> bytes | None:
        return None

    def abort(self) -> None:
        """The client closed the connection: the server's answer in progress (a stream held open) ends."""
        self.aborted = True
        if self._serving is not None and not self._serving.done():
            self._serving.cancel()


async def _pieces(content: Any) -> AsyncIterator[bytes]:
    if isinstance(content, (bytes, bytearray)):
        yield bytes(content)
    elif isinstance(content, AsyncIterable):
        async for piece in content:
            yield piece
    else:
        for piece in content:
            yield piece


class HandlerBackend:
    """A client's ``backend`` where every connection is served by ``handle`` (each one kept in ``opened``).

    ``go_down()``: the server is gone from then on: its connections read as closed (an idle one is not reused)
    and every new one is refused, the loop's time of each refusal kept in ``refused``."""

    def __init__(self, handle: Handler) -> None:
        self.handle = handle
        self.opened: list[HandlerStream] = []
        self.down = False
        self.refused: list[float] = []

    async def __call__(self, host: str, port: int) -> HandlerStream:
        if self.down:
            self.refused.append(asyncio.get_running_loop().time())
            raise ConnectionRefusedError(111, "Connection refused")
        stream = HandlerStream(self.handle, host, port)
        self.opened.append(stream)
        return stream

    def go_down(self) -> None:
        self.down = True
        for stream in self.opened:
            stream.feed_end()


@contextlib.contextmanager
def serving(handle: Handler | HandlerBackend) -> Iterator[HandlerBackend]:
    """Every connection an ``HttpClient`` made inside opens (a relay's, however deep) served by ``handle`` (or
    a ``HandlerBackend`` of the test's): the network scripted below the client, whose request building, pooling
    and reading all run."""
    from diverge_codec.relay import http_client

    backend = handle if isinstance(handle, HandlerBackend) else HandlerBackend(handle)
    saved = http_client.open_stream
    http_client.open_stream = backend  # type: ignore[assignment]
    try:
        yield backend
    finally:
        http_client.open_stream = saved
