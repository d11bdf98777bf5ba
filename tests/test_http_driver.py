"""The HTTP drivers in-process: ``HttpRelay`` against a scripted server (``scripted_http.serving``: under the client), no process, no socket.

The quick subset reaches the headers each request carries, each status's meaning (a forgotten session on
the POST path and the GET path, the older transport's signs, redirects), the stream rules (resumption from
the last event id, replays dropped) and the bounds (a body not parsed read a few KiB at most), on both cores.
The same behaviours run against real processes in ``test_relay_http*.py``; here a one-line bug in a header
or a status check fails in about a second.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import json
from typing import Any

import pytest

from diverge_codec import stream
from diverge_codec.relay.channel import FileWriter, RelayOptions
from diverge_codec.sequence import McpNotificationsChecker, State

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from diverge_codec.relay.streamable_http import HttpRelay  # noqa: E402
from scripted_http import Response, serving  # noqa: E402

URL = "http://mcp.test/mcp"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "mock", "version": "0"}}
SSE = {"content-type": "text/event-stream"}


def _log(data: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": data}},
                      separators=(",", ":")).encode()


def _answer(request_id: object, result: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result if result is not None else {}}).encode()


def _events(*datas: bytes, ids: list[str] | None = None) -> Any:
    """An event stream's body, streamed as a server's is."""
    return _streamed(b"".join((f"id: {ids[index]}\n".encode() if ids else b"") + b"data: " + data + b"\n\n"
                              for index, data in enumerate(datas)))


def _streamed(body: bytes) -> Any:
    async def pieces() -> Any:
        yield body
    return pieces()


def _listening(*datas: bytes) -> Any:
    """A stream as a real server's listen stream: its events, then open until the relay closes it (one that ends is
    opened again after half a second, a re-opening that lands among a test's requests by the machine's speed)."""
    async def pieces() -> Any:
        yield b"".join(b"data: " + data + b"\n\n" for data in datas)
        await asyncio.sleep(3600)
    return pieces()


class _Kept(io.BytesIO):
    def close(self) -> None:  # the channel's finish: keep what was written for the test to read
        self.closed_at_end = True


class Server:
    """A scripted server: ``handle(request, body)`` answers; every request is kept for the test to read."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str], dict[str, Any] | None]] = []
        self.session = "s-1"

    def record(self, request: Any) -> dict[str, Any] | None:
        body = json.loads(request.content) if request.content else None
        self.requests.append((request.method, request.path, dict(request.headers), body))
        return body

    def methods(self) -> list[str]:
        return [body.get("method", "answer") for method, _, _, body in self.requests if method == "POST" and body]

    def handle(self, request: Any) -> Any:
        body = self.record(request)
        if request.method == "GET":
            return Response(405)
        if request.method == "DELETE":
            return Response(200)
        if body["method"] == "initialize":
            return Response(200, headers={**SSE, "mcp-session-id": self.session},
                                   content=_events(_answer(body["id"], INIT)))
        if request.headers.get("mcp-session-id") != self.session:
            return Response(404)
        if "id" not in body:
            return Response(202)
        return Response(200, headers=SSE, content=_events(_log(body["method"]), _answer(body["id"])))


def relay(server: Server | Any, *args: Any, pure: bool = False, **options: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run one relay against ``server`` in this process: (the report, the channel's notifications)."""
    out = _Kept()
    handler = server.handle if isinstance(server, Server) else server
    settings = {"grace": 0.5, "request_timeout": 5.0, "reconnect_window": 3.0, "protocol": "2025-11-25", **options}
    # the 2025 era forced: these scripted servers speak it alone (the probe first is pinned in test_http_stateless.py)
    if pure:
        from diverge_codec import _mcp_notifications_py
        settings["frame"] = _mcp_notifications_py.splice_notification
    driver = HttpRelay(URL, FileWriter(out), RelayOptions(**settings), *args)
    with serving(handler):  # the scripted server, under the client
        report = asyncio.run(asyncio.wait_for(driver.run(), 30)).as_dict()
    checker = McpNotificationsChecker()
    frames = [checker.payload(bytes(p)) for p in stream.split_records(out.getvalue())]
    state = checker.finish()
    assert state is (State.ENDED_WITH_ERROR if report["unreachable"] else State.FINISHED if frames else State.UNREADABLE)
    notes = [frame.notification for frame in frames if hasattr(frame, "notification")]
    assert report["seen"] == report["relayed"] + sum(report["dropped"].values())
    return report, notes


@pytest.fixture(params=[False, True], ids=["c", "py"])
def pure(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


def test_every_request_after_initialize_carries_the_session_and_the_protocol_version(pure):
    server = Server()
    report, notes = relay(server, pure=pure, requests=[("tools/list", {})], calls=[("go", {})], until_answered=True)
    assert report["calls"] == {"sent": 2, "answered": 2, "failed": 0, "timed_out": 0}
    assert [n["params"]["data"] for n in notes] == ["tools/list", "tools/call"]
    first, *later = [headers for method, _, headers, _ in server.requests if method != "GET"]
    assert "mcp-session-id" not in first and "mcp-protocol-version" not in first
    assert later and all(h["mcp-session-id"] == "s-1" and h["mcp-protocol-version"] == "2025-11-25" for h in later)
    assert all(h["accept"] == "application/json, text/event-stream" for h in [first, *later])
    assert all(h["accept-encoding"] == "gzip, deflate" for h in [first, *later])


def test_a_404_on_a_post_is_a_forgotten_session_made_again(pure):
    server = Server()
    calls: list[str] = []

    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "tools/list" and not calls:
            calls.append("forgot")
            server.session = "s-2"  # the server restarted: the old session is unknown
        return server.handle(request)

    report, _ = relay(handle, pure=pure, requests=[("tools/list", {})], until_answered=True)
    assert report["server"]["sessions"] == 2 and report["server"]["calls_lost"] == 1
    assert server.methods().count("initialize") == 2 and server.methods().count("tools/list") == 2


def test_a_400_on_the_get_stream_saying_no_session_is_a_forgotten_session_made_again():
    server = Server()
    opened: list[str] = []

    def handle(request: Any) -> Any:
        if request.method == "GET":
            server.record(request)
            if request.headers.get("mcp-session-id") == "s-1" and not opened:
                opened.append("once")
                server.session = "s-2"
                return Response(400, headers={"content-type": "application/json"}, content=_streamed(json.dumps({
                    "jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
                }).encode()))
            return Response(405)
        return server.handle(request)

    report, _ = relay(handle, duration=1.5)
    assert report["server"]["sessions"] == 2 and report["server"]["statuses"]["400"] == 1


def test_a_400_that_does_not_speak_of_the_session_fails_the_request_only():
    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "tools/call":
            return Response(400, content=_streamed(b'{"error": "bad arguments"}'))
        return Server.handle(server, request)

    server = Server()
    report, _ = relay(handle, calls=[("go", {})], until_answered=True)
    assert report["server"]["sessions"] == 1 and report["calls"]["failed"] == 1


@pytest.mark.parametrize("status", [400, 404, 405])
def test_auto_takes_the_older_transport_where_the_post_says_so(status):
    posted: list[dict[str, Any]] = []
    queues: list[asyncio.Queue[bytes]] = []  # made inside the relay's loop

    async def events() -> Any:
        yield b"event: endpoint\ndata: /messages?session=7\n\n"
        while True:
            yield await queues[0].get()

    def handle(request: Any) -> Any:
        if request.method == "POST" and request.path == "/mcp":
            return Response(status)
        if request.method == "GET":
            queues.append(asyncio.Queue())
            return Response(200, headers=SSE, content=events())
        body = json.loads(request.content)
        posted.append(body)
        assert request.url == "http://mcp.test/messages?session=7"
        if "id" in body:
            answer = _answer(body["id"], INIT if body["method"] == "initialize" else {})
            queues[0].put_nowait(b"data: " + _log(body["method"]) + b"\n\ndata: " + answer + b"\n\n")
        return Response(202)

    report, notes = relay(handle, calls=[("go", {})], until_answered=True)
    assert report["server"]["transport"] == "sse" and report["calls"]["answered"] == 1
    assert [n["params"]["data"] for n in notes] == ["initialize", "tools/call"]
    assert [body.get("method") for body in posted] == ["initialize", "notifications/initialized", "tools/call"]


def test_a_stream_resumed_from_its_last_event_id_and_a_replay_dropped():
    server = Server()
    gets: list[str | None] = []

    def handle(request: Any) -> Any:
        if request.method == "GET":
            server.record(request)
            gets.append(request.headers.get("last-event-id"))
            if len(gets) == 1:
                return Response(200, headers=SSE, content=_events(_log(1), _log(2), ids=["a", "b"]))
            return Response(200, headers=SSE, content=_events(_log(2), _log(3), ids=["b", "c"]))
        return server.handle(request)

    report, notes = relay(handle, duration=2.5)
    assert gets[:2] == [None, "b"]
    data = [n["params"]["data"] for n in notes]
    assert data[:3] == [1, 2, 3] and data.count(2) == 1
    assert report["server"]["replayed"] >= 1 and report["server"]["get_stream"] in ("open", "reopening")


def test_a_body_the_relay_does_not_parse_is_read_a_few_kib_even_compressed():
    read: list[int] = []

    async def endless() -> Any:
        piece = gzip.compress(bytes(1 << 20))
        for _ in range(64):
            read.append(len(piece))
            yield piece

    server = Server()

    def handle(request: Any) -> Any:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "tools/call":
            return Response(500, headers={"content-type": "text/plain", "content-encoding": "gzip"}, content=endless())
        return server.handle(request)

    report, _ = relay(handle, calls=[("go", {})], until_answered=True)
    assert report["calls"]["failed"] == 1 and report["server"]["bodies_unread"] == 1
    assert len(read) <= 2  # the 4 KiB of its reason came from the first piece


@pytest.mark.parametrize(("location", "error"), [
    ("http://elsewhere.test/mcp", "HTTP 307 on initialize: redirect to another origin"),
    ("/mcp", "HTTP 3xx on initialize: more than 5 redirects"),
])
def test_a_redirect_elsewhere_or_in_a_loop_is_refused(location, error):
    report, _ = relay(lambda request: Response(307, headers={"location": location}),
                      [("Authorization", "Bearer SECRET")])
    assert report["server"]["error"] == error and report["unreachable"] is True


def test_a_redirect_within_the_origin_keeps_the_headers_and_is_where_later_requests_go():
    server = Server()

    def handle(request: Any) -> Any:
        if request.path == "/mcp":
            server.record(request)
            return Response(308, headers={"location": "/mcp/"})
        return server.handle(request)

    report, _ = relay(handle, [("Authorization", "Bearer T")], calls=[("go", {})], until_answered=True)
    assert report["calls"]["answered"] == 1 and report["server"]["statuses"]["308"] == 1
    assert [path for _, path, _, _ in server.requests if path != "/mcp"][0] == "/mcp/"
    assert all(headers["authorization"] == "Bearer T" for _, _, headers, _ in server.requests)


def test_a_session_id_http_cannot_carry_ends_the_relay_cleanly():
    def handle(request: Any) -> Any:
        return Response(200, headers=[(b"content-type", b"text/event-stream"), (b"mcp-session-id", "s\u00e9".encode())],
                               content=_events(_answer(0, INIT)))

    report, _ = relay(handle)
    assert report["server"]["error"] == "the server's Mcp-Session-Id is not visible ASCII: unusable"


def test_every_post_is_counted_out_when_it_ends_so_the_limit_measures_what_is_in_flight():
    """The POSTs waiting or in flight are counted in and out one each (``MAX_POSTS`` holds the server's reading
    back on that count): once every request was answered, none is left counted, in either direction."""
    server = Server()
    driver = HttpRelay(URL, FileWriter(_Kept()), RelayOptions(grace=0.5, request_timeout=5.0, protocol="2025-11-25",
                                                              calls=[("go", {})] * 5, until_answered=True))
    with serving(server.handle):
        report = asyncio.run(asyncio.wait_for(driver.run(), 30)).as_dict()
    assert report["calls"]["answered"] == 5
    assert driver._waiting_posts == 0 and driver.session.server_reading
