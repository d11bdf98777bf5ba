"""A capture's payloads, batch by batch, as its reads return them: memory stays bounded.

Each batch is the payloads one read completed, so the caller prints and flushes as the
input arrives (a pipe from a live relay) and holds at most one read's chunk and one
record in progress, whatever the capture's length.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Union

from .. import stream
from ._safe import UsageError

Payload = Union[bytes, memoryview]
PREFIX = 4
HEAD = 64
"""Bytes of a stream's start looked at to tell JSON text from records."""
_JSON_SPACE = b" \t\r\n"
_unpack = struct.Struct(">I").unpack_from
RECORDS, HEX = "a stream of records", "payloads in hex"
"""What each reader expected, for the refusal of JSON."""
_TEXT = frozenset(range(0x20, 0x7F)) | frozenset(range(0x80, 0x100)) | frozenset(_JSON_SPACE)


class NotRecords(UsageError):
    """The input is JSON text or JSON Lines (a capture of a server's lines, say), not records.

    Raised where the first length prefix would be over the limit and the first bytes are
    text, so a real capture is never taken for one; the caller names the input and what to run.
    """

    def __init__(self, expected: str) -> None:
        super().__init__(f"JSON text or JSON Lines, not {expected}")
        self.expected = expected


def looks_like_json(head: bytes | bytearray, max_record: int) -> bool:
    """Whether a stream's first bytes are JSON text rather than a length prefix within ``max_record``.

    JSON whitespace, then ``{`` or ``[``, every byte text (no control byte but JSON
    whitespace: a length prefix of a real record has zero bytes), and read as a prefix,
    a length over the limit.
    """
    return (len(head) >= PREFIX and int.from_bytes(head[:PREFIX], "big") > max_record
            and head.lstrip(_JSON_SPACE)[:1] in (b"{", b"[") and all(byte in _TEXT for byte in head[:HEAD]))


def json_instead(head: bytes, max_record: int, *, hex: bool) -> bool:
    """Whether an input's first bytes are JSON where the envelope (or, ``hex``, a hex line) is expected."""
    if hex:  # the first line that is neither blank nor a comment
        line = next((line for line in (raw.strip() for raw in head.split(b"\n")) if line and not line.startswith(b"#")), b"")
        return line[:1] in (b"{", b"[")
    return looks_like_json(head, max_record)


class _Prefixes:
    """Where the first length prefix over the limit starts in a chunk, following record boundaries.

    ``RecordReader.feed`` raises on such a prefix and drops the records it completed in
    the same call; cutting the chunk just before the prefix lets those be inspected first,
    as the whole records before a broken tail always are.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.skip = 0
        self.head = b""

    def bad_at(self, chunk: bytes) -> int | None:
        size, at, limit = len(chunk), self.skip, self.limit
        if self.head:  # a prefix begun in the last chunk
            take = min(PREFIX - len(self.head), size)
            self.head += chunk[:take]
            if len(self.head) < PREFIX:
                return None
            length, self.head = int.from_bytes(self.head, "big"), b""
            if length > limit:
                return 0  # it starts in the last chunk
            at = take + length
        while size - at >= PREFIX:  # a record at a time: one unpack, no slice
            (length,) = _unpack(chunk, at)
            if length > limit:
                return at
            at += PREFIX + length
        if at >= size:
            self.skip = at - size
        else:
            self.skip, self.head = 0, chunk[at:]
        return None


def envelope(chunks: Iterable[bytes], max_record: int) -> Iterator[list[Payload]]:
    """The records of a stream envelope; raises StreamError where the stream breaks, after the whole records before it.

    Raises NotRecords where the input starts as JSON text: the first bytes are held until
    a length prefix and a byte other than JSON whitespace have come (a capture's first
    prefix has a zero byte, so this holds back nothing of one).
    """
    reader = stream.RecordReader(max_record)
    prefixes = _Prefixes(max_record)
    start: bytes | None = b""
    for chunk in chunks:
        if start is not None:
            start += chunk
            if len(start) < PREFIX or (len(start) < HEAD and not start.lstrip(_JSON_SPACE)):
                continue
            chunk, start = start, None
            if looks_like_json(chunk, max_record):
                raise NotRecords(RECORDS)
        yield from _feed(reader, prefixes, chunk)
    if start:
        if looks_like_json(start, max_record):
            raise NotRecords(RECORDS)
        yield from _feed(reader, prefixes, start)
    reader.close()


def _feed(reader: stream.RecordReader, prefixes: _Prefixes, chunk: bytes) -> Iterator[list[Payload]]:
    cut = prefixes.bad_at(chunk)
    if cut:
        yield reader.feed(chunk[:cut])
        chunk = chunk[cut:]
    yield reader.feed(chunk)


def hex_lines(chunks: Iterable[bytes], max_record: int) -> Iterator[list[Payload]]:
    """One payload a line in hex (blank lines and ``#`` comments skipped); a line may not outgrow ``max_record``."""
    longest = 2 * max_record + 4096
    pending = bytearray()
    number = payloads = 0
    for chunk in chunks:
        last = chunk.rfind(b"\n")
        if last < 0:
            pending += chunk
            if len(pending) > longest:
                raise UsageError(f"line {number + 1} is longer than --max-record allows")
            continue
        pending += chunk[:last]
        lines = pending.split(b"\n")
        pending = bytearray(chunk[last + 1:])
        batch: list[Payload] = []
        for line in lines:
            number += 1
            payload = _hex_payload(line, number, max_record, longest, first=not payloads)
            if payload is not None:
                batch.append(payload)
                payloads += 1
        yield batch
    if pending:
        last_payload = _hex_payload(pending, number + 1, max_record, longest, first=not payloads)
        yield [] if last_payload is None else [last_payload]


def _hex_payload(line: bytes | bytearray, number: int, max_record: int, longest: int, *, first: bool = False) -> bytes | None:
    if len(line) > longest:
        raise UsageError(f"line {number} is longer than --max-record allows")
    text = line.strip()
    if not text or text.startswith(b"#"):
        return None
    try:
        payload = bytes.fromhex(text.decode("ascii"))
    except ValueError:
        if first and text[:1] in (b"{", b"["):  # the first payload line: the input is JSON, not one bad line
            raise NotRecords(HEX) from None
        raise UsageError(f"line {number} is not hex") from None
    if len(payload) > max_record:
        raise UsageError(f"line {number} is longer than --max-record allows")
    return payload
