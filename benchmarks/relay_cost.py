"""The whole relay process's CPU, as an operator runs it, beside a naive relay and a pipe.

Four commands, by turns, on the same replay (every committed capture concatenated until the
file is ``--mb`` MB), each run ``--rounds`` times, the CPU of the whole process tree taken by
``getrusage(RUSAGE_CHILDREN)`` around it (user + system, start-up included):

- ``relay``: ``diverge-codec relay -- cat REPLAY > /dev/null``;
- ``naive``: a twenty-line Python relay (asyncio ``readline``, orjson ``loads``, ``pop``,
  ``dumps``, a length prefix), what one writes without this library;
- ``reader``: the server's output read as the relay reads it (an asyncio subprocess protocol, the pipe
  widened and read as the CLI's relay reads it: its allocator settings, then 1 MiB reads) and dropped: the floor of any relay that reads a pipe in asyncio; the relay
  less the reader is the relay's own work (framing, the channel's writes);
- ``pipe``: ``cat REPLAY | cat > /dev/null``: the same bytes through two processes.

Printed: the median CPU seconds of each, µs per notification, and the ratios relay/naive and
relay/pipe. ``python benchmarks/relay_cost.py [--mb 150] [--rounds 3]``. ``--marginal MB2`` runs a second,
larger replay and prints each command's CPU per notification between the two (start-up left out:
issue 44's measure); ``--against DIR`` adds the relay of another checkout built in place.
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

READER = '''
import asyncio, subprocess, sys

from diverge_codec.cli.relay import _keep_freed_memory  # the CLI's allocator settings, then its read size
from diverge_codec.relay.channel import PIPE_BYTES, _widen_output  # the relay's own pipe and reads: the two read alike

class Reader(asyncio.SubprocessProtocol):
    def __init__(self, ended):
        self.ended = ended
    def pipe_data_received(self, fd, data):
        pass
    def pipe_connection_lost(self, fd, exc):
        if fd == 1 and not self.ended.done():
            self.ended.set_result(None)

async def read(command):
    loop = asyncio.get_running_loop()
    ended = loop.create_future()
    transport, _ = await loop.subprocess_exec(lambda: Reader(ended), *command, stdin=subprocess.DEVNULL,
                                              stdout=subprocess.PIPE)
    _widen_output(transport.get_pipe_transport(1), READ_BYTES)
    await ended
    transport.close()

if __name__ == "__main__":
    READ_BYTES = PIPE_BYTES if _keep_freed_memory() else None  # as ``diverge-codec relay`` reads
    asyncio.run(read(sys.argv[1:]))
'''
"""The reader alone: the server's output read as ``diverge-codec relay`` reads it (``relay/stdio.py``,
``relay/channel.py``'s ``PIPE_BYTES``), nothing done with it."""


def _cpu(command: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, shell=True, check=True, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=30, help="size of the replay in MB (default 30)")
    parser.add_argument("--marginal", type=float, metavar="MB2",
                        help="a second, larger replay: each command's CPU per notification between the two (start-up left out)")
    parser.add_argument("--against", type=Path, metavar="DIR",
                        help="also the relay of a checkout built in place (benchmarks/compare.py --keep leaves one)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each command, by turns (default 3)")
    args = parser.parse_args()
    one = b"".join(path.read_bytes() for path in CAPTURES)
    sizes = [args.mb] + ([args.marginal] if args.marginal else [])
    counts: dict[float, int] = {}
    times: dict[tuple[float, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        naive = Path(scratch) / "naive_relay.py"
        naive.write_text(NAIVE)
        reader = Path(scratch) / "reader.py"
        reader.write_text(READER)
        python = sys.executable
        commands: dict[float, dict[str, str]] = {}
        for mb in sizes:
            replay = Path(scratch) / f"replay-{mb}.jsonl"
            data = one * max(1, round(mb * 1e6 / len(one)))
            replay.write_bytes(data)
            counts[mb] = sum(1 for line in data.splitlines() if b'"method"' in line and b'"id"' not in line)
            commands[mb] = {"relay": f"{python} -m diverge_codec relay --until-answered -- cat {replay} > /dev/null"}
            if args.against:
                commands[mb]["old relay"] = (f"PYTHONPATH={args.against.resolve() / 'src'} {python} -m diverge_codec relay "
                                             f"--until-answered -- cat {replay} > /dev/null")
            commands[mb]["naive"] = f"{python} {naive} cat {replay} > /dev/null"
            commands[mb]["reader"] = f"{python} {reader} cat {replay} > /dev/null"
            commands[mb]["pipe"] = f"cat {replay} | cat > /dev/null"
        for _ in range(args.rounds):
            for mb in sizes:
                for name, command in commands[mb].items():
                    times.setdefault((mb, name), []).append(_cpu(command))
    median = {key: statistics.median(values) for key, values in times.items()}
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds by turns; CPU seconds of the process tree, median (min-max)")
    for mb in sizes:
        print(f"replay of {mb:g} MB, {counts[mb]} notifications:")
        for name in commands[mb]:
            values = times[(mb, name)]
            print(f"  {name:9} {median[(mb, name)]:7.3f} s ({min(values):.3f}-{max(values):.3f})  "
                  f"{median[(mb, name)] / counts[mb] * 1e6:6.3f} us per notification")
        print(f"  relay / naive: {median[(mb, 'relay')] / median[(mb, 'naive')]:.3f}x   "
              f"relay / pipe: {median[(mb, 'relay')] / median[(mb, 'pipe')]:.2f}x")
    if args.marginal:
        small, big = sizes
        each = {name: (median[(big, name)] - median[(small, name)]) / (counts[big] - counts[small]) * 1e6
                for name in commands[big]}
        print(f"marginal, {small:g} -> {big:g} MB (us per notification): "
              + ", ".join(f"{name} {value:.3f}" for name, value in each.items()))
        print(f"  relay / naive: {each['relay'] / each['naive']:.3f}x   relay / pipe: {each['relay'] / each['pipe']:.2f}x"
              + (f"   old relay / naive: {each['old relay'] / each['naive']:.3f}x" if args.against else ""))
        print(f"  reader / naive: {each['reader'] / each['naive']:.3f}x   the relay's own work (relay - reader): "
              f"{each['relay'] - each['reader']:.3f} us, {(each['relay'] - each['reader']) / each['naive']:.3f}x naive"
              + (f"; old relay's {each['old relay'] - each['reader']:.3f} us" if args.against else ""))


if __name__ == "__main__":
    main()
