"""Instructions per call (valgrind callgrind) for the tools-begin cases: figures a loaded machine cannot tilt.

Each side of each case runs in its own interpreter under callgrind twice, calling it n
and 2n times after the same warm-up; the difference over n is the count per call, free
of start-up and set-up. ``PYTHONHASHSEED=0`` keeps the two runs' start-up equal. Run
from the repo root with the venv active (two cases at a time):

    python benchmarks/tools_begin_instructions.py [substring of case names ...]

Prints a Markdown table: instructions per call, ratio to the baseline and to msgspec, the target.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import sys
sys.path.insert(0, {here!r})
from tools_begin_cases import cases
case = [c for c in cases({implementation!r}) if c.name == {name!r}][0]
function = getattr(case, {side!r})
for _ in range(300):
    function()
for _ in range({n}):
    function()
"""


def collected(name: str, side: str, n: int, implementation: str) -> int:
    script = CHILD.format(here=str(HERE), implementation=implementation, name=name, side=side, n=n)
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", script],
                         capture_output=True, text=True, check=True, env=env)
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def per_call(name: str, side: str, implementation: str = "cython") -> float:
    n = 250 if "50 periods" in name else 5000  # enough calls that a one-off (a GC pass, a resize) averages out
    return (collected(name, side, 2 * n, implementation) - collected(name, side, n, implementation)) / n


def main(filters: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    from tools_begin_cases import cases

    chosen = [case for case in cases() if not filters or any(part in case.name for part in filters)]
    jobs = [(case.name, side) for case in chosen for side in ("baseline", "ours", "msgspec") if getattr(case, side) is not None]
    with ThreadPoolExecutor(2) as pool:
        counts = dict(zip(jobs, pool.map(lambda job: per_call(*job), jobs)))
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
