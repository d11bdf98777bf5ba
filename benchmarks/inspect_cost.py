"""What ``diverge-codec inspect`` costs a frame: instructions (callgrind) and CPU time, start-up differenced away.

Two captures of N and 2N progress notifications (~165 B each, as a relay writes them) are
inspected by a fresh interpreter each, output to /dev/null; the difference over N is the
cost of a frame: read, split, decode, check, print. Instructions are callgrind's (a
figure a shared machine cannot tilt); CPU time is the children's user+sys, median of
``RUNS`` on 100,000 and 300,000 frames (it moves with the machine's load). Run from the repo root with the venv active
and ``PYTHONPATH=src`` (or the package installed):

    python benchmarks/inspect_cost.py [--json]

"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instructions import CALLGRIND, PYTHON  # noqa: E402  (the callgrind runner's command)

N = 20000
CPU_N = 100000
"""CPU time is taken on 100,000 and 300,000 frames: ``os.times`` counts in 10 ms steps, too coarse at 20,000."""
RUNS = 5


def capture(path: Path, count: int) -> None:
    from diverge_codec import mcp_notifications as mn
    from diverge_codec import samples

    path.write_bytes(samples.capture([mn.encode(mn.Notification({
        "jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": "tok-1234567890", "progress": i, "total": 1 << 40, "message": "Downloading layer"}}))
        for i in range(count)]))


def command(path: Path, extra: list[str]) -> list[str]:
    return [*PYTHON, "-m", "diverge_codec", "inspect", str(path), "--channel", "mcp-notifications", "--open", *extra]


def instructions(path: Path, extra: list[str]) -> int:
    run = subprocess.run([*CALLGRIND, *command(path, extra)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True,
                         env={**os.environ, "PYTHONHASHSEED": "0"})
    return int(re.search(r"Collected : (\d+)", run.stderr).group(1))


def cpu_seconds(path: Path, extra: list[str]) -> float:
    runs = []
    for _ in range(RUNS):
        before = os.times()
        subprocess.run(command(path, extra), stdout=subprocess.DEVNULL, check=True)
        after = os.times()
        runs.append((after.children_user - before.children_user) + (after.children_system - before.children_system))
    return statistics.median(runs)


def main(extra: list[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        small, large = Path(scratch, "n.bin"), Path(scratch, "2n.bin")
        capture(small, N)
        capture(large, 2 * N)
        per_frame = (instructions(large, extra) - instructions(small, extra)) / N
        capture(small, CPU_N)
        capture(large, 3 * CPU_N)
        micros = (cpu_seconds(large, extra) - cpu_seconds(small, extra)) / (2 * CPU_N) * 1e6
    print(f"inspect {' '.join(extra) or '(text)'}: {per_frame:,.0f} instructions a frame, {micros:.2f} us CPU a frame")


if __name__ == "__main__":
    main(sys.argv[1:])
