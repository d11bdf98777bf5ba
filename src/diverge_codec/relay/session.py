"""The relay's client side of one MCP stdio session, sans-IO: lines in, requests out, payloads queued.

A relay speaks to the container's MCP server as its client would, in either era (``eras``).
The 2025 era: ``initialize`` (offering ``PROTOCOL_VERSION``, accepting any revision in
``SUPPORTED_VERSIONS`` the server answers with), then ``notifications/initialized``, the requests
it was given (``logging/setLevel``, ``resources/subscribe``, ...) and the tool calls, each call with
a progress token. The 2026-07-28 era (``protocol`` ``auto`` or the revision): ``server/discover``
first, then a ``subscriptions/listen`` stream for the list changes and the resources the
``resources/subscribe`` requests name, then the other requests and the calls, each with the
revision's ``_meta`` and the log level asked for (``server_log_level``). ``auto`` falls back to
the handshake on any answer that is not modern, or none within ``eras.DISCOVER_TIMEOUT``.
Everything the server writes is read here from its first byte, a chunk at a
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
(``server_reading``), so a server that floods requests and reads nothing grows nothing; the
answers to one read's requests stop at ``ANSWER_BYTES_A_READ``, so a read of a whole pipe adds no
more than that before the driver can say so.

No I/O here: ``stdio`` and the HTTP drivers (``http_driver``) drive this from asyncio; a test drives it from a list.
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
from . import eras
from .outbox import MAX_RECORD_BYTES, UNREACHABLE_CODE, Outbox, unreachable_frame

PROTOCOL_VERSION = "2025-11-25"
"""The MCP revision the relay offers in ``initialize``."""

SUPPORTED_VERSIONS = eras.LEGACY_VERSIONS
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

ANSWER_BYTES_A_READ = 256 * 1024
"""What the answers to one read's requests may come to; the requests past it go unanswered and counted
(``requests_unanswered``). The stdio driver reads up to a 1 MiB pipeful a turn (issue 44): a server that
floods pings and reads nothing would otherwise be handed that many bytes of answers before its stdin is
seen to back up. Asyncio's 256 KiB read made this the bound before."""

CLIENT_INFO = {"name": "diverge-codec-relay", "version": "1"}

INITIALIZE_ID = 0

DISCOVER_ID = 2**31 - 1
"""The ``server/discover`` probe's id: outside the count, so a 2025-era server sees ``initialize`` as 0 and the calls
from 1, as before the probe; positive and within 32 bits, so a server whose ids are unsigned or 32-bit (an older
rmcp's ``u32``) reads it."""

DROP_REASONS = ("backpressure", "invalid", "too_large")
"""Why a notification the server sent was not relayed: the channel could not keep pace, the
channel's decode would refuse it, it is larger than the line or record limit."""


class Phase(enum.Enum):
    """Where the handshake stands."""

    DISCOVERING = "server/discover sent, not answered"
    INITIALIZING = "initialize sent, not answered"
    LISTENING = "subscriptions/listen sent, its acknowledgement awaited before the calls"
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
    """The revision used: the one the server answered ``initialize`` with, or the modern one both speak."""
    discover: str | None = None
    """What the ``server/discover`` probe found (``modern``, ``legacy (...)``, ``no shared revision``); None: not sent."""
    versions_offered: list[str] | None = None
    """The revisions a modern server said it supports (at most ``eras.OFFERED_SHOWN``)."""
    input_required: int = 0
    """Calls answered ``input_required`` (the relay has no input to give): in ``calls_failed`` too."""
    listen: str | None = None
    """The ``subscriptions/listen`` stream: ``acknowledged``, ``unacknowledged``, ``ended by the server``, ``refused``;
    None: not opened (the 2025 era)."""
    listen_reopened: int = 0
    """Times the listen stream was opened again after it broke (HTTP: a new request, no event replayed)."""
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
            "server": {**self.server, **self._era()},
        }

    def _era(self) -> dict[str, Any]:
        """The era's facts, beside the driver's: only where the session probed or met a modern server."""
        if self.discover is None and self.versions_offered is None:
            return {}
        era = {"discover": self.discover, "versions_offered": self.versions_offered, "listen": self.listen}
        return {**era, "listen_reopened": self.listen_reopened, "input_required": self.input_required}


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
        protocol: str | None = None,
        server_log_level: str | None = None,
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
        if protocol is not None and protocol not in eras.PROTOCOLS:
            raise ValueError(f"protocol must be one of: {', '.join(eras.PROTOCOLS)}")
        if server_log_level is not None and server_log_level not in eras.LOG_LEVELS:
            raise ValueError(f"server_log_level must be one of: {', '.join(eras.LOG_LEVELS)}")
        if protocol in SUPPORTED_VERSIONS:
            protocol_version, protocol = protocol, None  # a 2025 revision forced: the handshake, offering it
        self.calls: list[tuple[str, Any]] = list(calls)
        self.requests: list[tuple[str, Any]] = list(requests)
        self.protocol_version: str = protocol_version
        self.protocol: str | None = protocol
        """None: the 2025 handshake only (a forced 2025 revision, or ``--transport sse``); ``auto`` or a modern revision:
        probe first."""
        self.server_log_level: str | None = server_log_level
        """The log level asked for: per request on the modern era (``debug`` when None), ``logging/setLevel``
        first on the 2025 era (only when given: a 2025 server that lacks logging would fail the request)."""
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
        self.on_era: Callable[[str], None] | None = None
        """Called with a few words when the era is decided (or none is shared): for a driver's log line. The words
        hold revisions (a server's cut to 32 characters) and error codes, nothing else the server sent."""
        self._labels: dict[int, str] = {}
        self._initialize_id = INITIALIZE_ID
        self._next_id = INITIALIZE_ID + 1
        self._restarted = False
        self._made_calls: list[str] = []  # the calls this session made (never made again in a new one)
        self.not_repeated: list[str] = []
        """After ``restart``: the calls the lost session made, which the new one does not make again (the server
        may have forgotten what they set up), as labels (``tools/call NAME``)."""
        self._discover_id: int | None = None
        self._listen_id: int | None = None
        self._ack_deadline = float("inf")

    def start(self) -> bytes:
        """The first thing to write to the server: ``server/discover`` for a session that probes, else ``initialize``."""
        if self.protocol is not None and self._discover_id is None:
            return self._discover()
        return self._handshake()

    def _handshake(self) -> bytes:
        """The ``initialize`` request."""
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

    def not_modern(self, found: str) -> bytes:
        """The probe was refused by the transport, not answered as MCP (an HTTP 404, 405, a body that is no
        JSON-RPC error): the handshake (``auto``, its bytes returned), else no shared era. ``found`` names why."""
        if self.ended or self.phase is not Phase.DISCOVERING:
            return b""
        self.pending.pop(DISCOVER_ID, None)
        if self.protocol != "auto":
            self._fail_era(found)
            return b""
        return self._fall_back(None, found)

    @property
    def listen_id(self) -> int | None:
        """The id of the ``subscriptions/listen`` request in flight, if any."""
        return self._listen_id if self._listen_id in self.pending else None

    def relisten(self) -> bytes:
        """The listen stream broke off: the request that opens it again (a new id, the same filter), counted
        ``listen_reopened``; the calls are not held back for its acknowledgement a second time."""
        listen_id = self.listen_id
        if self.ended or listen_id is None:
            return b""
        del self.pending[listen_id]
        ready, said = self.phase is Phase.READY, self.report.listen
        message = self._listen()
        if ready:
            self.phase, self._ack_deadline, self.report.listen = Phase.READY, float("inf"), said
        self.report.listen_reopened += 1
        return message

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
        """When the oldest unanswered request times out (or the era's probe or the listen acknowledgement is given
        up), on ``clock``; None if none can."""
        if self.ended:
            return None
        deadline = min([self._ack_deadline, *(deadline for _, deadline in self.pending.values())])
        return None if deadline == float("inf") else deadline

    def expire(self) -> bytes:
        """Give up every request past its deadline: the cancellations to write to the server.

        A call is counted failed and timed out, and cancelled as MCP asks of a client that
        stops waiting; ``initialize`` is never cancelled (MCP forbids it): the handshake fails.
        """
        if self.ended:
            return b""
        now = self.clock()
        expired = [request_id for request_id, (_, deadline) in self.pending.items() if deadline <= now]
        cancellations: list[bytes] = []
        if self.phase is Phase.LISTENING and self._ack_deadline <= now:
            cancellations.append(self._go())  # no acknowledgement: the calls go out all the same
        for request_id in expired:
            del self.pending[request_id]
            if request_id == self._discover_id:
                cancellations.append(self._undiscovered())
                continue
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
        replies: list[bytes] = []
        self._answer_bytes = 0  # this read's answers so far (ANSWER_BYTES_A_READ): every answer is made in a read
        if count:
            self.report.seen += count
            self.outbox.offer_records(records, count, payload_bytes, largest)
            if self.phase is Phase.LISTENING and _ACKNOWLEDGED in records:  # only while the calls wait for it
                self.report.listen = "acknowledged"
                replies.append(self._go())
        if not others:
            return b"".join(replies)
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
        if request_id == self._discover_id:
            replies.append(self._discovered(message))
        elif request_id == self._initialize_id:
            replies.append(self._initialized(message))
        elif request_id == self._listen_id:  # the stream ended: gracefully (a result) or refused
            acknowledged = "result" in message or self.report.listen == "acknowledged"
            self.report.listen = "ended by the server" if acknowledged else "refused"
            if self.phase is Phase.LISTENING:
                replies.append(self._go())
        else:
            self.report.calls_answered += 1
            asks = eras.is_input_required(message)
            self.report.input_required += asks
            self.report.calls_failed += "error" in message or asks or (
                method == "tools/call" and _is_error_result(message))
            self._answered(request_id, message)
        self._maybe_done()

    def _maybe_done(self) -> None:
        if self.phase is Phase.READY and self.until_answered and not self.pending.keys() - {self._listen_id}:
            self._want_shutdown("until-answered")

    def _await(self, request_id: int, method: str) -> None:
        timeout = self.request_timeout
        self.pending[request_id] = (method, self.clock() + timeout if timeout is not None else float("inf"))

    def _initialized(self, answer: dict[str, Any]) -> bytes:
        if self.phase is not Phase.INITIALIZING:  # a handshake sent before a late DiscoverResult won
            return b""
        result = answer.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        if isinstance(version, str):
            self.report.protocol_version = version
        if version not in SUPPORTED_VERSIONS:
            self.report.versions_offered = eras.offered_versions(answer) or self.report.versions_offered
            if eras.is_modern_error(answer) and self._discover_id in self.pending:  # a modern server: its probe decides
                self._await(self._discover_id, "server/discover")
                return b""
            self.phase = Phase.FAILED
            self._want_shutdown("handshake failed")
            return b""
        if self._discover_id is not None:
            self.pending.pop(self._discover_id, None)  # the handshake decided: a later probe answer is noise
        self.phase = Phase.READY
        made = [(method, params) for method, params in self.requests]
        level = self.server_log_level
        if level is not None and not any(method == "logging/setLevel" for method, _ in made):
            made.insert(0, ("logging/setLevel", {"level": level}))
        return _message({"jsonrpc": "2.0", "method": "notifications/initialized"}) + self._send_work(made, None)

    def _send_work(self, made: list[tuple[str, Any]], meta: dict[str, Any] | None) -> bytes:
        """The requests, then the calls (once: one in flight when a session was lost failed then), each awaited;
        ``meta``: the modern era's ``_meta``, merged into each request's own."""
        if not self._restarted:
            made = made + [("tools/call", {"name": name, "arguments": arguments}) for name, arguments in self.calls]
        requests: list[bytes] = []
        for request_id, (method, params) in enumerate(made, start=self._next_id):
            call = method == "tools/call"
            self._labels[request_id] = f"tools/call {params['name']}" if call else method
            if call:
                self._made_calls.append(self._labels[request_id])
            if meta is not None or call:
                own = params.get("_meta") if isinstance(params, dict) and meta is not None else None
                extra = {"progressToken": f"call-{request_id}"} if call else {}
                params = {**(params or {}), "_meta": {**(own if isinstance(own, dict) else {}), **(meta or {}), **extra}}
            requests.append(_message({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
            self._await(request_id, method)
        self._next_id += len(made)
        self.report.calls_sent += len(made)
        return b"".join(requests)

    def _discover(self) -> bytes:
        """The era's probe (MCP 2026-07-28: a dual-era client "SHOULD probe with server/discover before sending any
        other request"), under ``DISCOVER_ID``; ``initialize``, if it comes to that, keeps ``INITIALIZE_ID``."""
        self._discover_id = DISCOVER_ID
        self.phase = Phase.DISCOVERING
        self.pending.clear()
        self.pending[self._discover_id] = ("server/discover", self.clock() + eras.DISCOVER_TIMEOUT)
        return _message({"jsonrpc": "2.0", "id": self._discover_id, "method": "server/discover",
                         "params": {"_meta": eras.request_meta(eras.MODERN_VERSIONS[0], CLIENT_INFO)}})

    def _discovered(self, answer: dict[str, Any]) -> bytes:
        """The probe answered: a modern server gets the listen stream; any other answer the handshake (``auto``)."""
        kind, version, offered = eras.read_discover(answer)
        if offered is not None:
            self.report.versions_offered = offered
        if kind == "modern" and self.phase in (Phase.DISCOVERING, Phase.INITIALIZING):
            self.pending.pop(self._initialize_id, None)  # a handshake sent after the wait is no longer awaited
            late = "; the handshake sent after the wait is not awaited" if self.phase is Phase.INITIALIZING else ""
            self.report.discover, self.report.protocol_version = "modern", version
            self._say(f"{version} (server/discover answered{late})")
            return self._listen()
        if self.phase is not Phase.DISCOVERING:  # a late answer after the fallback: the handshake decides
            if self._initialize_id not in self.pending:  # ... which was refused: nothing is shared
                self._fail_era("no shared revision")
            return b""
        error = answer.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        found = "no shared revision" if kind == "none" else f"legacy (error {code})" if isinstance(code, int) else (
            "legacy (no DiscoverResult)")
        if kind == "none" or self.protocol != "auto":
            self._fail_era(found)
            return b""
        return self._fall_back(version, found)

    def _undiscovered(self) -> bytes:
        """The probe went unanswered for ``eras.DISCOVER_TIMEOUT``: the handshake (``auto``), its answer still read."""
        if self.phase is not Phase.DISCOVERING or self.protocol != "auto":
            self._fail_era(self.report.discover or f"no answer within {eras.DISCOVER_TIMEOUT:g} s")
            return b""
        assert self._discover_id is not None
        self.pending[self._discover_id] = ("server/discover", float("inf"))  # a late DiscoverResult still wins
        return self._fall_back(None, f"legacy (no answer within {eras.DISCOVER_TIMEOUT:g} s)")

    def _fall_back(self, version: str | None, found: str) -> bytes:
        self.report.discover = found
        self._say(f"the 2025 handshake, offering {version or self.protocol_version} (server/discover: {found})")
        if version is not None:
            self.protocol_version = version
        self.phase = Phase.INITIALIZING
        self.pending[self._initialize_id] = ("initialize", float("inf"))
        return self._handshake()

    def _fail_era(self, found: str) -> None:
        self.report.discover = found
        # No line here: the driver's failure says it once, naming what the server offered (report.versions_offered).
        if self._discover_id is not None:
            self.pending.pop(self._discover_id, None)
        self.phase = Phase.FAILED
        self._want_shutdown("handshake failed")

    def _say(self, words: str) -> None:
        if self.on_era is not None:
            self.on_era(words)

    def _listen(self) -> bytes:
        """The ``subscriptions/listen`` stream, opened before the calls: the list changes, and the resources the
        ``resources/subscribe`` requests name (the one way to name them, on both eras)."""
        uris = [params["uri"] for method, params in self.requests if method == "resources/subscribe"
                and isinstance(params, dict) and isinstance(params.get("uri"), str)]
        self.phase = Phase.LISTENING
        self.report.listen = "unacknowledged"
        self._listen_id, self._next_id = self._next_id, self._next_id + 1
        self.pending[self._listen_id] = ("subscriptions/listen", float("inf"))  # it lasts as long as the session
        self._ack_deadline = self.clock() + eras.LISTEN_ACK_TIMEOUT
        assert self.report.protocol_version is not None
        params = {"_meta": eras.request_meta(self.report.protocol_version, CLIENT_INFO), **eras.listen_params(uris)}
        return _message({"jsonrpc": "2.0", "id": self._listen_id, "method": "subscriptions/listen", "params": params})

    def _go(self) -> bytes:
        """The listen stream acknowledged (or given up on): the modern era's requests and calls. The 2025-only ones
        are folded in: ``resources/subscribe`` into the stream, ``logging/setLevel`` into each request's log level."""
        self.phase = Phase.READY
        self._ack_deadline = float("inf")
        level = self.server_log_level
        made: list[tuple[str, Any]] = []
        for method, params in self.requests:
            if method == "logging/setLevel":
                given = params.get("level") if isinstance(params, dict) else None
                level = level or (given if given in eras.LOG_LEVELS else None)
            elif method != "resources/subscribe":
                made.append((method, params))
        assert self.report.protocol_version is not None
        return self._send_work(made, eras.request_meta(self.report.protocol_version, CLIENT_INFO, level or "debug"))

    def _answered(self, request_id: int, message: dict[str, Any] | None) -> None:
        label = self._labels.pop(request_id, "")
        if self.on_answer is not None:
            self.on_answer(label, message)

    def _answer(self, request_id: Any, method: Any) -> bytes:
        if not self.server_reading or self._answer_bytes >= ANSWER_BYTES_A_READ:  # an answer would only pile up here
            self.report.requests_unanswered += 1
            return b""
        self.report.requests_answered += 1
        if method == "ping":
            answer = _message({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            answer = _message({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})
        self._answer_bytes += len(answer)
        return answer

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


_ACKNOWLEDGED = b'"notifications/subscriptions/acknowledged"'


def _is_error_result(answer: dict[str, Any]) -> bool:
    """A tool call's failure reported as its result (MCP's ``isError: true``), not as a JSON-RPC error."""
    result = answer.get("result")
    return isinstance(result, dict) and result.get("isError") is True


def _message(obj: dict[str, Any]) -> bytes:
    return dumps(obj) + b"\n"
