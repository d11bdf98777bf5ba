"""What ``ChunkFramer`` must give, line by line: each line spliced alone, as the relay's session framed
them before the framer; the reference for ``fuzz/replay.py`` and ``tests/test_chunk_framer*.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from diverge_codec import _stream_py
from diverge_codec.errors import DecodeError


def one_by_one(splice: Callable[[bytes], bytes | None], lines: Iterable[bytes], max_line: int,
               record_limit: int) -> tuple[bytes, int, list[bytes], int, int]:
    """(records, how many, the other lines, refused, too large) for lines without their newlines."""
    records, others, invalid, too_large, count = bytearray(), [], 0, 0, 0
    for line in lines:
        if len(line) > max_line:
            too_large += 1
            continue
        if not line.strip(b" \t\r\n"):
            continue
        try:
            payload = splice(line)
        except DecodeError:
            invalid += 1
            continue
        if payload is None:
            others.append(line)
        elif len(payload) > record_limit:
            too_large += 1
        else:
            _stream_py.write_record(records, payload)
            count += 1
    return bytes(records), count, others, invalid, too_large


def framed(framer: Any, chunks: Iterable[bytes]) -> tuple[bytes, int, list[bytes], int, int]:
    """What ``framer`` gives for ``chunks`` and its close, in ``one_by_one``'s form."""
    records, count, others = b"", 0, []
    for chunk in chunks:
        got = framer.feed(chunk)
        records, count, others = records + got[0], count + got[1], others + got[4]
    got = framer.close()
    return records + got[0], count + got[1], others + got[4], framer.invalid, framer.too_large
