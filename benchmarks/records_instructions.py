"""Instructions per record (valgrind callgrind) of splitting the stream envelope: figures a loaded machine cannot tilt.

Each case runs in its own interpreter under callgrind twice, n and 2n calls after the
same warm-up (``instructions.per_call_picked``); one call handles ``RECORDS`` records of
one size and the count per call is divided by them. The result list and its records are
freed inside the call, as a caller's loop frees them. Run from the
repo root with the venv active and ``PYTHONPATH=src`` (or the package installed):

    python benchmarks/records_instructions.py [substring of case names ...] [record size ...]

Prints a Markdown table: instructions per record, compiled and pure core.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from instructions import allocator_note, per_call_picked  # noqa: E402  (the callgrind runner)

RECORDS = 64
SETUP = """
from diverge_codec import _stream_{core} as sm
size, count = {size}, {count}
stream = b"".join(sm.record(bytes([n % 251]) * size) for n in range(count))
reader = sm.RecordReader()
chunks = [stream[at:at + {chunk}] for at in range(0, len(stream), {chunk})]
"""
CASES = {
    "split_records": "function = lambda: sm.split_records(stream)",
    "split_records, bytearray": "held = bytearray(stream)\nfunction = lambda: sm.split_records(held)",
    "RecordReader.feed, whole stream": "function = lambda: reader.feed(stream)",
    "RecordReader.feed, 4 KiB chunks": "feed = reader.feed\nfunction = lambda: [feed(chunk) for chunk in chunks]",
    "RecordReader.feed, 64 KiB chunks": "feed = reader.feed\nfunction = lambda: [feed(chunk) for chunk in chunks]",
}
CHUNK = {"RecordReader.feed, 64 KiB chunks": 65536}
"""The chunk a case cuts the stream into, where not 4 KiB; its stream holds enough records
for four chunks (every other case's, ``RECORDS``)."""
SIZES = (20, 200, 2047, 2048)
"""2047 bytes is the longest record handed out as a copy, 2048 the shortest as a view."""


def per_record(case: str, size: int, core: str) -> float:
    chunk = CHUNK.get(case, 4096)
    count = max(RECORDS, 4 * chunk // (size + 4)) if case in CHUNK else RECORDS
    pick = SETUP.format(core=core, size=size, count=count, chunk=chunk) + CASES[case]
    return per_call_picked(pick, max(25, 400 * RECORDS // count)) / count


def main(filters: list[str]) -> None:
    sizes = [int(f) for f in filters if f.isdigit()] or SIZES
    filters = [f for f in filters if not f.isdigit()]
    chosen = [case for case in CASES if not filters or any(part in case for part in filters)]
    jobs = [(case, size, core) for case in chosen for size in sizes for core in ("c", "py")]
    with ThreadPoolExecutor(2) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: per_record(*job), jobs)))
    print(allocator_note(), "| case | record | compiled (instr./record) | pure (instr./record) |", "|---|---:|---:|---:|", sep="\n")
    for case in chosen:
        for size in sizes:
            print(f"| {case} | {size} B | {counts[(case, size, 'c')]:,.0f} | {counts[(case, size, 'py')]:,.0f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
