"""``diverge-codec relay --url``: MCP's Streamable HTTP transport, against real servers and odd ones.

The real ones: server-everything in its ``streamableHttp`` mode (the TypeScript SDK's
transport, with an event store: resumable) and an mcp 2.x server run with
``streamable-http``. The odd ones are ``http_servers.py``: exact bytes, a refused
``initialize``, a forgotten session, a stream that breaks off with and without event ids.
Each channel is held to the exact-bytes rule: every relayed payload is the server's bytes
with one span holding the ``jsonrpc`` member taken out, nothing else changed.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diverge_codec import _json, stream
from diverge_codec.sequence import State

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from test_relay_command import _report, channel  # noqa: E402
from test_relay_peers import EVERYTHING_ARGS, assert_everything_relayed, peer  # noqa: E402

pytest.importorskip("h11", reason="relay --url needs the [http] extra (h11)")

HERE = Path(__file__).resolve().parent
RELAY = [sys.executable, "-m", "diverge_codec", "relay"]
EVERYTHING = HERE / "peers" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes], within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited before it listened"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


def _relay(url: str, *args: str, pure: str = "0", timeout: float = 60) -> tuple[int, bytes, dict]:
    done = subprocess.run([*RELAY, "--url", url, *args], capture_output=True, timeout=timeout,
                          env={**os.environ, "DIVERGE_CODEC_PURE": pure})
    report = _report(done.stderr)
    assert report["seen"] == report["relayed"] + sum(report["dropped"].values())
    return done.returncode, done.stdout, report


def _payloads(out: bytes) -> list[bytes]:
    return [bytes(payload) for payload in stream.split_records(out)]


def _one_span_removed(sent: bytes, payload: bytes) -> bool:
    """``payload`` is tag 0 and ``sent`` with one span that holds the jsonrpc member taken out."""
    body = payload[1:]
    if payload[:1] != b"\x00" or len(body) >= len(sent):
        return False
    prefix = 0
    while prefix < len(body) and body[prefix] == sent[prefix]:
        prefix += 1
    suffix = len(body) - prefix
    span = sent[prefix:len(sent) - suffix]  # the greedy prefix may take the member's opening quote
    return sent.endswith(body[prefix:]) and b"jsonrpc" in span and b"method" not in span and b"params" not in span \
        and _json.loads(body) == {k: v for k, v in _json.loads(sent).items() if k != "jsonrpc"}


def _sent_notifications(log: Path) -> list[bytes]:
    sent = [json.loads(line).encode("latin-1") for line in log.read_text().splitlines()]
    return [data for data in sent if b'"method"' in data and b'"id"' not in data]


@pytest.fixture
def odd_server(tmp_path, request):
    """An ``http_servers.py`` server in the mode the test names: (url, the log of what it sent)."""
    log = tmp_path / "sent.jsonl"
    process = subprocess.Popen([sys.executable, str(HERE / "http_servers.py"), request.param], stdout=subprocess.PIPE,
                               env={**os.environ, "SENT_LOG": str(log)})
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield f"http://127.0.0.1:{port}/mcp", log
    process.kill()
    process.wait()


# --- odd servers --------------------------------------------------------------------------

@pytest.mark.parametrize("odd_server", ["bytes"], indirect=True)
@pytest.mark.parametrize("pure", ["0", "1"])
def test_every_notification_is_the_server_s_bytes_less_jsonrpc(odd_server, pure):
    url, log = odd_server
    status, out, report = _relay(url, "--call", "go", "--until-answered", "--grace", "1", pure=pure)
    notifications, error, state = channel(out)
    assert status == 0 and error is None and state is State.FINISHED
    sent = _sent_notifications(log)
    assert len(sent) == 5
    relayed = _payloads(out)
    # The one with invalid UTF-8 is refused and counted, as on stdio; the others arrive in order.
    kept = [data for data in sent if b"\xff" not in data]
    assert len(relayed) == len(kept) == 4 and all(map(_one_span_removed, kept, relayed))
    assert relayed[2][1:] == kept[2].replace(b',\n"jsonrpc":"2.0"', b"")  # two data: lines joined by LF, as sent
    assert report["dropped"] == {"backpressure": 0, "invalid": 1, "too_large": 0}
    server = report["server"]
    assert server["transport"] == "streamable-http" and server["session_id"] is True and server["get_stream"] == "none (405)"
    assert server["ended_by"] == "session deleted" and server["shutdown"] == "until-answered"
    assert "session-7f3a" not in json.dumps(report)  # the session id's presence, never its value


@pytest.mark.parametrize("odd_server", ["refuse"], indirect=True)
def test_a_refused_initialize_is_the_error_frame_and_exit_1(odd_server):
    url, _ = odd_server
    # the 2025 era forced: this pins initialize's refusal (auto's probe is refused the same way, "on server/discover")
    status, out, report = _relay(url, "--protocol", "2025-11-25", "--header", "Authorization: Bearer SECRET-TOKEN")
    notifications, error, state = channel(out)
    assert status == 1 and notifications == [] and error is not None and error.code == -32000
    assert state is State.ENDED_WITH_ERROR and report["unreachable"] is True
    assert report["server"]["error"] == "HTTP 401 on initialize: the token was refused" and report["server"]["started"] is False
    assert report["server"]["statuses"] == {"401": 1}
    assert "SECRET" not in json.dumps(report)


def test_nothing_listening_is_the_error_frame_and_exit_1():
    status, out, report = _relay(f"http://127.0.0.1:{_free_port()}/mcp?token=SECRET")
    _, error, state = channel(out)
    assert status == 1 and error is not None and error.code == -32000 and state is State.ENDED_WITH_ERROR
    assert report["server"]["error"] == "connection refused" and report["unreachable"] is True
    assert "SECRET" not in json.dumps(report)


@pytest.mark.parametrize("odd_server", ["drop"], indirect=True)
def test_a_stream_that_breaks_off_is_resumed_from_its_last_event_id(odd_server):
    url, log = odd_server
    status, out, report = _relay(url, "--call", "go", "--until-answered", "--grace", "1")
    notifications, error, state = channel(out)
    assert status == 0 and state is State.FINISHED
    assert [n["params"]["progress"] for n in notifications] == [1, 2]
    assert report["server"]["reconnects"] == 1 and report["server"]["unrecovered"] == 0
    assert report["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0}
    assert all(map(_one_span_removed, _sent_notifications(log), _payloads(out)))


@pytest.mark.parametrize("odd_server", ["drop-no-ids"], indirect=True)
def test_a_stream_without_ids_that_breaks_off_is_counted_and_its_call_times_out(odd_server):
    url, _ = odd_server
    status, out, report = _relay(url, "--call", "go", "--until-answered", "--grace", "1", "--request-timeout", "2")
    assert [n["params"]["progress"] for n in channel(out)[0]] == [1]
    assert report["server"]["unrecovered"] == 1 and report["server"]["reconnects"] == 0
    assert report["calls"] == {"sent": 1, "answered": 0, "failed": 1, "timed_out": 1} and status == 3  # a call failed


# --- bad usage ---------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    (["--url", "ftp://host/mcp"], "--url must be an http:// or https:// URL with a host"),
    (["--url", "http:///mcp"], "--url must be an http:// or https:// URL with a host"),
    (["--url", "http://h/mcp", "--header", "no colon"], "--header must be 'Name: value'"),
    (["--url", "http://h/mcp", "--", "cat"], "relay takes --url or a command after '--', not both"),
    (["--url", "http://h/mcp", "--transport", "sse", "--protocol", "2026-07-28"],
     "--protocol 2026-07-28: --transport sse speaks the 2025 era alone"),
    (["--header", "A: b", "--", "cat"], "--header, --transport, --token-command, --cacert, --cert and --key are for --url"),
])
def test_bad_usage_is_one_line_and_exit_2(args, message):
    done = subprocess.run([*RELAY, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"diverge-codec: {message}\n"


# --- real servers ------------------------------------------------------------------------

@pytest.fixture
def everything():
    peer("ts-sdk-everything")  # fails where CI requires the peers, skips elsewhere
    port = _free_port()
    process = subprocess.Popen(["node", str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_listening(port, process)
    yield f"http://127.0.0.1:{port}/mcp", process
    process.kill()
    process.wait()


@pytest.mark.parametrize("pure", ["0", "1"])
def test_server_everything_over_http_progress_logging_and_a_subscription(everything, pure):
    url, _ = everything
    status, out, report = _relay(url, *EVERYTHING_ARGS, "--duration", "7", "--grace", "1", pure=pure, timeout=120)
    assert_everything_relayed(status, out, report)
    server = report["server"]
    assert server["get_stream"] == "open" and server["session_id"] is True and server["ended_by"] == "session deleted"


def test_server_everything_killed_mid_stream_ends_the_relay(everything):
    url, process = everything
    relay = subprocess.Popen([*RELAY, "--url", url, "--request", 'logging/setLevel={"level":"debug"}',
                              "--call", "toggle-simulated-logging", "--grace", "1", "--reconnect-window", "3"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(3)
    process.kill()
    out, err = relay.communicate(timeout=60)
    report = _report(err)
    assert relay.returncode == 1 and channel(out)[2] is State.FINISHED
    assert report["server"]["ended_by"] == "connection lost" and report["server"]["error"] == "connection refused"


@pytest.fixture
def mcp_v2_http():
    peer("mcp-v2")
    port = _free_port()
    script = ("import runpy, sys; server = runpy.run_path(sys.argv[1])['server']; "
              "server.run('streamable-http', host='127.0.0.1', port=int(sys.argv[2]))")
    process = subprocess.Popen([sys.executable, "-c", script, str(HERE.parent / "examples" / "mcp_relay" / "server.py"),
                                str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_listening(port, process)
    yield f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait()


def test_an_mcp_2x_streamable_http_server_relayed_until_answered(mcp_v2_http):
    # the 2025 era forced: mcp 2.x is dual-era (auto reaches 2026-07-28: test_relay_http_eras.py); this pins its 2025 session
    status, out, report = _relay(mcp_v2_http, "--protocol", "2025-11-25", "--request", 'logging/setLevel={"level":"debug"}', "--call", "emit_all",
                                 "--until-answered", "--grace", "2", timeout=120)
    notifications, error, state = channel(out)
    # mcp 2.x's server lacks logging/setLevel (-32601): a request asked for failed, exit 3
    assert status == 3 and error is None and state is State.FINISHED
    assert report["calls"]["answered"] == 2 and report["calls"]["failed"] == 1 and report["relayed"] == len(notifications) > 0
    assert {"notifications/message", "notifications/progress"} <= {n["method"] for n in notifications}
    assert report["server"]["transport"] == "streamable-http" and report["server"]["session_id"] is True
