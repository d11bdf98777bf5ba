"""The relay's HTTP/1.1 client: h11 on asyncio's streams, only what the HTTP drivers need.

Why not httpx2: importing it (httpcore2, ``ssl``, ``logging``, ``urllib.request`` among it) cost about
70 ms of CPU, most of the relay's start-up over HTTP (issue #35); h11 imports in about 6 ms, and ``ssl``
and the system's CAs are loaded here only for an https URL. What it does:

- ``stream(method, url, headers, content)``: one request, its response's status and headers, and its body
  as raw pieces (the transfer coding removed, any content coding left to the caller, which inflates in
  bounded steps); a body not read to its end closes the connection, one read to its end returns it to the
  pool (keep-alive, at most ``max_connections`` open at once);
- cookies the server sets kept for its host and sent back (``cookies.CookieJar``: a load balancer's session
  affinity); a ``User-Agent`` of ``diverge-codec/VERSION`` unless one is given;
- a connect timeout (TCP, a proxy's tunnel and TLS together) and a write timeout; no read timeout (a
  stream may be quiet for hours: the relay's own deadlines end it);
- a response head is at most ``HEAD_BYTES``; a server that breaks HTTP/1.1 is ``HttpProtocolError``;
- proxies from the environment as httpx2 read them (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, less
  ``NO_PROXY``, loopback included): an ``http://`` proxy, in absolute form for http URLs and through a
  ``CONNECT`` tunnel for https; its user and password become ``Proxy-Authorization``;
- TLS with a given ``ssl.SSLContext``, or the system's CAs (``default_tls``).

Errors are each an ``HttpError``, whose text names no URL, header or value; the OS's or TLS's error is the
``__cause__``. ``transport``: a function answering each ``Request`` instead of the network (tests).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Union, cast
from urllib.parse import unquote, urlsplit

import h11

from .._version import __version__
from .cookies import CookieJar

__all__ = ["ConnectError", "ConnectTimeout", "Headers", "HttpClient", "HttpError", "ProxyError", "ReadError",
           "HttpProtocolError", "Request", "Response", "WriteError", "WriteTimeout", "proxy_for"]

READ_BYTES = 256 * 1024
"""The most read from a connection at once (asyncio's own read size): a fast stream arrives in large pieces."""
HEAD_BYTES = 64 * 1024
"""The longest response head (status line and headers) accepted."""
DEFAULT_PORTS = {"http": 80, "https": 443}
USER_AGENT = f"diverge-codec/{__version__}"


class HttpError(Exception):
    """A request that failed; the text says how, never to where or with what."""


class ConnectError(HttpError):
    """The server (or the proxy) could not be reached: the OS's or TLS's error is the ``__cause__``."""


class ConnectTimeout(ConnectError):
    """Not connected (TCP, the proxy's tunnel and TLS) within the connect timeout."""


class ProxyError(ConnectError):
    """The proxy refused the tunnel, or is not one this client can use."""


class ReadError(HttpError):
    """The connection failed while the response was read."""


class WriteError(HttpError):
    """The connection failed while the request was sent."""


class WriteTimeout(WriteError):
    """The request could not be sent within the write timeout (a server that does not read)."""


class HttpProtocolError(HttpError):
    """The server broke HTTP/1.1: a malformed or oversized head, a body cut short, a connection closed unanswered."""


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


Body = Union[bytes, Iterable[bytes], AsyncIterable[bytes]]


class Response:
    """A response's status and headers, and its body read by ``aiter_raw`` (once) in pieces as they come."""

    def __init__(self, status_code: int, headers: Any = (), content: Body = b"") -> None:
        self.status_code: int = status_code
        self.headers: Headers = headers if isinstance(headers, Headers) else Headers(headers)
        self._content = content

    def aiter_raw(self) -> AsyncIterator[bytes]:
        """The body's pieces: the network's reader itself (no generator between it and the caller), or a
        scripted body's."""
        content = self._content
        if isinstance(content, AsyncIterator):
            return content
        return _scripted(content)

    def __repr__(self) -> str:
        return f"<Response {self.status_code}>"


async def _scripted(content: bytes | Iterable[bytes] | AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """A body given as bytes, as pieces, or as an async iterable that is not an iterator (a test's server)."""
    if isinstance(content, (bytes, bytearray)):
        if content:
            yield bytes(content)
    elif isinstance(content, AsyncIterable):
        async for piece in content:
            yield piece
    else:
        for piece in content:
            yield piece


class Request:
    """What ``transport`` is given: the request as it would be sent (the client's headers merged in)."""

    __slots__ = ("content", "headers", "method", "url")

    def __init__(self, method: str, url: str, headers: Headers, content: bytes) -> None:
        self.method: str = method
        self.url: str = url
        self.headers: Headers = headers
        self.content: bytes = content

    @property
    def path(self) -> str:
        return urlsplit(self.url).path

    def __repr__(self) -> str:
        return f"<Request {self.method}>"


Transport = Callable[[Request], Union[Response, Awaitable[Response]]]


def proxy_for(url: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """The proxy the environment sends ``url`` through, or None (``*_PROXY`` in either case, less ``NO_PROXY``)."""
    parts = urlsplit(url)
    found = {key.lower(): value for key, value in environ.items() if key.lower().endswith("_proxy")}
    proxy = found.get(f"{parts.scheme}_proxy") or found.get("all_proxy")
    if not proxy:
        return None
    host = (parts.hostname or "").lower()
    for entry in (item.strip().lower() for item in found.get("no_proxy", "").split(",")):
        if entry == "*" or (entry and (host == entry.lstrip(".") or host.endswith("." + entry.lstrip(".")))):
            return None
    return proxy if "://" in proxy else "http://" + proxy


class _Connection:
    """One connection and its h11 state; ``key`` is where it goes (a scheme, host and port)."""

    __slots__ = ("h11", "key", "reader", "writer")

    def __init__(self, key: tuple[str, str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.key, self.reader, self.writer = key, reader, writer
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=HEAD_BYTES)

    def reusable(self) -> bool:
        """Neither closed by the server while it was idle nor closing."""
        return not self.reader.at_eof() and not self.writer.is_closing()

    def wire(self, *events: Any) -> bytes:
        """The bytes of our events (a request's head, its data, its end: h11 gives bytes for each)."""
        return b"".join(cast(bytes, self.h11.send(event)) for event in events)

    def poll(self) -> Any:
        """h11's next event from what was read (``h11.NEED_DATA`` when more must be)."""
        try:
            return self.h11.next_event()
        except h11.RemoteProtocolError as error:
            words = _protocol_words(error)
        raise HttpProtocolError(words)  # outside the except: h11's text, which can quote the server, is not chained

    async def fill(self) -> None:
        """Read what the server sent next (at most ``READ_BYTES``; nothing at its end) into h11."""
        try:
            data = await self.reader.read(READ_BYTES)
        except OSError as error:
            raise ReadError("the connection failed while the answer was read") from error
        self.h11.receive_data(data)  # only stores it: h11 reads it, and complains, in next_event

    async def head(self) -> h11.Response:
        """The response's status and headers, past any 1xx; HttpProtocolError for anything else."""
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
                raise HttpProtocolError("the server closed the connection without answering")
            elif not isinstance(event, h11.InformationalResponse):  # a 1xx: the answer follows
                raise HttpProtocolError(NOT_HTTP)

    def abort(self) -> None:
        self.writer.transport.abort()


CUT_SHORT = "the server closed the connection in the middle of a response"
NOT_HTTP = "the server's response is not HTTP/1.1"


def _protocol_words(error: BaseException) -> str:
    """h11's complaint in the relay's words (h11's own text can quote what the server sent)."""
    text = str(error).lower()
    if "too long" in text or "too large" in text:
        return "the server's response head is too large"
    if "closed" in text or "incomplete" in text:
        return CUT_SHORT
    return NOT_HTTP


class HttpClient:
    """Requests to one or a few origins over pooled HTTP/1.1 connections. ``await aclose()`` once done."""

    def __init__(self, *, headers: Iterable[tuple[str, str]] = (), verify: Any = None, connect_timeout: float = 10.0,
                 write_timeout: float = 10.0, max_connections: int = 72, transport: Transport | None = None,
                 environ: Mapping[str, str] = os.environ) -> None:
        self.headers: list[tuple[str, str]] = list(headers)
        self.verify: Any = verify
        """An ``ssl.SSLContext``, or None: the system's CAs, made on the first https connection."""
        self.connect_timeout = connect_timeout
        self.write_timeout = write_timeout
        self.transport = transport
        self._environ = environ
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
            connection.abort()
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
                     content: bytes | None = None) -> AsyncIterator[Response]:
        """Send one request; the response, its body read (or not) inside the ``async with``."""
        merged = self._merged(headers)
        if self.transport is not None:
            answer = self.transport(Request(method, url, Headers(merged), content or b""))
            yield await answer if isinstance(answer, Awaitable) else answer
            return
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
        proxy = proxy_for(url, self._environ)
        if proxy is not None and scheme == "http":
            target = f"http://{authority}{target}"  # absolute form: the proxy forwards it
        lines = [("Host", authority), *merged]
        if not any(name.lower() == "cookie" for name, _ in merged):
            lines += self._cookies.header(host, scheme)
        if proxy is not None and scheme == "http":
            lines += _proxy_authorization(proxy)
        if content is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(("Content-Length", str(len(content or b""))))
        async with self._slots:
            connection = await self._connection(scheme, host, port, proxy)
            try:
                await self._send(connection, h11.Request(method=method, target=target, headers=lines), content)
                head = await connection.head()
                response = Response(head.status_code, Headers(head.headers), self._body(connection))
                self._cookies.keep(host, response.headers.raw)
                yield response
            finally:
                self._release(connection)

    async def _connection(self, scheme: str, host: str, port: int, proxy: str | None) -> _Connection:
        key = (scheme, host, port)
        idle = self._idle.get(key, [])
        while idle:
            connection = idle.pop()
            if connection.reusable():
                return connection
            self._forget(connection)
        try:
            reader, writer = await asyncio.wait_for(self._dial(scheme, host, port, proxy), self.connect_timeout)
        except asyncio.TimeoutError:
            raise ConnectTimeout("not connected within the connect timeout") from None
        connection = _Connection(key, reader, writer)
        self._open.add(connection)
        return connection

    async def _dial(self, scheme: str, host: str, port: int,
                    proxy: str | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        tls = self._tls() if scheme == "https" else None
        if proxy is None:
            return await _open(host, port, tls, host)
        proxy_parts = urlsplit(proxy)
        if proxy_parts.scheme.lower() != "http" or not proxy_parts.hostname:
            raise ProxyError("the proxy must be an http:// URL (the environment's *_PROXY)")
        try:
            proxy_port = proxy_parts.port or 80
        except ValueError:
            raise ProxyError("the proxy's port is not valid (the environment's *_PROXY)") from None
        reader, writer = await _open(proxy_parts.hostname, proxy_port, None, None)
        if tls is None:
            return reader, writer
        await _tunnel(reader, writer, host, port, proxy)
        try:
            await writer.start_tls(tls, server_hostname=host)
        except OSError as error:  # ssl.SSLError is an OSError; asyncio has closed the tunnel
            raise ConnectError("TLS through the proxy failed") from error
        return reader, writer

    def _tls(self) -> Any:
        if self.verify is None:
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
            connection.writer.write(data)
            await asyncio.wait_for(connection.writer.drain(), self.write_timeout)
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
        the next) and the server has not closed it; closed otherwise (a body left unread, an error)."""
        if connection.h11.our_state is h11.DONE and connection.h11.their_state is h11.DONE:
            connection.h11.start_next_cycle()
            if connection.reusable():
                self._idle.setdefault(connection.key, []).append(connection)
                return
        self._forget(connection)

    def _forget(self, connection: _Connection) -> None:
        connection.abort()
        self._open.discard(connection)


async def _open(host: str, port: int, tls: Any, server_hostname: str | None) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    try:
        return await asyncio.open_connection(host, port, ssl=tls, server_hostname=server_hostname if tls else None,
                                             limit=READ_BYTES)
    except OSError as error:  # refused, unreachable, a name not resolved, TLS (ssl.SSLError is an OSError)
        raise ConnectError("the server could not be reached") from error


async def _tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int, proxy: str) -> None:
    """``CONNECT host:port`` through the proxy; ProxyError unless it answers 2xx."""
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    connection = _Connection(("http", host, port), reader, writer)
    lines = [("Host", authority), *_proxy_authorization(proxy)]
    try:
        writer.write(connection.wire(h11.Request(method="CONNECT", target=authority, headers=lines), h11.EndOfMessage()))
        await writer.drain()
        event = await connection.head()
    except (OSError, HttpError) as error:
        writer.transport.abort()
        raise ProxyError("the proxy's tunnel failed") from error
    if not 200 <= event.status_code < 300:
        writer.transport.abort()
        raise ProxyError(f"the proxy refused the tunnel (HTTP {event.status_code})")


def _proxy_authorization(proxy: str) -> list[tuple[str, str]]:
    parts = urlsplit(proxy)
    if parts.username is None:
        return []
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    return [("Proxy-Authorization", "Basic " + base64.b64encode(pair).decode("ascii"))]


CA_FILES = ("/etc/ssl/cert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/pki/tls/cert.pem",
            "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/ca-bundle.pem")
"""Where systems keep their CA bundle, tried where OpenSSL's compiled-in paths are not there (httpcore2's list,
truststore's Linux fallbacks; the first is macOS's own)."""


def default_tls() -> Any:
    """The system's CAs: ``SSL_CERT_FILE``/``SSL_CERT_DIR`` or OpenSSL's own paths (Windows' store on Windows) where
    they exist, else the first of ``CA_FILES`` present, else certifi's bundle if it is installed."""
    import ssl

    paths = ssl.get_default_verify_paths()
    if sys.platform == "win32" or any(path and os.path.exists(path) for path in (paths.cafile, paths.capath)):
        return ssl.create_default_context()  # reads SSL_CERT_FILE and SSL_CERT_DIR as OpenSSL does
    for candidate in CA_FILES:
        if os.path.isfile(candidate):
            return ssl.create_default_context(cafile=candidate)
    try:
        import certifi  # type: ignore[import-not-found, unused-ignore]  # a python.org build without its certificates
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())
