"""Real Streamable HTTP servers killed and started again under ``relay --url``, and killed for good.

server-everything (the TypeScript SDK's transport, its own session map: a forgotten session is a 400) and an
mcp 2.x server (the Python SDK's session manager: a 404). After a restart the relay makes a new session and
sends its ``--request``s again (here one is a ``tools/call`` that makes the server log, so notifications of
the new session can be seen); killed for good, the relay ends within ``--reconnect-window``: exit 1,
"connection lost". The channel stays one valid channel throughout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from diverge_codec.sequence import State

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from test_relay_command import _report, channel  # noqa: E402
from test_relay_http import EVERYTHING, HERE, RELAY, _free_port, _wait_listening  # noqa: E402
from test_relay_peers import peer  # noqa: E402

pytest.importorskip("h11", reason="relay --url needs the [http] extra (h11)")

MCP_V2_SERVER = ("import runpy, sys; server = runpy.run_path(sys.argv[1])['server']; "
                 "server.run('streamable-http', host='127.0.0.1', port=int(sys.argv[2]))")


def _everything(port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["node", str(EVERYTHING), "streamableHttp"], env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _mcp_v2(port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", MCP_V2_SERVER, str(HERE.parent / "examples" / "mcp_relay" / "server.py"),
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


SERVERS = {
    "ts-sdk-everything": (_everything, "/mcp", ["--request", 'logging/setLevel={"level":"debug"}',
                                               "--request", 'tools/call={"name":"toggle-simulated-logging","arguments":{}}']),
    "mcp-v2": (_mcp_v2, "/mcp", ["--request", 'tools/call={"name":"emit_all","arguments":{}}']),
}


def _start(name: str, port: int) -> subprocess.Popen[bytes]:
    process = SERVERS[name][0](port)
    _wait_listening(port, process)
    return process


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_a_server_restarted_under_the_relay_gets_a_new_session_and_the_requests_again(name):
    peer(name)
    port = _free_port()
    server = _start(name, port)
    _, path, requests = SERVERS[name]
    # the 2025 era forced: its sessions are what this pins (a modern server restarted: test_relay_http_eras.py)
    relay = subprocess.Popen([*RELAY, "--url", f"http://127.0.0.1:{port}{path}", "--protocol", "2025-11-25", *requests, "--duration", "13",
                              "--grace", "1", "--reconnect-window", "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(6)
        server.kill()
        server.wait()
        time.sleep(1)
        server = _start(name, port)
        out, err = relay.communicate(timeout=90)
    finally:
        server.kill()
        server.wait()
        relay.kill()
    report = _report(err)
    notifications, error, state = channel(out)
    assert relay.returncode == 0 and error is None and state is State.FINISHED, err.decode(errors="replace")
    server_report = report["server"]
    assert server_report["sessions"] == 2 and server_report["shutdown"] == "duration"
    assert 0 < server_report["without_session_s"] < 10
    # Both sessions' requests were answered: the tools/call that makes the server send, twice.
    asked = 2 * (len(requests) // 2)
    assert report["calls"] == {"sent": asked, "answered": asked, "failed": 0, "timed_out": 0}
    assert report["relayed"] == len(notifications) >= 2 and b"Traceback" not in err


@pytest.mark.parametrize("name", sorted(SERVERS))
def test_a_server_killed_for_good_ends_the_relay_within_the_window(name):
    peer(name)
    port = _free_port()
    server = _start(name, port)
    _, path, requests = SERVERS[name]
    relay = subprocess.Popen([*RELAY, "--url", f"http://127.0.0.1:{port}{path}", *requests, "--grace", "1",
                              "--reconnect-window", "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(4)
    server.kill()
    server.wait()
    killed = time.monotonic()
    out, err = relay.communicate(timeout=60)
    ended = time.monotonic() - killed
    report = _report(err)
    assert relay.returncode == 1 and report["server"]["ended_by"] == "connection lost", report
    assert report["server"]["error"] == "connection refused" and channel(out)[2] is State.FINISHED
    assert 3 < ended < 4 + 8 + 3, f"ended {ended:.1f} s after the kill"
