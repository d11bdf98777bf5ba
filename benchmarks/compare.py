"""The peer cases in CPU time at a given git revision and in the working tree, side by side, by turns.

So that a regression shows before it lands (issue 44): the revision is checked out with
``git worktree add`` into a temporary directory and its compiled core built in place there
(``setup.py build_ext --inplace``, this interpreter, so this venv's Cython and orjson); or
``--at DIR`` names a checkout already built. Two worker processes, one importing each tree's
``diverge_codec``, run the very same cases (this tree's ``peer_cases.py`` and
``mixed_cases.py``: the same bytes on both sides); for each case, round by round, the parent
has each worker time a batch of each side (``orjson.loads``, then ours) in an order that
rotates, so neither tree runs on a quieter machine than the other. A side's figure is the median
of its rounds (``time.process_time`` of the worker: its CPU alone). Printed: ns and the ratio to
``orjson.loads`` for each tree, and new / old in ns; the load average before and after. A case the
revision cannot run (a function it lacks) is shown as such.

    python benchmarks/compare.py [--rev 43bf8bf] [--at DIR] [--keep] [--simd sse2|avx2|avx512]
        [--pure] [--rounds 9] [--batch-ms 20] [substring of case names ...]

Run from the repo root with the venv active (the revision is built with it: Cython and
setuptools as CONTRIBUTING.md installs them). ``--keep`` leaves the revision's worktree for
another run's ``--at`` (``git worktree remove`` it after).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

WORKER = r'''
import gc, json, sys, time
from itertools import repeat
sys.path.insert(0, sys.argv[1])  # this tree's benchmarks: the cases, the same bytes on both sides
import orjson
simd, implementation = sys.argv[2], sys.argv[3]
import diverge_codec
if implementation == "cython" and simd:
    from diverge_codec import _mcp_notifications_c as mn
    pick = getattr(mn, "_long_strings_reader", None)
    if pick is not None:
        pick(simd)
    elif hasattr(mn, "_long_strings_avx2"):  # before issue 44: AVX2 or SSE2 only
        mn._long_strings_avx2(0 if simd == "sse2" else 1)
from peer_cases import peer_cases
cases = {case.name: case for case in peer_cases(implementation)}
gc.collect(); gc.freeze()
print(json.dumps({"tree": diverge_codec.__file__, "cases": sorted(cases)}), flush=True)
for line in sys.stdin:
    name, side, calls = json.loads(line)
    function = getattr(cases[name], side)
    try:
        function()
    except Exception as problem:  # the revision lacks what the case calls
        print(json.dumps({"error": type(problem).__name__}), flush=True)
        continue
    start = time.process_time()
    for _ in repeat(None, calls):
        function()
    print(json.dumps({"cpu": time.process_time() - start}), flush=True)
'''


class Worker:
    """One tree's process: asked to time a side of a case for a number of calls, it answers its CPU seconds."""

    def __init__(self, tree: Path, simd: str, implementation: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(tree / "src"), "PYTHONHASHSEED": "0"}
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, str(HERE), simd, implementation], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tree)
        hello = self._answer()
        self.module, self.cases = hello["tree"], set(hello["cases"])

    def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit("a worker ended without answering (see its error above)")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def time(self, name: str, side: str, calls: int) -> float | None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps([name, side, calls]) + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        return None if "error" in answer else float(answer["cpu"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def built_revision(rev: str, keep: bool) -> tuple[Path, Path | None]:
    """A worktree of rev in a temporary directory, its compiled core built in place; and the directory to remove after."""
    parent = Path(tempfile.mkdtemp(prefix="diverge-codec-compare-"))
    tree = parent / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), rev], check=True)
    print(f"building {rev} in {tree} ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=tree, check=True,
                   env={**os.environ, "DIVERGE_CODEC_REQUIRE_EXTENSION": "1"}, stdout=subprocess.DEVNULL)
    return tree, None if keep else tree


def calls_for(worker: Worker, name: str, side: str, batch_s: float) -> int | None:
    calls = 1
    while True:
        spent = worker.time(name, side, calls)
        if spent is None:
            return None
        if spent >= 0.02:
            return max(1, int(calls * batch_s / spent))
        calls *= 4


def compare(name: str, new: Worker, old: Worker, rounds: int, batch_s: float) -> dict[str, float | None]:
    """Median ns a call of orjson and ours in each tree, over rounds in which the four take turns."""
    sides = [(new, "orjson"), (new, "ours"), (old, "orjson"), (old, "ours")]
    counts = [calls_for(new, name, "ours", batch_s)] * 4
    if counts[0] is None:
        return {}
    counts[0] = counts[2] = calls_for(new, name, "orjson", batch_s)
    samples: list[list[float]] = [[] for _ in sides]
    for round_ in range(rounds):
        for offset in range(len(sides)):
            index = (round_ + offset) % len(sides)
            worker, side = sides[index]
            calls = counts[index]
            assert calls is not None
            spent = None if name not in worker.cases else worker.time(name, side, calls)
            if spent is not None:
                samples[index].append(spent / calls * 1e9)
    keys = ["new_orjson", "new", "old_orjson", "old"]
    return {key: statistics.median(sample) if sample else None for key, sample in zip(keys, samples)}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="43bf8bf", help="the git revision to compare with (default 43bf8bf)")
    parser.add_argument("--at", type=Path, help="a checkout of it already built in place (no worktree made)")
    parser.add_argument("--keep", action="store_true", help="leave the revision's worktree (its path is printed)")
    parser.add_argument("--simd", choices=("sse2", "avx2", "avx512"), default="",
                        help="the long-string reader both trees use (a revision before issue 44: sse2 or avx2)")
    parser.add_argument("--pure", action="store_true", help="the pure core on both sides")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--batch-ms", type=float, default=20.0)
    parser.add_argument("filters", nargs="*")
    args = parser.parse_args(argv)
    tree, remove = (args.at.resolve(), None) if args.at else built_revision(args.rev, args.keep)
    implementation = "python" if args.pure else "cython"
    try:
        new, old = Worker(ROOT, args.simd, implementation), Worker(tree, args.simd, implementation)
        label = args.rev if not args.at else str(args.at)
        print(f"CPython {platform.python_version()}, {implementation} core, "
              f"{'the CPU' + chr(39) + 's best' if not args.simd else args.simd} long-string reader; {args.rounds} rounds of "
              f"{args.batch_ms:.0f} ms a side, by turns; old: {label}; {load()} at the start")
        print(f"| case | orjson ns | new ns | new / orjson | old ({label}) ns | old / orjson | new / old |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for name in _in_order(implementation):
            if args.filters and not any(part in name for part in args.filters):
                continue
            figures = compare(name, new, old, args.rounds, args.batch_ms / 1000)
            if not figures:
                continue
            base, ours, old_base, theirs = (figures[key] for key in ("new_orjson", "new", "old_orjson", "old"))
            assert base is not None and ours is not None
            old_text = "(not there)" if theirs is None or old_base is None else f"{theirs:,.0f} | {theirs / old_base:.2f}x"
            change = "" if theirs is None else f"{ours / theirs:.2f}"
            print(f"| {name} | {base:,.0f} | {ours:,.0f} | {ours / base:.2f}x | {old_text} | {change} |", flush=True)
        print(f"{load()} at the end")
        new.close()
        old.close()
    finally:
        if args.keep and not args.at:
            print(f"the revision's worktree is kept: {tree}", file=sys.stderr)
        if remove is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(remove)], check=False)


def _in_order(implementation: str) -> list[str]:
    """The case names in peer_cases' order (the workers send them sorted)."""
    sys.path.insert(0, str(HERE))
    from peer_cases import peer_cases

    return [case.name for case in peer_cases(implementation)]


if __name__ == "__main__":
    main(sys.argv[1:])
