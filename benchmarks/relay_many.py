"""Many servers, one event loop: the relay's throughput, latency and memory for 1, 10 and 100 servers at once.

Each server is ``cat`` of a capture (``data/captures/FAMILY.jsonl`` repeated ``--copies``
times): it writes as fast as a pipe takes it, so every server floods. Each channel goes
to an in-memory writer that takes everything at once (a consumer that keeps up), so
nothing is dropped and what is measured is the relay itself.

- **throughput**: notifications relayed by all channels / wall time from the first
  server started to the last channel finished (process start-up included).
- **latency**: from the moment a notification's line is framed (in the read callback)
  to the moment its record is handed to the channel's writer, every ``--sample``-th
  notification of every channel: the queueing the relay adds, and how it grows with
  the number of servers sharing the loop. Median and p99, in microseconds.
- **memory per channel**: (peak RSS - RSS before the first server) / servers, in KiB,
  each size measured in a fresh process.

``python benchmarks/relay_many.py`` prints a Markdown table (and ``--json`` the rows); the
load on the machine (``os.getloadavg``) is printed with it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from array import array
from pathlib import Path

CAPTURES = Path(__file__).resolve().parent / "data" / "captures"


class _LatencyWriter:
    """A channel writer that keeps nothing: it counts records and times the sampled ones."""

    def __init__(self, framed: list[int], every: int, latencies: array) -> None:
        self.framed, self.every, self.latencies = framed, every, latencies
        self.records = 0

    def write(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        at, end = 0, len(data)
        while at < end:
            at += 4 + int.from_bytes(data[at:at + 4], "big")
            if self.records % self.every == 0:
                self.latencies.append(now - self.framed[self.records // self.every])
            self.records += 1

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    async def wait_closed(self) -> None:
        return None


def _timed_frame(framed: list[int], every: int):
    from diverge_codec.relay import relay_frame

    count = 0

    def frame(line: bytes) -> bytes | None:
        nonlocal count
        payload = relay_frame(line)
        if payload is not None:
            if count % every == 0:
                framed.append(time.perf_counter_ns())
            count += 1
        return payload
    return frame


def _rss_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


async def _relay_all(servers: int, replay: Path, every: int) -> dict:
    from diverge_codec.relay import RelayOptions, ServerRelay

    latencies = array("q")
    writers, relays = [], []
    for _ in range(servers):
        framed: list[int] = []
        writer = _LatencyWriter(framed, every, latencies)
        options = RelayOptions(frame=_timed_frame(framed, every), grace=30.0)
        writers.append(writer)
        relays.append(ServerRelay(["cat", str(replay)], writer, options))
    started = time.perf_counter()
    reports = await asyncio.gather(*(relay.run() for relay in relays))
    elapsed = time.perf_counter() - started
    relayed = sum(report.relayed for report in reports)
    dropped = sum(sum(report.dropped.values()) for report in reports)
    assert relayed == sum(writer.records for writer in writers), "a record was counted but not written"
    ordered = sorted(latencies)
    return {"servers": servers, "relayed": relayed, "dropped": dropped, "seconds": elapsed,
            "per_second": relayed / elapsed, "median_us": statistics.median(ordered) / 1000,
            "p99_us": ordered[int(len(ordered) * 0.99)] / 1000, "samples": len(ordered)}


def measure_one(servers: int, replay: Path, every: int) -> dict:
    """One size, in this process (``--one``): the row."""
    import diverge_codec.relay  # noqa: F401 - loaded before the baseline

    baseline = _rss_kib("VmRSS")
    row = asyncio.run(_relay_all(servers, replay, every))
    row["kib_per_channel"] = (_rss_kib("VmHWM") - baseline) / servers
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--family", default="ts-sdk-everything", help="the capture replayed by every server")
    parser.add_argument("--copies", type=int, default=20, help="the capture, this many times over, per server")
    parser.add_argument("--sample", type=int, default=10, help="time every n-th notification of a channel")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--replay", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure_one(args.one, args.replay, args.sample)))
        return 0
    capture = (CAPTURES / f"{args.family}.jsonl").read_bytes()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        replay = Path(scratch) / "replay.jsonl"
        replay.write_bytes(capture * args.copies)
        for servers in args.servers:
            load = os.getloadavg()[0]
            done = subprocess.run([sys.executable, __file__, "--one", str(servers), "--replay", str(replay),
                                   "--sample", str(args.sample)], capture_output=True, text=True, check=True)
            row = json.loads(done.stdout)
            row["load"] = load
            rows.append(row)
    if args.json:
        print(json.dumps(rows))
        return 0
    print(f"capture {args.family} x{args.copies} per server (`cat`), every {args.sample}th notification timed; "
          f"{os.cpu_count()} CPUs")
    print("| servers | notifications | seconds | notifications/s | latency median (µs) | latency p99 (µs) "
          "| memory per channel (KiB) | dropped | load (1 min) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['servers']} | {row['relayed']:,} | {row['seconds']:.2f} | {row['per_second']:,.0f} "
              f"| {row['median_us']:,.0f} | {row['p99_us']:,.0f} | {row['kib_per_channel']:,.0f} | {row['dropped']} "
              f"| {row['load']:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
