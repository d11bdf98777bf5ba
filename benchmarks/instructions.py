"""Instructions per call (valgrind callgrind) for the peer cases: a figure a shared machine cannot tilt.

Each side of each case runs in its own process under callgrind twice, calling the
function n and 2n times after the same warm-up; the difference over n is the count
per call, free of start-up and set-up. Run from the repo root with the venv active:

    python benchmarks/instructions.py [substring of case names ...]

Prints a Markdown table: instructions per call, ratio to orjson and to msgspec.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import sys
sys.path.insert(0, {here!r})
from {module} import {cases}
case = [c for c in {cases}({implementation!r}) if c.name == {name!r}][0]
function = getattr(case, {side!r})
for _ in range({warm}):
    function()
for _ in range({n}):
    function()
"""


def collected(script: str) -> int:
    """Instructions a child Python runs (callgrind), under one hash seed so dict layouts repeat."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    run = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", script],
                         capture_output=True, text=True, check=True, env=env)
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def per_call_of(module: str, cases: str, name: str, side: str, n: int, implementation: str = "cython",
                warm: int = 200) -> float:
    """One side of the case ``name`` from ``module.cases()``: n and 2n calls after the same warm-up, differenced."""
    def script(calls: int) -> str:
        return CHILD.format(here=str(HERE), module=module, cases=cases, implementation=implementation, name=name,
                            side=side, n=calls, warm=warm)
    return (collected(script(2 * n)) - collected(script(n))) / n


def per_call(name: str, side: str, implementation: str = "cython") -> float:
    return per_call_of("peer_cases", "peer_cases", name, side, 200 if "64" in name else 2000, implementation)


def main(filters: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    from peer_cases import msgspec, peer_cases

    print("| case | orjson | ours (compiled) | msgspec | ours / orjson | ours / msgspec | target |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case in peer_cases():
        if filters and not any(part in case.name for part in filters):
            continue
        base, ours = per_call(case.name, "orjson"), per_call(case.name, "ours")
        peer = per_call(case.name, "msgspec") if msgspec is not None else None
        peer_text = "" if peer is None else f"{peer:,.0f}"
        versus = "" if peer is None else f"{ours / peer:.2f}x"
        target = "" if case.target is None else f"<= {case.target:.2f}x"
        print(f"| {case.name} | {base:,.0f} | {ours:,.0f} | {peer_text} | {ours / base:.2f}x | {versus} | {target} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
