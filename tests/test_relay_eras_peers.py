"""``diverge-codec relay`` finding the era by itself against the 2026-07-28 servers of both SDKs (``tests/peers``).

Each server's stdout is teed to a file, so the exact channel is computed from what the server
wrote: every notification line, ``"jsonrpc":"2.0",`` taken out, behind the tag byte, in order.
Modern-only and dual-era servers of npm's ``@modelcontextprotocol/server`` and mcp 2.x, live and as their
committed captures (``benchmarks/data/captures``); a server of an unknown revision gets one line naming its
versions, exit 1.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from diverge_codec import _json, stream

sys.path.insert(0, str(Path(__file__).with_name("peers")))
from test_relay_command import relay as run_relay  # noqa: E402
from test_relay_peers import peer  # noqa: E402

CAPTURES = Path(__file__).resolve().parent.parent / "benchmarks" / "data" / "captures"
MODERN_CAPTURES = ("ts-v2-modern", "py-v2-modern")
DUAL_CAPTURES = ("ts-v2", "py-v2")
"""The dual-era servers as the relay reaches them with no option: the probe answered, the 2026-07-28 era."""
SUBSCRIBE = ("--request", 'resources/subscribe={"uri":"file:///srv/data/report.txt"}')
UNKNOWN_REVISION = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message:
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32022, "message": "Unsupported protocol version",
              "data": {"supported": ["2099-01-01"], "requested": "x"}}}), flush=True)
"""


def teed(command: list[str], into: Path) -> list[str]:
    return ["sh", "-c", f"{shlex.join(command)} | tee {shlex.quote(str(into))}"]


def expected_payloads(written: bytes) -> list[bytes]:
    """The channel's payloads for what the server wrote: its notifications, envelope out, every other byte kept."""
    payloads = []
    for line in written.splitlines():
        message = _json.loads(line)
        if "method" in message and "id" not in message:
            assert line.count(b'"jsonrpc":"2.0",') == 1
            payloads.append(b"\x00" + line.replace(b'"jsonrpc":"2.0",', b"", 1))
    return payloads


@pytest.mark.parametrize("family", MODERN_CAPTURES + DUAL_CAPTURES)
def test_a_committed_2026_capture_replays_byte_exact(family):
    written = (CAPTURES / f"{family}.jsonl").read_bytes()
    status, out, report = run_relay("--", "cat", str(CAPTURES / f"{family}.jsonl"))
    payloads = list(stream.split_records(out))
    assert status == 0 and payloads == expected_payloads(written) and len(payloads) == 151
    assert report["relayed"] == report["seen"] == 151 and report["dropped"] == {"backpressure": 0, "invalid": 0, "too_large": 0}
    with_id = [payload for payload in payloads if b'"io.modelcontextprotocol/subscriptionId":2' in payload]
    assert len(with_id) == 41  # the acknowledgement and the 40 change notifications, tagged as the server wrote them


@pytest.mark.parametrize("family", DUAL_CAPTURES)
def test_a_dual_era_capture_is_the_2026_era_the_relay_reaches_with_no_option(family):
    lines = (CAPTURES / f"{family}.jsonl").read_bytes().splitlines()
    answers = [_json.loads(line) for line in lines if b'"method"' not in line]
    assert answers[0]["id"] == 1 and answers[0]["result"]["supportedVersions"] == ["2026-07-28"]  # the probe answered
    assert not any("protocolVersion" in answer.get("result", {}) for answer in answers)  # no handshake was made
    assert not any(answer.get("error", {}).get("code") == -32022 for answer in answers)  # nor refused
    assert _json.loads((CAPTURES / f"{family}.meta.json").read_bytes())["negotiated_protocol_version"] == "2026-07-28"


@pytest.mark.parametrize("name", ["ts-v2-modern", "ts-v2", "py-v2-modern", "py-v2"])
def test_a_2026_server_is_relayed_byte_exact_through_discover_and_listen(name, tmp_path):
    written = tmp_path / "server.jsonl"
    status, out, report = run_relay(*SUBSCRIBE, "--call", "emit_all", "--until-answered", "--grace", "2", "--quiet-server",
                                    "--", *teed(peer(name), written), timeout=120)
    payloads = list(stream.split_records(out))
    assert payloads == expected_payloads(written.read_bytes())
    methods = [_json.loads(payload[1:])["method"] for payload in payloads]
    assert methods[:1] == ["notifications/subscriptions/acknowledged"] or "ts-v2" not in name
    assert methods.count("notifications/message") == 8 and methods.count("notifications/progress") == 3
    assert "notifications/tools/list_changed" in methods
    assert status == 0 and report["protocol_version"] == "2026-07-28" and report["server"]["discover"] == "modern"
    assert report["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0}
    assert report["relayed"] == report["seen"] == len(payloads)


@pytest.mark.parametrize("name", ["ts-v2-modern", "py-v2-modern"])
def test_input_required_ends_the_call_counted_and_said(name):
    done = subprocess.run([sys.executable, "-m", "diverge_codec", "relay", "--call", "ask", "--until-answered", "--grace", "2",
                           "--quiet-server", "--", *peer(name)], capture_output=True, timeout=120)
    lines = done.stderr.decode().splitlines()
    report = _json.loads(lines[-1].encode())
    assert done.returncode == 3 and report["server"]["input_required"] == 1 and report["calls"]["failed"] == 1
    assert "diverge-codec: tools/call ask failed: the server asked for input (input_required); the relay has none to give" in lines


@pytest.mark.parametrize("protocol", ["auto", "2026-07-28"])
def test_a_server_of_an_unknown_revision_is_named_with_its_versions_and_exit_1(protocol):
    done = subprocess.run([sys.executable, "-m", "diverge_codec", "relay", "--protocol", protocol, "--", sys.executable, "-c",
                           UNKNOWN_REVISION], capture_output=True, timeout=60)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 1
    assert lines[:-1] == ["diverge-codec: the server shares no MCP revision with the relay: it offered 2099-01-01; the relay "
                          "speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05"]
    report = _json.loads(lines[-1].encode())
    assert report["server"]["versions_offered"] == ["2099-01-01"] and report["server"]["discover"] == "no shared revision"


def test_a_2025_revision_forced_skips_the_probe():
    done = subprocess.run([sys.executable, "-m", "diverge_codec", "relay", "--protocol", "2025-11-25", "--until-answered",
                           "--quiet-server", "--", *peer("ts-v2-modern")], capture_output=True, timeout=60)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 1 and _json.loads(lines[-1].encode())["server"]["versions_offered"] == ["2026-07-28"]
    assert lines[0].startswith("diverge-codec: the server shares no MCP revision with the relay: it offered 2026-07-28")


# --- the same servers over Streamable HTTP: the facts the HTTP half of issue 42 builds on --------------------------

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "diverge-codec-test", "version": "1"}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _post(port: int, body: dict, headers: dict) -> tuple[int, str, bytes]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", "/mcp", body=_json.dumps(body), headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
        response = connection.getresponse()
        return response.status, response.getheader("content-type") or "", response.read()
    finally:
        connection.close()


def _serving(command: list[str]):
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([*command, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    pytest.fail("the HTTP peer did not listen within 30 s")


@pytest.mark.parametrize(("name", "modern_only"), [("ts-v2-modern", True), ("ts-v2", False), ("py-v2", False)])
def test_over_http_a_modern_post_is_served_and_initialize_is_what_the_era_says(name, modern_only):
    process, port = _serving(peer(name))
    try:
        discover = {"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": META}}
        status, kind, body = _post(port, discover, {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
        assert status == 200 and _json.loads(body)["result"]["supportedVersions"] == ["2026-07-28"]
        unknown = {**discover, "params": {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}}
        status, kind, body = _post(port, unknown, {"MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "server/discover"})
        assert status == 400 and kind.startswith("application/json")  # the 400's body says the server is modern
        assert _json.loads(body)["error"]["code"] == -32022 and _json.loads(body)["error"]["data"]["supported"] == ["2026-07-28"]
        status, kind, body = _post(port, INITIALIZE, {})
        if modern_only:
            assert status == 400 and _json.loads(body)["error"]["code"] == -32022
        else:
            assert status == 200 and b'"protocolVersion":"2025-11-25"' in body
    finally:
        process.terminate()
        process.wait(timeout=30)
