"""CPU time per call (getrusage) for the peer cases: ours, bare orjson and msgspec, interleaved, medians.

Callgrind counts instructions, which a busy machine cannot tilt but which say nothing of
stalls, mispredictions or a loop that restarts a load after every escape; this script
times the same cases in CPU time (``time.process_time``: user + system of this process,
so another process's work is not counted, though it still evicts caches). Each round
runs every side of a case once for a batch of at least ``--batch-ms`` of CPU, the sides in
a rotating order; a side's figure is the median of its rounds. The load average is
printed beside the table: the figures are only comparable at a similar load. Run from
the repo root with the venv active:

    python benchmarks/cpu_time.py [--pure] [--simd sse2|avx2|avx512] [--rounds N] [--batch-ms MS] [substring of case names ...]

Prints a Markdown table: ns per call of each side, the ratio to orjson and to msgspec, the target.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from itertools import repeat
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def calls_for(function: Callable[[], Any], batch_s: float) -> int:
    """How many calls fill a batch of batch_s CPU seconds (measured on a short run)."""
    calls = 1
    while True:
        spent = timed(function, calls)
        if spent >= 0.02:
            return max(1, int(calls * batch_s / spent))
        calls *= 4


def timed(function: Callable[[], Any], calls: int) -> float:
    """CPU seconds of calls calls, made as timeit makes them."""
    start = time.process_time()
    for _ in repeat(None, calls):
        function()
    return time.process_time() - start


def per_call_ns(sides: list[Callable[[], Any]], rounds: int, batch_s: float) -> list[float]:
    """The median ns a call of each side, over rounds in which the sides take turns (the order rotating)."""
    counts = [calls_for(side, batch_s) for side in sides]
    samples: list[list[float]] = [[] for _ in sides]
    for round_ in range(rounds):
        for offset in range(len(sides)):
            index = (round_ + offset) % len(sides)
            samples[index].append(timed(sides[index], counts[index]) / counts[index] * 1e9)
    return [statistics.median(side) for side in samples]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def main(argv: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pure", action="store_true", help="the pure core's side instead of the compiled one")
    parser.add_argument("--simd", choices=("sse2", "avx2", "avx512"), help="the compiled core's long-string reader (default: the best the CPU has)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--batch-ms", type=float, default=20.0)
    parser.add_argument("filters", nargs="*")
    args = parser.parse_args(argv)
    import orjson
    from peer_cases import msgspec, peer_cases

    implementation = "python" if args.pure else "cython"
    reader = "none (pure)"
    if not args.pure:
        from diverge_codec import _mcp_notifications_c

        reader = _mcp_notifications_c._long_strings_reader(args.simd)
    print(f"CPython {platform.python_version()}, orjson {orjson.__version__}, "
          f"msgspec {getattr(msgspec, '__version__', 'absent')}, {'pure' if args.pure else 'compiled'} core"
          f" ({reader} long-string reader); "
          f"{args.rounds} rounds of {args.batch_ms:.0f} ms a side; {load()} at the start")
    print("| case | orjson ns | ours ns | msgspec ns | ours / orjson | ours / msgspec | target |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    gc.collect()
    gc.freeze()
    for case in peer_cases(implementation):
        if args.filters and not any(part in case.name for part in args.filters):
            continue
        sides = [case.orjson, case.ours] + ([case.msgspec] if case.msgspec is not None else [])
        figures = per_call_ns(sides, args.rounds, args.batch_ms / 1000)
        base, ours = figures[0], figures[1]
        peer = figures[2] if len(figures) > 2 else None
        peer_text = "" if peer is None else f"{peer:,.0f}"
        versus = "" if peer is None else f"{ours / peer:.2f}x"
        goal = case.time_target
        target = "" if goal is None else f"<= {goal:.2f}x {'met' if ours / base <= goal else 'MISSED'}"
        print(f"| {case.name} | {base:,.0f} | {ours:,.0f} | {peer_text} | {ours / base:.2f}x | {versus} | {target} |",
              flush=True)
    print(f"{load()} at the end")


if __name__ == "__main__":
    main(sys.argv[1:])
