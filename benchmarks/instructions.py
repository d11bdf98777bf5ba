"""Instructions per call (valgrind callgrind) for the peer cases: a figure a shared machine cannot tilt.

Each side of each case runs in its own process under callgrind twice, calling the
function n and 2n times after the same warm-up; the difference over n is the count
per call, free of start-up and set-up. ``gc.freeze()`` after the warm-up moves the
start-up's objects out of the collector's reach: otherwise a full collection (which
walks every object start-up left) falls inside one run's n calls and not the other's,
and a side's count moves by up to 6%. Each side still pays the young collections its
own allocations cause. The calls are made as timeit makes them, from a function over
``itertools.repeat`` (a module-level ``for`` would store each int in the module's dict:
~150 instructions a call on both sides, which pulls every ratio towards 1). The malloc:
``ALLOCATOR``. Run from the repo root with the venv active:

    python benchmarks/instructions.py [--pure] [substring of case names ...]

``--pure`` measures the pure core's side instead of the compiled one. Prints a Markdown table: instructions per call, ratio to orjson and to msgspec.
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
{pick}
import gc
from itertools import repeat
def run(calls, function=function):
    for _ in repeat(None, calls):
        function()
run({warm})
gc.freeze()
run(int({n!r}))
"""


MIMALLOC = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"
ALLOCATOR = os.environ.get("DIVERGE_CODEC_BENCH_MALLOC", MIMALLOC if os.path.exists(MIMALLOC) else "")
"""The malloc the children run with (LD_PRELOAD), "" for the system's; mimalloc where it is
installed (Debian: libmimalloc2.0). orjson's parse buffer is over 1 KiB, which glibc's malloc
serves by a path that costs 100 to 260 instructions a call depending on the heap's layout,
and the layout moves with any change to the script: one side's count then moves by up to
6% between runs. mimalloc serves it the same way every call, but its count is not wholly the
machine's to ignore: one tree's 142 B ``encode`` read 1,863-1,866 alone and 1,911 beside another
callgrind run (the system's malloc: 1,910 both ways). Count the trees you compare one after the other,
or both with ``DIVERGE_CODEC_BENCH_MALLOC=`` (the system's)."""


CALLGRIND = ["valgrind", "--tool=callgrind", "--vgdb=no", "--callgrind-out-file=/dev/null"]
"""callgrind as every count here runs it: no gdbserver (its FIFO in /tmp a run; ``collected``)."""
PYTHON = [sys.executable, "-P"]
"""A counted Python: no current folder on its path, whose listing would move the count (``collected``)."""


def allocator_note() -> str:
    return f"malloc: {os.path.basename(ALLOCATOR)} (LD_PRELOAD)" if ALLOCATOR else "malloc: the system's"


def collected(script: str) -> int:
    """Instructions a child Python runs (callgrind), under one hash seed so dict layouts repeat.

    ``-P``: no current folder on the child's path. Python lists the folder of each path entry it
    imports through, and a folder whose entries change between the n and the 2n run (valgrind's
    gdbserver makes a FIFO in /tmp for every run, other jobs write their files) moved a 142 B
    ``encode`` between 1,418 and 2,185 instructions a call, run from /tmp beside other valgrind runs;
    with ``-P`` and no gdbserver, three runs of the system's malloc agree to the instruction."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    if ALLOCATOR:
        env["LD_PRELOAD"] = ALLOCATOR
    run = subprocess.run([*CALLGRIND, *PYTHON, "-c", script], capture_output=True, text=True, check=True, env=env)
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def per_call_picked(pick: str, n: int, warm: int = 200) -> float:
    """Instructions per call of ``function``, which the code ``pick`` defines (run in benchmarks/):
    n and 2n calls after the same warm-up, differenced."""
    def script(calls: int) -> str:
        # n and 2n as strings of one length: both runs then make the same allocations before the
        # loop, so the allocator's state is the same when it starts.
        return CHILD.format(here=str(HERE), pick=pick, n=str(calls).zfill(len(str(2 * n))), warm=warm)
    return (collected(script(2 * n)) - collected(script(n))) / n


def per_call_of(module: str, cases: str, name: str, side: str, n: int, implementation: str = "cython",
                warm: int = 200) -> float:
    """One side of the case ``name`` from ``module.cases()``."""
    pick = (f"from {module} import {cases}\n"
            f"function = getattr([c for c in {cases}({implementation!r}) if c.name == {name!r}][0], {side!r})")
    return per_call_picked(pick, n, warm)


def per_call(name: str, side: str, implementation: str = "cython") -> float:
    return per_call_of("peer_cases", "peer_cases", name, side, 200 if "64" in name else 2000, implementation)


def main(filters: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    from peer_cases import msgspec, peer_cases

    implementation = "python" if "--pure" in filters else "cython"
    filters = [part for part in filters if part != "--pure"]
    print(allocator_note())
    print(f"| case | orjson | ours ({'pure' if implementation == 'python' else 'compiled'}) | msgspec "
          "| ours / orjson | ours / msgspec | target |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case in peer_cases(implementation):
        if filters and not any(part in case.name for part in filters):
            continue
        base, ours = per_call(case.name, "orjson"), per_call(case.name, "ours", implementation)
        peer = per_call(case.name, "msgspec", implementation) if msgspec is not None else None
        peer_text = "" if peer is None else f"{peer:,.0f}"
        versus = "" if peer is None else f"{ours / peer:.2f}x"
        target = "" if case.target is None else f"<= {case.target:.2f}x"
        print(f"| {case.name} | {base:,.0f} | {ours:,.0f} | {peer_text} | {ours / base:.2f}x | {versus} | {target} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
