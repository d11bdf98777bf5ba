"""Instructions per call (valgrind callgrind) for the tools-begin cases: figures a loaded machine cannot tilt.

Each side of each case runs in its own interpreter under callgrind twice, calling it n
and 2n times after the same warm-up; the difference over n is the count per call, free
of start-up and set-up. ``PYTHONHASHSEED=0`` keeps the two runs' start-up equal. Run
from the repo root with the venv active (two cases at a time):

    python benchmarks/tools_begin_instructions.py [substring of case names ...]

Prints a Markdown table: instructions per call, ratio to the baseline and to msgspec, the target.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from instructions import allocator_note, per_call_of  # noqa: E402  (the callgrind runner, shared with the peer cases)


def per_call(name: str, side: str, implementation: str = "cython") -> float:
    n = 250 if "50 periods" in name else 5000  # enough calls that a one-off (a GC pass, a resize) averages out
    return per_call_of("tools_begin_cases", "cases", name, side, n, implementation, warm=300)


def main(filters: list[str]) -> None:
    from tools_begin_cases import cases

    chosen = [case for case in cases() if not filters or any(part in case.name for part in filters)]
    jobs = [(case.name, side) for case in chosen for side in ("baseline", "ours", "msgspec") if getattr(case, side) is not None]
    with ThreadPoolExecutor(2) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: per_call(*job), jobs)))
    print(allocator_note())
    print("| case | baseline | baseline (instr.) | ours (instr.) | msgspec (instr.) | ours / baseline | ours / msgspec | target |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for case in chosen:
        base, ours = counts[(case.name, "baseline")], counts[(case.name, "ours")]
        peer = counts.get((case.name, "msgspec"))
        peer_text, versus = ("", "") if peer is None else (f"{peer:,.0f}", f"{ours / peer:.2f}x")
        target = "" if case.target is None else f"<= {case.target:.2f}x"
        print(f"| {case.name} | {case.baseline_name} | {base:,.0f} | {ours:,.0f} | {peer_text} | {ours / base:.2f}x | {versus} | {target} |")


if __name__ == "__main__":
    main(sys.argv[1:])
