"""The 2026-07-28 HTTP binding in-process (``http_stateless``): a scripted server, no process, no socket.

The probe first (``server/discover``, no ``Mcp-Session-Id``), the routing headers matching each body, the
400 read before any fallback (a modern error is a modern server; another a 2025 one: the handshake), a
call whose stream breaks off failed and never sent again, the listen stream opened again after it breaks,
``input_required`` counted. The real servers of both SDKs are in ``test_relay_http_eras.py``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from scripted_http import Response  # noqa: E402
from diverge_codec.relay.http_stateless import header_value, routing_headers  # noqa: E402
import test_http_driver  # noqa: E402
import virtual_time  # noqa: E402
from test_http_driver import INIT, SSE, Server, _answer, _events, _listening, _log, _streamed, pure, relay  # noqa: E402,F401

DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {}, "serverInfo": {"name": "mock", "version": "0"}}
ACK = b'{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{}}'
CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}'


def _error(request_id: object, code: int, supported: list[str]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": code, "message": "Unsupported protocol version", "data": {"supported": supported}}}).encode()


class Modern(Server):
    """A modern-only server: every request its own POST, answered on its own event stream."""

    def __init__(self, listen_streams: list[Any] | None = None, broken: set[str] = frozenset(),
                 tools: list[dict[str, Any]] | None = None) -> None:
        super().__init__()
        self.listen_streams = listen_streams
        self.broken = broken
        self.tools = tools or []

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
            opened = self.listen_streams.pop(0) if self.listen_streams else _listening(ACK, CHANGED)
            return Response(200, headers=SSE, content=opened)
        if "id" not in body:
            return Response(202)
        if method == "tools/list":
            return Response(200, headers={"content-type": "application/json"},
                            content=_streamed(_answer(body["id"], {"tools": self.tools})))
        name = body["params"].get("name", "")
        missing = self.unmirrored(name, body["params"].get("arguments") or {}, request.headers)
        if missing:  # as both SDKs' servers: a marked argument without its header is 400 -32020
            return Response(400, headers={"content-type": "application/json"}, content=_streamed(json.dumps({
                "jsonrpc": "2.0", "id": body["id"], "error": {"code": -32020, "message": f"{missing} is absent"}}).encode()))
        if name in self.broken:
            return Response(200, headers=SSE, content=_events(_log(name)))  # ends before the answer
        if name == "ask":
            return Response(200, headers=SSE, content=_events(_answer(body["id"], {"resultType": "input_required"})))
        return Response(200, headers=SSE, content=_events(_log(name), _answer(body["id"])))


    def unmirrored(self, name: str, arguments: dict[str, Any], headers: Any) -> str | None:
        """The first ``Mcp-Param-*`` header the tool's top-level marks ask for and the request lacks."""
        for tool in self.tools:
            if tool["name"] == name:
                for prop, schema in tool["inputSchema"].get("properties", {}).items():
                    header = f"mcp-param-{schema.get('x-mcp-header', '')}".lower()
                    if "x-mcp-header" in schema and arguments.get(prop) is not None and header not in headers:
                        return header
        return None


def _posts(server: Server) -> list[tuple[dict[str, str], dict[str, Any]]]:
    return [(headers, body) for method, _, headers, body in server.requests if method == "POST"]


def _methods(server: Server) -> list[str]:
    """The POSTs' methods, the listen stream's re-openings left out: the mock's listen stream ends at once, and when
    its re-opening (after half a second) lands among the calls depends on the machine's speed, not on the relay."""
    methods = [body["method"] for _, body in _posts(server)]
    return [m for i, m in enumerate(methods) if m != "subscriptions/listen" or "subscriptions/listen" not in methods[:i]]


def test_the_probe_goes_first_stateless_and_every_post_carries_headers_that_match_its_body(pure):
    server = Modern()
    report, notes = relay(server, pure=pure, protocol="auto", calls=[("go", {})], until_answered=True,
                          requests=[("prompts/get", {"name": "greet"})])
    assert report["protocol_version"] == "2026-07-28" and report["server"]["discover"] == "modern"
    posts = _posts(server)
    methods = _methods(server)
    assert methods[:2] == ["server/discover", "subscriptions/listen"]  # then the prompt, and the call after its listing
    assert sorted(methods[2:]) == ["prompts/get", "tools/call", "tools/list"] and methods[-1] == "tools/call"
    for headers, body in posts:
        assert "mcp-session-id" not in headers
        assert headers["mcp-protocol-version"] == body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        assert headers["mcp-method"] == body["method"]
        assert headers.get("mcp-name") == {"prompts/get": "greet", "tools/call": "go"}.get(body["method"])
        assert not any(name.startswith("mcp-param-") for name in headers)  # no tool marks one
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


# --- x-mcp-header: tools/list first, then the calls with their Mcp-Param headers ------------------------

ROUTED = {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"}, "tier": {"type": "integer", "x-mcp-header": "Tier"},
    "query": {"type": "string"}}}}
NUMBERED = {"name": "weigh", "inputSchema": {"type": "object", "properties": {"kg": {"type": "number", "x-mcp-header": "Kg"}}}}
SECRET = "s3cret-region-\u00e9"


def _calls(server: Modern) -> list[tuple[dict[str, str], dict[str, Any]]]:
    return [(headers, body) for headers, body in _posts(server) if body["method"] == "tools/call"]


def test_a_call_carries_the_mcp_param_headers_its_tool_marks_read_from_tools_list_first(pure):
    server = Modern(tools=[{"name": "other", "inputSchema": {"type": "object"}}, ROUTED])
    report, _ = relay(server, pure=pure, protocol="auto", until_answered=True,
                      calls=[("execute_sql", {"region": "Hello, 世界", "tier": 2, "query": "SELECT 1"})])
    assert _methods(server) == ["server/discover", "subscriptions/listen", "tools/list", "tools/call"]
    (listed, body), = [(headers, body) for headers, body in _posts(server) if body["method"] == "tools/list"]
    assert body == {"jsonrpc": "2.0", "id": "diverge-codec/tools/list/1", "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "diverge-codec-relay", "version": "1"}}}}  # no log level asked
    assert listed["mcp-method"] == "tools/list" and listed["mcp-protocol-version"] == "2026-07-28" and "mcp-name" not in listed
    (headers, _), = _calls(server)
    assert {name: value for name, value in headers.items() if name.startswith("mcp-")} == {
        "mcp-method": "tools/call", "mcp-name": "execute_sql", "mcp-protocol-version": "2026-07-28",
        "mcp-param-region": "=?base64?SGVsbG8sIOS4lueVjA==?=", "mcp-param-tier": "2"}
    assert report["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0}
    assert report["server"]["tools_list"] == "read" and report["server"]["params_mirrored"] == 1


def test_without_a_call_no_tools_list_is_asked_for(pure):
    server = Modern(tools=[ROUTED])
    report, _ = relay(server, pure=pure, protocol="auto", requests=[("prompts/get", {"name": "greet"})], until_answered=True)
    assert "tools/list" not in [body["method"] for _, body in _posts(server)] and "tools_list" not in report["server"]


def test_a_call_the_revision_gives_no_header_is_not_sent_and_the_others_are(pure, caplog):
    server = Modern(tools=[ROUTED, NUMBERED])
    with caplog.at_level(logging.DEBUG, logger="diverge_codec.relay"):
        report, _ = relay(server, pure=pure, protocol="auto", until_answered=True, calls=[
            ("weigh", {"kg": 2}), ("execute_sql", {"region": {"nested": SECRET}, "query": "q"}),
            ("execute_sql", {"region": "eu", "query": "q"})])
    assert [headers.get("mcp-param-region") for headers, _ in _calls(server)] == ["eu"]  # the third alone
    assert report["calls"] == {"sent": 3, "answered": 1, "failed": 2, "timed_out": 0}
    assert report["server"]["params_refused"] == 2 and report["server"]["params_mirrored"] == 1
    assert ("tools/call weigh not sent: property 'kg': x-mcp-header on a property of type 'number', not string, integer "
            "or boolean: the revision makes the tool invalid") in caplog.text
    assert ("tools/call execute_sql not sent: argument 'region': its value is no string, the type its x-mcp-header "
            "property declares") in caplog.text
    assert "s3cret" not in caplog.text and "SELECT" not in caplog.text


def test_a_tool_tools_list_does_not_name_is_called_without_param_headers(pure):
    server = Modern(tools=[ROUTED])
    report, _ = relay(server, pure=pure, protocol="auto", until_answered=True, calls=[("go", {"region": "eu"})])
    (headers, _), = _calls(server)
    assert not any(name.startswith("mcp-param-") for name in headers) and report["calls"]["answered"] == 1


class Hostile(Modern):
    """A modern server whose tools/list is endless: ``mode`` ``pages`` (a new cursor each page), ``loop`` (two
    cursors in turn), ``flood`` (an event stream of comments that never ends), ``never`` (no answer at all),
    ``refuse`` (404 with a -32601 error)."""

    def __init__(self, mode: str) -> None:
        super().__init__(tools=[ROUTED])
        self.mode = mode
        self.flooded = 0

    def handle(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") != "tools/list":
            return super().handle(request)
        self.record(request)
        page = int(body["id"].rsplit("/", 1)[1])
        if self.mode in ("pages", "loop"):
            cursor = f"c{page}" if self.mode == "pages" else f"c{page % 2}"
            return Response(200, headers={"content-type": "application/json"}, content=_streamed(
                _answer(body["id"], {"tools": [{"name": f"t{page}", "inputSchema": {}}], "nextCursor": cursor})))
        if self.mode == "refuse":
            return Response(404, headers={"content-type": "application/json"}, content=_streamed(json.dumps(
                {"jsonrpc": "2.0", "id": body["id"], "error": {"code": -32601, "message": "Method not found"}}).encode()))
        return Response(200, headers=SSE, content=self._flood() if self.mode == "flood" else self._never())

    async def _flood(self) -> Any:
        while True:
            self.flooded += 1
            yield b":" + b"x" * 65534 + b"\n"

    async def _never(self) -> Any:
        await asyncio.sleep(3600)
        yield b""


@pytest.mark.parametrize(("mode", "outcome", "pages"), [
    ("pages", "cut (more than 32 pages)", 32), ("loop", "cut (a cursor seen before)", 3),
    ("flood", "cut (more than 8388608 bytes)", 1), ("never", "failed (no answer within 1 s)", 1),
    ("refuse", "failed (error -32601)", 1)])
def test_a_hostile_tools_list_is_bounded_and_the_call_goes_without_its_headers(pure, mode, outcome, pages, caplog):
    server = Hostile(mode)
    with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
        report, _ = relay(server, pure=pure, protocol="auto", until_answered=True, request_timeout=2.0,
                          calls=[("execute_sql", {"region": "eu", "query": "q"})])
    methods = _methods(server)
    assert methods.count("tools/list") == pages and methods[-1] == "tools/call"
    assert report["server"]["tools_list"] == outcome
    assert f"tools/list {outcome}: a call to a tool it did not list goes without Mcp-Param headers" in caplog.text
    # the server judges: these mocks, as both SDKs, refuse a marked argument without its header (400 -32020)
    assert report["calls"] == {"sent": 1, "answered": 0, "failed": 1, "timed_out": 0}
    if mode == "flood":
        assert server.flooded * 65536 < (8 << 20) + 4 * 65536  # read no further than the bound


def test_a_notification_on_the_tools_list_stream_is_relayed_and_its_answer_is_no_stray(pure):
    class Chatty(Modern):
        def handle(self, request: Any) -> Any:
            body = json.loads(request.content) if request.content else {}
            if body.get("method") == "tools/list":
                self.record(request)
                return Response(200, headers=SSE, content=_events(_log("listing"), _answer(body["id"], {"tools": [ROUTED]})))
            return super().handle(request)

    server = Chatty()
    report, notes = relay(server, pure=pure, protocol="auto", until_answered=True,
                          calls=[("execute_sql", {"region": "eu", "query": "q"})])
    assert [n["params"]["data"] for n in notes if n["method"] == "notifications/message"] == ["listing", "execute_sql"]
    assert report["ignored"] == 0 and report["server"]["tools_list"] == "read" and report["calls"]["answered"] == 1


def test_the_listen_stream_counts_as_the_server_s_own_stream_only_once_acknowledged():
    """What ``--until-answered`` reads until quiet, and what tells a POST that failed from a server gone."""
    import io

    from diverge_codec.relay.channel import FileWriter, RelayOptions
    from diverge_codec.relay.http_stateless import StatelessHttp
    from diverge_codec.relay.streamable_http import HttpRelay

    driver = HttpRelay("http://mcp.test/mcp", FileWriter(io.BytesIO()), RelayOptions(protocol="auto"))
    driver._become(StatelessHttp)
    session = driver.session
    assert driver._own_stream_open() is False  # no listen stream
    session.start()
    session.receive(_answer(session.pending and next(iter(session.pending)), DISCOVERED) + b"\n")
    assert session.listen_id is not None and driver.report.listen == "unacknowledged"
    assert driver._own_stream_open() is False
    driver.report.listen = "acknowledged"
    assert driver._own_stream_open() is True
