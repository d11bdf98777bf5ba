"""The stream envelope in pure Python: the twin of ``_stream_c.pyx``.

A record is a 4-byte big-endian length, then that many bytes of one channel payload.
This envelope is this library's, for files and byte streams; it is not part of the
diverge specification, where the transport frames payloads itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import BinaryIO, Union

from ._model import as_bytes
from .errors import RecordTooLargeError, TruncatedStreamError

DEFAULT_MAX_RECORD = 16 * 1024 * 1024
PREFIX = 4
Payload = Union[bytes, memoryview]

__all__ = ["DEFAULT_MAX_RECORD", "RecordReader", "record", "split_records", "write_record", "write_records"]


def _limit(max_record: int) -> int:
    if type(max_record) is not int or not 0 <= max_record <= 0xFFFFFFFF:
        raise ValueError("max_record must be an int from 0 to 4294967295")
    return max_record


def _view(data: object, what: str) -> tuple[object, memoryview]:
    if type(data) is bytes:
        return data, memoryview(data)
    raw = as_bytes(data)
    if raw is None:
        raise TypeError(f"{what} takes bytes, bytearray or memoryview, not {type(data).__name__}")
    return raw, memoryview(raw)


def split_records(buffer: bytes | bytearray | memoryview, max_record: int = DEFAULT_MAX_RECORD) -> list[Payload]:
    """Every record of a whole stream, as views into it (copies first unless it is bytes); raises if it ends inside one."""
    limit = _limit(max_record)
    _, view = _view(buffer, "split_records")
    size = len(view)
    records: list[Payload] = []
    at = 0
    while at < size:
        if size - at < PREFIX:
            raise TruncatedStreamError(PREFIX - (size - at), "length prefix")
        length = int.from_bytes(view[at:at + PREFIX], "big")
        if length > limit:
            raise RecordTooLargeError(length, limit)
        start = at + PREFIX
        if size - start < length:
            raise TruncatedStreamError(length - (size - start))
        records.append(view[start:start + length])
        at = start + length
    return records


class RecordReader:
    """Feed bytes as they arrive; get whole payloads back.

    A payload that lies whole inside a fed ``bytes`` chunk comes back as a view into
    it (zero-copy; bytes cannot change); one that spans chunks is copied out of the
    reader's buffer. ``close()`` marks the end of the stream, the channel's finish.
    """

    def __init__(self, max_record: int = DEFAULT_MAX_RECORD) -> None:
        self.max_record = _limit(max_record)
        self._buffer = bytearray()
        self.records = 0
        self.closed = False

    def __repr__(self) -> str:
        return f"<RecordReader records={self.records} pending={len(self._buffer)} closed={self.closed}>"

    @property
    def pending(self) -> int:
        """Bytes held that do not yet make a whole record."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[Payload]:
        """Take the next bytes of the stream; return the payloads they complete, in order."""
        if self.closed:
            raise ValueError("feed after close: the stream has ended")
        owner, view = _view(data, "feed")
        out: list[Payload] = []
        buffer = self._buffer
        at, size = 0, len(view)
        while buffer:  # finish the record that spans chunks
            if len(buffer) < PREFIX:
                if at == size:
                    break
                take = min(PREFIX - len(buffer), size - at)
                buffer += view[at:at + take]
                at += take
                continue
            length = self._length(buffer)
            take = min(PREFIX + length - len(buffer), size - at)
            buffer += view[at:at + take]
            at += take
            if len(buffer) < PREFIX + length:
                break
            out.append(bytes(buffer[PREFIX:]))
            buffer.clear()
        if not buffer:
            whole = type(owner) is bytes
            while size - at >= PREFIX:
                length = int.from_bytes(view[at:at + PREFIX], "big")
                if length > self.max_record:
                    raise RecordTooLargeError(length, self.max_record)
                if size - at - PREFIX < length:
                    break
                record = view[at + PREFIX:at + PREFIX + length]
                out.append(record if whole else record.tobytes())
                at += PREFIX + length
            buffer += view[at:]
            if len(buffer) >= PREFIX:
                self._length(buffer)
        self.records += len(out)
        return out

    def _length(self, buffer: bytearray) -> int:
        length = int.from_bytes(buffer[:PREFIX], "big")
        if length > self.max_record:
            raise RecordTooLargeError(length, self.max_record)
        return length

    def close(self) -> None:
        """The stream ended: raises TruncatedStreamError if it ended inside a record."""
        self.closed = True
        held = len(self._buffer)
        if not held:
            return
        if held < PREFIX:
            raise TruncatedStreamError(PREFIX - held, "length prefix")
        raise TruncatedStreamError(PREFIX + self._length(self._buffer) - held)


def record(payload: bytes | bytearray | memoryview) -> bytes:
    """One record: the length prefix and the payload."""
    _, view = _view(payload, "record")
    if len(view) > 0xFFFFFFFF:
        raise ValueError("a record holds at most 4294967295 bytes")
    return len(view).to_bytes(PREFIX, "big") + view.tobytes()


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
