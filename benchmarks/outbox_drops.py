"""What the relay's outbox drops for a consumer that keeps up on average, by outbox size.

The relay never blocks on its channel: a record that does not fit in the outbox is dropped
and counted (``dropped.backpressure``). The outbox must be large enough that a consumer
which keeps pace on average, but is descheduled now and then, loses nothing. This runs
``diverge-codec relay --outbox-bytes N -- SERVER | CONSUMER`` as an operator would, for:

- servers: a real replay (``cat`` of every committed capture, concatenated ``--copies``
  times) and a fast flood (``tests/relay_servers.py flood COUNT``: notifications written as
  fast as a pipe takes them, before the handshake);
- consumers: ``cat > /dev/null`` (keeps up) and ``diverge-codec inspect --channel
  mcp-notifications -`` (decodes, checks and prints each frame: slower than the relay);
- outboxes: 1 MiB (the old default) and 8 MiB (the default).

Each cell is the share of notifications dropped for backpressure (of all seen) over ``--runs`` runs (min-max), from the
relay's own report. ``python benchmarks/outbox_drops.py`` prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAPTURES = sorted((HERE / "data" / "captures").glob("*.jsonl"))
SERVERS_PY = HERE.parent / "tests" / "relay_servers.py"
MIB = 1024 * 1024


def _drop_share(server: list[str], consumer: str, outbox: int) -> float:
    relay = [sys.executable, "-m", "diverge_codec", "relay", "--grace", "1", "--until-answered", "--outbox-bytes", str(outbox),
             "--", *server]
    with subprocess.Popen(relay, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        consuming = subprocess.run(consumer, shell=True, stdin=process.stdout, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, check=False)
        process.stdout.close()
        err = process.stderr.read().decode()
    try:
        report = json.loads(err.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"the relay printed no report (status {process.returncode}):\n{err[-2000:]}") from None
    del consuming
    dropped = report["dropped"]["backpressure"]  # not invalid: the captures hold lines the channel refuses
    if report["seen"] == 0:
        raise SystemExit(f"the relay saw nothing from {server}: {report}")
    return dropped / report["seen"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=40, help="the captures replayed this many times (default 40)")
    parser.add_argument("--flood", type=int, default=200_000, help="notifications in the flood (default 200000)")
    parser.add_argument("--runs", type=int, default=3, help="runs per cell (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        replay = Path(scratch) / "replay.jsonl"
        data = b"".join(path.read_bytes() for path in CAPTURES)
        replay.write_bytes(data * args.copies)
        notifications = sum(1 for line in replay.read_bytes().splitlines() if b'"id"' not in line)
        servers = {f"replay of the captures ({len(replay.read_bytes()) // 1024} KiB, ~{notifications} notifications)":
                   ["cat", str(replay)],
                   f"flood ({args.flood} notifications)": [sys.executable, str(SERVERS_PY), "flood", str(args.flood)]}
        consumers = {"`\\| cat`": "cat > /dev/null",
                     "`\\| diverge-codec inspect -`":
                     f"{sys.executable} -m diverge_codec inspect --channel mcp-notifications - > /dev/null"}
        print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, {args.runs} runs per cell\n")
        print("| server | consumer | outbox 1 MiB | outbox 8 MiB |")
        print("| --- | --- | --- | --- |")
        for server_name, server in servers.items():
            for consumer_name, consumer in consumers.items():
                cells = []
                for outbox in (MIB, 8 * MIB):
                    shares = [_drop_share(server, consumer, outbox) for _ in range(args.runs)]
                    cells.append(f"{100 * min(shares):.1f}-{100 * max(shares):.1f}%")
                print(f"| {server_name} | {consumer_name} | {cells[0]} | {cells[1]} |", flush=True)


if __name__ == "__main__":
    main()
