"""The stream envelope in pure Python: the twin of ``_stream_c.pyx``.

A record is a 4-byte big-endian length, then that many bytes of one channel payload.
This envelope is this library's, for files and byte streams; it is not part of the
diverge specification, where the transport frames payloads itself.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, BinaryIO, Union

from ._model import as_bytes
from .errors import RecordTooLargeError, StreamError, TruncatedStreamError

DEFAULT_MAX_RECORD = 16 * 1024 * 1024
PREFIX = 4
VIEW_FROM = 2048
"""Records this long or longer are handed out as views, shorter ones as bytes copies: below it
a copy costs fewer instructions than a view (docs/performance.md, "Records"), and it does not
keep the whole stream alive as a view does."""
_unpack = struct.Struct(">I").unpack_from
Payload = Union[bytes, memoryview]

__all__ = ["DEFAULT_MAX_RECORD", "RecordReader", "record", "split_records", "write_record", "write_records"]


def _limit(max_record: int) -> int:
    if type(max_record) is not int or not 0 <= max_record <= 0xFFFFFFFF:
        raise ValueError("max_record must be an int from 0 to 4294967295")
    return max_record


def _owner(data: object, what: str) -> bytes:
    """The data as bytes: itself, or a copy (so a later change to the caller's buffer changes no record)."""
    if type(data) is bytes:
        return data
    raw = as_bytes(data)
    if raw is None:
        raise TypeError(f"{what} takes bytes, bytearray or memoryview, not {type(data).__name__}")
    return raw


def split_records(buffer: bytes | bytearray | memoryview, max_record: int = DEFAULT_MAX_RECORD) -> list[Payload]:
    """Every record of a whole stream: bytes below 2 KiB, else a view into it (copied first unless it is bytes).

    Raises if it ends inside a record.
    """
    limit = _limit(max_record)
    owner = _owner(buffer, "split_records")
    size = len(owner)
    records: list[Payload] = []
    problem: StreamError | None = None
    view = None
    at = 0
    while at < size:
        if size - at < PREFIX:
            problem = TruncatedStreamError(PREFIX - (size - at), "length prefix")
            break
        (length,) = _unpack(owner, at)
        if length > limit:
            problem = RecordTooLargeError(length, limit)
            break
        start = at + PREFIX
        at = start + length
        if size < at:
            problem = TruncatedStreamError(at - size)
            break
        if length < VIEW_FROM:  # a copy: cheaper than a view, and smaller
            records.append(owner[start:at])
        else:
            if view is None:
                view = memoryview(owner)
            records.append(view[start:at])
    if problem is not None:
        buffer = owner = view = records = None  # type: ignore[assignment]  # captured locals show no payload
        raise problem
    return records


NOT_READY = "RecordReader is not initialised: its __init__ did not run to the end"
INIT_TWICE = "RecordReader.__init__ runs once: make a new reader instead of re-initialising one"
BUSY = ("RecordReader is in use: feed and close cannot run inside a feed or close of the same reader "
        "(from a callback, a hook or another thread)")
CHANGED = "RecordReader's buffer changed under it"
NO_PICKLE = "RecordReader cannot be pickled or copied: make a new reader"


class RecordReader:
    """Feed bytes as they arrive; get whole payloads back.

    Each record is ``bytes``, except one of 2 KiB or more that lies whole inside a fed
    ``bytes`` chunk: that one is a read-only memoryview into the chunk (zero-copy; bytes
    cannot change).
    A record from any other chunk (bytearray, memoryview) is a copy, so a later change
    to the caller's buffer changes nothing. ``close()`` marks the end of the stream,
    the channel's finish. One reader reads one stream: a feed or close from inside
    another (a callback, a hook, another thread) raises RuntimeError.
    """

    # What a reader whose __init__ has not run to the end reads as, as the compiled twin's fields do.
    _claimed = False
    _busy = False
    _buffer: bytearray | None = None
    _max_record = 0
    _records = 0
    _closed = False

    def __init__(self, max_record: int = DEFAULT_MAX_RECORD) -> None:
        if self._claimed:
            raise RuntimeError(INIT_TWICE)
        self._claimed = True
        self._max_record = _limit(max_record)
        self._records = 0
        self._closed = False
        self._buffer = bytearray()  # the last store: from here the reader is ready

    # Read-only, as the compiled twin's are: what the reader has read is the reader's to say.
    @property
    def max_record(self) -> int:
        """The longest record accepted, in bytes."""
        return self._max_record

    @property
    def records(self) -> int:
        """How many records have been returned."""
        return self._records

    @property
    def closed(self) -> bool:
        """Whether close() has been called."""
        return self._closed

    def __repr__(self) -> str:
        if self._buffer is None:
            return "<RecordReader not initialised>"
        return f"<RecordReader records={self._records} pending={len(self._buffer)} closed={self._closed}>"

    def __reduce__(self) -> Any:
        raise TypeError(NO_PICKLE)

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a whole record."""
        return 0 if self._buffer is None else len(self._buffer)

    def _enter(self) -> bytearray:
        buffer = self._buffer
        if buffer is None:
            raise RuntimeError(NOT_READY)
        if self._busy:
            raise RuntimeError(BUSY)
        self._busy = True
        return buffer

    def feed(self, data: bytes | bytearray | memoryview) -> list[Payload]:
        """Take the next bytes of the stream; return the payloads they complete, in order."""
        buffer = self._enter()
        try:
            if self._closed:
                raise ValueError("feed after close: the stream has ended")
            return self._feed(buffer, data)
        finally:
            self._busy = False

    def _feed(self, buffer: bytearray, data: bytes | bytearray | memoryview) -> list[Payload]:
        whole = type(data) is bytes  # a view only into bytes: any other chunk may change after feed
        owner = _owner(data, "feed")
        out: list[Payload] = []
        limit = self._max_record
        at, size, view = 0, len(owner), None
        held = len(buffer)  # the reader's own: it never holds more than one record
        if held:  # finish the record that spans chunks
            if held < PREFIX:
                at = min(PREFIX - held, size)
                buffer += owner[:at]
                if held + at < PREFIX:
                    return out
            length = _length(buffer, limit)
            take = min(PREFIX + length - len(buffer), size - at)
            if take > 0:
                buffer += owner[at:at + take]
                at += take
            if len(buffer) < PREFIX + length:
                return out
            with memoryview(buffer) as in_buffer, in_buffer[PREFIX:PREFIX + length] as part:
                out.append(bytes(part))  # one copy: a slice, then bytes(), made two
            buffer.clear()
        while size - at >= PREFIX:
            (length,) = _unpack(owner, at)
            if length > limit:
                raise RecordTooLargeError(length, limit)
            if size - at - PREFIX < length:
                break
            at += PREFIX
            if length < VIEW_FROM or not whole:  # a copy (see split_records); a view only into bytes the caller gave
                out.append(owner[at:at + length])
            else:
                if view is None:
                    view = memoryview(owner)
                out.append(view[at:at + length])
            at += length
        if at < size:
            buffer += owner[at:]
        self._records += len(out)
        return out

    def close(self) -> None:
        """The stream ended: raises TruncatedStreamError if it ended inside a record."""
        buffer = self._enter()
        try:
            self._closed = True
            held = len(buffer)
            if not held:
                return
            if held < PREFIX:
                raise TruncatedStreamError(PREFIX - held, "length prefix")
            raise TruncatedStreamError(PREFIX + _length(buffer, self._max_record) - held)
        finally:
            self._busy = False


def _length(buffer: bytearray, limit: int) -> int:
    if len(buffer) < PREFIX:
        raise RuntimeError(CHANGED)
    length = int.from_bytes(buffer[:PREFIX], "big")
    if length > limit:
        raise RecordTooLargeError(length, limit)
    return length


def record(payload: bytes | bytearray | memoryview) -> bytes:
    """One record: the length prefix and the payload."""
    raw = _owner(payload, "record")
    if len(raw) > 0xFFFFFFFF:
        raise ValueError("a record holds at most 4294967295 bytes")
    return len(raw).to_bytes(PREFIX, "big") + raw


def write_record(out: bytearray | BinaryIO, payload: bytes | bytearray | memoryview) -> None:
    """Append one record to a bytearray, or write it to a binary file."""
    framed = record(payload)
    if isinstance(out, bytearray):
        out += framed
    else:
        out.write(framed)


def write_records(out: bytearray | BinaryIO, payloads: Iterable[bytes | bytearray | memoryview]) -> None:
    """write_record of each payload, in order."""
    for payload in payloads:
        write_record(out, payload)
