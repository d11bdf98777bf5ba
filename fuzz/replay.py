"""A plain-Python fuzz loop for sanitizer builds: the corpus, then random mutations of it, for a time.

``.ci/sanitize`` runs this under AddressSanitizer instead of ``fuzz_codec.py``: with gcc's
ASan runtime preloaded, the runtime's own weak coverage hooks take the symbols atheris's
libFuzzer registers its counters with, so atheris runs blind (libFuzzer warns and keeps a
corpus of one input). Blind mutation is what this loop does too, without the dependency,
and it says how many inputs it ran. Each input goes through ``targets.check`` (both
channels on both cores and their differential, split_records, the JSON paths) and
through ``reader_check``: RecordReader of both cores fed the input in random chunks of
random buffer types, the same records or the same error; and through ``framer_check``: the
relay's ChunkFramer of both cores fed the input as a server's output in random chunks, the
same records, lines and counts as each line spliced alone.

    python fuzz/replay.py fuzz/corpus --seconds 60 [--dict fuzz/codec.dict] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import targets  # noqa: E402  (after the path: it sits beside this file)
from framer_reference import one_by_one  # noqa: E402

from diverge_codec import _mcp_notifications_c, _mcp_notifications_py, _stream_c, _stream_py, errors  # noqa: E402

KINDS = (bytes, bytearray, lambda data: memoryview(bytearray(data)), lambda data: array("B", data))


def _read(core, data: bytes, cuts: list[int], kinds: list[int], limit: int):
    reader = core.RecordReader(max_record=limit)
    out = []
    try:
        for index, (start, end) in enumerate(zip(cuts, cuts[1:])):
            chunk = KINDS[kinds[index % len(kinds)]](data[start:end])
            out += [(type(record).__name__, bytes(record)) for record in reader.feed(chunk)]
        reader.close()
    except errors.StreamError as error:
        out.append((type(error), str(error)))
    return out


def reader_check(data: bytes, rng: random.Random) -> None:
    """Both cores' RecordReader agree on the input in any chunking and any buffer type."""
    cuts = sorted({0, len(data), *(rng.randrange(len(data) + 1) for _ in range(rng.randrange(5)))})
    kinds = [rng.randrange(len(KINDS)) for _ in range(4)]
    limit = rng.choice((0, 3, 64, _stream_py.DEFAULT_MAX_RECORD))
    got, expected = _read(_stream_c, data, cuts, kinds, limit), _read(_stream_py, data, cuts, kinds, limit)
    if got != expected:
        raise AssertionError(f"RecordReader cores differ: {got!r} != {expected!r}")


def _framed(core, data: bytes, cuts: list[int], limits: tuple[int, int], awaiting):
    framer = core.ChunkFramer(*limits, awaiting=awaiting)
    calls = [lambda start=start, end=end: framer.feed(data[start:end]) for start, end in zip(cuts, cuts[1:])]
    results = [call() for call in [*calls, framer.close]]
    return (b"".join(r[0] for r in results), sum(r[1] for r in results), [line for r in results for line in r[4]],
            framer.invalid, framer.too_large, framer.ignored)


def framer_check(data: bytes, rng: random.Random) -> None:
    """Both cores' ChunkFramer agree, in any chunking, with each line spliced alone; with ``awaiting``,
    the lines that are no notification are the ones the parse says are requests or awaited answers."""
    cuts = sorted({0, len(data), *(rng.randrange(len(data) + 1) for _ in range(rng.randrange(5)))})
    limits = (rng.choice((1, 16, 200, 1 << 20)), rng.choice((1, 64, 1 << 20)))
    awaiting = rng.choice((None, set(), {0, 1, 2, -1}, set(range(-3, 40))))
    got = _framed(_mcp_notifications_c, data, cuts, limits, awaiting)
    pure = _framed(_mcp_notifications_py, data, cuts, limits, awaiting)
    records, count, others, invalid, too_large = one_by_one(
        _mcp_notifications_py.splice_notification, data.split(b"\n"), *limits)
    wanted = others if awaiting is None else [
        line for line in others if _mcp_notifications_py.framer_wanted(line, awaiting)]
    expected = (records, count, wanted, invalid, too_large, len(others) - len(wanted))
    if not got == pure == expected:
        raise AssertionError(f"ChunkFramer differs: {got!r} / {pure!r} / {expected!r}")


def _tokens(path: Path | None) -> list[bytes]:
    if path is None:
        return []
    tokens = []
    for line in path.read_text().splitlines():
        line = line.strip()
        if line.startswith('"') and line.endswith('"'):
            tokens.append(line[1:-1].encode().decode("unicode_escape").encode("latin-1"))
    return tokens


def mutate(data: bytes, corpus: list[bytes], tokens: list[bytes], rng: random.Random) -> bytes:
    """One to four of: flip a bit, set a byte, insert or drop a run, splice another input, insert a token."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        where = rng.randrange(len(out) + 1)
        choice = rng.randrange(6)
        if choice == 0 and out:
            out[where % len(out)] ^= 1 << rng.randrange(8)
        elif choice == 1 and out:
            out[where % len(out)] = rng.choice((0, 1, 2, 3, 4, 0x22, 0x5C, 0x7B, 0x7D, 0xFF, rng.randrange(256)))
        elif choice == 2:
            out[where:where] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif choice == 3 and out:
            del out[where:where + rng.randint(1, 16)]
        elif choice == 4:
            other = rng.choice(corpus)
            start = rng.randrange(len(other) + 1)
            out[where:] = other[start:]
        elif tokens:
            out[where:where] = rng.choice(tokens)
    return bytes(out[:4096])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--dict", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    corpus = [path.read_bytes() for path in sorted(args.corpus.iterdir()) if path.is_file()]
    tokens = _tokens(args.dict)
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.seconds
    runs = 0
    for data in corpus + [b""]:
        targets.check(data)
        reader_check(data, rng)
        framer_check(data, rng)
        runs += 1
    while time.monotonic() < deadline:
        data = mutate(rng.choice(corpus), corpus, tokens, rng)
        try:
            targets.check(data)
            reader_check(data, rng)
            framer_check(data, rng)
        except BaseException:
            print(f"failing input (hex): {data.hex()}", file=sys.stderr)
            raise
        runs += 1
    print(f"replay: {len(corpus)} corpus inputs and {runs - len(corpus) - 1} mutations, {runs} runs in {args.seconds:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
