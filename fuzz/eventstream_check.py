"""One fuzz input through both event-stream parsers and the reference (``eventstream_reference.py``).

The input's first two bytes choose ``max_data`` and the ``RecentIds`` capacity, the third seeds
the chunking (sizes from 1 byte up, each chunk bytes, bytearray or memoryview); the rest is the
stream. The compiled and pure parsers are fed the same chunks and must agree on every output and
attribute after every call; fed whole, the outcome must be the reference's.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import eventstream_reference as reference  # noqa: E402

from diverge_codec import _eventstream_c, _eventstream_py  # noqa: E402

MAX_DATA = (1, 2, 8, 16, 64, 200, 5000, 1 << 20)
CAPACITY = (None, 1, 2, 3, 8, 65536)
CORES = (_eventstream_c, _eventstream_py)


def state(parser: Any) -> tuple[object, ...]:
    """Every attribute a driver reads."""
    seen = parser.seen
    return (parser.last_event_id, parser.retry_ms, parser.too_large, parser.replayed, list(parser.named),
            parser.named_dropped, None if seen is None else len(seen))


def chunks(stream: bytes, seed: int) -> list[bytes | bytearray | memoryview]:
    """The stream cut by seed: sizes from 1 byte up, of each bytes-like type."""
    pick, out, at = random.Random(seed), [], 0
    largest = pick.choice((1, 2, 3, 7, 64, 1 << 20))
    while at < len(stream):
        size = pick.randint(1, largest)
        piece = stream[at:at + size]
        out.append(pick.choice((bytes, bytearray, memoryview))(piece))
        at += size
    return out


def run(stream: bytes, max_data: int, capacity: int | None, pieces: list[Any]) -> reference.Outcome:
    """Both cores fed the pieces, held to each other after every call; their outcome."""
    parsers = [core.EventParser(max_data, None if capacity is None else core.RecentIds(capacity)) for core in CORES]
    messages: list[bytes] = []
    for piece in [*pieces, None]:
        got = [parser.feed(piece) if piece is not None else parser.close() for parser in parsers]
        states = [state(parser) for parser in parsers]
        assert got[0] == got[1] and states[0] == states[1], (
            f"diverge_codec._eventstream_c and _eventstream_py differ: {got} {states}")
        messages += got[1]
    last, retry, too_large, replayed, named, dropped, seen = states[1]
    return reference.Outcome(messages, last, retry, too_large, replayed, named, dropped, seen or 0)  # type: ignore[arg-type]


def compare(stream: bytes, max_data: int, capacity: int | None, pieces: list[Any]) -> None:
    """Both cores agree with each other at every call and, at the end, with the reference."""
    got = run(stream, max_data, capacity, pieces)
    expected = reference.parse(stream, max_data, capacity)
    assert got == expected, f"the parsers differ from the reference: {got} != {expected}"


def check(data: bytes) -> None:
    if len(data) < 3:
        return
    max_data, capacity, stream = MAX_DATA[data[0] % len(MAX_DATA)], CAPACITY[data[1] % len(CAPACITY)], data[3:]
    compare(stream, max_data, capacity, chunks(stream, data[2]))
