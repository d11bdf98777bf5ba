"""The remote relay's CPU a notification, beside a naive httpx2 + orjson relay, in CPU time.

    python benchmarks/relay_http_cost.py [--count 100000] [--rounds 5] [--instructions]

A Streamable HTTP server (``tests/http_servers.py flood:COUNT:SIZE``) streams COUNT log notifications of
~185 B and of ~1.1 KB on one call's stream, each event with an id as the SDKs write them. Each relay
(``diverge-codec relay --url``, and ``NAIVE``: about 30 lines a user might write) POSTs ``initialize``
and the call, parses the events, checks each message and writes each notification as a channel
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
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(rb"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"{command[:4]} failed under callgrind ({done.returncode})")
    return int(found.group(1))


def count_instructions(count: int) -> None:
    """Instructions a notification, relay and naive, at ~185 B and ~1.1 KB events (one run each)."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")
    idle, idle_url = serve("flood:0")
    try:
        for size in (185, 1100):
            server, url = serve(f"flood:{count}:{size}")
            try:
                per = {name: (instructions(command) - instructions(relays(idle_url)[name])) / count
                       for name, command in relays(url).items()}
            finally:
                server.kill()
            print(f"~{size} B events: relay {per['relay']:,.0f}, naive {per['naive']:,.0f} instructions a notification: "
                  f"{per['relay'] / per['naive']:.2f}x")
    finally:
        idle.kill()


def serve(mode: str) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen([sys.executable, str(SERVERS), mode], stdout=subprocess.PIPE)
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}/mcp"


def relays(url: str) -> dict[str, list[str]]:
    return {"relay": [sys.executable, "-m", "diverge_codec", "relay", "--url", url, "--call", "go", "--until-answered",
                      "--grace", "1", "--out", "/dev/null"],
            "naive": [sys.executable, "-c", NAIVE, url]}


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
    idle, idle_url = serve("flood:0")
    try:
        bare = statistics.median(cpu([sys.executable, "-c", "pass"]) for _ in range(args.rounds))
        for size in (185, 1100):
            server, url = serve(f"flood:{args.count}:{size}")
            try:
                spent: dict[str, list[float]] = {"relay": [], "naive": []}
                fixed: dict[str, list[float]] = {"relay": [], "naive": []}
                for _ in range(args.rounds):
                    for name, command in relays(url).items():
                        spent[name].append(cpu(command))
                    for name, command in relays(idle_url).items():
                        fixed[name].append(cpu(command))
            finally:
                server.kill()
            per = {name: (statistics.median(spent[name]) - statistics.median(fixed[name])) / args.count * 1e6
                   for name in spent}
            print(f"~{size} B events: relay {per['relay']:.2f} us, naive {per['naive']:.2f} us a notification: "
                  f"{per['relay'] / per['naive']:.2f}x")
        startup = statistics.median(fixed["relay"]) - bare
        print(f"start-up over HTTP (handshake included): {startup * 1000:.0f} ms of CPU beyond the interpreter "
              f"({bare * 1000:.0f} ms)")
    finally:
        idle.kill()


if __name__ == "__main__":
    main()
