"""What ``diverge-codec relay`` costs before it relays a byte: CPU of ``relay -- true``, beside the interpreter's own.

Each round runs, by turns, the bare interpreter (``python -c pass``), the floor any asyncio
relay with orjson pays (``import asyncio, orjson``, asyncio without ``ssl`` as the command
loads it), the whole command on a server that exits at once (``diverge-codec relay --
true``: argument parsing, imports, the event loop, the server started and reaped, the report)
and over HTTP to a port nothing listens on (``relay --url``: the HTTP client's imports, one
connection refused, the report; issue #35's target: 100 ms).
CPU is user + system of each child process tree by ``getrusage``; the median over ROUNDS
is printed, and the relay's CPU beyond the interpreter's (issue #25's target: 60 ms). Run
with the package installed, from the venv whose ``python`` runs the command:

    python benchmarks/startup_cost.py [--rounds 25]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys


def cpu_ms(command: list[str], env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed): ``relay --url`` is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    options.add_argument("--rounds", type=int, default=25)
    rounds = options.parse_args().rounds
    script = os.path.join(os.path.dirname(sys.executable), "diverge-codec")
    relay = [script] if os.path.exists(script) else [shutil.which("diverge-codec") or "diverge-codec"]
    env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}  # cached bytecode, as installed
    cases = {
        "interpreter (python -c pass)": [sys.executable, "-c", "pass"],
        "floor (import asyncio, orjson)": [sys.executable, "-c",
                                           "import sys; sys.modules['ssl'] = None; import asyncio, orjson"],
        "diverge-codec relay -- true": [*relay, "relay", "--", "true"],
        "diverge-codec relay --url (nothing listening)": [*relay, "relay", "--url", f"http://127.0.0.1:{_closed_port()}/mcp"],
    }
    for command in cases.values():  # warm: bytecode written, files cached
        cpu_ms(command, env)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, command in cases.items():
            samples[name].append(cpu_ms(command, env))
    base = statistics.median(samples["interpreter (python -c pass)"])
    print(f"| command | CPU ms, median of {rounds} | beyond the interpreter |\n|---|---:|---:|")
    for name, values in samples.items():
        print(f"| {name} | {statistics.median(values):.1f} | {statistics.median(values) - base:.1f} |")
    print(f"load average {os.getloadavg()[0]:.2f}; python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
