"""``diverge-codec relay --url`` against the 2026-07-28 HTTP servers of both SDKs (``tests/peers``, ``--http PORT``).

The relay reaches each server through a recording proxy in this process, so the exact channel is
computed from what the server wrote: every notification in every response body (JSON or event
stream), ``"jsonrpc":"2.0",`` taken out, behind the tag byte. npm ``@modelcontextprotocol/server``
2.4.0 dual-era and modern-only (``--legacy reject``), PyPI ``mcp`` 2.3 dual-era (it has no modern-only
switch over HTTP); a server restarted under the relay (modern era) has its listen stream reopened.
"""

from __future__ import annotations

import gzip
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from diverge_codec import _json, stream

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from test_relay_command import relay as run_relay  # noqa: E402
from test_relay_eras_peers import SUBSCRIBE, expected_payloads  # noqa: E402
from test_relay_peers import peer  # noqa: E402

pytest.importorskip("h11", reason="--url needs the [http] extra (h11)")

CHANGES = (b"notifications/tools/list_changed", b"notifications/prompts/list_changed",
           b"notifications/resources/list_changed", b"notifications/resources/updated")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(name: str, port: int) -> subprocess.Popen:
    process = subprocess.Popen([*peer(name), "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    pytest.fail("the HTTP peer did not listen within 30 s")


def _stop(process: subprocess.Popen) -> None:
    process.kill()
    process.wait(timeout=30)


class Recorder:
    """A TCP proxy to the server that keeps every byte the server wrote, one buffer a connection."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.written: list[bytearray] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream))
            kept = bytearray()
            self.written.append(kept)
            threading.Thread(target=self._pump, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, kept), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket, kept: bytearray | None) -> None:
        try:
            while data := source.recv(65536):
                if kept is not None:
                    kept += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def messages(self) -> list[bytes]:
        """Every JSON-RPC message the server wrote, in each connection's order."""
        found: list[bytes] = []
        for raw in self.written:
            for kind, body in _responses(bytes(raw)):
                if kind == "text/event-stream":
                    for event in body.replace(b"\r\n", b"\n").split(b"\n\n"):
                        data = b"\n".join(line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:"))
                        if data.strip():
                            found.append(data)
                elif kind == "application/json" and body.strip():
                    found.append(body.strip())
        return found


def _drain(pipe: Any, into: bytearray) -> None:
    while chunk := pipe.read1(65536):
        into += chunk


def _responses(raw: bytes) -> list[tuple[str, bytes]]:
    """The (content type, body) of each HTTP/1.1 response in one connection's bytes."""
    found = []
    while raw:
        head, _, raw = raw.partition(b"\r\n\r\n")
        headers = {line.split(b":", 1)[0].strip().lower(): line.split(b":", 1)[1].strip()
                   for line in head.split(b"\r\n")[1:] if b":" in line}
        if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
            body = b""
            while raw:
                size_line, _, raw = raw.partition(b"\r\n")
                size = int(size_line.split(b";")[0], 16)
                body, raw = body + raw[:size], raw[size + 2:]
                if size == 0:
                    break
        elif b"content-length" in headers:
            size = int(headers[b"content-length"])
            body, raw = raw[:size], raw[size:]
        else:
            body, raw = raw, b""
        if headers.get(b"content-encoding") == b"gzip":
            body = gzip.decompress(body)
        found.append((headers.get(b"content-type", b"").split(b";")[0].decode().strip(), body))
    return found


@pytest.mark.parametrize(("name", "changes"), [("ts-v2-modern", False), ("ts-v2", False), ("py-v2", True)])
def test_a_2026_server_over_http_is_relayed_byte_exact_with_no_option(name, changes):
    port = _free_port()
    process = _start(name, port)
    try:
        recorder = Recorder(port)
        status, out, report = run_relay("--url", f"http://127.0.0.1:{recorder.port}/mcp", "--call", "emit_all", *SUBSCRIBE,
                                        "--until-answered", "--grace", "2")
    finally:
        _stop(process)
    payloads = list(stream.split_records(out))
    expected = expected_payloads(b"\n".join(recorder.messages()))
    assert status == 0 and report["protocol_version"] == "2026-07-28" and report["server"]["discover"] == "modern"
    assert report["server"]["session_id"] is False and report["server"]["listen"] == "acknowledged"
    assert sorted(payloads) == sorted(expected) and report["relayed"] == len(expected)
    assert sum(b"notifications/message" in payload for payload in payloads) == 8
    assert sum(b"notifications/progress" in payload for payload in payloads) == 3
    # npm's createMcpHandler builds a server for each request: a call's change notifications never reach the
    # listen stream's; mcp 2.3 serves them there, subscription id and all
    assert sum(any(change in payload for change in CHANGES) for payload in payloads) == (4 if changes else 0)


@pytest.mark.parametrize("name", ["ts-v2", "py-v2"])
def test_a_2025_revision_forced_over_http_keeps_the_handshake(name):
    port = _free_port()
    process = _start(name, port)
    try:
        status, out, report = run_relay("--url", f"http://127.0.0.1:{port}/mcp", "--protocol", "2025-11-25",
                                        "--call", "emit_all", "--until-answered", "--grace", "2")
    finally:
        _stop(process)
    assert status == 0 and report["protocol_version"] == "2025-11-25" and "discover" not in report["server"]
    assert report["calls"]["answered"] == 1


def test_a_2025_revision_forced_against_a_modern_only_server_names_its_versions():
    port = _free_port()
    process = _start("ts-v2-modern", port)
    try:
        done = subprocess.run([sys.executable, "-m", "diverge_codec", "relay", "--url", f"http://127.0.0.1:{port}/mcp",
                               "--protocol", "2025-11-25", "--call", "emit_all"], capture_output=True, timeout=60)
    finally:
        _stop(process)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 1 and _json.loads(lines[-1].encode())["server"]["versions_offered"] == ["2026-07-28"]
    assert "SSE" not in done.stderr.decode() and "offered 2026-07-28" in lines[-2]


UNKNOWN_REVISION = """
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        out = json.dumps({"jsonrpc": "2.0", "id": body.get("id"), "error": {"code": -32022, "message": "no",
                          "data": {"supported": ["2099-01-01"], "requested": "x"}}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


@pytest.mark.parametrize("protocol", ["auto", "2026-07-28"])
def test_a_server_of_an_unknown_revision_over_http_is_named_with_its_versions_and_exit_1(protocol):
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-c", UNKNOWN_REVISION, str(port)])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        done = subprocess.run([sys.executable, "-m", "diverge_codec", "relay", "--url", f"http://127.0.0.1:{port}/mcp",
                               "--protocol", protocol, "--call", "x"], capture_output=True, timeout=60)
    finally:
        _stop(process)
    text = done.stderr.decode()
    assert done.returncode == 1 and text.count("offered 2099-01-01;") == 1
    assert _json.loads(text.splitlines()[-1])["server"]["versions_offered"] == ["2099-01-01"]


def test_a_server_restarted_under_the_relay_has_its_listen_stream_reopened_nothing_relayed_twice():
    port = _free_port()
    process = _start("py-v2", port)
    relay = subprocess.Popen([sys.executable, "-m", "diverge_codec", "relay", "--url", f"http://127.0.0.1:{port}/mcp",
                              "--call", "emit_all", *SUBSCRIBE, "--duration", "15", "--grace", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    read = {"out": bytearray(), "err": bytearray()}
    readers = [threading.Thread(target=_drain, args=(pipe, read[key]), daemon=True)
               for key, pipe in (("out", relay.stdout), ("err", relay.stderr))]
    for reader in readers:
        reader.start()
    try:
        deadline = time.monotonic() + 60  # the call's last progress relayed (its answer follows): however slow the machine
        while read["out"].count(b"changes sent") < 1 and time.monotonic() < deadline and relay.poll() is None:
            time.sleep(0.1)
        time.sleep(1)
        _stop(process)
        process = _start("py-v2", port)
        relay.wait(timeout=60)
        for reader in readers:
            reader.join(timeout=30)
        out, err = bytes(read["out"]), bytes(read["err"])
    finally:
        _stop(process)
        if relay.poll() is None:
            relay.kill()
    report = _json.loads(err.splitlines()[-1])
    payloads = list(stream.split_records(out))
    acknowledged = [payload for payload in payloads if b"notifications/subscriptions/acknowledged" in payload]
    others = [payload for payload in payloads if payload not in acknowledged]
    assert report["protocol_version"] == "2026-07-28" and report["server"]["listen_reopened"] >= 1
    # each try counted, the tries while the server was down acknowledged by none: one acknowledgement a stream opened
    assert 2 <= len(acknowledged) <= report["server"]["listen_reopened"] + 1
    assert len(others) == len(set(others)) and sum(any(change in p for change in CHANGES) for p in others) == 4
    assert b"opened again as a new request" in err and report["calls"]["answered"] == 1


ROUTED = '{"region":"Hello, 世界","tier":2,"query":"SELECT 1"}'


def _call_without_param_headers(port: int) -> tuple[int, dict]:
    """``routed`` POSTed as the relay did before x-mcp-header was mirrored: the routing headers, no Mcp-Param-*."""
    import urllib.error
    import urllib.request

    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
    body = _json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "routed", "arguments": _json.loads(ROUTED.encode()), "_meta": meta}})
    request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "routed"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {}
    except urllib.error.HTTPError as error:
        return error.code, _json.loads(error.read())


@pytest.mark.parametrize("name", ["ts-v2-modern", "ts-v2", "py-v2"])
def test_a_tool_whose_schema_marks_x_mcp_header_is_called_with_its_mcp_param_headers(name):
    port = _free_port()
    process = _start(name, port)
    try:
        refused = _call_without_param_headers(port)
        status, out, report = run_relay("--url", f"http://127.0.0.1:{port}/mcp", "--call", f"routed={ROUTED}",
                                        "--until-answered", "--grace", "1")
    finally:
        _stop(process)
    assert refused[0] == 400 and refused[1]["error"]["code"] == -32020  # what the relay got before: the call refused
    assert status == 0 and report["protocol_version"] == "2026-07-28"
    assert report["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0}
    assert report["server"]["tools_list"] == "read" and report["server"]["params_mirrored"] == 1
    assert "params_refused" not in report["server"]
