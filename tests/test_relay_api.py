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
if os.environ.get("PIDFILE"):
    open(os.environ["PIDFILE"], "w").write(str(os.getpid()))
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


def test_a_stdio_server_s_frames_and_answer_in_a_program(stdio_server, tmp_path):
    pidfile = tmp_path / "pid"

    async def main():
        before = asyncio.all_tasks()
        options = RelayOptions(calls=[("go", {})], until_answered=True, grace=2)
        async with Relay(Command(stdio_server, env={**os.environ, "PIDFILE": str(pidfile)}), options,
                         payloads=True) as relay:
            payloads = [payload async for payload in relay]
            answer = await relay.answer("tools/call go")
        assert [task for task in asyncio.all_tasks() - before if not task.done()] == []  # nothing left running
        return relay, payloads, answer
    relay, payloads, answer = asyncio.run(main())
    assert not _alive(int(pidfile.read_text()))
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


@pytest.fixture
def private_ca():
    trustme = pytest.importorskip("trustme", reason="the TLS tests make their CA with trustme (the test extra)")
    return trustme.CA()


@pytest.fixture
def bearer_https(tmp_path, private_ca):
    """``http_servers.py bearer:4`` over https with a certificate of ``private_ca``: tok-1 serves four requests."""
    pytest.importorskip("h11")
    pem = tmp_path / "server.pem"
    private_ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(str(pem))
    process = subprocess.Popen([sys.executable, str(HERE / "http_servers.py"), "bearer:4"], stdout=subprocess.PIPE,
                               env={**os.environ, "TLS_CERT": str(pem), "TLS_KEY": str(pem), "SENT_LOG": str(tmp_path / "log")})
    assert process.stdout is not None
    yield f"https://127.0.0.1:{int(process.stdout.readline())}/mcp"
    process.kill()
    process.wait()


def _dead_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("environment", [False, True])
def test_a_token_provider_and_a_private_ca_with_the_environment_unread(bearer_https, private_ca, monkeypatch, environment,
                                                                       tmp_path):
    import ssl

    from diverge_codec.relay import NetworkPolicy

    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{_dead_port()}")  # nothing listens there
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/ca.pem")
    context = ssl.create_default_context()
    private_ca.configure_trust(context)
    asked = []

    async def token() -> str:
        asked.append(1)
        return f"tok-{len(asked)}"

    async def main():
        options = RelayOptions(calls=[(f"t{i}", {}) for i in range(6)], until_answered=True, grace=1,
                               reconnect_window=1)
        remote = Remote(bearer_https, token=token, network=NetworkPolicy(ssl_context=context, environment=environment))
        async with Relay(remote, options, payloads=True) as relay:
            payloads = [payload async for payload in relay]
        return relay.report.as_dict(), payloads
    report, payloads = asyncio.run(asyncio.wait_for(main(), 60))
    if environment:  # the dead proxy read from the environment: never reached
        assert report["unreachable"] is True and report["server"]["proxy"] is True
        return
    assert report["calls"] == {"sent": 6, "answered": 6, "failed": 0, "timed_out": 0}
    assert len(asked) == 2 and report["server"]["token_command_runs"] == 2 and report["server"]["proxy"] is False
    assert int(report["server"]["statuses"]["401"]) >= 1
    assert "tok-" not in repr(report)
    assert payloads == _sent_notifications(tmp_path / "log") == []  # bearer:N sends calls' answers, no notification


@pytest.mark.parametrize(("given", "words"), [
    (RuntimeError("SECRET-IN-TEXT"), "the token provider failed (RuntimeError)"),
    ("not a token\n\n", "the token provider gave no bearer token (a str of token characters)"),
    (b"tok-1", "the token provider gave no bearer token (a str of token characters)"),
])
def test_a_token_provider_s_failure_is_said_by_its_type_alone(given, words):
    from diverge_codec.relay.remote_auth import CredentialError, TokenSource

    async def provider():
        if isinstance(given, Exception):
            raise given
        return given

    async def main():
        source = TokenSource(provider=provider)
        with pytest.raises(CredentialError) as caught:
            await source.refresh(0)
        return caught.value
    error = asyncio.run(main())
    assert str(error) == words and error.__context__ is None and error.__cause__ is None
    assert "SECRET" not in repr(error.args)


def test_a_consumer_that_does_not_keep_pace_loses_notifications_counted():
    """The server's reader never waits on the program: what the outbox cannot hold is dropped, and counted."""
    flood = [sys.executable, str(HERE / "relay_servers.py"), "flood", "100000"]  # about 6 MB

    async def main():
        async with Relay(Command(flood), RelayOptions(outbox_bytes=1 << 20, duration=10, grace=1), payloads=True) as relay:
            taken = 0
            async for _ in relay:
                taken += 1
                while taken == 1 and relay.report.seen < 100000 and relay.running:  # busy while the server floods
                    await asyncio.sleep(0.05)
        return relay.report.as_dict(), taken
    report, taken = asyncio.run(asyncio.wait_for(main(), 60))
    assert report["seen"] == 100000 and report["dropped"]["backpressure"] > 0
    assert taken == report["relayed"] == 100000 - report["dropped"]["backpressure"]
