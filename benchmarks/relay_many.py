"""Many servers, one event loop: what each server costs the relay, and what a notification costs with 1, 10, 100.

Each server is ``cat`` of a capture (``data/captures/FAMILY.jsonl`` repeated ``--copies``
times): it writes as fast as a pipe takes it, so every server floods, into a channel
writer that takes everything at once (nothing is dropped). Every size is run in a fresh
process, and its CPU (``getrusage(RUSAGE_SELF)``, user + system, around ``asyncio.run``:
the relay's process alone, not the servers') is taken, for the relay and, by turns, for a
naive asyncio relay of the same servers (``readline``, ``orjson.loads``, ``dumps``, a
length prefix: what one writes without this library). The median of ``--rounds``:

- **fixed cost per server**: the CPU of N servers that write nothing (``cat /dev/null``: started, handshaken, ended, their leftovers looked for, reaped) / N, after one such
  server run untimed in the same process (what only the first server pays: the loop's
  child watcher, the modules loaded on first use);
- **CPU per notification** with N flooding servers: the CPU / the notifications relayed,
  and its ratio at the largest N to one server's.

``python benchmarks/relay_many.py [--servers 1 10 100] [--rounds 3]`` prints both as
Markdown tables, with the load average and the versions; ``--json`` the raw runs.
``--config`` runs the relay's servers as an ``mcpServers`` config through ``relay --config``'s path
(``cli._fleet``: the embedding API's ``Relay``, each channel to its own file). ``--latency`` prints instead the older table: throughput, latency from framing to the
writer (every ``--sample``-th notification), memory per channel.
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


class _CountingWriter:
    """A channel writer that keeps nothing and counts the records."""

    def __init__(self) -> None:
        self.records = 0

    def write(self, data: bytes) -> None:
        at, end = 0, len(data)
        while at < end:
            at += 4 + int.from_bytes(data[at:at + 4], "big")
            self.records += 1

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        return None

    async def wait_closed(self) -> None:
        return None


class _LatencyWriter(_CountingWriter):
    """A channel writer that keeps nothing: it counts records and times the sampled ones."""

    def __init__(self, framed: list[int], every: int, latencies: array) -> None:
        super().__init__()
        self.framed, self.every, self.latencies = framed, every, latencies

    def write(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        at, end = 0, len(data)
        while at < end:
            at += 4 + int.from_bytes(data[at:at + 4], "big")
            if self.records % self.every == 0:
                self.latencies.append(now - self.framed[self.records // self.every])
            self.records += 1


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
    """One size of the latency table, in this process: the row."""
    import diverge_codec.relay  # noqa: F401 - loaded before the baseline

    baseline = _rss_kib("VmRSS")
    row = asyncio.run(_relay_all(servers, replay, every))
    row["kib_per_channel"] = (_rss_kib("VmHWM") - baseline) / servers
    return row


async def _relay_cpu(servers: int, replay: Path) -> int:
    from diverge_codec.relay import RelayOptions, ServerRelay

    writers = [_CountingWriter() for _ in range(servers)]
    relays = [ServerRelay(["cat", str(replay)], writer, RelayOptions(grace=30.0)) for writer in writers]
    reports = await asyncio.gather(*(relay.run() for relay in relays))
    assert all(not sum(report.dropped.values()) for report in reports), "a notification was dropped"
    return sum(report.relayed for report in reports)  # the records less one Error frame each if the server said nothing


async def _config_cpu(servers: int, replay: Path) -> int:
    """The same servers as an ``mcpServers`` config run by ``relay --config`` (``cli._fleet``: the API's ``Relay``,
    each channel to its own file), in this process."""
    from diverge_codec.cli._fleet import load_config, run_fleet
    from diverge_codec.relay import RelayOptions

    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "config.json"
        config.write_text(json.dumps({"mcpServers": {f"s{i}": {"command": "cat", "args": [str(replay)]}
                                                     for i in range(servers)}}))
        (Path(scratch) / "out").mkdir()
        report, _ = await run_fleet(load_config(str(config)), str(Path(scratch) / "out"), RelayOptions(grace=30.0),
                                    lambda line: None)
    sections = report["servers"].values()
    assert all(not sum(section["dropped"].values()) for section in sections), "a notification was dropped"
    return sum(section["relayed"] for section in sections)


async def _naive_cpu(servers: int, replay: Path) -> int:
    """The naive relay (``relay_cost.NAIVE``), one loop for every server."""
    from relay_cost import NAIVE  # beside this file

    naive: dict = {"__name__": "naive"}
    exec(NAIVE, naive)
    writers = [_CountingWriter() for _ in range(servers)]
    await asyncio.gather(*(naive["relay"](["cat", str(replay)], writer) for writer in writers))
    return sum(writer.records for writer in writers)


def measure_cpu(servers: int, replay: Path, naive: bool) -> dict:
    """One run, in this process: the relay's (or the naive relay's) CPU seconds and notifications."""
    import resource

    import diverge_codec.relay.stdio  # noqa: F401 - imports are not the run's cost
    import orjson  # noqa: F401

    run = _naive_cpu if naive else _config_cpu if os.environ.get("RELAY_MANY_CONFIG") else _relay_cpu
    asyncio.run(run(1, Path(os.devnull)))  # what the first server pays once per process (the child watcher...)
    before = resource.getrusage(resource.RUSAGE_SELF)
    notifications = asyncio.run(run(servers, replay))
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu": cpu, "notifications": notifications}


def _run_one(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _versions() -> str:
    import platform

    import orjson

    return f"CPython {platform.python_version()}, orjson {orjson.__version__}"


def cpu_figures(sizes: list[int], rounds: int, replay: Path) -> dict:
    """Every size, relay and naive, empty and flooding, by turns, ``rounds`` times: the medians."""
    runs: dict[str, list[dict]] = {}
    loads = []
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        for servers in sizes:
            for who in ("relay", "naive"):
                for what, path in (("fixed", Path(os.devnull)), ("flood", replay)):
                    row = _run_one("--cpu", who, "--one", str(servers), "--replay", str(path))
                    runs.setdefault(f"{who} {what} {servers}", []).append(row)
    figures: dict = {"sizes": sizes, "rounds": rounds, "load": loads, "versions": _versions(), "runs": runs}
    for who in ("relay", "naive"):
        for servers in sizes:
            fixed = runs[f"{who} fixed {servers}"]
            flood = runs[f"{who} flood {servers}"]
            figures[f"{who} fixed_ms {servers}"] = statistics.median(row["cpu"] for row in fixed) / servers * 1e3
            figures[f"{who} us_per_notification {servers}"] = statistics.median(
                row["cpu"] / row["notifications"] for row in flood) * 1e6
        figures[f"{who} ratio"] = (figures[f"{who} us_per_notification {sizes[-1]}"]
                                   / figures[f"{who} us_per_notification {sizes[0]}"])
    return figures


def _print_cpu(figures: dict, family: str, copies: int) -> None:
    sizes = figures["sizes"]
    loads = ", ".join(f"{load:.1f}" for load in figures["load"])
    print(f"capture {family} x{copies} per server (`cat`); CPU of the relay's process (getrusage), median of "
          f"{figures['rounds']} rounds by turns; {figures['versions']}; {os.cpu_count()} CPUs, load average {loads}")
    print()
    print("| servers | fixed cost per server, relay (ms CPU) | naive (ms CPU) "
          "| CPU per notification, relay (µs) | naive (µs) |")
    print("|---:|---:|---:|---:|---:|")
    for servers in sizes:
        print(f"| {servers} | {figures[f'relay fixed_ms {servers}']:.2f} | {figures[f'naive fixed_ms {servers}']:.2f} "
              f"| {figures[f'relay us_per_notification {servers}']:.2f} "
              f"| {figures[f'naive us_per_notification {servers}']:.2f} |")
    print(f"| {sizes[-1]} / {sizes[0]} | | | **{figures['relay ratio']:.2f}x** | {figures['naive ratio']:.2f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--family", default="ts-sdk-everything", help="the capture replayed by every server")
    parser.add_argument("--copies", type=int, default=20, help="the capture, this many times over, per server")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, by turns; the median is printed")
    parser.add_argument("--latency", action="store_true", help="the throughput, latency and memory table instead")
    parser.add_argument("--sample", type=int, default=10, help="with --latency: time every n-th notification")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--config", action="store_true",
                        help="the relay's runs through relay --config (an mcpServers config, a file per channel)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cpu", choices=("relay", "naive"), help=argparse.SUPPRESS)
    parser.add_argument("--replay", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        row = (measure_cpu(args.one, args.replay, args.cpu == "naive") if args.cpu
               else measure_one(args.one, args.replay, args.sample))
        print(json.dumps(row))
        return 0
    if args.config:
        os.environ["RELAY_MANY_CONFIG"] = "1"  # the runs are child processes: they read it
    capture = (CAPTURES / f"{args.family}.jsonl").read_bytes()
    with tempfile.TemporaryDirectory() as scratch:
        replay = Path(scratch) / "replay.jsonl"
        replay.write_bytes(capture * args.copies)
        if not args.latency:
            figures = cpu_figures(args.servers, args.rounds, replay)
            if args.json:
                print(json.dumps(figures))
            else:
                _print_cpu(figures, args.family, args.copies)
            return 0
        rows = []
        for servers in args.servers:
            load = os.getloadavg()[0]
            row = _run_one("--one", str(servers), "--replay", str(replay), "--sample", str(args.sample))
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
