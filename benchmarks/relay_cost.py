"""The whole relay process's CPU, as an operator runs it, beside a naive relay and a pipe.

Three commands, by turns, on the same replay (every committed capture concatenated until the
file is ``--mb`` MB), each run ``--rounds`` times, the CPU of the whole process tree taken by
``getrusage(RUSAGE_CHILDREN)`` around it (user + system, start-up included):

- ``relay``: ``diverge-codec relay -- cat REPLAY > /dev/null``;
- ``naive``: a twenty-line Python relay (asyncio ``readline``, orjson ``loads``, ``pop``,
  ``dumps``, a length prefix), what one writes without this library;
- ``pipe``: ``cat REPLAY | cat > /dev/null``, the floor: the same bytes through two processes.

Printed: the median CPU seconds of each, µs per notification, and the ratios relay/naive and
relay/pipe. ``python benchmarks/relay_cost.py [--mb 150] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAPTURES = sorted((HERE / "data" / "captures").glob("*.jsonl"))

NAIVE = '''
import asyncio, struct, sys
import orjson

async def relay(command, out):
    server = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE, limit=1 << 24)
    while line := await server.stdout.readline():
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(message, dict) or "id" in message or not isinstance(message.get("method"), str):
            continue
        message.pop("jsonrpc", None)
        payload = b"\\x00" + orjson.dumps(message)
        out.write(struct.pack(">I", len(payload)) + payload)
    server.stdin.close()
    await server.wait()

if __name__ == "__main__":
    asyncio.run(relay(sys.argv[1:], sys.stdout.buffer))
'''
"""The naive relay, a script; ``relay_many.py`` runs its ``relay`` for many servers in one loop."""


def _cpu(command: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, shell=True, check=True, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=30, help="size of the replay in MB (default 30)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each command, by turns (default 3)")
    args = parser.parse_args()
    one = b"".join(path.read_bytes() for path in CAPTURES)
    with tempfile.TemporaryDirectory() as scratch:
        replay = Path(scratch) / "replay.jsonl"
        replay.write_bytes(one * max(1, round(args.mb * 1e6 / len(one))))
        naive = Path(scratch) / "naive_relay.py"
        naive.write_text(NAIVE)
        data = replay.read_bytes()
        notifications = sum(1 for line in data.splitlines() if b'"method"' in line and b'"id"' not in line)
        python = sys.executable
        commands = {
            "relay": f"{python} -m diverge_codec relay --until-answered -- cat {replay} > /dev/null",
            "naive": f"{python} {naive} cat {replay} > /dev/null",
            "pipe": f"cat {replay} | cat > /dev/null",
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, command in commands.items():
                times[name].append(_cpu(command))
    median = {name: statistics.median(values) for name, values in times.items()}
    print(f"replay: {len(data) / 1e6:.1f} MB, {notifications} notifications; load average {os.getloadavg()[0]:.2f}; "
          f"{args.rounds} rounds; CPU seconds, median (min-max)")
    for name, values in times.items():
        print(f"  {name:6} {median[name]:7.3f} s ({min(values):.3f}-{max(values):.3f})  "
              f"{median[name] / notifications * 1e6:6.2f} us per notification")
    print(f"relay / naive: {median['relay'] / median['naive']:.2f}x   relay / pipe: {median['relay'] / median['pipe']:.1f}x")


if __name__ == "__main__":
    main()
