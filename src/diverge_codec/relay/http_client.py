"""The relay's HTTP/1.1 client: h11 on an asyncio protocol of its own, only what the HTTP drivers need.

Why not httpx2: importing it (httpcore2, ``ssl``, ``logging``, ``urllib.request`` among it) cost about
70 ms of CPU, most of the relay's start-up over HTTP (issue #35); h11 imports in about 6 ms, and ``ssl``
and the system's CAs are loaded here only for an https URL. What it does:

- ``stream(method, url, headers, content, retry_safe=False)``: one request, its response's status and headers,
  and its body as raw pieces (the transfer coding removed, any content coding left to the caller, which inflates
  in bounded steps); a body not read to its end closes the connection, one read to its end returns it to the
  pool (at most ``max_connections`` open at once);
- the pool (issue #41, beside httpcore's and aiohttp's): a connection is reused only while idle, unexpired
  (``IDLE_SECONDS``, or less where the server's ``Keep-Alive: timeout=`` says so) and with nothing to read on its
  socket (a server's close, or a stale response it wrote while idle, discards it); a response followed by
  surplus bytes, one with both ``Transfer-Encoding`` and ``Content-Length``, and any through a forwarding
  proxy (tinyproxy serves one request a connection and relays the rest raw) close their connection;
- one retry: a request that fails on a reused connection before any byte of its answer arrived is sent once
  more on a fresh connection where RFC 9110 §9.2.2 allows it (GET, HEAD, OPTIONS, PUT, DELETE; a request the
  caller marks ``retry_safe``, as the relay does an answer or a notification it POSTs; any request that
  provably never left, or that the server answered 408 without reading); otherwise ``RequestNotAnswered``,
  for that request alone;
- at most ``MAX_INFORMATIONAL`` 1xx heads before the answer;
- each connection: ``SO_KEEPALIVE`` (probes after ``KEEPALIVE_IDLE`` s where the OS lets it be set), Happy
  Eyeballs (``HAPPY_EYEBALLS_DELAY``), ALPN ``http/1.1`` for TLS; a connect timeout (TCP, a proxy's tunnel
  and TLS together) and a write timeout; no read timeout (a stream may be quiet for hours: the relay's own
  deadlines end it); a connection being made that fails, times out or is cancelled is closed;
- cookies the server sets kept for its host and sent back (``cookies.CookieJar``: a load balancer's session
  affinity), as httpx does for the MCP SDKs; a ``User-Agent`` of ``diverge-codec/VERSION`` unless one is given;
- a response head is at most ``HEAD_BYTES``; a server that breaks HTTP/1.1 is ``HttpProtocolError``;
- proxies (``http_proxy``) and TLS (``http_tls``) as the platform has them.

Errors are each an ``HttpError``, whose text names no URL, header or value; the OS's error is the
``__cause__``, except for ``TlsError`` and ``ProxyError``, whose own words say what failed (the proxy, not the
server) and how to fix it: nothing is chained to them.
``backend``: what opens a connection (``http_stream.open_stream``, a TCP socket), below the request building,
pooling and reading, as httpcore's network backend is: every request the client makes goes through them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, cast
from urllib.parse import urlsplit

import h11

from .._version import __version__
from .http_proxy import proxy_authorization, proxy_for, proxy_refusal
from .http_stream import READ_BYTES, NotSent, Stream, open_stream
from .cookies import CookieJar

__all__ = ["ConnectError", "ConnectTimeout", "Headers", "HttpClient", "HttpError", "HttpProtocolError", "ProxyError",
           "ReadError", "RequestNotAnswered", "Response", "TlsError", "WriteError", "WriteTimeout", "proxy_for"]

HEAD_BYTES = 64 * 1024
"""The longest response head (status line and headers) accepted."""
DEFAULT_PORTS = {"http": 80, "https": 443}
USER_AGENT = f"diverge-codec/{__version__}"
IDLE_SECONDS = 4.0
"""How long an idle connection is kept: below the 5 s keep-alive of most servers (Node, uvicorn, Apache), so the
relay rarely writes into a connection the server is closing (httpx keeps 5 s, aiohttp 15 s: both then depend on
their retry)."""
MAX_INFORMATIONAL = 16
"""1xx heads accepted before a response (a server sending ``100 Continue`` forever is refused, not spun on)."""
RETRY_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
"""The idempotent methods (RFC 9110 §9.2.2), sent again on a fresh connection when a reused one failed first."""


class HttpError(Exception):
    """A request that failed; the text says how, never to where or with what."""


class ConnectError(HttpError):
    """The server (or the proxy) could not be reached: the OS's error is the ``__cause__``."""


class ConnectTimeout(ConnectError):
    """Not connected (TCP, the proxy's tunnel and TLS) within the connect timeout."""


class ProxyError(ConnectError):
    """The proxy could not be reached, refused the tunnel or the request, or is not one this client can use; the
    text names the proxy as the hop that failed (and the environment variable, never its value)."""


class TlsError(ConnectError):
    """The TLS handshake failed; the text says why and the fix (``--cacert``, the names the certificate holds, its
    expiry, http:// for a server that speaks plain HTTP). No ``__cause__``: its words are all there is to say."""


class ReadError(HttpError):
    """The connection failed while the response was read."""


class WriteError(HttpError):
    """The connection failed while the request was sent."""


class WriteTimeout(WriteError):
    """The request could not be sent within the write timeout (a server that does not read)."""


class HttpProtocolError(HttpError):
    """The server broke HTTP/1.1: a malformed or oversized head, a body cut short, a connection closed unanswered."""


class RequestNotAnswered(HttpError):
    """A request the client may not send again failed on a reused connection before any byte of an answer came:
    the server closed a kept-alive connection as the request crossed it. The request may or may not have been
    processed; the server was reachable. Only this request failed (a session is not lost by it)."""


class Headers:
    """A response's or request's headers, looked up without regard to case; values are str (latin-1)."""

    __slots__ = ("raw",)

    def __init__(self, raw: Iterable[tuple[bytes | str, bytes | str]] | Mapping[str, str] = ()) -> None:
        items = raw.items() if isinstance(raw, Mapping) else raw
        self.raw: list[tuple[bytes, bytes]] = [(_bytes(name).lower(), _bytes(value)) for name, value in items]

    def get(self, name: str, default: str | None = None) -> str | None:
        key = name.lower().encode("latin-1")
        for found, value in self.raw:
            if found == key:
                return value.decode("latin-1")
        return default

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def keys(self) -> list[str]:
        return [name.decode("latin-1") for name, _ in self.raw]

    def __iter__(self) -> Any:
        return iter(self.keys())

    def __repr__(self) -> str:  # names only: a value may be a credential
        return f"Headers({self.keys()!r})"


def _bytes(text: bytes | str) -> bytes:
    return text if isinstance(text, bytes) else text.encode("latin-1")


class Response:
    """A response's status and headers, and its body read by ``aiter_raw`` (once) in pieces as they come."""

    __slots__ = ("_body", "headers", "status_code")

    def __init__(self, status_code: int, headers: Headers, body: AsyncIterator[bytes]) -> None:
        self.status_code: int = status_code
        self.headers: Headers = headers
        self._body = body

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's pieces: the connection's reader itself (no generator between it and the caller)."""
        return self._body

    def __repr__(self) -> str:
        return f"<Response {self.status_code}>"


Backend = Callable[[str, int], Awaitable[Stream]]


class _Connection:
    """One connection and its h11 state; ``key`` is where it goes (a scheme, host and port)."""

    __slots__ = ("answer", "expires", "first", "h11", "keep", "key", "received", "stream", "uses")

    def __init__(self, key: tuple[str, str, int], stream: Stream) -> None:
        self.key, self.stream = key, stream
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=HEAD_BYTES)
        self.expires = 0.0
        self.keep = True  # False: closed after this exchange, whatever h11 says
        self.received = False  # any byte of the current exchange's answer
        self.first = b""  # the connection's first bytes (a TLS record: an https server on an http URL)
        self.uses = 1
        self.answer: h11.Response | None = None  # the current exchange's head

    def wire(self, *events: Any) -> bytes:
        """The bytes of our events (a request's head, its data, its end: h11 gives bytes for each)."""
        return b"".join(cast(bytes, self.h11.send(event)) for event in events)

    def poll(self) -> Any:
        """h11's next event from what was read (``h11.NEED_DATA`` when more must be)."""
        try:
            return self.h11.next_event()
        except h11.RemoteProtocolError as error:
            words = _protocol_words(error)
        if self.first[:1] in (b"\x15", b"\x16") and self.first[1:2] == b"\x03":
            words = SPEAKS_TLS
        raise HttpProtocolError(words)  # outside the except: h11's text, which can quote the server, is not chained

    async def fill(self) -> None:
        """Read what the server sent next (nothing at its end) into h11."""
        try:
            data = await self.stream.read()
        except OSError as error:
            raise ReadError("the connection failed while the answer was read") from error
        if data:
            self.received = True
            if len(self.first) < 2:
                self.first += data[:2 - len(self.first)]
        self.h11.receive_data(data)  # only stores it: h11 reads it, and complains, in next_event

    async def head(self) -> h11.Response:
        """The response's status and headers, past at most ``MAX_INFORMATIONAL`` 1xx; HttpProtocolError else."""
        informational = 0
        while True:
            try:
                event = self.poll()
            except HttpProtocolError as error:
                if str(error) != CUT_SHORT:
                    raise
                event = None  # the connection ended before a head: said so below, no h11 text chained
            if event is h11.NEED_DATA:
                await self.fill()
            elif isinstance(event, h11.Response):
                return event
            elif event is None:
                raise HttpProtocolError(CUT_SHORT if self.received else UNANSWERED)
            elif not isinstance(event, h11.InformationalResponse):
                raise HttpProtocolError(NOT_HTTP)
            else:
                informational += 1  # a 1xx: the answer follows
                if informational > MAX_INFORMATIONAL:
                    raise HttpProtocolError(f"the server sent more than {MAX_INFORMATIONAL} 1xx heads before an answer")


CUT_SHORT = "the server closed the connection in the middle of a response"
UNANSWERED = "the server closed the connection without answering"
NOT_HTTP = "the server's response is not HTTP/1.1"
SPEAKS_TLS = "the server answered with TLS: use an https:// URL"


def _protocol_words(error: BaseException) -> str:
    """h11's complaint in the relay's words (h11's own text can quote what the server sent)."""
    text = str(error).lower()
    if "too long" in text or "too large" in text:
        return "the server's response head is too large"
    if "closed" in text or "incomplete" in text:
        return CUT_SHORT
    return NOT_HTTP


def _keep_alive_seconds(headers: Iterable[tuple[bytes, bytes]]) -> float | None:
    """The server's ``Keep-Alive: timeout=N``, if it gives one."""
    for name, value in headers:
        if name == b"keep-alive":
            for parameter in value.split(b","):
                key, _, number = parameter.strip().partition(b"=")
                if key.strip().lower() == b"timeout" and number.strip().isdigit():
                    return float(number.strip())
    return None


def _refusal_words(status: int, what: str) -> str:
    return f"the proxy refused {what} (HTTP {status})" + (
        ": its credentials (in *_PROXY) are missing or wrong" if status == 407 else "")


class _Retry(Exception):
    """Send the request again on a fresh connection: the reused one failed before any byte of an answer."""


class HttpClient:
    """Requests to one or a few origins over pooled HTTP/1.1 connections. ``await aclose()`` once done."""

    def __init__(self, *, headers: Iterable[tuple[str, str]] = (), verify: Any = None, connect_timeout: float = 10.0,
                 write_timeout: float = 10.0, max_connections: int = 72, backend: Backend | None = None, idle_seconds: float = IDLE_SECONDS,
                 proxy: Callable[[str], str | None] = proxy_for) -> None:
        self.headers: list[tuple[str, str]] = list(headers)
        self.verify: Any = verify
        """An ``ssl.SSLContext``, or None: the system's CAs (``http_tls.default_tls``), made on the first https
        connection."""
        self.connect_timeout = connect_timeout
        self.write_timeout = write_timeout
        self.backend: Backend = backend or open_stream
        self.proxy: Callable[[str], str | None] = proxy
        """The proxy a URL goes through, or None (``http_proxy.proxy_for``: the environment's; a policy's own)."""
        self.idle_seconds: float = idle_seconds
        self.clock: Callable[[], float] = time.monotonic
        self.retried: int = 0
        """Requests sent again on a fresh connection after a reused one failed first."""
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._cookies = CookieJar()

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for connection in list(self._open):
            connection.stream.abort()
        self._open.clear()
        self._idle.clear()

    def _merged(self, headers: Mapping[str, str] | None) -> list[tuple[str, str]]:
        """The client's headers less those the request sets itself, then the request's, and a User-Agent."""
        own = dict(headers or {})
        names = {name.lower() for name in own}
        merged = [(name, value) for name, value in self.headers if name.lower() not in names] + list(own.items())
        if not any(name.lower() == "user-agent" for name, _ in merged):
            merged.append(("User-Agent", USER_AGENT))
        return merged

    @contextlib.asynccontextmanager
    async def stream(self, method: str, url: str, headers: Mapping[str, str] | None = None,
                     content: bytes | None = None, *, retry_safe: bool = False) -> AsyncIterator[Response]:
        """Send one request; the response, its body read (or not) inside the ``async with``.

        ``retry_safe``: the request may arrive twice (an answer to the server's request, a notification: RFC
        9110 §9.2.2), so when a reused connection fails before any byte of its answer it is sent once more on a
        fresh one, as GET, HEAD, OPTIONS, PUT and DELETE always are. Otherwise that failure raises
        ``RequestNotAnswered`` (this request failed; the server was there)."""
        merged = self._merged(headers)
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname
        if scheme not in DEFAULT_PORTS or not host:
            raise HttpError("not an http:// or https:// URL with a host")
        try:
            port = parts.port or DEFAULT_PORTS[scheme]
        except ValueError:
            raise HttpError("the URL's port is not valid") from None
        authority = parts.netloc.rpartition("@")[2]
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        proxy = self.proxy(url)
        forwarded = proxy is not None and scheme == "http"  # absolute form: the proxy forwards it
        if forwarded:
            target = f"http://{authority}{target}"
        lines = [("Host", authority), *merged]
        if not any(name.lower() == "cookie" for name, _ in merged):
            lines += self._cookies.header(host, scheme)
        if forwarded:
            lines += proxy_authorization(cast(str, proxy))
        if content is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(("Content-Length", str(len(content or b""))))
        request = h11.Request(method=method, target=target, headers=lines)
        async with self._slots:
            connection = await self._exchange((scheme, host, port), proxy, request, content,
                                              retry_safe or method in RETRY_METHODS)
            try:
                head = cast(h11.Response, connection.answer)
                response = Response(head.status_code, Headers(head.headers), self._body(connection))
                if forwarded and proxy_refusal(response.status_code, response.headers.raw):
                    raise ProxyError(_refusal_words(response.status_code, "the request"))
                self._cookies.keep(host, response.headers.raw)
                yield response
            finally:
                self._release(connection)

    async def _exchange(self, key: tuple[str, str, int], proxy: str | None, request: h11.Request,
                        content: bytes | None, again: bool) -> _Connection:
        """A connection on which ``request`` was sent and its answer's head read (``answer``): sent once more on a
        fresh connection where a reused one failed before any byte of an answer, if ``again`` or it never left."""
        for attempt in (1, 2):
            connection = await self._connection(key, proxy, fresh=attempt == 2)
            try:
                try:
                    await self._send(connection, request, content)
                    connection.answer = await connection.head()
                except (WriteError, ReadError, HttpProtocolError) as error:
                    if str(error) == UNANSWERED and key[0] == "http" and proxy is None and connection.uses == 1:
                        await self._tls_spoken_here(key[1], key[2])
                    if connection.uses == 1 or connection.received or attempt == 2 or isinstance(error, WriteTimeout):
                        raise  # a server that does not read is no stale connection
                    if again or isinstance(error.__cause__, NotSent):
                        raise _Retry from None
                    failure: HttpError = error
                else:
                    if not (connection.answer.status_code == 408 and connection.uses > 1 and attempt == 1
                            and _closing(connection.answer)):
                        return connection
                    raise _Retry  # the server's idle timeout, written as the request crossed it: never read
            except _Retry:
                self._forget(connection)
                self.retried += 1
                continue
            except BaseException:
                self._forget(connection)
                raise
            self._forget(connection)
            raise RequestNotAnswered("the server closed a kept-alive connection before answering; the request may "
                                     "have reached it") from failure
        raise AssertionError("unreachable")  # pragma: no cover

    async def _tls_spoken_here(self, host: str, port: int) -> None:
        """HttpProtocolError saying so where a server that closed a fresh http:// connection unanswered completes a
        TLS handshake on the same port (a TLS server reads plain HTTP as garbage and hangs up; no request is sent)."""
        from .http_tls import insecure_probe

        try:
            probe = await asyncio.wait_for(self._dial("https", host, port, None, tls=insecure_probe()),
                                           self.connect_timeout)
        except (HttpError, OSError, asyncio.TimeoutError):
            return
        probe.abort()
        raise HttpProtocolError(SPEAKS_TLS)

    async def _connection(self, key: tuple[str, str, int], proxy: str | None, fresh: bool) -> _Connection:
        """An idle connection fit for reuse (not expired, nothing to read on it), else a new one."""
        idle = self._idle.get(key, [])
        now = self.clock()
        while idle and not fresh:
            connection = idle.pop()
            if connection.expires > now and not connection.stream.readable():
                connection.uses += 1
                connection.received = False
                return connection
            self._forget(connection)
        scheme, host, port = key
        try:
            stream = await asyncio.wait_for(self._dial(scheme, host, port, proxy), self.connect_timeout)
        except asyncio.TimeoutError:
            raise ConnectTimeout("not connected within the connect timeout") from None
        connection = _Connection(key, stream)
        if proxy is not None and scheme == "http":
            connection.keep = False  # a forwarding proxy may serve one request a connection and relay the rest raw
        self._open.add(connection)
        return connection

    async def _dial(self, scheme: str, host: str, port: int, proxy: str | None, tls: Any = None) -> Stream:
        """TCP (to the proxy, then a ``CONNECT`` through it for https), then TLS; the connection closed if any step
        fails, times out or is cancelled. ``tls``: another context than the client's (the certificate probe)."""
        tls = tls or (self._tls() if scheme == "https" else None)
        if proxy is None:
            stream = await self._open_tcp(host, port, "the server could not be reached", ConnectError)
        else:
            proxy_parts = urlsplit(proxy)
            if proxy_parts.scheme.lower() != "http" or not proxy_parts.hostname:
                raise ProxyError("the proxy must be an http:// URL (the environment's *_PROXY)")
            try:
                proxy_port = proxy_parts.port or 80
            except ValueError:
                raise ProxyError("the proxy's port is not valid (the environment's *_PROXY)") from None
            stream = await self._open_tcp(proxy_parts.hostname, proxy_port,
                                          f"the proxy ({scheme}_proxy in the environment) is not reachable", ProxyError)
        try:
            if tls is not None:
                if proxy is not None:
                    await _tunnel(stream, host, port, proxy)
                await self._handshake(stream, tls, scheme, host, port, proxy)
        except BaseException:
            stream.abort()
            raise
        return stream

    async def _open_tcp(self, host: str, port: int, words: str, error_type: type[ConnectError]) -> Stream:
        """A TCP connection; ConnectError (the OS's error its cause) for the server, ProxyError for the proxy: its
        words carry the OS's reason and nothing is chained, so no reader takes the OS's error for the server's."""
        try:
            return await self.backend(host, port)
        except OSError as error:  # refused, unreachable, a name not resolved
            failure = error
        if error_type is ProxyError:
            raise ProxyError(f"{words} ({_os_words(failure)})")
        raise error_type(words) from failure

    async def _handshake(self, stream: Stream, tls: Any, scheme: str, host: str, port: int, proxy: str | None) -> None:
        """TLS on ``stream``; a refusal in words (``http_tls.failure_words``), with the names or dates of the
        certificate refused where they are the fix (read over a second handshake that verifies nothing)."""
        from . import http_tls

        try:
            await stream.start_tls(tls, server_hostname=host)
            return
        except OSError as error:  # ssl.SSLError is an OSError
            failure: OSError = error
        import ssl

        if not isinstance(failure, ssl.SSLError):
            raise ConnectError("the connection failed during the TLS handshake") from failure
        facts = None
        if http_tls.wants_certificate(failure) and tls is self.verify:
            with contextlib.suppress(Exception):
                probe = await self._dial(scheme, host, port, proxy, tls=http_tls.insecure_probe())
                der = probe.peer_certificate()
                probe.abort()
                facts = http_tls.certificate_facts(der) if der else None
        raise TlsError(http_tls.failure_words(failure, facts))

    def _tls(self) -> Any:
        if self.verify is None:
            from .http_tls import default_tls
            try:
                self.verify = default_tls()
            except (OSError, ValueError) as error:  # ssl.SSLError is an OSError
                raise ConnectError("the system's CA certificates cannot be loaded") from error
        return self.verify

    async def _send(self, connection: _Connection, request: h11.Request, content: bytes | None) -> None:
        try:
            data = connection.wire(request, *([h11.Data(data=content)] if content else []), h11.EndOfMessage())
        except h11.LocalProtocolError:
            raise HttpError("the request cannot be sent as HTTP/1.1") from None
        try:
            connection.stream.write(data)
            await asyncio.wait_for(connection.stream.drain(), self.write_timeout)
        except asyncio.TimeoutError:
            raise WriteTimeout("the server did not take the request within the write timeout") from None
        except OSError as error:
            raise WriteError("the connection failed while the request was sent") from error

    async def _body(self, connection: _Connection) -> AsyncIterator[bytes]:
        """The body as it arrives: each read's data in one piece, however many chunks it held (a server writes an
        event a chunk), so the caller pays once a read, not once an event; what a read completed comes before an
        error found after it."""
        while True:
            pieces: list[bytes] = []
            broken: HttpProtocolError | None = None
            event: Any = None
            try:
                while type(event := connection.poll()) is h11.Data:
                    pieces.append(event.data)
            except HttpProtocolError as error:
                broken = error
            if pieces:
                yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
            if broken is not None:
                raise broken
            if event is not h11.NEED_DATA:
                return  # EndOfMessage, or ConnectionClosed (a body read until the server closed)
            await connection.fill()

    def _release(self, connection: _Connection) -> None:
        """Back to the pool where the exchange finished with both sides done (h11 then lets the connection carry
        the next), nothing followed the answer (RFC 9112 §6.3: surplus bytes answer no request), its framing was
        unambiguous (§6.1: not both ``Transfer-Encoding`` and ``Content-Length``) and the server has not closed
        it; closed otherwise (a body left unread, an error). Kept ``idle_seconds``, or less where the server's
        ``Keep-Alive: timeout=`` says it closes sooner."""
        state, head = connection.h11, connection.answer
        if connection.keep and head is not None and state.our_state is h11.DONE and state.their_state is h11.DONE:
            names = {name for name, _ in head.headers}
            ambiguous = b"transfer-encoding" in names and b"content-length" in names
            if not ambiguous and not state.trailing_data[0] and not connection.stream.readable():
                state.start_next_cycle()
                offered = _keep_alive_seconds(head.headers)
                seconds = self.idle_seconds if offered is None else min(self.idle_seconds, offered / 2)
                connection.expires = self.clock() + seconds
                connection.answer = None
                self._idle.setdefault(connection.key, []).append(connection)
                return
        self._forget(connection)

    def _forget(self, connection: _Connection) -> None:
        connection.stream.abort()
        self._open.discard(connection)


def _closing(head: h11.Response) -> bool:
    """Whether the server says it closes the connection after this response."""
    return any(name == b"connection" and b"close" in value.lower() for name, value in head.headers)


async def _tunnel(stream: Stream, host: str, port: int, proxy: str) -> None:
    """``CONNECT host:port`` through the proxy; ProxyError unless it answers 2xx (the caller closes the stream)."""
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    connection = _Connection(("http", host, port), stream)
    lines = [("Host", authority), *proxy_authorization(proxy)]
    try:
        stream.write(connection.wire(h11.Request(method="CONNECT", target=authority, headers=lines), h11.EndOfMessage()))
        await stream.drain()
        event = await connection.head()
    except (OSError, HttpError) as error:
        failure: BaseException = error
    else:
        if not 200 <= event.status_code < 300:
            raise ProxyError(_refusal_words(event.status_code, "the tunnel"))
        return
    raise ProxyError("the proxy's tunnel failed (" + (_os_words(failure) if isinstance(failure, OSError)
                                                      else "the proxy hung up, or did not answer in HTTP/1.1") + ")")


def _os_words(error: OSError) -> str:
    """The OS's reason in a few words, without the address asyncio's text names."""
    if isinstance(error, socket.gaierror):
        return "its name could not be resolved"
    return os.strerror(error.errno).lower() if error.errno else type(error).__name__

