"""The remote relay in the field (issue #41): behind real nginx and haproxy, past a middlebox that forgets flows.

Figures from one run, printed as Markdown (the CHANGELOG's and docs/relay.md's):

- the keep-alive race: nginx with ``keepalive_timeout 1s``, ``--runs`` relays (10) side by side, each one call
  during which the server sends ``--pings`` pings (200), one every second (the timeout), each answered by a POST:
  sessions made and calls lost in each run (1 and 0 expected);
- a server killed (SIGKILL) and started again 1 s later behind nginx and behind haproxy: the time from the kill,
  and from the server's start, to the relay's new session;
- a server killed for good behind each: the relay's exit status, words, and time from the kill (``--window``);
- a middlebox that forgets flows idle for 5 s: a call whose ping is answered after 6 s idle (answered or not);
- the GET stream's silence limit: a middlebox forgetting flows idle for 1 s, ``--stream-timeout 2``: the times the
  stream was found silent, and whether the events relayed are whole (none lost, none twice).

Needs nginx and haproxy (``.ci/infra``) and the ``[http]`` extra. ``python benchmarks/relay_field.py`` (about 4 min;
``--pings 20`` for a quick look).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import ssl
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
os.environ.setdefault("DIVERGE_CODEC_REQUIRE_INFRA", "1")  # a missing binary is an error here, not a skip

import infra  # noqa: E402
from field import field_server, forgetful_middlebox, later, relay_run  # noqa: E402


class _Moments(logging.Handler):
    """When each INFO line of the relay's was said (monotonic), to time what it announces."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append((time.monotonic(), record.getMessage()))

    def first(self, words: str) -> float | None:
        return next((at for at, line in self.lines if words in line), None)


MOMENTS = _Moments()
logging.getLogger("diverge_codec.relay").addHandler(MOMENTS)
logging.getLogger("diverge_codec.relay").setLevel(logging.INFO)


def _nginx(server: Any, **settings: Any) -> Any:
    return infra.nginx(("127.0.0.1", server.port), **settings)


def _verify(running: Any) -> Any:
    return ssl.create_default_context(cafile=running.tls.ca_file) if running.tls else None


async def keepalive_race(runs: int, pings: int) -> list[str]:
    with field_server() as server, _nginx(server, keepalive_timeout="1s") as running:
        pinger = {"count": pings, "every": 1.0, "comments": 0.25}
        results = await asyncio.gather(*(relay_run(f"{running.url}/mcp", _verify(running), until_answered=True,
                                                   request_timeout=pings * 2.0 + 60, calls=[("pinger", pinger)])
                                         for _ in range(runs)))
    rows = ["| run | sessions | calls lost | calls failed | POSTs failed | pings answered |", "|---|---|---|---|---|---|"]
    for number, (report, _, _) in enumerate(results, 1):
        server_report = report["server"]
        rows.append(f"| {number} | {server_report['sessions']} | {server_report['calls_lost']} | {report['calls']['failed']} "
                    f"| {server_report['posts_failed']} | {report['requests_answered']} |")
    return rows


def _proxy(name: str, server: Any) -> Any:
    return _nginx(server) if name == "nginx" else infra.haproxy([("127.0.0.1", server.port)])


async def restarted(name: str) -> str:
    with field_server(tick=0.3) as server, _proxy(name, server) as running:
        MOMENTS.lines.clear()
        moments: dict[str, float] = {}

        def kill() -> None:
            moments["kill"] = time.monotonic()
            server.kill()

        def start() -> None:
            server.start()
            moments["start"] = time.monotonic()
        later(1.0, kill)
        later(2.0, start)
        report, _, status = await relay_run(f"{running.url}/mcp", _verify(running), duration=8.0, reconnect_window=30.0)
    made = MOMENTS.first("a new session")
    if made is None:
        return f"| {name} | no new session (sessions {report['server']['sessions']}, exit {status}) | | |"
    return (f"| {name} | {report['server']['sessions']} | {made - moments['kill']:.2f} s | {made - moments['start']:.2f} s "
            f"| {report['server']['without_session_s']:.2f} s |")


async def killed(name: str, window: float) -> str:
    with field_server(tick=0.3) as server, _proxy(name, server) as running:
        moments: dict[str, float] = {}

        def kill() -> None:
            moments["kill"] = time.monotonic()
            server.kill()
        later(1.0, kill)
        report, _, status = await relay_run(f"{running.url}/mcp", _verify(running), duration=120.0, reconnect_window=window)
        ended = time.monotonic()
    return f"| {name} | {status} | {report['server'].get('error')} | {ended - moments['kill']:.2f} s |"


async def middlebox() -> str:
    with field_server(tick=0.5) as server:
        async with forgetful_middlebox(("127.0.0.1", server.port), idle=5.0) as port:
            pinger = {"count": 1, "every": 6.0, "comments": 1.0}
            report, _, status = await relay_run(f"http://127.0.0.1:{port}/mcp", calls=[("pinger", pinger)],
                                                until_answered=True)
    return (f"| idle flows forgotten after 5 s; the ping answered after 6 s | {report['calls']['answered']} of 1 "
            f"| {report['server']['sessions']} | {status} |")


async def silence() -> str:
    with field_server(tick=1.5) as server:
        async with forgetful_middlebox(("127.0.0.1", server.port), idle=1.0) as port:
            report, data, _ = await relay_run(f"http://127.0.0.1:{port}/mcp", duration=12.0, stream_timeout=2.0)
    whole = bool(data) and data == list(range(data[0], data[0] + len(data)))
    return (f"| flows forgotten after 1 s idle, events every 1.5 s, --stream-timeout 2 | {report['server']['stream_silences']} "
            f"| {len(data)} ({data[0] if data else '-'}..{data[-1] if data else '-'}) | {'yes' if whole else 'NO'} |")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pings", type=int, default=200)
    parser.add_argument("--window", type=float, default=5.0, help="--reconnect-window for the server killed for good")
    args = parser.parse_args()
    print(f"## Keep-alive race: nginx keepalive_timeout 1s, {args.runs} runs of {args.pings} POSTed answers 1 s apart\n")
    print("\n".join(await keepalive_race(args.runs, args.pings)))
    print("\n## A server killed and started again 1 s later\n")
    print("| proxy | sessions | kill to new session | server start to new session | without_session_s |\n|---|---|---|---|---|")
    for name in ("nginx", "haproxy"):
        print(await restarted(name))
    print(f"\n## A server killed for good (--reconnect-window {args.window:g})\n")
    print("| proxy | exit status | error | kill to exit |\n|---|---|---|---|")
    for name in ("nginx", "haproxy"):
        print(await killed(name, args.window))
    print("\n## A middlebox that forgets idle flows\n")
    print("| case | calls answered | sessions | exit status |\n|---|---|---|---|")
    print(await middlebox())
    print("\n## The GET stream's silence limit\n")
    print("| case | silences noticed | events relayed | whole (none lost, none twice) |\n|---|---|---|---|")
    print(await silence())


if __name__ == "__main__":
    asyncio.run(main())
