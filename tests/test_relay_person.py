"""``diverge-codec relay`` as a person meets it (issue #36): failures in words, exit 3, answers on request, hints
for a server not reached, and a status line on a terminal (a pseudo-terminal as stderr)."""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).with_name("relay_servers.py")
EXAMPLE = ROOT / "examples" / "mcp_relay" / "server.py"
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a relayed command and pseudo-terminals are POSIX only")
needs_mcp = pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="the example server needs the [mcp] extra")
needs_http = pytest.mark.skipif(importlib.util.find_spec("h11") is None, reason="--url needs the [http] extra (h11)")


def relay(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "diverge_codec", "relay", "--out", os.devnull, *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


ERA_LINE = "diverge-codec: MCP era: "


def lines(done: subprocess.CompletedProcess[str]) -> tuple[list[str], dict]:
    """The human lines on stderr, and the JSON report, which is last. The INFO line naming the MCP era is left out:
    what it says depends on how soon the server answered the probe (test_relay_session_eras.py pins its words)."""
    *words, last = done.stderr.strip().splitlines()
    return [word for word in words if not word.startswith(ERA_LINE)], json.loads(last)


def test_a_tool_that_answers_iserror_is_one_line_and_exit_3():
    done = relay("--call", 'emit_al={"token":"SECRET"}', "--until-answered", "--", sys.executable, str(SERVERS), "failing")
    words, report = lines(done)
    assert done.returncode == 3 and report["exit_status"] == 3
    assert words == ["diverge-codec: tools/call emit_al failed: the tool answered isError (its content is not shown: "
                     "--answers FILE shows it)"]
    assert "SECRET" not in done.stderr and "no such tool" not in done.stderr


def test_a_call_with_no_answer_says_it_timed_out():
    done = relay("--call", "x", "--request-timeout", "0.5", "--until-answered", "--", sys.executable, str(SERVERS), "silent")
    words, report = lines(done)
    assert (done.returncode, report["calls"]["timed_out"]) == (3, 1)
    assert words[-1] == "diverge-codec: tools/call x: no answer within 0.5 s: timed out (cancelled; --request-timeout sets the wait)"


def test_calls_that_succeed_exit_0_and_say_nothing():
    done = relay("--call", "ok={}", "--until-answered", "--quiet-server", "--", sys.executable, str(SERVERS), "basic")
    words, report = lines(done)
    assert (done.returncode, words, report["calls"]["failed"]) == (0, [], 0)


@needs_mcp
def test_a_method_the_server_lacks_gives_its_json_rpc_error_and_the_answers_on_request(tmp_path):
    done = relay("--request", "tools/list={}", "--request", "no/such={}", "--answers", "-", "--report", str(tmp_path / "r"),
                 "--until-answered", "--quiet-server", "--", sys.executable, str(EXAMPLE))
    report = json.loads((tmp_path / "r").read_text())
    assert (done.returncode, report["exit_status"], report["calls"]["failed"]) == (3, 3, 1)
    answers = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert [answer["request"] for answer in answers] == ["tools/list", "no/such"]
    assert {"emit_all", "flood"} <= {tool["name"] for tool in answers[0]["answer"]["result"]["tools"]}
    failed = [line for line in done.stderr.splitlines() if line.startswith("diverge-codec:") and not line.startswith(ERA_LINE)]
    assert failed == ["diverge-codec: no/such failed: JSON-RPC error -32601 (method not found): Method not found"]


@needs_mcp
def test_without_answers_no_answer_is_shown():
    done = relay("--request", "tools/list={}", "--until-answered", "--quiet-server", "--", sys.executable, str(EXAMPLE))
    words, report = lines(done)
    assert (done.returncode, words) == (0, [])
    assert "emit_all" not in done.stderr


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@needs_http
def test_nothing_listening_is_one_line_with_a_hint():
    done = relay("--url", f"http://127.0.0.1:{_closed_port()}/mcp")
    words, report = lines(done)
    assert done.returncode == 1 and report["unreachable"] is True
    assert words == ["diverge-codec: could not reach the server (connection refused): nothing is listening at that host "
                     "and port: is the server running, on that port?"]


@needs_http
def test_https_to_a_plain_http_server_says_to_try_http():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        done = relay("--url", f"https://127.0.0.1:{server.server_address[1]}/mcp")
    finally:
        server.shutdown()
        server.server_close()
    words, _ = lines(done)
    assert done.returncode == 1
    assert words == ["diverge-codec: could not reach the server (TLS: the server answered in plain HTTP, not TLS: use an "
                     "http:// URL)"]  # the error says its fix: no hint after it


def test_a_status_line_on_a_terminal_once_a_second_with_how_to_stop_it():
    controller, terminal = os.openpty()
    process = subprocess.Popen([sys.executable, "-m", "diverge_codec", "relay", "--duration", "2.5", "--out", os.devnull, "--",
                                sys.executable, str(SERVERS), "basic"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=terminal)
    os.close(terminal)
    seen = bytearray()
    try:
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the last writer closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(controller)
        assert process.wait(timeout=60) == 0
    text = seen.decode()
    draws = text.count("\r\x1b[Krelaying: ")
    assert 2 <= draws <= 4, text  # at start, then once a second for 2.5 s
    assert "relaying: 1 seen, 1 relayed, 0 dropped (Ctrl-C stops it)" in text  # the server's log line before the handshake
    report = text[text.rindex("\r\x1b[K") + 4:].strip()
    assert json.loads(report.splitlines()[-1])["exit_status"] == 0  # the line cleared, then the report


def test_no_status_line_where_stderr_is_no_terminal():
    done = relay("--duration", "1.2", "--", sys.executable, str(SERVERS), "basic")
    assert "relaying:" not in done.stderr and done.returncode == 0
