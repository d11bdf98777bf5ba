"""A capture's payloads, batch by batch, as its reads return them: memory stays bounded.

Each batch is the payloads one read completed, so the caller prints and flushes as the
input arrives (a pipe from a live relay) and holds at most one read's chunk and one
record in progress, whatever the capture's length.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Union

from .. import stream
from ._safe import UsageError

Payload = Union[bytes, memoryview]
PREFIX = 4


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
        size, at = len(chunk), 0
        while at < size:
            if self.skip:
                take = min(self.skip, size - at)
                self.skip -= take
                at += take
                continue
            if self.head or size - at < PREFIX:
                take = min(PREFIX - len(self.head), size - at)
                self.head += chunk[at:at + take]
                at += take
                if len(self.head) < PREFIX:
                    return None
                length, self.head, starts = int.from_bytes(self.head, "big"), b"", max(at - PREFIX, 0)
            else:
                length, starts = int.from_bytes(chunk[at:at + PREFIX], "big"), at
                at += PREFIX
            if length > self.limit:
                return starts
            self.skip = length
        return None


def envelope(chunks: Iterable[bytes], max_record: int) -> Iterator[list[Payload]]:
    """The records of a stream envelope; raises StreamError where the stream breaks, after the whole records before it."""
    reader = stream.RecordReader(max_record)
    prefixes = _Prefixes(max_record)
    for chunk in chunks:
        cut = prefixes.bad_at(chunk)
        if cut:
            yield reader.feed(chunk[:cut])
            chunk = chunk[cut:]
        yield reader.feed(chunk)
    reader.close()


def hex_lines(chunks: Iterable[bytes], max_record: int) -> Iterator[list[Payload]]:
    """One payload a line in hex (blank lines and ``#`` comments skipped); a line may not outgrow ``max_record``."""
    longest = 2 * max_record + 4096
    pending = bytearray()
    number = 0
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
            payload = _hex_payload(line, number, max_record, longest)
            if payload is not None:
                batch.append(payload)
        yield batch
    if pending:
        last_payload = _hex_payload(pending, number + 1, max_record, longest)
        yield [] if last_payload is None else [last_payload]


def _hex_payload(line: bytes | bytearray, number: int, max_record: int, longest: int) -> bytes | None:
    if len(line) > longest:
        raise UsageError(f"line {number} is longer than --max-record allows")
    text = line.strip()
    if not text or text.startswith(b"#"):
        return None
    try:
        payload = bytes.fromhex(text.decode("ascii"))
    except ValueError:
        raise UsageError(f"line {number} is not hex") from None
    if len(payload) > max_record:
        raise UsageError(f"line {number} is longer than --max-record allows")
    return payload
