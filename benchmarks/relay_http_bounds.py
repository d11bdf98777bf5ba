"""The remote relay's bounds, measured: peak RSS against hostile bodies, time to a new session, time to give up.

    python benchmarks/relay_http_bounds.py

Runs ``relay --url`` against ``tests/http_servers.py`` (a gzip body inflating to 1 GiB as text/plain and as a
500, a 300 MiB plain body, 1 GiB of tiny gzip events for ``--duration 3``) and against server-everything killed
and restarted under it (the report's ``without_session_s``), then killed for good (seconds from the kill to the
relay's exit with ``--reconnect-window 5``). Prints one line per case: what docs/relay.md quotes.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ROOT / "tests" / "http_servers.py"
EVERYTHING = ROOT / "tests" / "peers" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
RELAY = [sys.executable, "-m", "diverge_codec", "relay"]
PEAK = ("import resource, subprocess, sys\n"
        "status = subprocess.call(sys.argv[2:])\n"
        "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n")


def measured(url: str, *args: str) -> tuple[dict, float, int]:
    """The report, the seconds the relay ran and its peak RSS in MiB."""
    rss_file = Path(f"/tmp/relay-bounds-{os.getpid()}")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PEAK, str(rss_file), *RELAY, "--url", url, *args],
                          capture_output=True, timeout=300)
    elapsed = time.monotonic() - started
    report = json.loads(done.stderr.decode().strip().splitlines()[-1])
    return report, elapsed, int(rss_file.read_text()) // 1024


def odd(mode: str) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen([sys.executable, str(SERVERS), mode], stdout=subprocess.PIPE)
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline())}/mcp"


def everything(port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(["node", str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(2.5)
    return process


def main() -> None:
    baseline = measured("http://127.0.0.1:1/mcp")[2]
    print(f"relay --url to nothing listening: peak RSS {baseline} MiB")
    for mode, args in [("bomb-text", ["--call", "go", "--until-answered"]), ("bomb-500", ["--call", "go", "--until-answered"]),
                       ("plain:300", ["--call", "go", "--until-answered"]), ("bomb-events", ["--call", "go", "--duration", "3"])]:
        server, url = odd(mode)
        try:
            report, elapsed, rss = measured(url, *args, "--grace", "1")
        finally:
            server.kill()
        print(f"{mode}: peak RSS {rss} MiB, ended after {elapsed:.1f} s, bodies_unread {report['server']['bodies_unread']}, "
              f"calls {report['calls']}")
    if not EVERYTHING.exists():
        print("server-everything not installed (bash .ci/peers): restart figures skipped")
        return
    port = 18000 + os.getpid() % 1000
    server = everything(port)
    relay = subprocess.Popen([*RELAY, "--url", f"http://127.0.0.1:{port}/mcp", "--request", 'logging/setLevel={"level":"debug"}',
                              "--duration", "12", "--grace", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(4)
    server.kill()
    server.wait()
    server = everything(port)  # includes node's start-up
    _, err = relay.communicate(timeout=60)
    server.kill()
    report = json.loads(err.decode().strip().splitlines()[-1])
    print(f"server-everything restarted (down ~2.5 s while node starts): sessions {report['server']['sessions']}, "
          f"without a session {report['server']['without_session_s']} s")
    server = everything(port)
    relay = subprocess.Popen([*RELAY, "--url", f"http://127.0.0.1:{port}/mcp", "--request", 'logging/setLevel={"level":"debug"}',
                              "--grace", "1", "--reconnect-window", "5"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(3)
    server.kill()
    killed = time.monotonic()
    relay.communicate(timeout=60)
    print(f"server-everything killed for good, --reconnect-window 5: exit {relay.returncode} after {time.monotonic() - killed:.1f} s")
    print(f"(load average {os.getloadavg()[0]:.2f}, Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
