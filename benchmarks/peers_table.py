"""Times of the peer cases, as a Markdown table: ours and msgspec against bare orjson, and ours against msgspec.

Each ratio comes from ``_bench.paired_ns`` (the two calls alternating, best round), so
a slow spell of a shared machine tilts neither side. Run from the repo root with the
venv active: ``python benchmarks/peers_table.py [substring of case names ...]``.
For instruction counts, which no load can tilt, see ``instructions.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_cases import peer_cases  # noqa: E402

from diverge_codec import _bench  # noqa: E402


def main(filters: list[str]) -> None:
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print("| case | orjson ns | ours ns | msgspec ns | ours / orjson | msgspec / orjson | ours / msgspec | target |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for case in peer_cases():
        if filters and not any(part in case.name for part in filters):
            continue
        base, ours = _bench.paired_ns(case.orjson, case.ours)
        peer_ns = peer_ratio = versus = "(not installed)"
        if case.msgspec is not None:
            peer_base, peer = _bench.paired_ns(case.orjson, case.msgspec)
            peer_ns, peer_ratio, versus = f"{peer:,.0f}", f"{peer / peer_base:.2f}x", f"{ours / base * peer_base / peer:.2f}x"
        target = "" if case.target is None else f"<= {case.target:.2f}x"
        print(f"| {case.name} | {base:,.0f} | {ours:,.0f} | {peer_ns} | {ours / base:.2f}x | {peer_ratio} | {versus} | {target} |",
              flush=True)
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
