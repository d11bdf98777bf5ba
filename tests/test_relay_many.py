"""Many servers in one event loop: a flooding server neither delays the others nor grows past its bounds, and
servers that end together share one look for what they left."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from diverge_codec import _json, stream
from diverge_codec.relay import RelayOptions, ServerRelay, exit_status, leftovers as _leftovers
from diverge_codec.sequence import McpNotificationsChecker, State

SERVERS = Path(__file__).with_name("relay_servers.py")


class Channel:
    """An in-memory channel writer: keeps the records; ``stalled`` makes ``drain`` wait until released."""

    def __init__(self, *, keep: bool = True, stalled: bool = False) -> None:
        self.data = bytearray() if keep else None
        self.records = 0
        self.closed = False
        self.released = asyncio.Event()
        if not stalled:
            self.released.set()
        self.grew = asyncio.Event()

    def write(self, data: bytes) -> None:
        at = 0
        while at < len(data):
            at += 4 + int.from_bytes(data[at:at + 4], "big")
            self.records += 1
        if self.data is not None:
            self.data += data
        self.grew.set()

    async def drain(self) -> None:
        await self.released.wait()

    def close(self) -> None:
        self.closed = True

    async def wait_closed(self) -> None:
        return None

    async def until(self, records: int) -> None:
        while self.records < records:
            self.grew.clear()
            await self.grew.wait()

    def state(self) -> State:
        checker = McpNotificationsChecker()
        for payload in stream.split_records(bytes(self.data or b"")):
            checker.payload(payload)
        return checker.finish()


def _flood_file(tmp_path: Path, count: int) -> Path:
    line = _json.dumps({"method": "notifications/message", "params": {"level": "info", "data": "x" * 40},
                        "jsonrpc": "2.0"}) + b"\n"
    path = tmp_path / "flood.jsonl"
    path.write_bytes(line * count)
    return path


def test_a_flooding_server_does_not_hold_back_a_quiet_one(tmp_path):
    flood_count = 300_000

    async def scenario():
        quiet_channel, flood_channel = Channel(), Channel(keep=False)
        quiet = ServerRelay([sys.executable, str(SERVERS), "trickle", "10"], quiet_channel, RelayOptions(grace=0.5))
        flood = ServerRelay(["cat", str(_flood_file(tmp_path, flood_count))], flood_channel)
        quiet_run = asyncio.create_task(quiet.run())
        await quiet_channel.until(1)  # its handshake is done
        flood_run = asyncio.create_task(flood.run())
        await flood_channel.until(1)  # the flood is on
        await quiet_channel.until(10)  # ten round trips through the relay, each needing a turn of the loop
        flood_when_quiet_done = flood_channel.records
        quiet.shutdown()
        return await quiet_run, await flood_run, flood_when_quiet_done, quiet_channel

    quiet_report, flood_report, flood_at_that_time, quiet_channel = asyncio.run(scenario())
    assert flood_at_that_time < flood_count  # the quiet server's ten round trips did not wait for the flood
    assert flood_report.relayed == flood_count and quiet_report.relayed == 10 and quiet_report.requests_answered == 10
    assert quiet_channel.state() is State.FINISHED and quiet_channel.closed


def test_a_stalled_consumer_bounds_its_own_channel_and_not_the_others(tmp_path):
    outbox_bytes = 64 << 10

    async def scenario():
        stalled, healthy = Channel(keep=False, stalled=True), Channel()
        flood = ServerRelay(["cat", str(_flood_file(tmp_path, 50_000))], stalled,
                            RelayOptions(outbox_bytes=outbox_bytes, grace=0.2))
        basic = ServerRelay([sys.executable, str(SERVERS), "basic"], healthy,
                            RelayOptions(calls=[("echo", {"n": 1})], until_answered=True))
        flood_run = asyncio.create_task(flood.run())
        basic_report = await basic.run()
        flood_report = await flood_run  # cat ended; the stalled pump is given up after the grace
        return flood, flood_report, basic_report, healthy

    flood, flood_report, basic_report, healthy = asyncio.run(scenario())
    assert basic_report.relayed == 5 and exit_status(basic_report) == 0 and healthy.state() is State.FINISHED
    assert flood.session.outbox.high_water <= outbox_bytes
    assert flood_report.seen == 50_000 and flood_report.dropped["backpressure"] > 40_000
    assert flood_report.relayed + flood_report.dropped["backpressure"] == 50_000


def test_servers_ending_together_share_a_scan_and_each_gets_its_own_leftover(tmp_path, monkeypatch):
    if not os.path.exists("/proc/self/task"):
        pytest.skip("no /proc: only the group is ended, so a daemon that left it is not found")
    scans: list[int] = []
    end = _leftovers._end
    monkeypatch.setattr(_leftovers, "_end", lambda ending: scans.append(len(ending)) or end(ending))
    monkeypatch.setattr(_leftovers, "SCAN_EVERY", 5.0)  # every end after the first scan's shares the second
    pidfiles = [tmp_path / f"daemon{n}" for n in range(6)]

    async def scenario():
        relays = [ServerRelay([sys.executable, str(SERVERS), "escape", str(pidfile)], Channel(), RelayOptions(grace=2))
                  for pidfile in pidfiles]
        runs = [asyncio.create_task(relay.run()) for relay in relays]
        while not all(pidfile.exists() and pidfile.read_text().endswith("\n") for pidfile in pidfiles):
            await asyncio.sleep(0.02)
        for relay in relays:
            relay.shutdown()  # in one turn: each closes its server's stdin, and the server exits
        return await asyncio.gather(*runs)

    reports = asyncio.run(asyncio.wait_for(scenario(), 60))
    daemons = [int(pidfile.read_text()) for pidfile in pidfiles]
    assert [report.server["leftovers"] for report in reports] == [1] * 6  # each its own daemon, found by its mark
    assert sum(scans) == 6 and len(scans) <= 2
    deadline = time.monotonic() + 10
    while any(_leftovers._running(pid) for pid in daemons):
        assert time.monotonic() < deadline, "a daemon still runs"
        time.sleep(0.02)


_PIPEFUL_SERVER = """
import os, sys
written, line, count = sys.argv[1], sys.argv[2].encode() + b"\\n", int(sys.argv[3])
sys.stdin.buffer.readline()  # the relay's first message: it has widened the pipe by now
data = line * count
while data:  # the pipe holds all of it: no write waits for the relay
    data = data[os.write(1, data):]
open(written, "w").close()
sys.stdin.buffer.read()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are Linux's (F_SETPIPE_SZ)")
@pytest.mark.parametrize("read_bytes", [None, 1 << 20])
def test_a_pipeful_of_output_is_one_read_and_one_write_when_asked(tmp_path, read_bytes):
    """Issue 44: asyncio reads 256 KiB a turn; with ``read_bytes`` set to the pipe's size, the relay reads what
    its widened pipe holds, so a flooding server's pipeful is framed in one call and reaches the channel
    in one write."""
    from diverge_codec.relay import channel as relay_channel

    pipe = min(relay_channel.PIPE_BYTES, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
    written = tmp_path / "written"
    line = _json.dumps({"method": "notifications/message", "params": {"level": "info", "data": "x" * 40}})
    count = (pipe - (64 << 10)) // (len(line) + 1)  # more than 256 KiB, less than the pipe holds

    async def scenario():
        channel = Channel()
        relay = ServerRelay([sys.executable, "-c", _PIPEFUL_SERVER, str(written), line.decode(), str(count)], channel,
                            RelayOptions(grace=0.5, read_bytes=read_bytes))
        run = asyncio.create_task(relay.run())
        while not relay.report.server.get("started"):  # started and its first message sent, in one step
            await asyncio.sleep(0.001)
        deadline = time.monotonic() + 30
        while not written.exists():  # the loop held: the server fills the pipe while the relay cannot read it
            assert time.monotonic() < deadline, "the server did not write its output"
            time.sleep(0.01)
        await channel.until(1)
        first_write = channel.records
        relay.shutdown()
        return first_write, await run

    first_write, report = asyncio.run(scenario())
    assert count * (len(line) + 1) > 256 << 10 and relay_channel.PIPE_BYTES == 1 << 20
    assert first_write == (count if read_bytes else (256 << 10) // (len(line) + 1))  # asyncio's read: its whole lines
    assert report.relayed == count and report.seen == count
