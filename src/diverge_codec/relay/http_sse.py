"""The older HTTP+SSE transport (MCP 2024-11-05), for servers that speak only it: ``--transport sse``,
or found by ``auto`` as MCP's backwards-compatibility section says (an ``initialize`` POST answered
400, 404 or 405 means: GET the URL and expect an ``endpoint`` event).

One GET stream is the session: its first ``endpoint`` event names where to POST every message (same
origin only: another is refused and reported); every answer and notification arrives on that stream,
read by the same event parser and the same session as Streamable HTTP's; a POST is answered 202. The
stream's end is the session's: the relay makes a new one (a new GET, ``initialize`` again) with the
same backoff and window as a lost Streamable HTTP session; a gateway's 502-504 (or 429 with ``Retry-After``)
on that GET means the server cannot be reached yet: tried again within the window, then named.

A driver over ``http_driver.HttpDriver``, which holds the client, the bodies' bounds and the report.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin

from .http_driver import HttpDriver
from .http_reach import retry_after, unreachable_status
from .http_streams import BACKOFF_CAP, RETRY_FLOOR
from .session import Phase

ENDPOINT_BYTES = 2048
"""The longest ``endpoint`` event's data (a path and a session id)."""


class HttpSse(HttpDriver):
    """The HTTP+SSE transport: one GET stream a session, every message POSTed to the endpoint it names."""

    TRANSPORT = "sse"
    _endpoint: str | None = None

    async def _begin(self, message: bytes) -> None:
        await self._sse_session(message)

    async def _sse_session(self, initialize: bytes) -> None:
        """GET the stream; POST ``initialize`` to the endpoint it names; relay the stream until it ends."""
        self._endpoint = None
        generation = self._generation
        first = self._sessions == 0
        parser = self._parser()
        try:
            async with self._open("GET", "the SSE stream", {"Accept": "text/event-stream"}) as response:
                status = response.status_code
                if status >= 300:
                    reason = await self._read_reason(response)
                    self._refuse_certificate(status, reason, "the SSE stream")
                    if unreachable_status(status, response.headers) and not first:  # a gateway, its server away
                        self._error_seen = f"HTTP {status} on the SSE stream"
                        self._wait_at_least = retry_after(response.headers) or 0.0
                        return  # the new session's loop tries again, within the window
                    await self._refused_status(response, status, "the SSE stream")
                kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
                if kind != "text/event-stream":
                    await self._read_reason(response)
                    raise self._Refused(f"HTTP {status} on the SSE stream: not an event stream")
                self.report.server["started"] = True
                self._get_stream = "open"
                async for piece in self._pieces(response):
                    self._events(parser, parser.feed(piece))
                    if self._endpoint is None and parser.named:
                        self._find_endpoint(parser, initialize, generation)
                    if self._stop.is_set() or generation != self._generation:
                        return
                self._events(parser, parser.close())
        except self._http.HttpError as error:
            self._error_seen = self._why(error)
            if self.session.phase is not Phase.READY:
                if first:
                    self._fail(self._error_seen, "unreachable")
                return  # a new session's loop tries again
        finally:
            self._count_parser(parser)
        if not self._stop.is_set() and generation == self._generation:
            self._get_stream = "broken"
            if self.session.phase is Phase.READY:
                self._session_lost(generation, "the SSE stream ended")
            elif first:
                self._fail(self._error_seen or "the SSE stream ended before the handshake", "unreachable")

    def _find_endpoint(self, parser: Any, initialize: bytes, generation: int) -> None:
        for kind, data in parser.named:
            if kind != b"endpoint":
                continue
            text = data.strip()
            if len(text) > ENDPOINT_BYTES or not text.isascii() or not text.decode().isprintable():
                raise self._Refused("the SSE stream's endpoint event is not a URL")
            endpoint = urljoin(self.url, text.decode())
            if self._origin_of(endpoint) != self._origin:
                raise self._Refused("the SSE stream's endpoint is on another origin")
            self._endpoint = endpoint
            self._spawn(self._post(initialize, generation))
            break
        parser.named.clear()

    async def _new_session(self, initialize: bytes) -> None:
        """A new HTTP+SSE session, with the same backoff and window as a Streamable HTTP one."""
        delay = RETRY_FLOOR * 5
        generation = self._generation
        while not self._stop.is_set() and generation == self._generation and self._awaiting_ready:
            if not await self._backoff(delay):
                return
            await self._sse_session(initialize)
            delay = min(delay * 2, BACKOFF_CAP)

    def _post_target(self) -> str | None:
        return self._endpoint

    async def _read_posted(self, response: Any, request_id: object, generation: int, what: str) -> None:
        """A POST's answer on this transport: 2xx with nothing to read (the answer comes on the stream)."""
        await self._read_reason(response, count=False)

    async def _session_forgotten(self, response: Any) -> bool:
        """A 404 for the endpoint: the session is in its URL."""
        await self._read_reason(response)
        return response.status_code == 404 and self._endpoint is not None
