"""Server-sent events as bytes, sans-IO: what MCP's Streamable HTTP transport sends its messages in.

An event's ``data`` is handed on as the server's bytes, not decoded text, so a message over
HTTP goes through ``relay_frame`` exactly as a stdio line does (invalid UTF-8 is refused
there, in the channel's words, not replaced here). The rules are the WHATWG HTML
standard's "event stream interpretation": lines end with CRLF, LF or CR; a line starting
with ``:`` is a comment; ``data`` lines are joined with LF; a blank line dispatches the event;
``id`` sets the last event id (the resumption point, even for an event with no data, as
MCP servers send to prime a stream); an event with no data is not dispatched; a leading
byte order mark is skipped.

Memory is bounded: an event whose data grows past ``max_data`` bytes is not kept, only
counted (``too_large``), and a line is never held longer than that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Event", "EventParser"]

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_FIELD_SLACK = 64
"""Bytes a line may hold beyond ``max_data`` (its field name and colon) before it is given up."""


@dataclass(frozen=True)
class Event:
    """One dispatched event: its data (the server's bytes), type and the last event id at the time."""

    data: bytes
    event: bytes = b"message"
    id: bytes | None = None


class EventParser:
    """Events out of a byte stream, fed in chunks of any size."""

    def __init__(self, max_data: int) -> None:
        if max_data < 1:
            raise ValueError("max_data must be at least 1")
        self.max_data: int = max_data
        self.last_event_id: bytes | None = None
        """The resumption point (``Last-Event-ID``): the last ``id`` field seen, None before any."""
        self.retry_ms: int | None = None
        """The server's reconnection time, if it gave one."""
        self.too_large: int = 0
        """Events not kept because their data was over ``max_data``."""
        self._held = b""
        self._started = False
        self._skipping_line = False
        self._data: list[bytes] = []
        self._data_bytes = 0
        self._has_data = False
        self._oversized = False
        self._event = b""

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes."""
        data = self._held + chunk if self._held else chunk
        if not self._started:
            if len(data) < len(_BOM) and _BOM.startswith(data):
                self._held = data
                return []
            self._started = True
            if data.startswith(_BOM):
                data = data[len(_BOM):]
        if data.endswith(b"\r"):  # a CR may be the first half of a CRLF: decide with the next chunk
            data, self._held = data[:-1], b"\r"
        else:
            self._held = b""
        lines = _LINE_END.split(data)
        partial = lines.pop()
        events: list[Event] = []
        for line in lines:
            if self._skipping_line:
                self._skipping_line = False
                continue
            self._line(line, events)
        if partial:
            if len(partial) > self.max_data + _FIELD_SLACK:
                self._give_up_line()
            elif not self._skipping_line:
                self._held = partial + self._held
        return events

    def close(self) -> list[Event]:
        """The stream ended: an event without its blank line is discarded, as the standard says."""
        events: list[Event] = []
        if self._held == b"\r" or (self._held and self._held.endswith(b"\r")):
            self._line(self._held[:-1], events)
        self._held = b""
        self._reset_event()
        return events

    def _give_up_line(self) -> None:
        """A line longer than any event's data may be: its event is not kept, the rest of it skipped."""
        self._skipping_line = True
        self._held = b""
        self._oversized = True
        self._has_data = True

    def _line(self, line: bytes, events: list[Event]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[:1] == b":":
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._has_data = True
            if not self._oversized:
                self._data_bytes += len(value) + (1 if self._data else 0)
                if self._data_bytes > self.max_data:
                    self._oversized, self._data = True, []
                else:
                    self._data.append(value)
        elif name == b"id":
            if b"\0" not in value:
                self.last_event_id = value
        elif name == b"event":
            self._event = value
        elif name == b"retry" and value.isdigit():
            self.retry_ms = int(value)

    def _dispatch(self, events: list[Event]) -> None:
        if self._has_data:
            if self._oversized:
                self.too_large += 1
            else:
                events.append(Event(b"\n".join(self._data), self._event or b"message", self.last_event_id))
        self._reset_event()

    def _reset_event(self) -> None:
        self._data, self._data_bytes, self._has_data, self._oversized, self._event = [], 0, False, False, b""
