"""The remote relay's CPU a notification, beside a naive httpx2 + orjson relay, in CPU time.

    python benchmarks/relay_http_cost.py [--count 100000] [--rounds 5] [--instructions]

A Streamable HTTP server (``tests/http_servers.py flood:COUNT:SIZE``) streams COUNT log notifications of
~185 B and of ~1.1 KB on one call's stream, each event with an id as the SDKs write them. Each relay
(``diverge-codec relay --url`` in the 2025 era, the same in the 2026-07-28 era against
``flood-modern`` (``server/discover``, the listen stream, the call: the same stream of events), and ``NAIVE``:
about 30 lines a user might write) POSTs ``initialize`` and the call, parses the events, checks each message and writes each notification as a channel
record to /dev/null. Its CPU (user + system, by ``wait4``) less the same relay's against COUNT 0 (its
start-up and handshake), over COUNT, is the CPU a notification; runs interleaved, medians of
``--rounds``, the load average printed. Start-up over HTTP: the relay's CPU against COUNT 0 less
the bare interpreter's.

``--instructions``: the same difference in instructions instead (valgrind's callgrind, one run of each at COUNT
and at 0, ``PYTHONHASHSEED=0``), beside the times: callgrind cannot see a stall, time cannot be read on a busy
machine, so both are shown.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from instructions import CALLGRIND, PYTHON  # noqa: E402  (the callgrind runner's command)
SERVERS = ROOT / "tests" / "http_servers.py"

NAIVE = r'''
import sys, httpx2, orjson
url, out = sys.argv[1], open("/dev/null", "wb")
headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
def events(response):
    data = []
    for line in response.iter_lines():
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif not line and data:
            yield "\n".join(data)
            data = []
with httpx2.Client(timeout=None) as client:
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "naive", "version": "1"}}}
    with client.stream("POST", url, json=init, headers=headers) as response:
        session = response.headers.get("mcp-session-id")
        list(events(response))
    headers = {**headers, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "go", "arguments": {}}}
    with client.stream("POST", url, json=call, headers=headers) as response:
        for data in events(response):
            message = orjson.loads(data)
            if "method" in message and "id" not in message:
                message.pop("jsonrpc", None)
                body = orjson.dumps(message)
                out.write(len(body + b"x").to_bytes(4, "big") + b"\x00" + body)
'''


def cpu(command: list[str], env: dict[str, str] | None = None) -> float:
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        raise RuntimeError(f"{command[:4]} failed ({status})")
    return usage.ru_utime + usage.ru_stime


def instructions(command: list[str]) -> int:
    """Instructions the command's process ran (callgrind's "Collected"), its output discarded."""
    done = subprocess.run([*CALLGRIND, *command],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(rb"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{command[:4]} failed under callgrind ({done.returncode})")
    return int(found.group(1))


def count_instructions(count: int) -> None:
    """Instructions a notification, each relay and naive, at ~185 B and ~1.1 KB events (one run each)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")
    with servers("flood:0", "flood-modern:0") as idle:
        for size in (185, 1100):
            with servers(f"flood:{count}:{size}", f"flood-modern:{count}:{size}") as urls:
                per = {name: (instructions(command) - instructions(relays(*idle)[name])) / count
                       for name, command in relays(*urls).items()}
            print(f"~{size} B events: " + ", ".join(f"{name} {value:,.0f}" for name, value in per.items())
                  + " instructions a notification")


def serve(mode: str) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen([sys.executable, str(SERVERS), mode], stdout=subprocess.PIPE)
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}/mcp"


@contextlib.contextmanager
def servers(*modes: str) -> Iterator[list[str]]:
    """The servers of ``modes`` running: their URLs; killed after."""
    started = [serve(mode) for mode in modes]
    try:
        yield [url for _, url in started]
    finally:
        for process, _ in started:
            process.kill()


def relays(url: str, modern_url: str) -> dict[str, list[str]]:
    """The relay in each era (the 2025 server's URL, the 2026-07-28 one's), and the naive relay (2025)."""
    relay = [*PYTHON, "-m", "diverge_codec", "relay", "--call", "go", "--until-answered", "--grace", "1",
             "--out", "/dev/null"]
    return {"relay 2025-11-25": [*relay, "--url", url, "--protocol", "2025-11-25"],
            "relay 2026-07-28": [*relay, "--url", modern_url, "--protocol", "2026-07-28"],
            "naive": [*PYTHON, "-c", NAIVE, url]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--instructions", action="store_true", help="count instructions (callgrind) instead of timing")
    args = parser.parse_args()
    if args.instructions:
        print(f"Python {sys.version.split()[0]}; {args.count} notifications; callgrind, one run each")
        count_instructions(args.count)
        return
    print(f"load average {os.getloadavg()[0]:.2f}; Python {sys.version.split()[0]}; {args.count} notifications, "
          f"median of {args.rounds} rounds (runs interleaved)")
    with servers("flood:0", "flood-modern:0") as idle:
        bare = statistics.median(cpu([sys.executable, "-c", "pass"]) for _ in range(args.rounds))
        for size in (185, 1100):
            with servers(f"flood:{args.count}:{size}", f"flood-modern:{args.count}:{size}") as urls:
                spent: dict[str, list[float]] = {name: [] for name in relays(*urls)}
                fixed: dict[str, list[float]] = {name: [] for name in relays(*urls)}
                for _ in range(args.rounds):
                    for name, command in relays(*urls).items():
                        spent[name].append(cpu(command))
                    for name, command in relays(*idle).items():
                        fixed[name].append(cpu(command))
            per = {name: (statistics.median(spent[name]) - statistics.median(fixed[name])) / args.count * 1e6
                   for name in spent}
            print(f"~{size} B events: " + ", ".join(f"{name} {value:.2f} us" for name, value in per.items())
                  + f" a notification; the relay {per['relay 2025-11-25'] / per['naive']:.2f}x naive")
        for name in ("relay 2025-11-25", "relay 2026-07-28"):
            startup = statistics.median(fixed[name]) - bare
            print(f"{name} start-up over HTTP (handshake or probe included): {startup * 1000:.0f} ms of CPU beyond "
                  f"the interpreter ({bare * 1000:.0f} ms)")

if __name__ == "__main__":
    main()
