"""The machinery every HTTP driver of the relay shares, over one sans-IO ``RelaySession``.

``HttpDriver`` holds the client (``http_client``, h11 on asyncio's streams), the requests (redirects within the
origin, tokens: ``http_requests``), the POSTs (at most ``MAX_POSTS`` in flight, one that fails failing alone), the
outage (``http_reach``), a lost session made again, the bodies and streams read (``http_streams``) and the report.
The drivers say what they speak by a few hooks: ``streamable_http`` (the 2025 era's Streamable HTTP),
``http_sse`` (the older HTTP+SSE), ``http_stateless`` (the 2026-07-28 binding); ``streamable_http.HttpRelay`` is the
entry that finds which one a server speaks.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .channel import ChannelRelay, ChannelWriter, RelayOptions, _first
from .eventstream import EventParser, RecentIds
from .http_common import (ACCEPT, ACCEPT_ENCODING, CONNECT_TIMEOUT, MAX_POSTS, QUICK_LOSSES, SETTLE, TRANSPORTS, Refused,
                          check_url, load_client, message_head, origin, refuse_certificate, why)
from .http_reach import Reach, log, retry_after, unreachable_status
from .http_requests import Requests
from .http_streams import QUICK_END, Streams
from .network import NetworkPolicy, TokenProvider
from .remote_auth import TokenSource
from .session import Phase, RelayReport

__all__ = ["HttpDriver"]


class HttpDriver(Streams, Requests, Reach, ChannelRelay):
    """One remote server relayed onto one channel over HTTP, the machinery every HTTP driver shares: the client,
    the requests (redirects, tokens), the POSTs and their failures, a session made again, the report.
    A driver says what it speaks by a few hooks (``_begin``, ``_new_session``, ``_post_target``, ``_read_posted``,
    ``_post_headers``, ``_own_stream``, ``_session_forgotten``, ``_end_session``).

    ``transport``: ``auto``, ``streamable-http`` or ``sse``. ``token_command`` or ``token``: the bearer token's
    source (``remote_auth.TokenSource``), asked at start and on a 401. ``verify``: an ``ssl.SSLContext``, or None
    for the policy's. ``clock``, ``sleep``: what every timing rule reads and waits with (a test's fake ones)."""

    _Refused = Refused
    _why = staticmethod(why)
    _refuse_certificate = staticmethod(refuse_certificate)
    _origin_of = staticmethod(origin)
    TRANSPORT = "streamable-http"
    """What the report's ``server.transport`` says while this driver speaks."""

    def __init__(self, url: str, writer: ChannelWriter, options: RelayOptions = RelayOptions(),
                 headers: Sequence[tuple[str, str]] = (), *, transport: str = "auto", token_command: str | None = None,
                 verify: Any = None, token: TokenProvider | None = None, network: NetworkPolicy | None = None,
                 clock: Callable[[], float] | None = None, sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        super().__init__(writer, options)
        self._clock = clock or self._clock  # a test's fake clock and sleep: every timing rule on them (http_reach.Reach)
        self._sleep = sleep or self._sleep
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}")
        self.url: str = check_url(url)
        self.headers: list[tuple[str, str]] = list(headers)
        self.transport: str = transport
        self.tokens: TokenSource | None = (TokenSource(token_command, clock=self._clock) if token_command
                                           else TokenSource(provider=token, clock=self._clock) if token is not None
                                           else None)
        self.network: NetworkPolicy = network or NetworkPolicy()
        self.verify: Any = verify if verify is not None or not self.url.startswith("https:") else self.network.tls()
        self.report.server = {"transport": "sse" if transport == "sse" else "streamable-http", "started": False}
        self._calls_as_json = 0
        self._settling = False
        self._legacy_sign: int | None = None  # the status that sent ``auto`` to the older transport
        self._origin = origin(self.url)
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
                                       proxy=self.network.proxy_for) as client:
                self._client = client
                start = self.session.start()
                self._spawn(self._begin(start))
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
            self._without_session += self._clock() - self._lost_at
        server = self.report.server
        if self.tokens is not None:
            server["token_command_runs"] = self.tokens.runs
        server.update({
            "session_id": self._gave_session_id, "calls_as_json": self._calls_as_json,
            "statuses": {str(code): count for code, count in sorted(self._statuses.items())},
            "get_stream": self._get_stream, "sessions": self._sessions,
            "without_session_s": round(self._without_session, 3), "calls_lost": self._calls_lost,
            "reconnects": self._reconnects, "unrecovered": self._unrecovered, "replayed": self._replayed,
            "posts_failed": self._posts_failed, "stream_silences": self._silences, "bodies_unread": self._unread_bodies,
            "ended_by": self._ended_by or "closed", "shutdown": self._reason, "exit_status": None, "signal": None})
        if self._error is not None:
            server["error"] = self._error
        self.session.finish_report()
        return self.report

    def shutdown(self, reason: str = "requested") -> None:
        """As the base's; but ``until-answered`` with the server's own stream open first reads what is still
        on its way there (sent before the last answer, on another connection), until it is quiet."""
        if reason == "until-answered" and not self._stop.is_set() and self._own_stream_open():
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
        except Refused as refused:
            self._fail(str(refused), "unreachable" if self.session.phase is not Phase.READY else "refused")
        except Exception as error:  # noqa: BLE001 - a bug or the unforeseen: reported by its type alone
            if self._http is not None and isinstance(error, self._http.HttpError):
                self._fail(why(error), "connection lost")
            else:
                self._fail(f"internal: {type(error).__name__}", "failed")

    def _fail(self, error: str, why: str) -> None:
        if self._error is None:
            self._error = error
            if not self._stop.is_set() and self._sessions:  # never reached: the report's error is the one line
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
        request_id, what, parsed = message_head(message)
        self._waiting_posts += 1
        self.session.server_reading = self._waiting_posts <= MAX_POSTS
        try:
            async with self._posts:
                if generation != self._generation:
                    return
                headers = {**self._request_headers(), **self._post_headers(parsed), "Content-Type": "application/json"}
                try:
                    async with self._open("POST", what, headers, message, url=self._post_target(),
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
                        await self._read_posted(response, request_id, generation, what)
                except self._http.HttpError as error:
                    self._request_failed(request_id, what, why(error), generation,
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
        if unreachable and self._own_stream_open():
            return
        if unreachable and generation == self._generation and self._unreachable_now(why, wait):
            self._own_stream(generation)  # a no-op where the stream is already read

    def _received(self, reply: bytes) -> None:
        if self._awaiting_ready and self.session.phase is Phase.READY:
            self._session_ready()
        super()._received(reply)

    def _session_ready(self) -> None:
        """``initialize`` answered: the session is made; its stream of the server's own messages is opened."""
        self._awaiting_ready = False
        self._down_since = None
        self._sessions += 1
        self._session_made = self._clock()
        self._restarting = False
        if self._lost_at is not None:
            without = self._session_made - self._lost_at
            self._without_session += without
            self._lost_at = None
            forgotten = self.session.not_repeated
            log.info("a new session (the server lost the old one), %.1f s after the loss; %s", without,
                     f"not made again, so the server may have forgotten them: {', '.join(forgotten)}"
                     if forgotten else "its setup requests are sent again")
        self._own_stream(self._generation)

    async def _backoff(self, delay: float) -> bool:
        """Wait ``delay`` before trying the server again (the last try at the window's end), unless the window since
        the loss is spent: then end."""
        lost_at = self._lost_at if self._lost_at is not None else self._clock()
        left = lost_at + self.options.reconnect_window - self._clock()
        if left <= 0:
            self._fail(self._error_seen or "the server cannot be reached", "connection lost")
            return False
        await _first(self._sleep(min(self._backoff_delay(delay), left)), self._stop.wait())
        return not self._stop.is_set()

    def _session_lost(self, generation: int, why: str | None = None) -> None:
        """The session is gone (forgotten, or the server unreachable mid-session): begin a new one. A request of
        an older session saying so again is too late: that one was made again already."""
        if self._stop.is_set() or self._restarting or generation != self._generation:
            return
        if self.session.phase is not Phase.READY:  # the handshake itself failed
            self._fail(why or "session gone", "unreachable")
            return
        now = self._clock()
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
        self._spawn(self._new_session(restart))

    def _give_up(self, request_id: object, reason: str) -> None:
        if isinstance(request_id, int) and request_id in self.session.pending:
            self.session.fail(request_id, reason)
            self._received(b"")

    # --- what a driver says ---------------------------------------------------------------

    async def _begin(self, message: bytes) -> None:
        """Send the session's first message (``server/discover`` or ``initialize``) and see it answered."""
        raise NotImplementedError

    async def _new_session(self, initialize: bytes) -> None:
        """A new session after the server lost the old one: ``initialize`` again, with backoff."""
        raise NotImplementedError

    def _post_target(self) -> str | None:
        """Where a message is POSTed: None for the server's URL."""
        return None

    def _post_headers(self, message: dict[str, Any]) -> dict[str, str]:
        """The headers a POST of ``message`` carries beyond the relay's own."""
        return {}

    async def _read_posted(self, response: Any, request_id: object, generation: int, what: str) -> None:
        """A POST's 2xx answer read: its body or event stream relayed."""
        await self._read_answer(response, request_id, generation, what)

    def _own_stream(self, generation: int) -> None:
        """The session is made (or the server's outage began): open the stream of what it sends on its own, if any."""

    def _own_stream_open(self) -> bool:
        """Whether the stream of what the server sends on its own is open (and so the server there)."""
        return self._get_stream == "open"

    async def _session_forgotten(self, response: Any) -> bool:
        """An error status that says the server forgot the session (its body read ``REASON_BYTES`` at most)."""
        await self._read_reason(response)
        return False

    async def _end_session(self) -> None:
        """At the end: close the session where the transport has one to close."""

    _then: list[type[HttpDriver]] = []
    """The drivers still to try, in order, while the server has not said what it speaks."""

    async def _next_driver(self, message: bytes) -> None:
        """The driver so far is not what the server speaks: go on as the next one, beginning with ``message``."""
        if not self._then:
            self._fail("the server speaks none of the transports tried", "unreachable")
            return
        self._become(self._then.pop(0))
        await self._begin(message)

    def _become(self, driver: type[HttpDriver]) -> None:
        """The server said what it speaks: this relay goes on as ``driver`` (every driver is an ``HttpDriver``
        whose own state is class attributes, so the client, the session, the report and the counts go on)."""
        self.__class__ = driver
        self.report.server["transport"] = driver.TRANSPORT
