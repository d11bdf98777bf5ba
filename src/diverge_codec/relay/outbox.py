"""Relaying an MCP server's notifications onto a mcp-notifications channel, sans-IO.

A proxy reads JSON-RPC messages from the container's MCP server and sends each
notification on the channel as the server sent it. The channel carries the
notification (rmcp's ``ServerNotification``: ``method``, ``params``), not the JSON-RPC
envelope around it, so the relay removes the ``jsonrpc`` member, wherever the SDK
put it, and keeps every other byte. ``relay_frame`` never yields a payload the
channel's ``decode`` refuses: a notification it would refuse raises the channel's
NotificationParseError, for the relay to count and drop. The compiled core does this
with a scan that builds no Python object and accepts exactly what orjson reads
(``mcp_notifications.splice_notification``); the pure core parses.

``Outbox`` is the seed's "a notification the channel could not keep pace with is not
sent": a queue bounded in bytes that drops, and counts, what does not fit.
"""

from __future__ import annotations

from collections import deque
from types import ModuleType
from typing import Any

from .. import mcp_notifications, stream
from .._model import ErrorData

_PREFIX = 4  # the stream envelope's length, before each payload in a record
MAX_RECORD_BYTES = 0xFFFFFFFF
"""The largest record the stream envelope's 4-byte length can frame."""

UNREACHABLE_CODE = -32000
"""JSON-RPC's first implementation-defined server error: the code of the relay's Error frame."""


def relay_frame(message: bytes | bytearray | memoryview, codec: ModuleType = mcp_notifications) -> bytes | None:
    """The channel payload for one server message (tag 0 and the notification), or None.

    ================================================  ==========================================
    message                                           result
    ================================================  ==========================================
    an object with ``method`` and no ``id``           tag 0 + the object without its top-level
                                                      ``jsonrpc`` member(s), every other byte kept
    an object with an ``id`` (any spelling)           None: a request or a response
    valid JSON that is not an object                  None: no JSON-RPC message, not relayed
    nothing but JSON whitespace (a blank line)        None: no message at all
    not JSON as orjson reads it (invalid UTF-8,       NotificationParseError, the parser's phrase
    lone surrogate escape, NaN, 1e400, depth > 1024,  (what ``decode`` says of that body)
    a truncated or non-JSON line)
    an object without ``id`` whose method is no       NotificationParseError, ``decode``'s words
    string, params or params._meta of the wrong kind
    ================================================  ==========================================

    A non-JSON line is refused rather than ignored: the relay counts it as a notification
    the channel refuses. ``codec`` is the mcp-notifications core to frame with.
    """
    return codec.splice_notification(message)  # type: ignore[no-any-return]


def notification_json(message: bytes | bytearray | memoryview) -> bytes | None:
    """The notification inside one JSON-RPC message, envelope removed, or None (see ``relay_frame``)."""
    payload = relay_frame(message)
    return None if payload is None else payload[1:]


def unreachable_frame(reason: str = "the container's MCP server cannot be reached") -> bytes:
    """The one Error payload a relay sends when the server is gone or never answered."""
    return mcp_notifications.encode(mcp_notifications.Error(ErrorData(UNREACHABLE_CODE, reason)))


class Outbox:
    """Payloads waiting for the channel, ``max_bytes`` of them and one larger; the rest are dropped.

    ``offer`` never blocks and never grows the queue past its bound: a payload that
    does not fit is counted in ``dropped`` and forgotten, as the seed says a
    notification the channel could not keep pace with is. A payload larger than the
    whole bound is admitted when no other such payload is queued, and is not counted
    against the bound, so a notification up to the relay's line limit reaches a
    consumer that keeps up, and so do the small ones right behind it: the queue holds
    at most ``max_bytes`` plus one payload. ``abandon`` empties the queue when the
    channel will take nothing more; what it held counts in ``abandoned``.

    The queue holds records (the stream envelope's length and the payload), in blocks:
    ``offer_records`` queues a block the relay's ``ChunkFramer`` wrote whole when it fits,
    and ``take_records`` hands everything to the channel as one write. The bound counts
    payload bytes, as ``offer`` does.
    """

    __slots__ = ("_queue", "_count", "max_bytes", "queued_bytes", "high_water", "accepted", "dropped", "abandoned",
                 "_oversized")

    def __init__(self, max_bytes: int = 1 << 20) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1")
        self._queue: deque[tuple[bytes, int, int]] = deque()  # (records, how many, their payload bytes)
        self._count = 0
        self.max_bytes: int = max_bytes
        self.queued_bytes: int = 0
        self.high_water: int = 0
        self.accepted: int = 0
        self.dropped: int = 0
        self.abandoned: int = 0
        self._oversized = 0  # the size of the one queued payload over max_bytes, if any

    def __repr__(self) -> str:
        try:
            return (f"Outbox(queued={self._count}, queued_bytes={self.queued_bytes}, "
                    f"accepted={self.accepted}, dropped={self.dropped})")
        except AttributeError:  # made by __new__, never initialised
            return "<Outbox (not initialised)>"

    def __len__(self) -> int:
        return self._count

    def offer(self, payload: bytes) -> bool:
        """Queue a payload if it fits (or is the one oversized payload); False (and one more ``dropped``) if not."""
        if not self._admits(len(payload)):
            return False
        self._append(stream.record(payload), 1, len(payload))
        return True

    def offer_all(self, payloads: list[bytes]) -> int:
        """``offer`` each payload, in order: how many were queued. One step when they all fit."""
        if not payloads:
            return 0
        sizes = list(map(len, payloads))
        if self._fits_whole(sum(sizes), max(sizes)):
            records = bytearray()
            stream.write_records(records, payloads)
            self._append(bytes(records), len(payloads), sum(sizes))
            return len(payloads)
        return sum(map(self.offer, payloads))

    def offer_records(self, records: bytes, count: int, payload_bytes: int, largest: int) -> int:
        """``offer`` each of ``count`` records (as ``ChunkFramer`` returns them), in order: how many were queued.

        One step when they all fit; else each record is offered alone."""
        if not count:
            return 0
        if self._fits_whole(payload_bytes, largest):
            self._append(records, count, payload_bytes)
            return count
        return sum(map(self.offer, _payloads(records)))

    def take(self, max_items: int = 256) -> list[bytes]:
        """Up to ``max_items`` payloads, oldest first, removed from the queue."""
        queue, taken = self._queue, list[bytes]()
        while queue and len(taken) < max_items:
            records, count, _ = queue.popleft()
            payloads = _payloads(records)
            wanted = max_items - len(taken)
            if count > wanted:  # the rest of the block stays first in the queue
                rest = payloads[wanted:]
                at = len(records) - sum(map(len, rest)) - _PREFIX * len(rest)
                queue.appendleft((records[at:], len(rest), sum(map(len, rest))))
                payloads = payloads[:wanted]
            taken += payloads
        self._count -= len(taken)
        self.queued_bytes -= sum(map(len, taken))
        if not self._count or (self._oversized and self.queued_bytes < self._oversized):  # it was taken
            self._oversized = 0
        return taken

    def take_records(self) -> tuple[bytes, int]:
        """Every queued payload as records, oldest first, in one ``bytes`` (the channel's next write), and how many."""
        queue, count = self._queue, self._count
        records = queue[0][0] if len(queue) == 1 else b"".join([block for block, _, _ in queue])
        queue.clear()
        self._count = self.queued_bytes = self._oversized = 0
        return records, count

    def abandon(self) -> int:
        """Forget every queued payload (the channel is gone or will not drain): how many."""
        count = self._count
        self._queue.clear()
        self._count = self.queued_bytes = self._oversized = 0
        self.abandoned += count
        return count

    def stats(self) -> dict[str, int]:
        """The counters, for a log line or a report."""
        return {"accepted": self.accepted, "dropped": self.dropped, "abandoned": self.abandoned,
                "high_water_bytes": self.high_water, "max_bytes": self.max_bytes}

    def _fits_whole(self, total: int, largest: int) -> bool:
        return largest <= self.max_bytes and self.queued_bytes - self._oversized + total <= self.max_bytes

    def _admits(self, size: int) -> bool:
        """Whether one payload of ``size`` bytes may be queued now (it then takes the oversized place if it is
        over the bound); counted dropped if not."""
        if size > self.max_bytes:
            if not self._oversized:
                self._oversized = size
                return True
        elif self.queued_bytes - self._oversized + size <= self.max_bytes:
            return True
        self.dropped += 1
        return False

    def _append(self, records: bytes, count: int, payload_bytes: int) -> None:
        self._queue.append((records, count, payload_bytes))
        self._count += count
        self.queued_bytes += payload_bytes
        self.accepted += count
        if self.queued_bytes > self.high_water:
            self.high_water = self.queued_bytes


def _payloads(records: bytes) -> list[bytes]:
    """The payloads of a block of whole records the outbox queued, as ``bytes`` (``split_records``
    hands a long one out as a view into the block)."""
    return [bytes(payload) for payload in stream.split_records(records, MAX_RECORD_BYTES)]
