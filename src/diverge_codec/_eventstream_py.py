"""Server-sent events as bytes, in pure Python: the twin of ``_eventstream_c.pyx``, and its typed reference.

The WHATWG "event stream interpretation" on bytes (``relay/eventstream.py`` lists the rules).
Each chunk is read with bytes methods only (no regex, no object per line but the line's
own bytes), and every step is linear in the bytes fed, however they are cut: a line that
spans chunks is kept in a bytearray and joined once, when it ends; a line longer than
``max_data`` + ``LINE_SLACK`` is not kept at all, only read as it passes (its field name,
and a ``retry``'s digits), and a ``retry`` of any length is read without ever making an
int of more than seven digits. A lone CR ends its line at once: an LF that comes next,
in the next chunk, is skipped then, so no event waits for the chunk after its last byte.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

from ._stream_py import _owner

__all__ = ["LINE_SLACK", "MAX_DATA", "MAX_RETRY_MS", "NAMED_DATA_LIMIT", "NAMED_LIMIT", "EventParser", "RecentIds"]

MAX_RETRY_MS = 600_000
"""The largest ``retry_ms``: a server's larger reconnection time is clamped to it."""
NAMED_LIMIT = 16
"""Named events kept in ``EventParser.named`` at most; later ones are counted in ``named_dropped``."""
NAMED_DATA_LIMIT = 4096
"""The most data a named event may hold to be kept in ``named``."""
LINE_SLACK = 64
"""Bytes a line may hold beyond ``max_data`` (its field name, colon and space) before it is no longer kept."""
MAX_DATA = min(1 << 32, sys.maxsize >> 2)
"""The largest ``max_data``."""
MAX_CAPACITY = 1 << 24
"""The largest ``RecentIds`` capacity."""

_BOM = b"\xef\xbb\xbf"
_RETRY_CAP = MAX_RETRY_MS + 1
# What a line too long to keep is, read from its head: the rest of it is skipped.
_SKIP_OTHER, _SKIP_EVENT, _SKIP_RETRY = 1, 2, 3

BUSY = ("EventParser is in use: feed and close cannot run inside a feed or close of the same parser "
        "(from a callback, a hook or another thread)")
INIT_TWICE = "EventParser.__init__ runs once: make a new parser instead of re-initialising one"
NOT_READY = "EventParser is not initialised: its __init__ did not run to the end"
NO_PICKLE = "{} cannot be pickled or copied: make a new one"


def _more_digits(value: int, digits: bytes) -> int:
    """``value`` (at most MAX_RETRY_MS + 1) followed by ``digits`` (ASCII digits), capped at MAX_RETRY_MS + 1."""
    if not value:
        digits = digits.lstrip(b"0")
    if len(digits) > 7:
        return _RETRY_CAP
    scale: int = 10 ** len(digits)
    return min(value * scale + int(digits or b"0"), _RETRY_CAP)


def _key(event_id: bytes) -> int:
    """What RecentIds keeps of an id: its 64-bit hash (SipHash, keyed per process), never 0."""
    return hash(event_id) or 1


class RecentIds:
    """Event ids already relayed in one session, bounded memory (a replay is an event whose id was seen).

    It keeps a 64-bit hash of each id, not the id: memory is bounded by ``capacity``
    whatever the ids' lengths, and the oldest id is forgotten first.
    """

    def __init__(self, capacity: int = 65536) -> None:
        if type(capacity) is not int or not 1 <= capacity <= MAX_CAPACITY:
            raise ValueError(f"capacity must be an int from 1 to {MAX_CAPACITY}")
        self.capacity: int = capacity
        self._order: deque[int] = deque()
        self._keys: set[int] = set()

    def clear(self) -> None:
        """Forget every id: a new session."""
        self._order.clear()
        self._keys.clear()

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, event_id: object) -> bool:
        return _key(_owner(event_id, "RecentIds")) in self._keys

    def add(self, event_id: bytes | bytearray | memoryview) -> bool:
        """Remember ``event_id``: True if it is new, False if it was seen (nothing changes then)."""
        return self._add(_key(_owner(event_id, "RecentIds")))

    def _add(self, key: int) -> bool:
        if key in self._keys:
            return False
        if len(self._order) == self.capacity:
            self._keys.discard(self._order.popleft())
        self._order.append(key)
        self._keys.add(key)
        return True

    def __repr__(self) -> str:
        return f"<RecentIds {len(self._keys)} of {self.capacity}>"

    def __reduce__(self) -> Any:
        raise TypeError(NO_PICKLE.format("RecentIds"))


def check_settings(max_data: object, seen: object, recent_ids: type) -> None:
    """Refuse, in both cores' words, a ``max_data`` or ``seen`` that EventParser cannot take."""
    if type(max_data) is not int or not 1 <= max_data <= MAX_DATA:
        raise ValueError(f"max_data must be an int from 1 to {MAX_DATA}")
    if seen is not None and type(seen) is not recent_ids:
        raise TypeError(f"seen must be a RecentIds or None, not {type(seen).__name__}")


class EventParser:
    """The events of one server-sent event stream, fed in chunks of any size; after ``close()``, of the next.

    ``feed`` returns the data of each event of type ``message`` (or none); ``close`` ends a
    stream (a response body) and keeps ``last_event_id`` and ``retry_ms`` for the stream that
    resumes it.
    """

    # What a parser whose __init__ has not run to the end reads as, as the compiled twin's fields do.
    _claimed = False
    _busy = False
    _ready = False

    def __init__(self, max_data: int, seen: RecentIds | None = None) -> None:
        if self._claimed:
            raise RuntimeError(INIT_TWICE)
        self._claimed = True
        check_settings(max_data, seen, RecentIds)
        self.max_data: int = max_data
        self.seen: RecentIds | None = seen
        self.last_event_id: bytes | None = None
        """The resumption point (``Last-Event-ID``): the id of the last whole event that gave one (no NUL), None before any."""
        self.retry_ms: int | None = None
        """The server's reconnection time (digits only), clamped to MAX_RETRY_MS."""
        self.too_large: int = 0
        """Message events not kept because their data was over ``max_data`` (the driver reads and resets it)."""
        self.replayed: int = 0
        """Events dropped because their own id was already in ``seen``."""
        self.named: list[tuple[bytes, bytes]] = []
        """Dispatched events of another type than ``message``: (type, data), oldest first (the driver may pop)."""
        self.named_dropped: int = 0
        """Named events not kept: over NAMED_LIMIT in ``named``, data over NAMED_DATA_LIMIT or ``max_data``, a type too long."""
        self._limit = max_data + LINE_SLACK
        self._held = bytearray()
        self._new_stream()
        self._new_event()
        self._ready = True

    def __repr__(self) -> str:
        if not self._ready:
            return "<EventParser not initialised>"
        return f"<EventParser max_data={self.max_data} too_large={self.too_large} replayed={self.replayed}>"

    def __reduce__(self) -> Any:
        raise TypeError(NO_PICKLE.format("EventParser"))

    def _new_stream(self) -> None:
        self._held.clear()
        self._skip = 0  # a _SKIP_* while a line too long to keep passes
        self._retry_ok = False
        self._retry_value = 0
        self._bom = 0  # bytes of a leading BOM matched; 3 once past the stream's start
        self._after_cr = False

    def _new_event(self) -> None:
        self._data: list[bytes] = []
        self._size = 0
        self._has_data = False
        self._oversized = False
        self._type = b""
        self._type_oversized = False
        self._id: bytes | None = None  # the event's id (its last id line without NUL), None if it has none

    def _enter(self) -> None:
        if not self._ready:
            raise RuntimeError(NOT_READY)
        if self._busy:
            raise RuntimeError(BUSY)
        self._busy = True

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[bytes]:
        """The data of each ``message`` event ``chunk`` completes, in order (replays dropped)."""
        self._enter()
        try:
            return self._feed(_owner(chunk, "feed"))
        finally:
            self._busy = False

    def close(self) -> list[bytes]:
        """The stream ended: a partial line and event are discarded; the next feed starts a new stream."""
        self._enter()
        try:
            self._new_stream()
            self._new_event()
            return []
        finally:
            self._busy = False

    def _feed(self, chunk: bytes) -> list[bytes]:
        if self._bom < 3:
            chunk = self._past_bom(chunk)
        if self._after_cr and chunk:
            self._after_cr = False
            if chunk[0] == 10:
                chunk = chunk[1:]
        out: list[bytes] = []
        if not chunk:
            return out
        self._after_cr = chunk[-1] == 13
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        partial = lines.pop()
        if lines:
            if self._skip:
                self._skip_more(lines[0])
                self._end_skip()
                del lines[0]
            elif self._held:
                lines[0] = bytes(self._held) + lines[0]
                self._held.clear()
            for line in lines:
                self._line(line, out)
        if partial:
            if self._skip:
                self._skip_more(partial)
            elif len(self._held) + len(partial) > self._limit:
                self._begin_skip(partial)
            else:
                self._held += partial
        return out

    def _past_bom(self, chunk: bytes) -> bytes:
        """The chunk after what it holds of a leading BOM; the bytes of one not completed come back as text."""
        matched = self._bom
        need = _BOM[matched:]
        if chunk[:len(need)] == need[:len(chunk)]:
            self._bom = min(3, matched + len(chunk))
            return chunk[len(need):]
        self._bom = 3
        return _BOM[:matched] + chunk

    def _begin_skip(self, partial: bytes) -> None:
        """A line too long to keep (the held bytes, then partial: more than _limit): what its head says it is.

        Its name and colon, if it has a field the parser reads, are in its first 6 bytes; a
        ``retry``'s digits are read from where they start, without joining the two parts.
        """
        held = self._held
        head = bytes(held[:8]) + partial[:8]
        colon = head.find(b":", 0, 6)
        self._skip = _SKIP_OTHER
        if colon >= 0:
            name, start = head[:colon], colon + 1 + (head[colon + 1] == 32)
            if name == b"data":
                self._has_data = self._oversized = True
                self._data = []
            elif name == b"event":
                self._skip = _SKIP_EVENT
            elif name == b"retry":
                self._skip, self._retry_ok, self._retry_value = _SKIP_RETRY, True, 0
                self._skip_more(bytes(held[start:]))
                self._skip_more(partial[max(0, start - len(held)):])
        held.clear()

    def _skip_more(self, part: bytes) -> None:
        if self._skip == _SKIP_RETRY and self._retry_ok and part:
            if part.isdigit():
                self._retry_value = _more_digits(self._retry_value, part)
            else:
                self._retry_ok = False

    def _end_skip(self) -> None:
        if self._skip == _SKIP_RETRY and self._retry_ok:
            self.retry_ms = min(self._retry_value, MAX_RETRY_MS)
        elif self._skip == _SKIP_EVENT:
            self._type, self._type_oversized = b"", True
        self._skip = 0

    def _line(self, line: bytes, out: list[bytes]) -> None:
        if not line:
            self._dispatch(out)
            return
        if line[0] == 58:  # ":", a comment
            return
        name, colon, value = line.partition(b":")
        if value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            if not self._oversized:
                size = self._size + len(value) + (1 if self._has_data else 0)
                if size > self.max_data:
                    self._oversized, self._data = True, []
                else:
                    self._data.append(value)
                    self._size = size
            self._has_data = True
        elif name == b"id":
            if len(line) <= self._limit and b"\0" not in value:
                self._id = value
        elif name == b"event":
            if len(line) > self._limit:
                self._type, self._type_oversized = b"", True
            else:
                self._type, self._type_oversized = value, False
        elif name == b"retry" and value.isdigit():
            self.retry_ms = min(_more_digits(0, value), MAX_RETRY_MS)

    def _dispatch(self, out: list[bytes]) -> None:
        if self._id is not None:  # the resumption point moves when the event is whole, with or without data
            self.last_event_id = self._id
        if self._has_data:
            self._deliver(out)
        self._new_event()

    def _deliver(self, out: list[bytes]) -> None:
        if self._id and self.seen is not None and not self.seen._add(_key(self._id)):
            self.replayed += 1
        elif self._type_oversized or (self._type and self._type != b"message"):
            if (self._oversized or self._type_oversized or self._size > NAMED_DATA_LIMIT
                    or len(self.named) >= NAMED_LIMIT):
                self.named_dropped += 1
            else:
                self.named.append((self._type, b"\n".join(self._data)))
        elif self._oversized:
            self.too_large += 1
        else:
            out.append(b"\n".join(self._data))
