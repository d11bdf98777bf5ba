"""The 2026-07-28 HTTP binding in-process (``http_stateless``): a scripted server, no process, no socket.

The probe first (``server/discover``, no ``Mcp-Session-Id``), the routing headers matching each body, the
400 read before any fallback (a modern error is a modern server; another a 2025 one: the handshake), a
call whose stream breaks off failed and never sent again, the listen stream opened again after it breaks,
``input_required`` counted. The real servers of both SDKs are in ``test_relay_http_eras.py``.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from diverge_codec.relay.http_client import Response  # noqa: E402
from diverge_codec.relay.http_stateless import header_value, routing_headers  # noqa: E402
import test_http_driver  # noqa: E402
import virtual_time  # noqa: E402
from test_http_driver import INIT, SSE, Server, _answer, _events, _log, _streamed, pure, relay  # noqa: E402,F401

DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {}, "serverInfo": {"name": "mock", "version": "0"}}
ACK = b'{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{}}'
CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}'


def _error(request_id: object, code: int, supported: list[str]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": code, "message": "Unsupported protocol version", "data": {"supported": supported}}}).encode()


class Modern(Server):
    """A modern-only server: every request its own POST, answered on its own event stream."""

    def __init__(self, listen_streams: list[Any] | None = None, broken: set[str] = frozenset()) -> None:
        super().__init__()
        self.listen_streams = listen_streams
        self.broken = broken

    def handle(self, request: Any) -> Any:
        body = self.record(request)
        if request.method != "POST":
            return Response(405)
        method = body.get("method")
        if method == "initialize" or request.headers.get("mcp-protocol-version") != "2026-07-28":
            return Response(400, headers={"content-type": "application/json"},
                            content=_streamed(_error(body.get("id"), -32022, ["2026-07-28"])))
        if method == "server/discover":
            return Response(200, headers={"content-type": "application/json"},
                            content=_streamed(_answer(body["id"], DISCOVERED)))
        if method == "subscriptions/listen":
            opened = self.listen_streams.pop(0) if self.listen_streams else _events(ACK, CHANGED)
            return Response(200, headers=SSE, content=opened)
        if "id" not in body:
            return Response(202)
        name = body["params"].get("name", "")
        if name in self.broken:
            return Response(200, headers=SSE, content=_events(_log(name)))  # ends before the answer
        if name == "ask":
            return Response(200, headers=SSE, content=_events(_answer(body["id"], {"resultType": "input_required"})))
        return Response(200, headers=SSE, content=_events(_log(name), _answer(body["id"])))


def _posts(server: Server) -> list[tuple[dict[str, str], dict[str, Any]]]:
    return [(headers, body) for method, _, headers, body in server.requests if method == "POST"]


def test_the_probe_goes_first_stateless_and_every_post_carries_headers_that_match_its_body(pure):
    server = Modern()
    report, notes = relay(server, pure=pure, protocol="auto", calls=[("go", {})], until_answered=True,
                          requests=[("prompts/get", {"name": "greet"})])
    assert report["protocol_version"] == "2026-07-28" and report["server"]["discover"] == "modern"
    posts = _posts(server)
    assert [body["method"] for _, body in posts] == ["server/discover", "subscriptions/listen", "prompts/get", "tools/call"]
    for headers, body in posts:
        assert "mcp-session-id" not in headers
        assert headers["mcp-protocol-version"] == body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        assert headers["mcp-method"] == body["method"]
        assert headers.get("mcp-name") == {"prompts/get": "greet", "tools/call": "go"}.get(body["method"])
    assert notes[0]["method"] == "notifications/subscriptions/acknowledged"
    assert [n["params"]["data"] for n in notes if n["method"] == "notifications/message"] == ["greet", "go"]
    assert report["calls"] == {"sent": 2, "answered": 2, "failed": 0, "timed_out": 0}


def test_a_name_http_cannot_carry_is_sent_base64_encoded():
    assert header_value("go") == "go"
    assert header_value("é ✓") == "=?base64?w6kg4pyT?="
    assert header_value(" go") == "=?base64?IGdv?="
    assert routing_headers({"method": "resources/read", "params": {"uri": "file:///é"}})["Mcp-Name"] == "=?base64?ZmlsZTovLy/DqQ==?="
    assert header_value("a b") == "a b"  # a space inside is a field value as it is
    assert routing_headers({"jsonrpc": "2.0", "id": 1, "result": {}}) == {}
    assert "Mcp-Name" not in routing_headers({"method": "tools/list", "params": {"name": "x"}})


def test_a_400_with_a_modern_error_naming_no_shared_revision_ends_with_the_versions(pure):
    def handle(request: Any) -> Any:
        body = json.loads(request.content)
        return Response(400, headers={"content-type": "application/json"},
                        content=_streamed(_error(body.get("id"), -32022, ["2099-01-01"])))

    report, notes = relay(handle, pure=pure, protocol="auto", calls=[("go", {})])
    assert report["server"]["versions_offered"] == ["2099-01-01"] and report["server"]["discover"] == "no shared revision"
    assert report["calls"]["sent"] == 0 and report["unreachable"] and notes == []


def test_a_400_that_is_no_modern_error_falls_back_to_the_handshake(pure):
    class Old(Server):
        def handle(self, request: Any) -> Any:
            body = json.loads(request.content) if request.content else None
            if body is not None and body.get("method") == "server/discover":
                self.record(request)
                return Response(400, headers={"content-type": "application/json"}, content=_streamed(
                    b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID"}}'))
            return super().handle(request)

    server = Old()
    report, notes = relay(server, pure=pure, protocol="auto", calls=[("go", {})], until_answered=True)
    assert server.methods()[:2] == ["server/discover", "initialize"]
    assert report["protocol_version"] == "2025-11-25" and report["server"]["discover"] == "legacy (error -32000)"
    assert report["calls"]["answered"] == 1 and report["server"]["transport"] == "streamable-http"
    assert INIT["protocolVersion"] == report["protocol_version"]


def test_a_404_to_the_probe_falls_back_to_the_handshake(pure):
    class Old(Server):
        def handle(self, request: Any) -> Any:
            body = json.loads(request.content) if request.content else None
            if body is not None and body.get("method") == "server/discover":
                self.record(request)
                return Response(404)
            return super().handle(request)

    report, _ = relay(Old(), pure=pure, protocol="auto", calls=[("go", {})], until_answered=True)
    assert report["protocol_version"] == "2025-11-25" and report["server"]["discover"] == "HTTP 404"


def test_a_modern_revision_forced_against_a_2025_server_shares_none(pure):
    report, _ = relay(Server(), pure=pure, protocol="2026-07-28", calls=[("go", {})])
    assert report["calls"]["sent"] == 0 and report["protocol_version"] is None


def test_a_call_whose_stream_breaks_off_is_failed_counted_and_never_sent_again(pure):
    server = Modern(broken={"flaky"})
    report, notes = relay(server, pure=pure, protocol="auto", calls=[("flaky", {}), ("go", {})], until_answered=True)
    calls = [body["params"]["name"] for _, body in _posts(server) if body["method"] == "tools/call"]
    assert calls == ["flaky", "go"]  # flaky once: the tool may have run
    assert report["server"]["calls_broken"] == 1
    assert report["calls"] == {"sent": 2, "answered": 1, "failed": 1, "timed_out": 0}
    assert sorted(n["params"]["data"] for n in notes if n["method"] == "notifications/message") == ["flaky", "go"]


def test_input_required_ends_the_call_counted(pure):
    report, _ = relay(Modern(), pure=pure, protocol="auto", calls=[("ask", {})], until_answered=True)
    assert report["server"]["input_required"] == 1 and report["calls"]["failed"] == 1


def test_the_listen_stream_that_breaks_is_opened_again_as_a_new_request_nothing_relayed_twice(pure, monkeypatch):
    # on virtual time (tests/virtual_time.py): the 2.5 s of streams reopened take milliseconds
    monkeypatch.setattr(test_http_driver, "asyncio", SimpleNamespace(run=lambda main: virtual_time.run(lambda: main),
                                                                     wait_for=asyncio.wait_for))
    server = Modern(listen_streams=[_events(ACK, CHANGED), _events(ACK, CHANGED)])
    report, notes = relay(server, pure=pure, protocol="auto", duration=2.5)
    listens = [body for _, body in _posts(server) if body["method"] == "subscriptions/listen"]
    assert len(listens) >= 3 and len({body["id"] for body in listens}) == len(listens)  # each a new request
    assert report["server"]["listen_reopened"] == len(listens) - 1
    assert [n["method"] for n in notes].count("notifications/tools/list_changed") == len(listens)  # one a stream


def test_the_older_transport_with_a_modern_revision_is_refused_at_once():
    import io

    from diverge_codec.relay.channel import FileWriter, RelayOptions
    from diverge_codec.relay.streamable_http import HttpRelay

    with pytest.raises(ValueError, match="transport sse speaks the 2025 era alone"):
        HttpRelay("http://mcp.test/mcp", FileWriter(io.BytesIO()), RelayOptions(protocol="2026-07-28"), transport="sse")
