"""The relay over MCP's Streamable HTTP transport: a remote server's notifications onto a channel.

::

    report = await HttpRelay("https://example.com/mcp", writer, RelayOptions(calls=[("echo", {})])).run()

The client side of the transport as MCP (2025-03-26 to 2025-11-25) describes it, beside the
stdio driver over the same sans-IO ``RelaySession``:

- each message the session sends is POSTed with ``Accept: application/json,
  text/event-stream``; the answer is one JSON body or an event stream, on which the
  notifications about the request (its progress) come before its answer;
- the ``Mcp-Session-Id`` the ``initialize`` answer gives goes on every later request, with
  ``MCP-Protocol-Version``;
- after the handshake a GET opens the stream for what the server sends on its own
  (logging, list_changed, resources/updated); a 405 means it offers none;
- a stream that drops is resumed with ``Last-Event-ID`` where the server gave event ids
  (``reconnects``); one that cannot be is counted (``unrecovered``); an event whose id was
  already relayed in the session is a replay: dropped and counted (``replayed``);
- **a session is lost only on the server's word**: a 404 for the session (or a 400 that says it is
  unknown, as server-everything answers) makes a new session as MCP asks (``initialize``, then the
  ``requests`` again; calls in flight are counted failed, never re-sent). One request that fails
  fails alone (``posts_failed``). A server that cannot be reached (no connection, or a gateway's
  502-504, 429 with ``Retry-After``: ``http_reach``) is tried again with capped exponential backoff
  for ``reconnect_window`` seconds: then a new session where it forgot the old one, or the end,
  "connection lost", naming the status;
- the server's requests (``ping``) and the relay's are two id spaces: an answer POSTed to the
  server awaits nothing, so its ``202`` touches none of the relay's pending requests;
- the GET stream silent for ``stream_timeout`` is opened again from its last event id (``http_streams``);
- at the end the session is DELETEd (not where the server is gone).

Bounded whatever the server sends: every body is read in pieces (``http_streams``, ``http_body``: a
compressed one inflated ``PIECE`` bytes at a time, the loop given a turn between pieces); one the relay
does not parse (another content type, an error status) is read ``REASON_BYTES`` at most, then closed and
counted; POSTs in flight are at most ``MAX_POSTS`` (the rest wait their turn); a redirect is
followed only within the origin (307/308, at most ``MAX_REDIRECTS``; one answering a POST moves the
URL, one answering the GET stream moves that GET alone); a stream that ends at
once is reopened after a floor and a growing backoff. The report's ``server`` says
``transport`` (``streamable-http`` or ``sse``), whether a session id was given (never its value), the statuses met,
sessions, reconnects and what ended it. Neither the URL nor a header's value appears in the
report or an error: either may hold a credential.

HTTP is ``http_client`` (h11 on asyncio's streams, the ``[http]`` extra): bodies are read as raw
pieces, the events parsed by ``eventstream``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import socket
import sys
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit

from .._json import loads
from .eventstream import EventParser, RecentIds
from .channel import ChannelRelay, ChannelWriter, RelayOptions, _first
from .http_reach import Reach, log, path_of, retry_after, unreachable_status
from .http_sse import LegacySse
from .network import NetworkPolicy, TokenProvider
from .http_streams import BACKOFF_CAP, QUICK_END, RETRY_FLOOR, Streams
from .remote_auth import CredentialError, TokenSource, describe_challenge, log as _auth_log, parse_challenge
from .session import Phase, RelayReport

__all__ = ["TRANSPORTS", "HttpRelay", "check_url", "load_client", "parse_header"]

TRANSPORTS = ("auto", "streamable-http", "sse")
"""``auto``: Streamable HTTP, or the older HTTP+SSE where ``initialize``'s POST is answered 400, 404 or 405."""

ACCEPT = "application/json, text/event-stream"
ACCEPT_ENCODING = "gzip, deflate"
"""What the relay can inflate in bounded pieces; a body in any other coding is refused, unread."""
MAX_POSTS = 64
"""POSTs in flight at once; the rest wait their turn. Past it, answers to the server's own requests are
dropped and counted (``requests_unanswered``), as for a stdio server that does not read."""
SETTLE = 0.1
"""``--until-answered``: seconds without an event after which the server's own stream is taken to be quiet."""
QUICK_LOSSES = 3
"""Sessions in a row lost within ``QUICK_END`` of being made (a server that forgets each one at once): the relay ends."""
CONNECT_TIMEOUT = 10.0
DELETE_TIMEOUT = 2.0
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
LEGACY_SIGNS = (400, 404, 405)
"""Statuses to ``initialize``'s POST that mean "try the older HTTP+SSE transport" (MCP's backwards compatibility)."""
METADATA_BYTES = 64 * 1024
"""The most read of a protected resource's metadata (RFC 9728)."""
METADATA_TIMEOUT = 5.0
"""Seconds the metadata may take, all told."""
METADATA_URL_CHARS = 2048
"""The longest ``resource_metadata`` URL followed; a longer one is not."""


class _Refused(Exception):
    """A request the relay cannot go on with; its text names no value (the report's error)."""


def load_client() -> Any:
    """The ``http_client`` module, or an ImportError that says how to install what it needs (h11)."""
    try:
        from . import http_client
    except ImportError:
        raise ImportError("the relay's HTTP transport needs h11, which is not installed: "
                          "pip install 'diverge-codec[http]'") from None
    return http_client


def check_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host and a valid port; ValueError (never quoting it) if not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("--url must be an http:// or https:// URL with a host")
    try:
        parts.port  # noqa: B018  (raises on a port outside 0-65535 or not a number)
    except ValueError:
        raise ValueError("--url has an invalid port") from None
    if not url.isascii() or any(char.isspace() or ord(char) < 0x21 for char in url):
        raise ValueError("--url must be ASCII without spaces or control characters (percent-encode the rest)")
    return url


def parse_header(text: str) -> tuple[str, str]:
    """``Name: value`` as (name, value); ValueError (naming no value) for anything else."""
    name, colon, value = text.partition(":")
    name, value = name.strip(), value.strip()
    if not colon or not name or not _is_token(name):
        raise ValueError("--header must be 'Name: value'")
    if not all(char == "\t" or 0x20 <= ord(char) <= 0x7E for char in value):
        raise ValueError(f"--header {name}: the value must be printable ASCII (HTTP cannot carry the rest as sent)")
    return name, value


def _is_token(name: str) -> bool:
    return all(0x21 <= ord(char) <= 0x7E and char not in '"(),/:;<=>?@[\\]{}' for char in name)


def _is_session_id(value: str) -> bool:
    """MCP's rule: a session id is visible ASCII (0x21-0x7E) only."""
    return 0 < len(value) <= 1024 and all(0x21 <= ord(char) <= 0x7E for char in value)


def _why(error: BaseException) -> str:
    """A one-line reason for a failed request that quotes neither the URL nor a header: the client's own words
    where they name the failed hop and its fix (TLS, a proxy), else the OS's error."""
    from .http_client import HttpError, ProxyError, TlsError

    if isinstance(error, (TlsError, ProxyError)) and str(error):
        return str(error)

    ssl = sys.modules.get("ssl")  # looked up, not imported: without it no TLS error can have happened
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if ssl is not None and isinstance(cause, ssl.SSLError):
            return f"TLS: {cause.reason or type(cause).__name__}"
        if isinstance(cause, socket.gaierror):
            return f"name resolution: {cause.strerror or 'failed'}"
        if isinstance(cause, OSError) and cause.errno:  # the errno's words: asyncio's own text names the address
            return os.strerror(cause.errno).lower()
        cause = cause.__cause__ or cause.__context__
    return str(error) if isinstance(error, HttpError) and str(error) else type(error).__name__


CERTIFICATE_REFUSALS = (
    (b"no required ssl certificate", "the server asks for a client certificate and none was sent (--cert, --key)"),
    (b"ssl certificate error", "the server refused the client certificate (--cert: one its CA signed, still valid?)"),
)
"""nginx's 400 pages when it asks for a client certificate (``ssl_verify_client``), in lower case: a TLS problem."""


def _refuse_certificate(status: int, reason: bytes, what: str) -> None:
    """A 400 whose page says the client certificate was missing or refused (nginx's): ``_Refused`` in those words."""
    if status == 400:
        page = reason.lower()
        for sign, words in CERTIFICATE_REFUSALS:
            if sign in page:
                raise _Refused(f"HTTP 400 on {what}: {words}")


class HttpRelay(Streams, LegacySse, Reach, ChannelRelay):
    """One remote server relayed onto one channel over HTTP. ``await run()`` once.

    ``transport``: ``auto`` (the default), ``streamable-http`` or ``sse`` (the older HTTP+SSE, ``http_sse``).
    ``token_command``: a shell command whose output is a bearer token, run at start and again on a 401, at most as
    often as ``remote_auth.TokenSource`` says (``token``: a program's own async callable instead, ``network.TokenProvider``);
    every request carries the current token, the DELETE too. ``network``: the proxy and TLS policy (``network.NetworkPolicy``;
    None: the environment's, as the CLI). ``verify``: an ``ssl.SSLContext`` for https (``remote_auth.tls_context``),
    or None for the system's CAs (and ``SSL_CERT_FILE``)."""

    _Refused = _Refused
    _why = staticmethod(_why)
    _refuse_certificate = staticmethod(_refuse_certificate)
    _origin_of = staticmethod(lambda url: _origin(url))

    def __init__(self, url: str, writer: ChannelWriter, options: RelayOptions = RelayOptions(),
                 headers: Sequence[tuple[str, str]] = (), *, transport: str = "auto", token_command: str | None = None,
                 verify: Any = None, token: TokenProvider | None = None, network: NetworkPolicy | None = None) -> None:
        super().__init__(writer, options)
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}")
        self.url: str = check_url(url)
        self.headers: list[tuple[str, str]] = list(headers)
        self.transport: str = transport
        self.tokens: TokenSource | None = (TokenSource(token_command) if token_command
                                           else TokenSource(provider=token) if token is not None else None)
        self.network: NetworkPolicy = network or NetworkPolicy()
        self.verify: Any = verify if verify is not None or not self.url.startswith("https:") else self.network.tls()
        self._client_options: dict[str, Any] = {"proxy": self.network.proxy_for}
        """What every ``http_client.HttpClient`` of the relay is made with (a test adds its scripted ``backend``)."""
        self.report.server = {"transport": "sse" if transport == "sse" else "streamable-http", "started": False}
        self._calls_as_json = 0
        self._settling = False
        self._legacy_sign: int | None = None  # the status that sent ``auto`` to the older transport
        self._origin = _origin(self.url)
        self._session_id: str | None = None
        self._statuses: collections.Counter[int] = collections.Counter()
        self._reconnects = 0
        self._unrecovered = 0
        self._replayed = 0
        self._unread_bodies = 0
        self._sessions = 0
        self._calls_lost = 0
        self._lost_at: float | None = None  # when the session was lost, while a new one is being made
        self._without_session = 0.0
        self._generation = 0  # one more with each session: a task of an older one stops
        self._restarting = False
        self._session_made = 0.0  # when the current session's initialize was answered
        self._quick_losses = 0
        self._awaiting_ready = True  # until initialize is answered (again, after a loss)
        self._gave_session_id = False  # a session id came with some initialize answer (its value is never kept here)
        self._posts_failed = 0
        self._silences = 0
        self._get_stream = "not opened"
        self._ended_by: str | None = None
        self._error: str | None = None
        self._client: Any = None
        self._http: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._posts = asyncio.Semaphore(MAX_POSTS)
        self._waiting_posts = 0
        self._seen_ids = RecentIds()
        self._parsers: list[EventParser] = []

    async def run(self) -> RelayReport:
        """Relay until shut down, or the server ends the session or goes away: the report."""
        http = self._http = load_client()
        loop = asyncio.get_running_loop()
        pump = asyncio.create_task(self._pump())
        watch = self._watch_channel()
        timer = loop.call_later(self.options.duration, self.shutdown, "duration") if self.options.duration else None
        headers = [("Accept-Encoding", ACCEPT_ENCODING), *self.headers]
        self.report.server["proxy"] = self.network.proxy_for(self.url) is not None
        try:
            async with http.HttpClient(headers=headers, verify=self.verify, connect_timeout=CONNECT_TIMEOUT,
                                       write_timeout=CONNECT_TIMEOUT, max_connections=MAX_POSTS + 8,
                                       **self._client_options) as client:
                self._client = client
                start = self.session.start()
                self._spawn(self._sse_session(start) if self.transport == "sse" else self._begin(start))
                self._arm_expiry()
                await self._stop.wait()
                await self._end_session()
        finally:
            for handle in (timer, self._expiry):
                if handle is not None:
                    handle.cancel()
            await self._cancel_tasks()
        self._count_parsers()
        self.session.end_of_output()
        try:
            await self._close_channel(pump)
        finally:
            if watch is not None and not watch.done():
                watch.cancel()
        if self._lost_at is not None:
            self._without_session += time.monotonic() - self._lost_at
        server = self.report.server
        if self.tokens is not None:
            server["token_command_runs"] = self.tokens.runs
        server.update({
            "session_id": self._gave_session_id,
            "calls_as_json": self._calls_as_json,
            "statuses": {str(code): count for code, count in sorted(self._statuses.items())},
            "get_stream": self._get_stream, "sessions": self._sessions,
            "without_session_s": round(self._without_session, 3), "calls_lost": self._calls_lost,
            "reconnects": self._reconnects, "unrecovered": self._unrecovered, "replayed": self._replayed,
            "posts_failed": self._posts_failed, "stream_silences": self._silences,
            "bodies_unread": self._unread_bodies,
            "ended_by": self._ended_by or "closed", "shutdown": self._reason, "exit_status": None, "signal": None})
        if self._error is not None:
            server["error"] = self._error
        self.session.finish_report()
        return self.report

    def shutdown(self, reason: str = "requested") -> None:
        """As the base's; but ``until-answered`` with the server's own stream open first reads what is still
        on its way there (sent before the last answer, on another connection), until it is quiet."""
        if reason == "until-answered" and not self._stop.is_set() and self._get_stream == "open":
            if not self._settling:
                self._settling = True
                self._spawn(self._settle(reason))
            return
        super().shutdown(reason)

    async def _settle(self, reason: str) -> None:
        deadline = time.monotonic() + self.options.grace
        seen = -1
        while self.report.seen != seen and time.monotonic() < deadline and not self._stop.is_set():
            seen = self.report.seen
            await asyncio.sleep(SETTLE)
        if not self._stop.is_set():
            super().shutdown(reason)

    # --- tasks ----------------------------------------------------------------------------

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(self._guarded(coroutine))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, coroutine: Any) -> None:
        """A task's unforeseen failure ends the relay with its report, never a stray traceback."""
        try:
            await coroutine
        except asyncio.CancelledError:
            raise
        except _Refused as refused:
            self._fail(str(refused), "unreachable" if self.session.phase is not Phase.READY else "refused")
        except Exception as error:  # noqa: BLE001 - a bug or the unforeseen: reported by its type alone
            if self._http is not None and isinstance(error, self._http.HttpError):
                self._fail(_why(error), "connection lost")
            else:
                self._fail(f"internal: {type(error).__name__}", "failed")

    def _fail(self, error: str, why: str) -> None:
        if self._error is None:
            self._error = error
            if not self._stop.is_set():
                log.info("the relay gives up: %s (%s)", error, why)
        self._end(why)

    def _end(self, why: str) -> None:
        if self._ended_by is None:
            self._ended_by = why
        self.shutdown(why)

    async def _cancel_tasks(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await _first(asyncio.gather(*tasks, return_exceptions=True), asyncio.sleep(self.options.grace))

    # --- requests -------------------------------------------------------------------------

    def _request_headers(self, accept: str = ACCEPT) -> dict[str, str]:
        headers = {"Accept": accept}
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        version = self.report.protocol_version
        if version is not None and self.session.phase is Phase.READY:
            headers["MCP-Protocol-Version"] = version
        return headers

    @contextlib.asynccontextmanager
    async def _open(self, method: str, what: str, headers: dict[str, str], content: bytes | None = None, *,
                    url: str | None = None, retry_safe: bool = False) -> AsyncIterator[Any]:
        """One request's response (to ``url``, by default the server's), redirects followed within the origin
        (307/308 keep the method, body and headers); a redirect elsewhere, or one that changes the method, is
        refused (``_Refused``). A redirect answering a POST moves the server's URL for later requests; one
        answering the GET stream moves that GET alone. With a token source, a 401 makes it fetch a new token
        once and try again. ``retry_safe``: the client may send it again on a fresh connection when a reused one
        failed before any byte of the answer (GET, DELETE, a POSTed answer or notification). Each exchange is
        a DEBUG line: method, path, status, time."""
        moves_url, url = url is None, url or self.url
        retried = False
        for _ in range(MAX_REDIRECTS + 2):
            if self.tokens is not None:
                if self.tokens.header is None:  # the first request: run --token-command
                    await self._token(0)
                sent_version = self.tokens.version
                headers = {**headers, "Authorization": self.tokens.header or ""}
            async with self._exchange(method, url, headers, content, retry_safe) as response:
                self._statuses[response.status_code] += 1
                if (response.status_code == 401 and self.tokens is not None and not retried  # expired: a new one, once
                        and self.tokens.may_refresh(sent_version)):
                    retried = True
                    await self._read_reason(response, count=False)
                    await self._token(sent_version)
                    continue
                if response.status_code not in REDIRECTS:
                    self._answered_auth(response.status_code, what, sent_version if self.tokens is not None else 0)
                    yield response
                    return
                target = urljoin(url, response.headers.get("location", ""))
                if response.status_code not in (307, 308):
                    raise _Refused(f"HTTP {response.status_code} on {what}: a redirect that changes the request")
                if _origin(target) != self._origin:
                    raise _Refused(f"HTTP {response.status_code} on {what}: redirect to another origin")
                url = target
                if moves_url and method == "POST":
                    self.url = target
        raise _Refused(f"HTTP 3xx on {what}: more than {MAX_REDIRECTS} redirects")

    @contextlib.asynccontextmanager
    async def _exchange(self, method: str, url: str, headers: dict[str, str], content: bytes | None,
                        retry_safe: bool) -> AsyncIterator[Any]:
        """One request and its response, said at DEBUG (never a header value, a body or a query); any answer
        but a gateway's 502-504 (or 429 with ``Retry-After``) says the server is reached."""
        started = time.monotonic()
        try:
            async with self._client.stream(method, url, headers=headers, content=content, retry_safe=retry_safe) as response:
                status = int(response.status_code)
                log.debug("%s %s: HTTP %d (%.0f ms)", method, path_of(url), status, (time.monotonic() - started) * 1000)
                if not unreachable_status(status, response.headers):
                    self._answered_status(status)
                yield response
        except self._http.HttpError as error:
            log.debug("%s %s: %s (%.0f ms)", method, path_of(url), _why(error), (time.monotonic() - started) * 1000)
            raise

    async def _token(self, seen_version: int) -> None:
        """A token from ``--token-command`` (a new one unless another request got one since ``seen_version``)."""
        assert self.tokens is not None
        try:
            await self.tokens.refresh(seen_version)
        except CredentialError as error:
            raise _Refused(str(error)) from None

    _refusal_said: int | None = None  # the token version the last refusal was logged for

    @property
    def _token_sent(self) -> bool:
        return self.tokens is not None or any(name.lower() == "authorization" for name, _ in self.headers)

    def _answered_auth(self, status: int, what: str, sent_version: int) -> None:
        """A request answered for good (after a new token, where one could be had). 401 or 403: counted ``refused``
        in the report (its call fails, never answered), and said once for each token; else the token served."""
        if status not in (401, 403):
            if self.tokens is not None:
                self.tokens.accepted(sent_version)
            return
        server = self.report.server
        server["refused"] = server.get("refused", 0) + 1
        version = self.tokens.version if self.tokens is not None else 0
        if self._refusal_said != version:
            self._refusal_said = version
            words = describe_challenge(status, None, None, token_sent=self._token_sent)[0]
            _auth_log.info("HTTP %d on %s: %s", status, what, words)

    async def _refused_status(self, response: Any, status: int, what: str) -> None:
        """Raise the refusal of a request answered ``status``, in words: for 401/403 what authorization the
        server asks for (its ``WWW-Authenticate`` and, where it publishes one, its RFC 9728 metadata)."""
        if status not in (401, 403):
            raise _Refused(f"HTTP {status} on {what}")
        challenge = response.headers.get("www-authenticate")
        metadata = await self._resource_metadata(parse_challenge(challenge)[1].get("resource_metadata") if challenge else None)
        words, found = describe_challenge(status, challenge, metadata, token_sent=self._token_sent, url=self.url)
        self.report.server["authorization"] = found
        raise _Refused(f"HTTP {status} on {what}: {words}")

    async def _resource_metadata(self, url: object) -> dict[str, Any] | None:
        """The protected resource's metadata (RFC 9728), fetched with no header of the relay's (another origin
        may serve it); None where there is none or it cannot be read within bounds."""
        if not isinstance(url, str) or len(url) > METADATA_URL_CHARS or urlsplit(url).scheme not in ("http", "https"):
            return None
        try:
            body = await asyncio.wait_for(self._metadata_body(url), METADATA_TIMEOUT)
            parsed = loads(body) if body is not None else None
        except (self._http.HttpError, ValueError, _Refused, asyncio.TimeoutError):
            return None
        return parsed if isinstance(parsed, dict) else None

    async def _metadata_body(self, url: str) -> bytes | None:
        verify = self._client.verify if self._client is not None else self.verify  # the CAs loaded already, if any
        async with self._http.HttpClient(verify=verify, connect_timeout=METADATA_TIMEOUT,
                                         write_timeout=METADATA_TIMEOUT, **self._client_options) as bare:
            async with bare.stream("GET", url, {"Accept": "application/json"}) as response:
                if response.status_code != 200:
                    return None
                body = b""
                async for piece in self._pieces(response):
                    body += piece
                    if len(body) > METADATA_BYTES:
                        return None
                return body

    def _send(self, data: bytes) -> None:
        messages = data.splitlines()
        if messages:
            self._spawn(self._post_in_order(messages, self._generation))

    async def _post_in_order(self, messages: list[bytes], generation: int) -> None:
        """A notification (``initialized``) is delivered before what follows it; requests run side by side."""
        for message in messages:
            if generation != self._generation:
                return
            if b'"id"' in message:
                self._spawn(self._post(message, generation))
            else:
                await self._post(message, generation)

    async def _post(self, message: bytes, generation: int) -> None:
        """POST one message. The relay's requests (``request_id``) await their answers; an answer to the server's
        own request (``ping``) or a notification awaits nothing, so its 202 touches none of the relay's pending
        requests (the two sides' ids are two spaces, both counting from 0 or 1), and it may be sent again."""
        request_id, what = _id_and_method(message)
        self._waiting_posts += 1
        self.session.server_reading = self._waiting_posts <= MAX_POSTS
        try:
            async with self._posts:
                if generation != self._generation:
                    return
                headers = {**self._request_headers(), "Content-Type": "application/json"}
                legacy = self.report.server["transport"] == "sse"
                try:
                    async with self._open("POST", what, headers, message, url=self._endpoint if legacy else None,
                                          retry_safe=request_id is None) as response:
                        status = response.status_code
                        if unreachable_status(status, response.headers):
                            await self._read_reason(response, count=False)
                            self._request_failed(request_id, what, f"HTTP {status} on {what}", generation,
                                                 unreachable=True, wait=retry_after(response.headers))
                            return
                        if status >= 400:
                            if await self._session_forgotten(response):
                                self._session_lost(generation)
                            else:
                                self._give_up(request_id, f"HTTP {status} on {what}")
                            return
                        if legacy:
                            await self._sse_answered(response, request_id)
                        else:
                            await self._read_answer(response, request_id, generation, what)
                except self._http.HttpError as error:
                    self._request_failed(request_id, what, _why(error), generation,
                                         unreachable=isinstance(error, self._http.ConnectError))
        finally:
            self._waiting_posts -= 1
            self.session.server_reading = self._waiting_posts <= MAX_POSTS

    def _request_failed(self, request_id: object, what: str, why: str, generation: int, *, unreachable: bool,
                        wait: float | None = None) -> None:
        """One POST failed: that request alone (counted, said), never the session. Where the server could not be
        reached, its outage begins, unless its stream is open and flowing (that says it is there): the GET stream
        (opened again if it was not) watches for the outage's end."""
        if self._stop.is_set():  # the relay is ending: nothing to say or to watch
            return
        self._posts_failed += 1
        log.info("%s failed (%s): that one alone; the session goes on", what, why)
        self._give_up(request_id, f"{what} failed: {why}")
        if unreachable and self._get_stream == "open":
            return
        if unreachable and generation == self._generation and self._unreachable_now(why, wait):
            if self.report.server["transport"] != "sse" and self.session.phase is Phase.READY:
                self._spawn(self._listen(generation))  # a no-op where the stream is already read
    async def _begin(self, message: bytes) -> None:
        """The first session: Streamable HTTP, or (``auto``) the older HTTP+SSE where the POST says so."""
        await self._initialize(message)

    async def _initialize(self, message: bytes) -> None:
        """POST ``initialize``; on a new session after a loss, again with backoff until ``reconnect_window``."""
        first = self._sessions == 0 and not self._restarting
        delay = RETRY_FLOOR * 5
        generation = self._generation
        while not self._stop.is_set() and generation == self._generation:
            try:
                async with self._open("POST", "initialize", {"Accept": ACCEPT, "Content-Type": "application/json"},
                                      message) as response:
                    status = response.status_code
                    if status >= 400:
                        reason = await self._read_reason(response)
                        _refuse_certificate(status, reason, "initialize")
                        if first and self.transport == "auto" and status in LEGACY_SIGNS:
                            self._legacy_sign = status
                            break
                        if first or not (status >= 500 or unreachable_status(status, response.headers)):
                            await self._refused_status(response, status, "initialize")
                        self._error_seen = f"HTTP {status} on initialize"
                        self._wait_at_least = retry_after(response.headers) or 0.0
                        if not await self._backoff(delay):
                            return
                        delay = min(delay * 2, BACKOFF_CAP)
                        continue
                    session_id = response.headers.get("mcp-session-id")
                    if session_id is not None and not _is_session_id(session_id):
                        raise _Refused("the server's Mcp-Session-Id is not visible ASCII: unusable")
                    self.report.server["started"] = True
                    self._session_id = session_id
                    self._gave_session_id |= session_id is not None
                    await self._read_answer(response, self.session.initialize_id, generation, "initialize")
            except self._http.HttpError as error:
                if first:
                    self._fail(_why(error), "unreachable")
                    return
                self._error_seen = _why(error)
                if not await self._backoff(delay):
                    return
                delay = min(delay * 2, BACKOFF_CAP)
                continue
            break
        if self._legacy_sign is not None:
            await self._sse_session(message)

    def _received(self, reply: bytes) -> None:
        if self._awaiting_ready and self.session.phase is Phase.READY:
            self._session_ready()
        super()._received(reply)

    def _session_ready(self) -> None:
        """``initialize`` answered: the session is made; its stream of the server's own messages is opened."""
        self._awaiting_ready = False
        self._down_since = None
        self._sessions += 1
        self._session_made = time.monotonic()
        self._restarting = False
        if self._lost_at is not None:
            without = self._session_made - self._lost_at
            self._without_session += without
            self._lost_at = None
            forgotten = self.session.not_repeated
            log.info("a new session (the server lost the old one), %.1f s after the loss; %s", without,
                     f"not made again, so the server may have forgotten them: {', '.join(forgotten)}"
                     if forgotten else "its setup requests are sent again")
        if self.report.server["transport"] != "sse":  # there the one stream is the session's already
            self._spawn(self._listen(self._generation))

    async def _backoff(self, delay: float) -> bool:
        """Wait ``delay`` before trying the server again (the last try at the window's end), unless the window since
        the loss is spent: then end."""
        lost_at = self._lost_at if self._lost_at is not None else time.monotonic()
        left = lost_at + self.options.reconnect_window - time.monotonic()
        if left <= 0:
            self._fail(self._error_seen or "the server cannot be reached", "connection lost")
            return False
        await _first(asyncio.sleep(min(self._backoff_delay(delay), left)), self._stop.wait())
        return not self._stop.is_set()

    def _session_lost(self, generation: int, why: str | None = None) -> None:
        """The session is gone (forgotten, or the server unreachable mid-session): begin a new one. A request of
        an older session saying so again is too late: that one was made again already."""
        if self._stop.is_set() or self._restarting or generation != self._generation:
            return
        if self.session.phase is not Phase.READY:  # the handshake itself failed
            self._fail(why or "session gone", "unreachable")
            return
        now = time.monotonic()
        self._quick_losses = self._quick_losses + 1 if now - self._session_made < QUICK_END else 0
        if self._quick_losses >= QUICK_LOSSES:
            self._fail("the server forgot each new session at once", "session gone")
            return
        self._restarting = self._awaiting_ready = True
        self._lost_at = self._down_since or self._outage_began or now
        log.info("the server lost the session (%s): making a new one", why or "it says it does not know it")
        self._generation += 1
        self._session_id = None
        self._seen_ids.clear()
        failed_before = self.report.calls_failed
        restart = self.session.restart()
        self._calls_lost += self.report.calls_failed - failed_before
        legacy = self.report.server["transport"] == "sse"
        self._spawn(self._sse_again(restart) if legacy else self._initialize(restart))

    async def _sse_again(self, initialize: bytes) -> None:
        """A new HTTP+SSE session, with the same backoff and window as a Streamable HTTP one."""
        delay = RETRY_FLOOR * 5
        generation = self._generation
        while not self._stop.is_set() and generation == self._generation and self._awaiting_ready:
            if not await self._backoff(delay):
                return
            await self._sse_session(initialize)
            delay = min(delay * 2, BACKOFF_CAP)

    def _give_up(self, request_id: object, reason: str) -> None:
        if isinstance(request_id, int) and request_id in self.session.pending:
            self.session.fail(request_id, reason)
            self._received(b"")

    async def _session_forgotten(self, response: Any) -> bool:
        """A 404 for the session, or a 400 whose body says the session is unknown (server-everything's)."""
        reason = await self._read_reason(response)
        if self.report.server["transport"] == "sse":  # the session is in the endpoint's URL
            return response.status_code == 404 and self._endpoint is not None
        if self._session_id is None:
            return False
        return response.status_code == 404 or (response.status_code == 400 and b"session" in reason.lower())

    # --- the end --------------------------------------------------------------------------

    async def _end_session(self) -> None:
        """DELETE the session (a 405 says the server does not allow it: fine); not where the server is gone."""
        if self._session_id is None or self._ended_by in ("session gone", "connection lost") or \
                self.report.server["transport"] == "sse":
            return
        try:
            status = await asyncio.wait_for(self._delete(), DELETE_TIMEOUT)
            self._statuses[status] += 1
            if self._ended_by is None and status < 300:
                self._ended_by = "session deleted"
        except (self._http.HttpError, asyncio.TimeoutError):
            pass

    async def _delete(self) -> int:
        headers = self._request_headers()
        if self.tokens is not None and self.tokens.header is not None:  # the current token, never a new run at the end
            headers["Authorization"] = self.tokens.header
        async with self._exchange("DELETE", self.url, headers, None, True) as response:
            return int(response.status_code)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    try:
        port = parts.port or default
    except ValueError:
        port = -1
    return parts.scheme, (parts.hostname or "").lower(), port


def _id_and_method(message: bytes) -> tuple[object, str]:
    """The id of one of the session's own requests (None for a notification or an answer to the server: those
    await nothing) and its method, for an error's words ("a response" for an answer), from one parse."""
    try:
        parsed = loads(message)
    except ValueError:
        return None, "a message"
    if not isinstance(parsed, dict):
        return None, "a message"
    method = parsed.get("method")
    if not isinstance(method, str):  # an answer to the server's request: its id is the server's, not ours
        return None, "a response"
    return parsed.get("id"), method if method.isascii() and len(method) < 64 else "a request"
