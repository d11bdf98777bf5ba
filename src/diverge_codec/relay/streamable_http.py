"""The relay over MCP's Streamable HTTP transport of the 2025 era, and ``HttpRelay``, the entry that finds what a
remote server speaks: a remote server's notifications onto a channel.

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

``HttpRelay`` picks the driver: with ``--protocol auto`` (the default) or a modern revision, the stateless
2026-07-28 binding first (``http_stateless``: ``server/discover`` POSTed); where the server is no modern one, this
driver (``initialize``); with ``--transport auto``, where that POST is answered 400, 404 or 405, the older
HTTP+SSE (``http_sse``). A forced 2025 revision starts here; ``--transport sse`` there. The machinery they share
is ``http_driver.HttpDriver``.

HTTP is ``http_client`` (h11 on asyncio's streams, the ``[http]`` extra): bodies are read as raw
pieces, the events parsed by ``eventstream``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from .._json import dumps
from .channel import ChannelWriter, RelayOptions
from .eras import LEGACY_VERSIONS, is_modern_error
from .http_common import (ACCEPT, DELETE_TIMEOUT, LEGACY_SIGNS, TRANSPORTS, Refused, check_url, is_session_id,
                          load_client, parse_header, refuse_certificate, rpc_error, why)
from .http_driver import HttpDriver
from .http_reach import retry_after, unreachable_status
from .http_sse import HttpSse
from .http_stateless import StatelessHttp
from .http_streams import BACKOFF_CAP, RETRY_FLOOR
from .network import NetworkPolicy, TokenProvider
from .session import Phase

__all__ = ["TRANSPORTS", "HttpRelay", "StreamableHttp", "check_url", "load_client", "parse_header"]


class StreamableHttp(HttpDriver):
    """The 2025 era's Streamable HTTP: ``initialize`` and its ``Mcp-Session-Id``, the GET stream of the server's own
    messages, a session lost on the server's word made again, the DELETE at the end."""

    TRANSPORT = "streamable-http"

    async def _begin(self, message: bytes) -> None:
        """The first session: Streamable HTTP, or (``--transport auto``) the older HTTP+SSE where the POST says so."""
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
                        refuse_certificate(status, reason, "initialize")
                        answer = rpc_error(reason) if first and status == 400 else None
                        if answer is not None and is_modern_error(answer):  # a modern server: no fallback
                            self.report.server["started"] = True
                            answer = {**answer, "id": self.session.initialize_id}
                            self._received(self.session.receive_messages([dumps(answer)]))
                            return
                        if first and self._then and status in LEGACY_SIGNS:
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
                    if session_id is not None and not is_session_id(session_id):
                        raise Refused("the server's Mcp-Session-Id is not visible ASCII: unusable")
                    self.report.server["started"] = True
                    self._session_id = session_id
                    self._gave_session_id |= session_id is not None
                    await self._read_answer(response, self.session.initialize_id, generation, "initialize")
            except self._http.HttpError as error:
                if first:
                    self._fail(why(error), "unreachable")
                    return
                self._error_seen = why(error)
                if not await self._backoff(delay):
                    return
                delay = min(delay * 2, BACKOFF_CAP)
                continue
            break
        if self._legacy_sign is not None:
            await self._next_driver(message)

    async def _new_session(self, initialize: bytes) -> None:
        await self._initialize(initialize)

    def _own_stream(self, generation: int) -> None:
        if self.session.phase is Phase.READY:
            self._spawn(self._listen(generation))

    async def _session_forgotten(self, response: Any) -> bool:
        """A 404 for the session, or a 400 whose body says the session is unknown (server-everything's)."""
        reason = await self._read_reason(response)
        if self._session_id is None:
            return False
        return response.status_code == 404 or (response.status_code == 400 and b"session" in reason.lower())

    # --- the end --------------------------------------------------------------------------

    async def _end_session(self) -> None:
        """DELETE the session (a 405 says the server does not allow it: fine); not where the server is gone."""
        if self._session_id is None or self._ended_by in ("session gone", "connection lost"):
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


class HttpRelay(StreamableHttp):
    """One remote server relayed onto one channel over HTTP: ``await run()`` once. It begins by finding what the
    server speaks, then goes on as that driver (``StatelessHttp``, ``StreamableHttp`` or ``HttpSse``).

    ``transport``: ``auto`` (the default), ``streamable-http`` (either era, never the older HTTP+SSE) or ``sse``
    (the older HTTP+SSE alone, the 2025 era). ``options.protocol``: ``auto`` (the default) probes with
    ``server/discover``; a revision forces its era. ``token_command``: a shell command whose output is a bearer
    token, run at start and again on a 401, at most as often as ``remote_auth.TokenSource`` says; every request
    carries the current token, the DELETE too (``token``: a program's own async callable instead,
    ``network.TokenProvider``). ``network``: the proxy and TLS policy (``network.NetworkPolicy``; None: the
    environment's, as the CLI). ``verify``: an ``ssl.SSLContext`` for https (``remote_auth.tls_context``), or None
    for the policy's (the system's CAs, and ``SSL_CERT_FILE``). ``clock`` and ``sleep``: what every timing rule reads
    and waits with (default ``time.monotonic`` and ``asyncio.sleep``: ``HttpDriver``)."""

    def __init__(self, url: str, writer: ChannelWriter, options: RelayOptions = RelayOptions(),
                 headers: Sequence[tuple[str, str]] = (), *, transport: str = "auto", token_command: str | None = None,
                 verify: Any = None, token: TokenProvider | None = None, network: NetworkPolicy | None = None,
                 clock: Callable[[], float] | None = None, sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        if transport == "sse" and options.protocol not in ("auto", *LEGACY_VERSIONS):
            raise ValueError("transport sse speaks the 2025 era alone: --protocol auto or a 2025 revision")
        self.ERAS = transport != "sse"
        super().__init__(url, writer, options, headers, transport=transport, token_command=token_command,
                         verify=verify, token=token, network=network, clock=clock, sleep=sleep)
        modern = [StatelessHttp] if self.session.protocol is not None else []
        legacy = [StreamableHttp] if transport != "sse" else []
        self._then = [*modern, *legacy, *([HttpSse] if transport != "streamable-http" else [])]

    async def _begin(self, message: bytes) -> None:
        await self._next_driver(message)
