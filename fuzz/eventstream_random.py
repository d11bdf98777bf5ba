"""Structured random event streams through ``eventstream_check`` for a bounded time: the parsers'
differential and the reference on streams a byte fuzzer finds slowly (long lines, long retries,
replays, every line ending). Run: ``python fuzz/eventstream_random.py SEED SECONDS``; a failure
prints the seed and the input that fails, as a corpus file would hold it."""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import eventstream_check  # noqa: E402

ENDS = (b"\n", b"\r", b"\r\n")
NAMES = (b"data", b"data", b"data", b"id", b"event", b"retry", b"", b"dat", b"datax", b"ID", b":")


def line(pick: random.Random) -> bytes:
    roll = pick.random()
    if roll < 0.15:
        return b""
    if roll < 0.2:
        return b":" + pick.choice((b"", b" keepalive", b"x" * pick.randint(0, 300)))
    name = pick.choice(NAMES)
    value = pick.choice((
        b"", b"message", b"other", b"endpoint", b"1", b"2", b"3", b"a\0b", b"\0",
        b"0" * pick.randint(0, 5000) + b"7", b"9" * pick.randint(0, 5000), b"12a", b"-1", b" 5",
        b"x" * pick.randint(0, 300), b'{"jsonrpc":"2.0","method":"m"}', bytes(pick.randrange(256) for _ in range(8)),
    ))
    return name + pick.choice((b":", b": ", b":  ", b"")) + value


def stream(pick: random.Random) -> bytes:
    parts = [pick.choice((b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"))]
    for _ in range(pick.randint(0, 30)):
        parts.append(line(pick) + pick.choice(ENDS))
    if pick.random() < 0.3:
        parts.append(line(pick))
    return b"".join(parts)


def main() -> None:
    seed, seconds = int(sys.argv[1]), float(sys.argv[2])
    pick, deadline, runs = random.Random(seed), time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        data = bytes((pick.randrange(256), pick.randrange(256), pick.randrange(256))) + stream(pick)
        try:
            eventstream_check.check(data)
        except AssertionError:
            print(f"seed {seed}, run {runs}: {data!r}")
            raise
        runs += 1
    print(f"eventstream_random: {runs} streams, seed {seed}, no difference")


if __name__ == "__main__":
    main()
