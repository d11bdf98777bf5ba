"""The embedding API (``diverge_codec.relay.api``): a relay inside a program, its frames, answers and end.

A stdio server (written here, its lines known byte for byte) and a Streamable HTTP server
(``http_servers.py bytes``, which logs what it sent): every notification arrives as a frame whose
payload is the server's bytes less ``jsonrpc``, the call's answer is awaited, and nothing is left
running once the block is left, also when the block is cancelled.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from diverge_codec import mcp_notifications
from diverge_codec.relay import Command, Relay, RelayEnded, RelayOptions, Remote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_relay_http import _one_span_removed, _sent_notifications  # noqa: E402

SERVER = r'''
import json, os, sys, time
out = sys.stdout.buffer
def send(line): out.write(line + b"\n"); out.flush()
send(b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"before"}}')
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        send(b'{"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"t","version":"0"}},"id":%d,"jsonrpc":"2.0"}' % message["id"])
    elif message.get("method") == "tools/call":
        send(b'{ "method" : "notifications/progress", "jsonrpc":"2.0", "params":{"progressToken":"p","progress":1}}')
        send(b'{"method":"notifications/message","params":{"level":"debug","data":"\\u00e9"},"jsonrpc":"2.0"}')
        send(b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"done"}]}}' % message["id"])
        if os.environ.get("LINGER"):
            open(os.environ["LINGER"], "w").write(str(os.getpid()))
            while True:
                time.sleep(1)
'''

EXPECTED = [
    b'\x00{"method":"notifications/message","params":{"level":"info","data":"before"}}',
    b'\x00{ "method" : "notifications/progress", "params":{"progressToken":"p","progress":1}}',
    b'\x00{"method":"notifications/message","params":{"level":"debug","data":"\\u00e9"}}',
]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def stdio_server(tmp_path):
    path = tmp_path / "server.py"
    path.write_text(SERVER)
    return [sys.executable, str(path)]


def test_a_stdio_server_s_frames_and_answer_in_a_program(stdio_server):
    async def main():
        options = RelayOptions(calls=[("go", {})], until_answered=True, grace=2)
        async with Relay(Command(stdio_server), options, payloads=True) as relay:
            payloads = [payload async for payload in relay]
            answer = await relay.answer("tools/call go")
        return relay, payloads, answer
    relay, payloads, answer = asyncio.run(main())
    assert payloads == EXPECTED
    assert answer.label == "tools/call go" and answer.message["result"]["content"][0]["text"] == "done"
    report = relay.report.as_dict()
    assert report["relayed"] == 3 and report["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0}
    assert report["server"]["shutdown"] == "until-answered"


def test_frames_are_the_codec_s_frames_by_default(stdio_server):
    async def main():
        async with Relay(Command(stdio_server), RelayOptions(calls=[("go", {})], until_answered=True)) as relay:
            return [frame async for frame in relay]
    frames = asyncio.run(main())
    assert frames == [mcp_notifications.decode(payload) for payload in EXPECTED]
    assert all(isinstance(frame, mcp_notifications.Notification) for frame in frames)


def test_leaving_the_block_early_ends_the_server(stdio_server, tmp_path):
    pidfile = tmp_path / "pid"

    async def main():
        options = RelayOptions(calls=[("go", {})], grace=0.5)
        async with Relay(Command(stdio_server, env={**os.environ, "LINGER": str(pidfile)}), options) as relay:
            await relay.answer("tools/call go")
        return relay
    relay = asyncio.run(asyncio.wait_for(main(), 60))
    assert not _alive(int(pidfile.read_text()))
    assert relay.report.as_dict()["server"]["shutdown"] == "requested"


def test_a_cancelled_block_ends_the_server_before_the_cancellation_goes_on(stdio_server, tmp_path):
    pidfile = tmp_path / "pid"

    async def main():
        async def body():
            options = RelayOptions(calls=[("go", {})], grace=5)
            async with Relay(Command(stdio_server, env={**os.environ, "LINGER": str(pidfile)}), options) as relay:
                await relay.answer("tools/call go")
                await asyncio.sleep(3600)
        task = asyncio.create_task(body())
        while not pidfile.exists():
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return _alive(int(pidfile.read_text()))
    assert asyncio.run(asyncio.wait_for(main(), 60)) is False


def test_an_answer_never_given_is_relay_ended(stdio_server):
    async def main():
        async with Relay(Command(stdio_server), RelayOptions(calls=[("go", {})], until_answered=True)) as relay:
            with pytest.raises(RelayEnded):
                await relay.answer("tools/call other")
    asyncio.run(main())


@pytest.fixture
def bytes_server(tmp_path):
    log = tmp_path / "sent.jsonl"
    process = subprocess.Popen([sys.executable, str(HERE / "http_servers.py"), "bytes"], stdout=subprocess.PIPE,
                               env={**os.environ, "SENT_LOG": str(log)})
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield f"http://127.0.0.1:{port}/mcp", log
    process.send_signal(signal.SIGKILL)
    process.wait()


def test_a_streamable_http_server_s_frames_and_answer_in_a_program(bytes_server):
    pytest.importorskip("h11")
    url, log = bytes_server

    async def main():
        async with Relay(Remote(url), RelayOptions(calls=[("go", {})], until_answered=True, grace=1),
                         payloads=True) as relay:
            payloads = [payload async for payload in relay]
            answer = await relay.answer("tools/call go")
        return relay, payloads, answer
    relay, payloads, answer = asyncio.run(asyncio.wait_for(main(), 60))
    kept = [data for data in _sent_notifications(log) if b"\xff" not in data]
    assert len(payloads) == len(kept) == 4 and all(map(_one_span_removed, kept, payloads))
    assert answer.message is not None and "result" in answer.message
    report = relay.report.as_dict()
    assert report["dropped"]["invalid"] == 1 and report["server"]["ended_by"] == "session deleted"
