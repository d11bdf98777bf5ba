"""The relay over MCP's Streamable HTTP transport: a remote server's notifications onto a channel.

::

    report = await HttpRelay("https://example.com/mcp", writer, RelayOptions(calls=[("echo", {})])).run()

The client side of the transport as MCP (2025-03-26 to 2025-11-25) describes it, beside the
stdio driver over the same sans-IO ``RelaySession``:

- each message the session sends is POSTed with ``Accept: application/json,
  text/event-stream``; the answer is one JSON body or an event stream, on which the
  notifications about the request (its progress) come before its answer;
- the ``Mcp-Session-Id`` the ``initialize`` answer gives goes on every later request, with
  ``MCP-Protocol-Version``; a 404 then means the server forgot the session: the relay ends;
- after the handshake a GET opens the stream for what the server sends on its own
  (logging, list_changed, resources/updated); a 405 means it offers none;
- a stream that drops is resumed with ``Last-Event-ID`` where the server gave event ids
  (``reconnects``); one that cannot be is counted (``unrecovered``);
- at the end the session is DELETEd.

Every event's data and every JSON body is read by the session as a stdio line is (the
server's bytes, ``jsonrpc`` removed, validated; refusals counted). The report's
``server`` says ``transport: "http"``, whether a session id was given (never its value),
the HTTP statuses met, reconnects and what ended it. Neither the URL nor a header's value
appears in the report or an error: either may hold a credential.

HTTP is httpx2 (the ``[http]`` extra): the client the MCP Python SDK 2.x uses, so one HTTP
stack serves both in one process; it streams bodies as bytes (the events are parsed here,
as bytes, by ``eventstream``) and runs on asyncio.
"""

from __future__ import annotations

import asyncio
import collections
import os
import socket
import ssl
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from .._json import loads
from .channel import ChannelRelay, ChannelWriter, RelayOptions, _first
from .eventstream import EventParser
from .session import RelayReport

__all__ = ["HttpRelay", "check_url", "load_httpx", "parse_header"]

ACCEPT = "application/json, text/event-stream"
MAX_IN_FLIGHT = 64
"""POSTs in flight past which answers to the server's own requests are dropped and counted
(``requests_unanswered``), as for a stdio server that does not read: memory stays bounded."""
RECONNECT_ATTEMPTS = 3
"""Attempts to resume a dropped stream before it is counted unrecovered (the SDK's are 2)."""
RECONNECT_DELAY = 1.0
"""Seconds before a resumption when the server gave no ``retry`` (the SDK's default too)."""
CONNECT_TIMEOUT = 10.0
DELETE_TIMEOUT = 2.0


def load_httpx() -> Any:
    """The httpx2 module, or an ImportError that says how to install it."""
    try:
        import httpx2
    except ImportError:
        raise ImportError("the relay's HTTP transport needs httpx2, which is not installed: "
                          "pip install 'diverge-codec[http]'") from None
    return httpx2


def check_url(url: str) -> str:
    """``url`` if it is an http(s) URL with a host; ValueError (never quoting it) if not."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("--url must be an http:// or https:// URL with a host")
    return url


def parse_header(text: str) -> tuple[str, str]:
    """``Name: value`` as (name, value); ValueError (naming no value) for anything else."""
    name, colon, value = text.partition(":")
    name = name.strip()
    if not colon or not name or any(char.isspace() for char in name):
        raise ValueError("--header must be 'Name: value'")
    return name, value.strip()


def _why(error: BaseException) -> str:
    """A one-line reason for a failed request that quotes neither the URL nor a header."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLError):
            return f"TLS: {cause.reason or type(cause).__name__}"
        if isinstance(cause, socket.gaierror):
            return f"name resolution: {cause.strerror or 'failed'}"
        if isinstance(cause, OSError) and cause.errno:  # the errno's words: asyncio's own text names the address
            return os.strerror(cause.errno).lower()
        cause = cause.__cause__ or cause.__context__
    return type(error).__name__


class HttpRelay(ChannelRelay):
    """One remote server relayed onto one channel over Streamable HTTP. ``await run()`` once."""

    def __init__(self, url: str, writer: ChannelWriter, options: RelayOptions = RelayOptions(),
                 headers: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(writer, options)
        self.url: str = check_url(url)
        self.headers: list[tuple[str, str]] = list(headers)
        self.report.server = {"transport": "http", "started": False}
        self._session_id: str | None = None
        self._statuses: collections.Counter[int] = collections.Counter()
        self._reconnects = 0
        self._unrecovered = 0
        self._get_stream = "not opened"
        self._ended_by: str | None = None
        self._error: str | None = None
        self._get_error: str | None = None
        self._client: Any = None
        self._httpx: Any = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_flight = 0
        self._parsers: set[EventParser] = set()

    async def run(self) -> RelayReport:
        """Relay until shut down, or the server ends the session or goes away: the report."""
        httpx = self._httpx = load_httpx()
        loop = asyncio.get_running_loop()
        pump = asyncio.create_task(self._pump())
        watch = self._watch_channel()
        timer = loop.call_later(self.options.duration, self.shutdown, "duration") if self.options.duration else None
        timeout = httpx.Timeout(CONNECT_TIMEOUT, read=None)
        try:
            async with httpx.AsyncClient(timeout=timeout, headers=self.headers) as client:
                self._client = client
                self._spawn(self._post(self.session.start(), initialize=True))
                self._arm_expiry()
                await self._stop.wait()
                await self._end_session()
        finally:
            for handle in (timer, self._expiry):
                if handle is not None:
                    handle.cancel()
            await self._cancel_tasks()
        self.session.end_of_output()
        try:
            await self._close_channel(pump)
        finally:
            if watch is not None and not watch.done():
                watch.cancel()
        server = self.report.server
        server.update({
            "session_id": self._session_id is not None, "statuses": {str(code): count for code, count in sorted(self._statuses.items())},
            "get_stream": self._get_stream, "reconnects": self._reconnects, "unrecovered": self._unrecovered,
            "ended_by": self._ended_by or "closed", "shutdown": self._reason, "exit_status": None, "signal": None})
        if self._error is not None:
            server["error"] = self._error
        self.session.finish_report()
        return self.report

    # --- sending ------------------------------------------------------------------------

    def _send(self, data: bytes) -> None:
        messages = data.splitlines()
        if messages:
            self._spawn(self._post_in_order(messages))

    async def _post_in_order(self, messages: list[bytes]) -> None:
        """A notification (``initialized``) is delivered before what follows it; requests run side by side."""
        for message in messages:
            if b'"id"' in message:
                self._spawn(self._post(message))
            else:
                await self._post(message)

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _request_headers(self, accept: str = ACCEPT) -> dict[str, str]:
        headers = {"Accept": accept}
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        version = self.report.protocol_version
        if version is not None:
            headers["MCP-Protocol-Version"] = version
        return headers

    async def _post(self, message: bytes, *, initialize: bool = False) -> None:
        httpx, client = self._httpx, self._client
        headers = {**self._request_headers(), "Content-Type": "application/json"}
        self._in_flight += 1
        self.session.server_reading = self._in_flight <= MAX_IN_FLIGHT
        try:
            async with client.stream("POST", self.url, content=message, headers=headers) as response:
                self._statuses[response.status_code] += 1
                if initialize:
                    if response.status_code >= 400:
                        self._error = f"HTTP {response.status_code} on initialize"
                        self._end("unreachable")
                        return
                    self.report.server["started"] = True
                    self._session_id = response.headers.get("mcp-session-id")
                elif response.status_code == 404 and self._session_id is not None:
                    self._end("session gone")
                    return
                await self._read_answer(response, _request_id(message))
            if initialize and self.session.phase.name == "READY":
                self._spawn(self._listen())
        except httpx.HTTPError as error:
            if initialize:
                self._error = _why(error)
                self._end("unreachable")
            elif not self._stop.is_set():
                self._error = _why(error)
                self._end("connection lost")
        finally:
            self._in_flight -= 1
            self.session.server_reading = self._in_flight <= MAX_IN_FLIGHT

    # --- reading ------------------------------------------------------------------------

    async def _read_answer(self, response: Any, request_id: object) -> None:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind == "text/event-stream":
            parser = EventParser(self.session.framer.max_line)
            await self._read_events(response, parser)
            if request_id is not None and request_id in self.session.pending and not self._stop.is_set():
                await self._resume(parser, request_id)
        elif kind == "application/json":
            body = await self._read_body(response)
            if body is not None:
                self._received(self.session.receive_messages([body]))
            else:
                self._received(self.session.receive_messages((), too_large=1))
        else:
            await response.aread()

    async def _read_body(self, response: Any) -> bytes | None:
        """The whole body, or None past ``max_line`` (not kept: memory stays bounded)."""
        limit, parts, size = self.session.framer.max_line, [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                return None
            parts.append(chunk)
        return b"".join(parts)

    async def _read_events(self, response: Any, parser: EventParser) -> bool:
        """Relay a stream's events until it ends: True if it ended cleanly, False if it broke off."""
        self._parsers.add(parser)
        try:
            async for chunk in response.aiter_bytes():
                self._events(parser, parser.feed(chunk))
            self._events(parser, parser.close())
            return True
        except self._httpx.HTTPError:
            return False
        finally:
            self._parsers.discard(parser)

    def _events(self, parser: EventParser, events: list[Any]) -> None:
        too_large, parser.too_large = parser.too_large, 0
        if events or too_large:
            self._received(self.session.receive_messages([event.data for event in events], too_large))

    async def _resume(self, parser: EventParser, request_id: object) -> None:
        """A request's stream ended (cleanly or not) before its answer: GET it again from the last event id, if any."""
        for _ in range(RECONNECT_ATTEMPTS):
            if parser.last_event_id is None:
                break
            await asyncio.sleep((parser.retry_ms / 1000) if parser.retry_ms is not None else RECONNECT_DELAY)
            if self._stop.is_set():
                return
            self._reconnects += 1
            status = await self._get_events(parser)
            if request_id not in self.session.pending or self._stop.is_set() or status == 404:
                return
        self._unrecovered += 1

    async def _listen(self) -> None:
        """The stream of what the server sends on its own, kept open (and resumed) until the end.

        A server that cannot be reached again after ``RECONNECT_ATTEMPTS`` tries is gone: the relay ends."""
        parser = EventParser(self.session.framer.max_line)
        failures = 0
        first = True
        while not self._stop.is_set():
            if not first:
                await asyncio.sleep((parser.retry_ms / 1000) if parser.retry_ms is not None else RECONNECT_DELAY)
                if self._stop.is_set():
                    return
                self._reconnects += 1
            status = await self._get_events(parser)
            if first:
                self._get_stream = ("none (405)" if status == 405 else "open" if status is not None and status < 300
                                    else f"refused (HTTP {status})" if status is not None else "failed")
            first = False
            if status is None:
                failures += 1
                if failures >= RECONNECT_ATTEMPTS:
                    self._unrecovered += 1
                    self._error = self._get_error
                    self._end("connection lost")
                    return
                continue
            if status >= 300:
                return
            failures = 0

    async def _get_events(self, parser: EventParser) -> int | None:
        """One GET of the event stream (from ``parser``'s last event id): its status, None if it failed."""
        headers = self._request_headers("text/event-stream")
        if parser.last_event_id is not None:
            headers["Last-Event-ID"] = parser.last_event_id.decode("utf-8", "replace")
        try:
            async with self._client.stream("GET", self.url, headers=headers) as response:
                self._statuses[response.status_code] += 1
                if response.status_code == 404 and self._session_id is not None:
                    self._end("session gone")
                    return 404
                if response.status_code >= 300:
                    await response.aread()
                    return int(response.status_code)
                await self._read_events(response, parser)
                return int(response.status_code)
        except self._httpx.HTTPError as error:
            self._get_error = _why(error)
            return None

    # --- the end ------------------------------------------------------------------------

    def _end(self, why: str) -> None:
        if self._ended_by is None:
            self._ended_by = why
        self.shutdown(why)

    async def _end_session(self) -> None:
        """DELETE the session (a 405 says the server does not allow it: fine)."""
        if self._session_id is None or self._ended_by == "session gone":
            return
        try:
            response = await asyncio.wait_for(
                self._client.delete(self.url, headers=self._request_headers()), DELETE_TIMEOUT)
            self._statuses[response.status_code] += 1
            if self._ended_by is None and response.status_code < 300:
                self._ended_by = "session deleted"
        except (self._httpx.HTTPError, asyncio.TimeoutError):
            pass

    async def _cancel_tasks(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await _first(asyncio.gather(*tasks, return_exceptions=True), asyncio.sleep(self.options.grace))


def _request_id(message: bytes) -> object:
    """The id of one of the session's own messages (None for a notification)."""
    if b'"id"' not in message:
        return None
    try:
        parsed = loads(message)
    except ValueError:
        return None
    return parsed.get("id") if isinstance(parsed, dict) else None

