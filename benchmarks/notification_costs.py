"""Issue 15's notification figures in one run: instructions per call (callgrind) beside nanoseconds.

The encode at 142 B against ``orjson.dumps`` and msgspec's typed ``Struct`` of the same
notification (``encode``, ``encode_into``; ``peer_cases.msgspec_encode_peer``), ``encode_into``
appending to one bytearray, the decode's instructions at 180 B and 64 KB, and
``decode_lazy`` against ``orjson.loads`` of the body. Run from the repo root, venv active:

    python benchmarks/notification_costs.py [substring of case names ...]

Each instruction count is (count of 2n calls - count of n calls) / n, each side in its own
process, so start-up and set-up cancel (``instructions.per_call_picked``). The times are the best of rounds that alternate the
sides (``_bench.paired_ns``). msgspec is optional: its columns are empty without it.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from instructions import allocator_note, per_call_picked  # noqa: E402  (the callgrind runner)
from peer_cases import APPENDED, ENCODE_142, ITEMS_64K, LINES_64K, PROGRESS, appending, msgspec, msgspec_encode_peer  # noqa: E402

from diverge_codec import _mcp_notifications_c as mn  # noqa: E402

import orjson  # noqa: E402


def cases() -> dict[str, tuple]:
    """name: (orjson side, ours, msgspec side or None)."""
    frame = mn.decode(b"\x00" + orjson.dumps(ENCODE_142))
    encoder, struct = msgspec_encode_peer() if msgspec is not None else (None, None)
    table = {
        "encode, 142 B": (lambda: orjson.dumps(ENCODE_142), lambda: mn.encode(frame),
                          None if msgspec is None else (lambda: encoder.encode(struct))),
        "encode_into (appends), 142 B": (
            appending(lambda: APPENDED.extend(orjson.dumps(ENCODE_142))),
            appending(lambda: mn.encode_into(frame, APPENDED)),
            None if msgspec is None else appending(lambda: encoder.encode_into(struct, APPENDED, -1))),
    }
    for label, body in (("progress ~180 B", PROGRESS), ("log lines 64 KB", LINES_64K), ("items 64 KB", ITEMS_64K)):
        payload = b"\x00" + body
        table[f"decode, {label}"] = (lambda body=body: orjson.loads(body), lambda payload=payload: mn.decode(payload), None)
        table[f"decode_lazy, {label}"] = (lambda body=body: orjson.loads(body), lambda payload=payload: mn.decode_lazy(payload), None)
    return table


def instructions(name: str, side: int) -> float:
    n = 100 if "64" in name else 20000  # start-up varies by ~0.7 M instructions from run to run

    def count() -> float:
        return per_call_picked(f"from notification_costs import cases\nfunction = cases()[{name!r}][{side}]", n)
    if "encode_into" not in name:
        return count()
    # The appending cases reallocate a growing 64 KB buffer: the same run under callgrind
    # counts up to 2 M instructions more or less from one run to the next (~100 a call), so
    # they take the median of three.
    return statistics.median(count() for _ in range(3))


def main(filters: list[str]) -> None:
    from diverge_codec import _bench

    print(f"orjson {orjson.__version__}, msgspec {getattr(msgspec, '__version__', 'absent')}, "
          f"Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}, {allocator_note()}")
    print("| case | orjson instr | ours instr | msgspec instr | orjson ns | ours ns | msgspec ns "
          "| ours / orjson (ns) | ours / msgspec (ns) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (base, ours, peer) in cases().items():
        if filters and not any(part in name for part in filters):
            continue
        counts = [instructions(name, side) for side in range(3 if peer is not None else 2)]
        base_ns, ours_ns = _bench.paired_ns(base, ours)
        peer_ns = _bench.paired_ns(peer, ours)[0] if peer is not None else None
        peer_count = f"{counts[2]:,.0f}" if peer is not None else ""
        peer_time = f"{peer_ns:.0f}" if peer_ns is not None else ""
        versus = f"{ours_ns / peer_ns:.2f}x" if peer_ns is not None else ""
        print(f"| {name} | {counts[0]:,.0f} | {counts[1]:,.0f} | {peer_count} | {base_ns:.0f} | {ours_ns:.0f} | {peer_time} "
              f"| {ours_ns / base_ns:.2f}x | {versus} |", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
