"""What the server answers with, read: bodies inflated in bounded pieces, event streams relayed, resumed
from their last event id, and the server's own GET stream kept open while the session lasts.

A mixin of ``http_driver.HttpDriver`` (beside ``http_requests.Requests`` and ``http_reach.Reach``), which holds
the client, the session and the report. Bounded whatever the server sends: a compressed body is inflated
``http_body.PIECE`` bytes at a time, the loop given a turn between pieces; a body the relay does not parse is
read ``REASON_BYTES`` at most; an event stream's events are bounded by the session's ``max_line``; the GET
stream silent for ``stream_timeout`` seconds (not a byte, not a comment) is taken for a flow a NAT or proxy
dropped without a word, and opened again from its last event id.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from .channel import _first
from .eventstream import EventParser
from .http_body import CODINGS, BodyError, Inflater
from .http_reach import log, retry_after, unreachable_status

__all__ = ["BACKOFF_CAP", "QUICK_END", "RECONNECT_ATTEMPTS", "RECONNECT_DELAY", "REASON_BYTES", "RETRY_FLOOR", "Streams"]

RECONNECT_ATTEMPTS = 3
"""Attempts to resume a call's dropped stream before it is counted unrecovered (the SDK's are 2)."""
RECONNECT_DELAY = 1.0
"""Seconds before a stream is opened again when the server gave no ``retry`` (the SDK's default too)."""
RETRY_FLOOR = 0.1
"""The least wait before a stream is opened again, whatever ``retry`` says."""
BACKOFF_CAP = 8.0
"""The longest wait between two tries while the server cannot be reached or its stream ends at once."""
QUICK_END = 1.0
"""A stream that ends within this many seconds and relayed nothing doubles the wait before the next."""
REASON_BYTES = 4096
"""What is read of a body the relay does not parse (an error's reason, another content type)."""


class Streams:
    """Bodies and event streams read; the GET stream of the server's own messages kept (``_listen``)."""

    _listener: int | None = None
    """The generation (session) whose GET stream is being read or awaited: one reader a session."""

    async def _pieces(self: Any, response: Any) -> AsyncIterator[bytes]:
        """A body's bytes, decoded in bounded pieces, the loop given a turn between them."""
        coding = response.headers.get("content-encoding", "").strip().lower()
        if coding in ("", "identity"):
            async for raw in response.aiter_raw():
                yield raw
                await asyncio.sleep(0)
            return
        if coding not in CODINGS:
            raise self._Refused(f"a body in an encoding the relay did not ask for ({coding[:20].isalnum() and coding[:20] or 'unknown'})")
        inflater = Inflater(coding)
        async for raw in response.aiter_raw():
            try:
                for piece in inflater.feed(raw):
                    yield piece
                    await asyncio.sleep(0)
                    if self._stop.is_set():
                        return
            except BodyError as error:
                raise self._Refused(str(error)) from None

    async def _read_reason(self: Any, response: Any, *, count: bool = True) -> bytes:
        """At most ``REASON_BYTES`` of a body the relay does not parse; the rest is never read."""
        kept = b""
        try:
            async for piece in self._pieces(response):
                kept += piece[:REASON_BYTES - len(kept)]
                if len(kept) >= REASON_BYTES:
                    break
        except (self._Refused, self._http.HttpError):
            pass
        self._unread_bodies += count and bool(kept)  # an empty body is no body left unread
        return kept

    async def _read_answer(self: Any, response: Any, request_id: object, generation: int, what: str) -> None:
        kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
        if kind == "text/event-stream":
            parser = self._parser()
            await self._read_events(response, parser)
            if isinstance(request_id, int) and request_id in self.session.pending and not self._stop.is_set():
                await self._resume(parser, request_id, generation)
                if request_id == self.session.initialize_id and generation == self._generation:
                    self._error = self._error or "the server's answer to initialize broke off before it came"
                    self._give_up(request_id, "its answer broke off")  # the handshake fails now, not at the timeout
        elif kind == "application/json":
            if what == "tools/call":  # its progress cannot arrive: say so
                self._calls_as_json += 1
                log.info("%s was answered as plain JSON, not an event stream: its progress and logs cannot come",
                         self.session.label(request_id) or what)
            body = await self._read_body(response)
            if body is not None:
                self._received(self.session.receive_messages([body]))
            else:
                self._received(self.session.receive_messages((), too_large=1))
        elif response.status_code == 202 and request_id is None:  # a notification accepted: no body
            return
        else:
            await self._read_reason(response)
            self._give_up(request_id, f"an answer that is not JSON or an event stream (HTTP {response.status_code})")

    async def _read_body(self: Any, response: Any) -> bytes | None:
        """The whole body, or None past ``max_line`` (not kept: memory stays bounded)."""
        limit, parts, size = self.session.framer.max_line, [], 0
        async for piece in self._pieces(response):
            size += len(piece)
            if size > limit:
                return None
            parts.append(piece)
        return b"".join(parts)

    def _parser(self: Any) -> EventParser:
        parser = EventParser(self.session.framer.max_line, self._seen_ids)
        self._parsers.append(parser)
        return parser

    async def _read_events(self: Any, response: Any, parser: EventParser, silence: float | None = None) -> bool:
        """Relay a stream's events until it ends: True if it ended cleanly, False if it broke off or (``silence``)
        no byte came for that many seconds (a flow a NAT or a proxy dropped without a word)."""
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(silence) as limit:
                async for piece in self._pieces(response):
                    if silence is not None:
                        limit.reschedule(loop.time() + silence)
                    self._events(parser, parser.feed(piece))
                    if self._stop.is_set():
                        return True
            self._events(parser, parser.close())
            return True
        except self._http.HttpError:
            return False
        except TimeoutError:
            self._silences += 1
            log.info("the server's stream was silent for %g s (--stream-timeout): opened again from its last event",
                     silence)
            return False
        finally:
            self._count_parser(parser)

    def _events(self: Any, parser: EventParser, data: list[bytes]) -> None:
        too_large, parser.too_large = parser.too_large, 0
        if data or too_large:
            self._received(self.session.receive_messages(data, too_large))

    def _count_parser(self: Any, parser: EventParser) -> None:
        self._replayed += parser.replayed
        parser.replayed = 0
        if parser in self._parsers:
            self._parsers.remove(parser)

    def _count_parsers(self: Any) -> None:
        for parser in list(self._parsers):
            self._count_parser(parser)

    def _stream_delay(self: Any, parser: EventParser, delay: float) -> float:
        retry = parser.retry_ms
        return max(RETRY_FLOOR, retry / 1000 if retry is not None else RECONNECT_DELAY, delay)

    async def _resume(self: Any, parser: EventParser, request_id: int, generation: int) -> None:
        """A request's stream ended (cleanly or not) before its answer: GET it again from the last event id, if any."""
        delay = 0.0
        for _ in range(RECONNECT_ATTEMPTS):
            if not parser.last_event_id:
                break
            await _first(asyncio.sleep(self._stream_delay(parser, delay)), self._stop.wait())
            if self._stop.is_set() or generation != self._generation:
                return
            self._reconnects += 1
            status, _, _ = await self._get_events(parser, generation)
            if request_id not in self.session.pending or self._stop.is_set() or generation != self._generation:
                return
            if status is not None and status >= 300:
                break
            delay = min(max(delay * 2, RETRY_FLOOR * 5), BACKOFF_CAP)
        self._unrecovered += 1

    async def _listen(self: Any, generation: int) -> None:
        """The stream of what the server sends on its own, kept open (and resumed) while the session lasts; one
        reader a session (a second call while it reads is a no-op).

        A stream that ends, breaks off or is silent for ``stream_timeout`` is opened again from its last event id
        after ``retry`` (at least ``RETRY_FLOOR``), the wait doubling while streams end at once. A server that
        cannot be reached (no connection, 502-504, 429 with ``Retry-After``) is tried again with backoff until
        ``reconnect_window`` has passed since the first failure: then the relay ends, naming the status. A 404
        (or 400) for the session makes a new one; a 405 says there is no such stream (and the server is reached)."""
        if self._listener == generation:
            return
        self._listener = generation
        try:
            await self._read_own_stream(generation)
        finally:
            if self._listener == generation:
                self._listener = None

    async def _read_own_stream(self: Any, generation: int) -> None:
        parser = self._parser()
        first, delay = True, 0.0
        while not self._stop.is_set() and generation == self._generation:
            if not first:
                await _first(asyncio.sleep(self._backoff_delay(self._stream_delay(parser, delay))), self._stop.wait())
                if self._stop.is_set() or generation != self._generation:
                    return
                self._reconnects += 1
            first = False
            opened = time.monotonic()
            relayed_before = self.report.seen
            status, error, wait = await self._get_events(parser, generation, self.options.stream_timeout)
            if generation != self._generation:
                return
            if status is None:
                if not self._unreachable_now(error or "the server cannot be reached", wait):
                    self._unrecovered += 1
                    return
                delay = min(max(delay * 2, RETRY_FLOOR * 5), BACKOFF_CAP)
                continue
            if status >= 300:
                self._get_stream = "none (405)" if status == 405 else f"refused (HTTP {status})"
                return
            quick = time.monotonic() - opened < QUICK_END and self.report.seen == relayed_before
            delay = min(max(delay * 2, RETRY_FLOOR * 5), BACKOFF_CAP) if quick else 0.0

    async def _get_events(self: Any, parser: EventParser, generation: int,
                          silence: float | None = None) -> tuple[int | None, str | None, float | None]:
        """One GET of the event stream (from ``parser``'s last event id): its status, None where the server could
        not be reached (then why, and its ``Retry-After``)."""
        headers = self._request_headers("text/event-stream")
        event_id = parser.last_event_id
        if event_id and all(0x20 <= byte <= 0x7E for byte in event_id):  # empty: nothing to resume from; other
            headers["Last-Event-ID"] = event_id.decode("ascii")            # bytes HTTP cannot carry: not resumed
        try:
            async with self._open("GET", "the event stream", headers, retry_safe=True) as response:
                status = int(response.status_code)
                if unreachable_status(status, response.headers):
                    await self._read_reason(response, count=False)
                    return None, f"HTTP {status} on the event stream", retry_after(response.headers)
                if status >= 300:
                    if await self._session_forgotten(response):
                        self._session_lost(generation)
                    return status, None, None
                self._get_stream = "open"
                clean = await self._read_events(response, parser, silence)
                if not self._stop.is_set():  # a stream open when the relay ends is reported open
                    self._get_stream = "reopening" if clean else "broken"
                return status, None, None
        except self._http.HttpError as error:
            return None, self._why(error), None
