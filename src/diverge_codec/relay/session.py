"""The relay's client side of one MCP stdio session, sans-IO: lines in, requests out, payloads queued.

A relay speaks to the container's MCP server as its client would: ``initialize``
(offering ``PROTOCOL_VERSION``, accepting any revision in ``SUPPORTED_VERSIONS`` the
server answers with), then ``notifications/initialized``, the requests it was given
(``logging/setLevel``, ``resources/subscribe``, ...) and the tool calls, each call with a
progress token. Everything the server writes is read here from its first byte, a chunk at a
time through ``mcp_notifications.ChunkFramer`` (one compiled call per chunk): each notification
becomes a channel record in the ``Outbox``, before or after the handshake's answer; the answers to the relay's own
requests advance the session; a ``ping`` is answered, any other request the server
makes is refused (the relay declares no client capability); a response nobody asked
for is ignored.

Sizes, one setting: ``max_line`` bounds a line of the server's output (longer ones
are skipped and counted ``too_large``); a payload is at most one byte more (the tag),
``record_limit``, and with the default (16 MiB less one byte) that is the stream
envelope's default record limit, so every payload the relay queues is one a consumer
with the default limit reads. The outbox admits one payload of any size into an empty
queue, so such a notification reaches a consumer that keeps up.

Time, one setting: every request the relay makes is answered within ``request_timeout``
seconds or given up (``expire``): a call is cancelled (``notifications/cancelled``) and
counted failed and timed out; an unanswered ``initialize`` fails the handshake (MCP
forbids cancelling it). The clock is injected (``clock``), so a test drives time too.

Memory, whatever the server does: lines are bounded (``max_line``), the outbox is bounded
in bytes, and answers to the server's own requests (``ping``) are dropped and counted
(``requests_unanswered``) while the driver says the server is not reading its stdin
(``server_reading``), so a server that floods requests and reads nothing grows nothing.

No I/O here: ``stdio`` and ``streamable_http`` drive this from asyncio; a test drives it from a list.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import mcp_notifications, stream
from .._implementation import IMPLEMENTATION
from .._json import dumps, loads
from .outbox import MAX_RECORD_BYTES, UNREACHABLE_CODE, Outbox, unreachable_frame

PROTOCOL_VERSION = "2025-11-25"
"""The MCP revision the relay offers in ``initialize``."""

SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Revisions the relay speaks: the ones it may offer, and the ones it accepts in the server's
answer; any other answer ends the session as a failed handshake."""

DEFAULT_MAX_LINE = stream.DEFAULT_MAX_RECORD - 1
"""The longest server line read (16 MiB less one byte): with its tag, a payload is at most the
stream envelope's default record limit."""

DEFAULT_REQUEST_TIMEOUT = 60.0
"""Seconds a request of the relay's may go unanswered (the TypeScript SDK's default too)."""

DEFAULT_RECONNECT_WINDOW = 30.0
"""Seconds a remote server that was reached may stay unreachable before the relay gives up on it."""

DEFAULT_STREAM_TIMEOUT = 300.0
"""Seconds a remote server's GET stream may go without a byte (an event, a comment) before it is opened again
from its last event id: the MCP Python SDK's read timeout for its streams (``MCP_DEFAULT_SSE_READ_TIMEOUT``)."""

DEFAULT_GRACE = 3.0
"""Seconds a driver waits after closing the server's stdin, again after SIGTERM, and for its output to end."""

DEFAULT_OUTBOX_BYTES = 8 << 20
"""What a channel's outbox holds before it drops (one larger payload is always admitted alone):
8 MiB, what a consumer that keeps up on average needs when it is descheduled (1 MiB dropped up
to 21% of a real replay under ``| cat``, 8 MiB none: ``benchmarks/outbox_drops.py``, docs/relay.md)."""

CLIENT_INFO = {"name": "diverge-codec-relay", "version": "1"}

INITIALIZE_ID = 0

DROP_REASONS = ("backpressure", "invalid", "too_large")
"""Why a notification the server sent was not relayed: the channel could not keep pace, the
channel's decode would refuse it, it is larger than the line or record limit."""


class Phase(enum.Enum):
    """Where the handshake stands."""

    INITIALIZING = "initialize sent, not answered"
    READY = "initialized: calls sent"
    FAILED = "the server refused initialize, answered a revision the relay does not speak, or timed out"


@dataclass
class RelayReport:
    """What one relay did, for the one JSON line it prints when it ends (``as_dict``)."""

    seen: int = 0
    """Notifications the server wrote (lines over the limit included: they may have been some)."""
    relayed: int = 0
    """Notifications handed to the channel."""
    dropped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DROP_REASONS, 0))
    calls_sent: int = 0
    """Requests the relay made after the handshake: the tool calls and the other requests."""
    calls_answered: int = 0
    calls_failed: int = 0
    """Requests that failed: answered with a JSON-RPC error or a tool result with ``isError``
    (those are in ``calls_answered`` too), or timed out (those are not)."""
    calls_timed_out: int = 0
    """Requests given up after ``request_timeout`` (and cancelled): in ``calls_failed`` too."""
    protocol_version: str | None = None
    """The revision the server answered ``initialize`` with, if it did."""
    unreachable: bool = False
    """The channel carried the one Error frame: the server ended before anything was relayed
    and before a usable ``initialize`` answer."""
    requests_answered: int = 0
    """Requests the server made of the relay (``ping`` and the ones it refuses), answered."""
    requests_unanswered: int = 0
    """Requests the server made while it was not reading its stdin: not answered, so that the
    answers cannot pile up in the relay's memory."""
    ignored: int = 0
    """Lines that were neither a notification nor an awaited response: stray responses, text."""
    unsent: int = 0
    """Notifications handed to the channel's writer that the consumer never took before the relay ended
    (a stuck consumer at the end, or one that left): in ``dropped["backpressure"]``, not in ``relayed``."""
    channel_cut: bool = False
    """The channel ended inside a record: the consumer left mid-record, or took nothing of the rest of one
    for ``grace`` seconds at the end."""
    server: dict[str, Any] = field(default_factory=dict)
    """How the server ended: filled in by the driver (``stdio``, ``streamable_http``)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "seen": self.seen, "relayed": self.relayed, "dropped": dict(self.dropped),
            "calls": {"sent": self.calls_sent, "answered": self.calls_answered, "failed": self.calls_failed,
                      "timed_out": self.calls_timed_out},
            "protocol_version": self.protocol_version, "unreachable": self.unreachable,
            "requests_answered": self.requests_answered, "requests_unanswered": self.requests_unanswered,
            "ignored": self.ignored, "channel": {"unsent": self.unsent, "cut": self.channel_cut},
            "server": dict(self.server),
        }


class RelaySession:
    """One server's session: ``start`` to begin, ``receive`` each chunk it writes, ``end_of_output`` at its EOF.

    ``requests`` (method, params) are sent after ``notifications/initialized``, in order,
    then ``calls`` (tool name, arguments) as ``tools/call``; ids count up from 1.

    ``receive`` returns the bytes to write to the server's stdin (the handshake's second
    half, the calls, answers to its requests); the notifications go to ``outbox``.
    ``shutdown_reason`` turns non-None when the session wants the server stopped: every
    call answered (or timed out) with ``until_answered``, or a failed handshake.
    ``expire`` gives up the requests older than ``request_timeout`` (None: never), returning
    the cancellations to write; ``next_deadline`` says when to call it next, on ``clock``. ``frame`` turns one line
    into a channel payload: None for a message that is no notification, ``DecodeError`` for one
    the channel would refuse; by default the core's splice, which ``ChunkFramer`` runs in C over a
    whole chunk; another function (a benchmark's, a test's) runs on the pure framer.
    """

    def __init__(
        self,
        calls: Sequence[tuple[str, Any]] = (),
        requests: Sequence[tuple[str, Any]] = (),
        *,
        protocol_version: str = PROTOCOL_VERSION,
        max_line: int = DEFAULT_MAX_LINE,
        outbox_bytes: int = DEFAULT_OUTBOX_BYTES,
        until_answered: bool = False,
        frame: Callable[[bytes], bytes | None] = mcp_notifications.splice_notification,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_line + 1 > MAX_RECORD_BYTES:
            raise ValueError(f"max_line must be at most {MAX_RECORD_BYTES - 1}: with its tag, a payload is what a record's length can say")
        if protocol_version not in SUPPORTED_VERSIONS:
            raise ValueError(f"protocol_version must be one the relay speaks: {', '.join(SUPPORTED_VERSIONS)}")
        if request_timeout is not None and not request_timeout > 0:
            raise ValueError("request_timeout must be more than 0, or None")
        self.calls: list[tuple[str, Any]] = list(calls)
        self.requests: list[tuple[str, Any]] = list(requests)
        self.protocol_version: str = protocol_version
        self.until_answered: bool = until_answered
        self.frame: Callable[[bytes], bytes | None] = frame
        self.request_timeout: float | None = request_timeout
        self.clock: Callable[[], float] = clock
        self.server_reading: bool = True
        """The driver's word: False while the server's stdin backs up (answers to it are dropped)."""
        self.record_limit: int = max_line + 1
        self.pending: dict[int, tuple[str, float]] = {INITIALIZE_ID: ("initialize", float("inf"))}
        """The relay's requests awaiting an answer: id -> (method, deadline on ``clock``); ``start``
        sets the deadline of ``initialize``."""
        self.framer: mcp_notifications.ChunkFramer = _framer(frame, max_line, self.record_limit, self.pending)
        """Lines to records: the core's ``ChunkFramer``, or the pure one over a caller's own ``frame``. It
        hands back the server's requests and the answers ``pending`` awaits, and counts the rest ignored."""
        self._settled = (0, 0, 0)  # the framer's (invalid, too_large, ignored) already in the report
        self._too_large_elsewhere = 0  # messages a transport skipped as over max_line
        self.outbox: Outbox = Outbox(outbox_bytes)
        self.report: RelayReport = RelayReport()
        self.phase: Phase = Phase.INITIALIZING
        self.shutdown_reason: str | None = None
        self.ended: bool = False
        self.on_answer: Callable[[str, dict[str, Any] | None], None] | None = None
        """Called for each of the relay's requests after the handshake when it ends: its label (the method, or
        ``tools/call NAME``) and the server's answer, or None when it timed out. For a caller that reports failures
        or shows answers on request (the CLI); the session itself keeps no answer."""
        self._labels: dict[int, str] = {}
        self._initialize_id = INITIALIZE_ID
        self._next_id = INITIALIZE_ID + 1
        self._restarted = False
        self._made_calls: list[str] = []  # the calls this session made (never made again in a new one)
        self.not_repeated: list[str] = []
        """After ``restart``: the calls the lost session made, which the new one does not make again (the server
        may have forgotten what they set up), as labels (``tools/call NAME``)."""

    def start(self) -> bytes:
        """The ``initialize`` request, the first thing to write to the server."""
        if self._initialize_id in self.pending:
            self._await(self._initialize_id, "initialize")
        return _message({"jsonrpc": "2.0", "id": self._initialize_id, "method": "initialize", "params": {
            "protocolVersion": self.protocol_version, "capabilities": {}, "clientInfo": CLIENT_INFO}})

    def receive(self, data: bytes) -> bytes:
        """Read a chunk of the server's output: what to write back to the server (maybe nothing)."""
        if self.ended:
            return b""
        return self._framed(self.framer.feed(data))

    def receive_messages(self, messages: Sequence[bytes], too_large: int = 0) -> bytes:
        """Read whole messages (an HTTP body, an SSE event's data), each as a stdio line is read:
        the same frame, the same limits. ``too_large`` counts messages the transport skipped
        as over ``max_line``. Returns the messages to send, each ending with a newline."""
        if self.ended:
            return b""
        self._too_large_elsewhere += too_large
        return self._framed(self.framer.feed_messages(messages))

    def end_of_output(self) -> None:
        """The server's output ended: read its last line; queue the Error frame if the channel may carry one."""
        if self.ended:
            return
        self._framed(self.framer.close())
        self.ended = True
        if self.outbox.accepted == 0 and self.phase is not Phase.READY:
            self.report.unreachable = True
            self.outbox.offer(unreachable_frame())

    def sent(self, count: int) -> None:
        """``count`` queued payloads reached the channel (the driver's pump says so)."""
        if not self.report.unreachable:  # else the one payload is the Error frame
            self.report.relayed += count

    def abandon(self) -> None:
        """The channel takes nothing more: what is still queued is dropped for backpressure."""
        self.lost(self.outbox.abandon())

    def lost(self, count: int) -> None:
        """``count`` payloads taken from the outbox never reached the channel: dropped for backpressure."""
        if not self.report.unreachable:  # else the one payload is the Error frame
            self.report.dropped["backpressure"] += count

    def restart(self) -> bytes:
        """The server lost the session (it forgot it, or restarted): begin a new one, as MCP asks of a client.

        Every request in flight is given up, counted failed and never sent again (a tool call may have
        run); ``initialize`` is sent again (the bytes returned, under a new id), then ``requests`` again
        once it is answered, not the calls. The outbox, the counts and the framer go on."""
        if self.ended:
            return b""
        self.phase = Phase.INITIALIZING  # first: a session without requests in flight is not "answered"
        for request_id in [request_id for request_id in self.pending if request_id != self._initialize_id]:
            self.fail(request_id, "lost with its session: the server restarted or forgot it")
        self.pending.clear()
        self.not_repeated, self._made_calls = self._made_calls, []
        self._initialize_id, self._next_id = self._next_id, self._next_id + 1
        self.pending[self._initialize_id] = ("initialize", float("inf"))
        self._restarted = True
        return self.start()

    def label(self, request_id: object) -> str:
        """A pending request's label (``tools/call NAME``, or its method), "" for any other id."""
        return self._labels.get(request_id, "") if isinstance(request_id, int) else ""

    @property
    def initialize_id(self) -> int:
        """The id of the session's ``initialize`` request (a new one with each ``restart``)."""
        return self._initialize_id

    def fail(self, request_id: int, reason: str) -> None:
        """A request the transport could not deliver or whose answer it could not read (an HTTP error
        status, a body that is no message): counted failed now instead of at its timeout. ``reason``
        names no value; the caller's ``on_answer`` hears it as a JSON-RPC error of the relay's."""
        if self.ended or request_id not in self.pending:
            return
        del self.pending[request_id]
        if request_id == self._initialize_id:
            self.phase = Phase.FAILED
            self._want_shutdown("handshake failed")
            return
        self.report.calls_failed += 1
        self._answered(request_id, {"jsonrpc": "2.0", "id": request_id,
                                    "error": {"code": UNREACHABLE_CODE, "message": reason}})
        self._maybe_done()

    def unsent(self, count: int) -> None:
        """``count`` payloads handed to the channel's writer never reached the consumer (the relay ended first)."""
        if count and not self.report.unreachable:
            self.report.relayed -= count
            self.report.dropped["backpressure"] += count
            self.report.unsent += count

    def next_deadline(self) -> float | None:
        """When the oldest unanswered request times out, on ``clock``; None if none can."""
        if not self.pending or self.request_timeout is None or self.ended:
            return None
        return min(deadline for _, deadline in self.pending.values())

    def expire(self) -> bytes:
        """Give up every request past its deadline: the cancellations to write to the server.

        A call is counted failed and timed out, and cancelled as MCP asks of a client that
        stops waiting; ``initialize`` is never cancelled (MCP forbids it): the handshake fails.
        """
        if self.ended or self.request_timeout is None:
            return b""
        now = self.clock()
        expired = [request_id for request_id, (_, deadline) in self.pending.items() if deadline <= now]
        cancellations: list[bytes] = []
        for request_id in expired:
            del self.pending[request_id]
            if request_id == self._initialize_id:
                self.phase = Phase.FAILED
                self._want_shutdown("initialize timed out")
                continue
            self.report.calls_failed += 1
            self.report.calls_timed_out += 1
            self._answered(request_id, None)
            cancellations.append(_message({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
                "requestId": request_id, "reason": f"no answer within {self.request_timeout:g} s"}}))
        self._maybe_done()
        return b"".join(cancellations)

    def finish_report(self) -> RelayReport:
        """The report with the outbox's drops folded in (call once, at the end)."""
        self._settle()
        self.report.dropped["backpressure"] += self.outbox.dropped
        self.outbox.dropped = 0
        return self.report

    def _framed(self, framed: mcp_notifications.Framed) -> bytes:
        """A framer call's result read: its records queued, its other lines answered; the replies to write."""
        records, count, payload_bytes, largest, others = framed
        self._settle()
        if count:
            self.report.seen += count
            self.outbox.offer_records(records, count, payload_bytes, largest)
        if not others:
            return b""
        replies: list[bytes] = []
        for line in others:  # the server's requests and the answers pending awaits: a few a session
            request = request_head(line)
            if request is not None:
                replies.append(self._answer(*request))
            else:
                self._response(line, replies)
        return b"".join(replies)

    def _settle(self) -> None:
        """The framer's counts since the last call, into the report: its refusals were notifications the
        server sent; the lines it ignored were no notification, request or awaited answer."""
        framer = self.framer
        invalid, too_large, ignored = framer.invalid, framer.too_large + self._too_large_elsewhere, framer.ignored
        if (invalid, too_large, ignored) != self._settled:
            new_invalid, new_too_large = invalid - self._settled[0], too_large - self._settled[1]
            self.report.ignored += ignored - self._settled[2]
            self._settled = (invalid, too_large, ignored)
            self.report.seen += new_invalid + new_too_large
            self.report.dropped["invalid"] += new_invalid
            self.report.dropped["too_large"] += new_too_large

    def _response(self, line: bytes, replies: list[bytes]) -> None:
        """A line that is no notification and no request: an answer to the relay, or noise."""
        try:
            message = loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict) or "method" in message:
            self.report.ignored += 1
            return
        request_id = message.get("id")
        if not isinstance(request_id, int) or isinstance(request_id, bool) or request_id not in self.pending:
            self.report.ignored += 1
            return
        method, _ = self.pending.pop(request_id)
        if request_id == self._initialize_id:
            replies.append(self._initialized(message))
        else:
            self.report.calls_answered += 1
            self.report.calls_failed += "error" in message or (method == "tools/call" and _is_error_result(message))
            self._answered(request_id, message)
        self._maybe_done()

    def _maybe_done(self) -> None:
        if self.phase is Phase.READY and not self.pending and self.until_answered:
            self._want_shutdown("until-answered")

    def _await(self, request_id: int, method: str) -> None:
        timeout = self.request_timeout
        self.pending[request_id] = (method, self.clock() + timeout if timeout is not None else float("inf"))

    def _initialized(self, answer: dict[str, Any]) -> bytes:
        result = answer.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            self.report.protocol_version = version
        if version not in SUPPORTED_VERSIONS:
            self.phase = Phase.FAILED
            self._want_shutdown("handshake failed")
            return b""
        self.phase = Phase.READY
        requests = [_message({"jsonrpc": "2.0", "method": "notifications/initialized"})]
        made = [(method, params) for method, params in self.requests]
        if not self._restarted:  # a call is made once: one in flight when a session was lost failed then
            made += [("tools/call", {"name": name, "arguments": arguments}) for name, arguments in self.calls]
        for request_id, (method, params) in enumerate(made, start=self._next_id):
            if method == "tools/call":
                self._labels[request_id] = f"tools/call {params['name']}"
                self._made_calls.append(self._labels[request_id])
                params = {**params, "_meta": {"progressToken": f"call-{request_id}"}}
            else:
                self._labels[request_id] = method
            requests.append(_message({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
            self._await(request_id, method)
        self._next_id += len(made)
        self.report.calls_sent += len(made)
        return b"".join(requests)

    def _answered(self, request_id: int, message: dict[str, Any] | None) -> None:
        label = self._labels.pop(request_id, "")
        if self.on_answer is not None:
            self.on_answer(label, message)

    def _answer(self, request_id: Any, method: Any) -> bytes:
        if not self.server_reading:  # its stdin is backed up: an answer would only pile up here
            self.report.requests_unanswered += 1
            return b""
        self.report.requests_answered += 1
        if method == "ping":
            return _message({"jsonrpc": "2.0", "id": request_id, "result": {}})
        return _message({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})

    def _want_shutdown(self, reason: str) -> None:
        if self.shutdown_reason is None:
            self.shutdown_reason = reason


if IMPLEMENTATION == "python":
    from .._mcp_notifications_py import request_head
else:  # the scan finds the id and the method; the parser reads those alone (tests/test_relay_answers.py)
    from .._mcp_notifications_c import request_head


def _framer(frame: Callable[[bytes], bytes | None], max_line: int, record_limit: int,
            awaiting: dict[int, Any]) -> mcp_notifications.ChunkFramer:
    """The core's framer for the default frame; for another, the pure framer calling it (a benchmark's or a test's)."""
    if frame is mcp_notifications.splice_notification:
        return mcp_notifications.ChunkFramer(max_line, record_limit, awaiting=awaiting)
    from .. import _mcp_notifications_py  # only here: the compiled relay's start-up does not load the pure core

    framer = _mcp_notifications_py.ChunkFramer(max_line, record_limit, awaiting=awaiting)
    framer._splice = frame
    return framer


def _is_error_result(answer: dict[str, Any]) -> bool:
    """A tool call's failure reported as its result (MCP's ``isError: true``), not as a JSON-RPC error."""
    result = answer.get("result")
    return isinstance(result, dict) and result.get("isError") is True


def _message(obj: dict[str, Any]) -> bytes:
    return dumps(obj) + b"\n"
