"""The HTTP drivers as deployed (issue #41): behind proxies and load balancers, past NATs, with servers that ping.

Scripted servers in the test's own event loop (``test_http_driver.relay``), no process, no socket: a session
lost only on the server's word, a gateway's 502/503/504 (and 429 with ``Retry-After``) read as "cannot be
reached" on both transports, the GET stream's silence limit, the two JSON-RPC id spaces, redirects that move
only a POST, bodies of several gzip members and raw deflate; and the operator's words (``caplog``) for each.
The same cases against real nginx and haproxy are in ``test_relay_http_infra.py``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import time
import zlib
from typing import Any

import pytest

from diverge_codec.relay.channel import exit_status
from diverge_codec.relay.session import RelayReport

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from diverge_codec.relay import http_client  # noqa: E402
from scripted_http import Response, serving  # noqa: E402
from test_http_driver import INIT, SSE, Server, _answer, _events, _log, _streamed, pure, relay  # noqa: E402,F401

JSON = {"content-type": "application/json"}


def _status(report: dict[str, Any]) -> int:
    built = RelayReport()
    built.server, built.unreachable = report["server"], report["unreachable"]
    return exit_status(built)


def _body(request: Any) -> dict[str, Any]:
    return json.loads(request.content) if request.content else {}


# --- JSON-RPC ids by direction ----------------------------------------------------------------------------


class PingingServer(Server):
    """Pings the relay during every call, with the call's own id (both sides count from 1, as the TypeScript
    SDK's server does), and answers the call once the ping is answered."""

    def __init__(self) -> None:
        super().__init__()
        self.pongs: list[dict[str, Any]] = []
        self.answered: dict[object, asyncio.Event] = {}

    def handle(self, request: Any) -> Any:
        body = _body(request)
        if request.method == "POST" and body and "method" not in body:  # the relay's answer to a ping
            self.record(request)
            self.pongs.append(body)
            self.answered[body["id"]].set()
            return Response(202)
        if body.get("method") != "tools/call":
            return super().handle(request)
        self.record(request)
        answered = self.answered[body["id"]] = asyncio.Event()

        async def stream() -> Any:
            yield b"data: " + json.dumps({"jsonrpc": "2.0", "id": body["id"], "method": "ping"}).encode() + b"\n\n"
            await answered.wait()
            yield b"data: " + _answer(body["id"], {"content": []}) + b"\n\n"
        return Response(200, headers=SSE, content=stream())


def test_a_server_that_pings_during_every_call_with_the_calls_own_id_fails_no_call(pure):
    server = PingingServer()
    report, _ = relay(server, pure=pure, calls=[("pinger", {}), ("pinger", {})], until_answered=True)
    assert report["calls"] == {"sent": 2, "answered": 2, "failed": 0, "timed_out": 0}
    assert report["requests_answered"] == 2 and [pong["id"] for pong in server.pongs] in ([1, 2], [2, 1])
    assert report["server"]["sessions"] == 1 and report["server"]["posts_failed"] == 0


# --- one failed request never loses the session -----------------------------------------------------------


def test_one_post_that_fails_fails_that_call_alone_and_the_session_goes_on(caplog):
    server = Server()
    failed: list[str] = []

    def handle(request: Any) -> Any:
        body = _body(request)
        if body.get("method") == "tools/call" and body["params"]["name"] == "breaks" and not failed:
            failed.append("once")
            raise ConnectionResetError(104, "the server failed: the connection is reset")
        return server.handle(request)

    with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
        report, notes = relay(handle, calls=[("breaks", {}), ("fine", {})], until_answered=True)
    server_report = report["server"]
    assert server_report["sessions"] == 1 and server_report["calls_lost"] == 0 and server_report["posts_failed"] == 1
    assert report["calls"] == {"sent": 2, "answered": 1, "failed": 1, "timed_out": 0}
    assert server.methods().count("initialize") == 1
    assert "tools/call failed (connection reset by peer): that one alone" in caplog.text


# --- a gateway's 502/503/504: the server cannot be reached --------------------------------------------------


class Gateway(Server):
    """A server behind a proxy: ``down`` makes every request a gateway's ``status``; ``forget`` makes it come back
    restarted (the old session unknown: 404)."""

    def __init__(self, status: int = 502, headers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.down = False
        self.status = status
        self.gateway_headers = headers or {}
        self.gets = 0

    def handle(self, request: Any) -> Any:
        if self.down:
            self.record(request)
            return Response(self.status, headers={"content-type": "text/html", **self.gateway_headers},
                            content=b"<html>bad gateway</html>")
        if request.method == "GET":
            self.record(request)
            self.gets += 1
            if request.headers.get("mcp-session-id") != self.session:
                return Response(404)
            if self.gets == 1:  # the first stream ends when the server dies
                self.down = True
                return Response(200, headers=SSE, content=_events(_log("before")))
            return Response(200, headers=SSE, content=_events(_log("after")))
        return super().handle(request)


@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_gateway_status_on_the_get_stream_is_a_server_away_and_after_the_window_exit_1_naming_it(status, caplog):
    server = Gateway(status)
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
        report, notes = relay(server, duration=20, reconnect_window=1.0)
    assert time.monotonic() - started < 15  # ends after the window, not at --duration
    server_report = report["server"]
    assert server_report["error"] == f"HTTP {status} on the event stream" and server_report["ended_by"] == "connection lost"
    assert server_report["statuses"][str(status)] >= 2 and _status(report) == 1
    assert [n["params"]["data"] for n in notes] == ["before"]
    assert "DELETE" not in [method for method, _, _, _ in server.requests]  # nothing sent to a server gone
    assert f"the server cannot be reached (HTTP {status} on " in caplog.text
    assert "trying again until" in caplog.text and f"the relay gives up: HTTP {status} on the event stream" in caplog.text


def test_a_server_restarted_behind_a_gateway_gets_a_new_session_and_the_calls_not_made_again_are_named(caplog):
    server = Gateway()
    gateway_answers = []

    def handle(request: Any) -> Any:
        if server.down:
            gateway_answers.append(request.method)
            if len(gateway_answers) >= 2:  # back, restarted: the old session is unknown
                server.down, server.session = False, "s-2"
        return server.handle(request)

    with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
        report, notes = relay(handle, duration=2.5, calls=[("toggle-simulated-logging", {})])
    server_report = report["server"]
    assert server_report["sessions"] == 2 and "error" not in server_report
    assert server.methods().count("initialize") == 2 and server.methods().count("tools/call") == 1
    assert "after" in [n["params"]["data"] for n in notes]
    assert "a new session (the server lost the old one)" in caplog.text
    assert "not made again, so the server may have forgotten them: tools/call toggle-simulated-logging" in caplog.text
    assert "the server answers again (HTTP 404)" in caplog.text


def test_a_429_with_retry_after_is_waited_out_and_then_the_stream_opened_again():
    server = Server()
    gets: list[float] = []

    def handle(request: Any) -> Any:
        if request.method == "GET":
            gets.append(time.monotonic())
            if len(gets) == 1:
                return Response(429, headers={"retry-after": "1"})
            return Response(200, headers=SSE, content=_events(_log("open")))
        return server.handle(request)

    report, notes = relay(handle, duration=1.6, reconnect_window=5)
    assert len(gets) >= 2 and gets[1] - gets[0] >= 0.95
    assert report["server"]["statuses"]["429"] == 1 and "error" not in report["server"]
    assert "open" in [n["params"]["data"] for n in notes]


def test_a_429_without_retry_after_is_a_refusal_of_the_stream_alone():
    server = Server()

    def handle(request: Any) -> Any:
        if request.method == "GET":
            return Response(429)
        return server.handle(request)

    report, _ = relay(handle, duration=1.0)
    assert report["server"]["get_stream"] == "refused (HTTP 429)" and "error" not in report["server"]


def test_a_gateway_status_on_a_call_fails_it_and_the_stream_watches_for_the_server_to_return():
    server = Server()
    seen: list[str] = []

    def handle(request: Any) -> Any:
        body = _body(request)
        if body.get("method") == "tools/call":
            seen.append("call")
            return Response(503, headers={"retry-after": "0"})
        if request.method == "GET":
            seen.append("get")
        return server.handle(request)

    report, _ = relay(handle, duration=1.0, calls=[("go", {})])
    assert report["calls"]["failed"] == 1 and report["server"]["sessions"] == 1 and "error" not in report["server"]
    assert report["server"]["posts_failed"] == 1 and seen.count("get") >= 1


def test_gateway_answers_to_posts_while_the_stream_flows_never_end_the_relay():
    server = Server()

    async def failing_call(request: Any) -> Any:
        if _body(request)["params"]["name"] == "later":
            await asyncio.sleep(0.8)  # past the window since the first one
        return Response(503)

    def handle(request: Any) -> Any:
        if _body(request).get("method") == "tools/call":
            return failing_call(request)
        if request.method == "GET":
            async def comments() -> Any:
                while True:
                    await asyncio.sleep(0.05)
                    yield b": alive\n\n"
            return Response(200, headers=SSE, content=comments())
        return server.handle(request)

    report, _ = relay(handle, duration=1.2, reconnect_window=0.5, calls=[("first", {}), ("later", {})])
    assert report["server"]["posts_failed"] == 2 and report["calls"]["failed"] == 2
    assert "error" not in report["server"] and report["server"]["get_stream"] == "open"


# --- the older HTTP+SSE transport -------------------------------------------------------------------------


class LegacyServer:
    """The older HTTP+SSE transport: each GET is a session (its endpoint, then the answers); ``script`` decides
    what a GET after the first gets (a stream, or a gateway's status)."""

    def __init__(self, after_first: list[int]) -> None:
        self.after_first = after_first
        self.gets = 0
        self.queue: asyncio.Queue[bytes] | None = None
        self.initializes = 0

    def handle(self, request: Any) -> Any:
        if request.method == "GET":
            self.gets += 1
            if self.gets > 1 and self.after_first:
                return Response(self.after_first.pop(0), content=b"gateway")
            queue = self.queue = asyncio.Queue()
            ends = self.gets == 1

            async def events() -> Any:
                yield f"event: endpoint\ndata: /messages?session={self.gets}\n\n".encode()
                while True:
                    data = await queue.get()
                    yield data
                    if ends and b'"result": {}' in data:  # the first session's stream ends after its call
                        return
            return Response(200, headers=SSE, content=events())
        if request.method == "DELETE":
            return Response(405)
        body = _body(request)
        assert self.queue is not None
        if body.get("method") == "initialize":
            self.initializes += 1
        if "id" in body:
            answer = _answer(body["id"], INIT if body["method"] == "initialize" else {})
            self.queue.put_nowait(b"data: " + answer + b"\n\n")
        return Response(202)


def test_the_older_transport_waits_out_a_502_within_the_window_and_makes_a_new_session():
    server = LegacyServer(after_first=[502])
    report = _legacy(server, duration=2.0, reconnect_window=10, calls=[("go", {})])
    assert report["server"]["transport"] == "sse" and report["server"]["sessions"] == 2
    assert report["server"]["statuses"]["502"] == 1 and "error" not in report["server"]
    assert server.initializes == 2


def test_the_older_transport_gone_for_good_behind_a_gateway_exits_1_after_the_window_naming_the_status():
    server = LegacyServer(after_first=[502] * 100)
    started = time.monotonic()
    report = _legacy(server, duration=20.0, reconnect_window=1.0, calls=[("go", {})])
    elapsed = time.monotonic() - started
    assert 0.9 < elapsed < 15
    assert report["server"]["error"] == "HTTP 502 on the SSE stream" and report["server"]["ended_by"] == "connection lost"
    assert _status(report) == 1


def _legacy(server: LegacyServer, **options: Any) -> dict[str, Any]:
    from diverge_codec.relay.channel import FileWriter, RelayOptions
    from diverge_codec.relay.streamable_http import HttpRelay
    from test_http_driver import URL, _Kept

    settings = {"grace": 0.5, "request_timeout": 5.0, **options}
    driver = HttpRelay(URL, FileWriter(_Kept()), RelayOptions(**settings), transport="sse")
    with serving(server.handle):
        return asyncio.run(asyncio.wait_for(driver.run(), 30)).as_dict()


# --- the GET stream's silence limit -----------------------------------------------------------------------


def test_a_get_stream_silent_past_the_limit_is_opened_again_from_its_last_event_id(caplog):
    server = Server()
    resumed_from: list[str | None] = []

    def handle(request: Any) -> Any:
        if request.method != "GET":
            return server.handle(request)
        resumed_from.append(request.headers.get("last-event-id"))

        async def then_silence() -> Any:
            yield f"retry: 100\nid: e{len(resumed_from)}\ndata: ".encode() + _log(len(resumed_from)) + b"\n\n"
            await asyncio.Event().wait()  # a flow a NAT dropped: nothing more, and no end
            yield b""
        return Response(200, headers=SSE, content=then_silence())

    with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
        report, notes = relay(handle, duration=1.2, stream_timeout=0.25)
    assert resumed_from[:3] == [None, "e1", "e2"]
    assert report["server"]["stream_silences"] >= 2 and report["server"]["reconnects"] >= 2
    assert [n["params"]["data"] for n in notes][:3] == [1, 2, 3]
    assert "the server's stream was silent for 0.25 s (--stream-timeout)" in caplog.text


def test_a_stream_that_keeps_talking_is_never_cut_by_the_silence_limit():
    server = Server()
    opened: list[int] = []

    def handle(request: Any) -> Any:
        if request.method != "GET":
            return server.handle(request)
        opened.append(1)

        async def comments() -> Any:
            while True:
                await asyncio.sleep(0.1)
                yield b": keep-alive\n\n"
        return Response(200, headers=SSE, content=comments())

    report, _ = relay(handle, duration=1.0, stream_timeout=0.3)
    assert len(opened) == 1 and report["server"]["stream_silences"] == 0


# --- redirects ---------------------------------------------------------------------------------------------


def test_a_redirect_of_the_get_stream_moves_that_get_alone():
    server = Server()

    def handle(request: Any) -> Any:
        if request.method == "GET" and request.path == "/mcp":
            server.record(request)
            return Response(307, headers={"location": "/events"})
        if request.method == "GET":
            server.record(request)
            return Response(200, headers=SSE, content=_events(_log("moved")))
        return server.handle(request)

    report, notes = relay(handle, duration=1.0, calls=[("go", {})])
    paths = [(method, path) for method, path, _, _ in server.requests]
    assert ("GET", "/events") in paths and ("DELETE", "/mcp") in paths
    assert all(path == "/mcp" for method, path in paths if method in ("POST", "DELETE"))


# --- bodies of several gzip members, raw deflate -------------------------------------------------------------


@pytest.mark.parametrize("coding", ["gzip-members", "raw-deflate", "zlib"])
def test_a_json_answer_compressed_as_servers_send_it_is_read_whole(coding, pure):
    server = Server()
    answer_text = "x" * 200

    def handle(request: Any) -> Any:
        body = _body(request)
        if body.get("method") != "tools/call":
            return server.handle(request)
        plain = _answer(body["id"], {"content": [{"type": "text", "text": answer_text}]})
        if coding == "gzip-members":  # each flush its own member, cut mid-JSON
            content, name = gzip.compress(plain[:30]) + gzip.compress(plain[30:]), "gzip"
        elif coding == "raw-deflate":
            squeeze = zlib.compressobj(wbits=-15)
            content, name = squeeze.compress(plain) + squeeze.flush(), "deflate"
        else:
            content, name = zlib.compress(plain), "deflate"
        return Response(200, headers={**JSON, "content-encoding": name}, content=_streamed(content))

    report, _ = relay(handle, pure=pure, calls=[("go", {})], until_answered=True)
    assert report["calls"] == {"sent": 1, "answered": 1, "failed": 0, "timed_out": 0}
    assert report["server"]["calls_as_json"] == 1 and report["ignored"] == 0


def test_bytes_after_the_last_gzip_member_are_refused_not_dropped():
    from diverge_codec.relay.http_body import BodyError, Inflater

    inflater = Inflater("gzip")
    with pytest.raises(BodyError):
        list(inflater.feed(gzip.compress(b"one") + b"trailing junk"))


@pytest.mark.parametrize("cut", [1, 2, 7, 100])
def test_members_inflate_whole_however_the_bytes_are_cut(cut):
    from diverge_codec.relay.http_body import Inflater

    data = b"".join(gzip.compress(bytes([65 + n]) * (n * 1000 + 1)) for n in range(5))
    inflater = Inflater("gzip")
    out = b"".join(piece for at in range(0, len(data), cut) for piece in inflater.feed(data[at:at + cut]))
    assert out == b"".join(bytes([65 + n]) * (n * 1000 + 1) for n in range(5)) and inflater.members == 5


def test_a_bomb_of_many_members_comes_out_a_piece_at_a_time():
    from diverge_codec.relay.http_body import PIECE, Inflater

    member = gzip.compress(bytes(4 * PIECE))
    pieces = Inflater("gzip").feed(member * 8)
    sizes = [len(next(pieces)) for _ in range(10)]
    assert max(sizes) <= PIECE and sum(sizes) == 10 * PIECE


# --- smaller ---------------------------------------------------------------------------------------------


def test_a_cut_initialize_answer_ends_the_handshake_at_once_in_its_own_words():
    def handle(request: Any) -> Any:
        return Response(200, headers={**SSE, "mcp-session-id": "s-1"}, content=_streamed(b'data: {"jsonrpc":"2.0","id":0,"res'))

    started = time.monotonic()
    report, _ = relay(handle, request_timeout=20.0)
    assert time.monotonic() - started < 10
    assert report["server"]["error"] == "the server's answer to initialize broke off before it came"
    assert report["server"]["shutdown"] == "handshake failed" and _status(report) == 1
    from diverge_codec.cli._watch import unreachable_line

    line = unreachable_line(report) or ""
    assert "stdio" not in line and "broke off" in line


def test_the_report_says_no_session_id_for_a_server_that_gave_none():
    def handle(request: Any) -> Any:
        body = _body(request)
        if request.method != "POST":
            return Response(405)
        if "id" not in body:
            return Response(202)
        return Response(200, headers=SSE, content=_events(_answer(body["id"], INIT if body["method"] == "initialize" else {})))

    report, _ = relay(handle, calls=[("go", {})], until_answered=True)
    assert report["server"]["sessions"] == 1 and report["server"]["session_id"] is False


@pytest.mark.parametrize(("page", "words"), [
    (b"<html><head><title>400 No required SSL certificate was sent</title></head></html>",
     "the server asks for a client certificate and none was sent (--cert, --key)"),
    (b"<html><head><title>400 The SSL certificate error</title></head></html>",
     "the server refused the client certificate"),
])
def test_nginx_refusing_the_client_certificate_is_named_a_certificate_problem(page, words):
    report, _ = relay(lambda request: Response(400, headers={"content-type": "text/html"}, content=_streamed(page)))
    assert report["server"]["error"].startswith(f"HTTP 400 on initialize: {words}")
    assert report["server"]["transport"] == "streamable-http"  # not taken for the older transport's sign


# --- the words at DEBUG: each exchange, never a value ---------------------------------------------------------


def test_each_exchange_is_a_debug_line_with_no_header_value_token_cookie_or_query(caplog):
    server = Server()

    def handle(request: Any) -> Any:
        answer = server.handle(request)
        answer.headers = [*answer.headers, (b"set-cookie", b"affinity=COOKIE-VALUE")]
        return answer

    from diverge_codec.relay.channel import FileWriter, RelayOptions
    from diverge_codec.relay.streamable_http import HttpRelay
    from test_http_driver import _Kept

    driver = HttpRelay("http://mcp.test/mcp?key=QUERY-SECRET", FileWriter(_Kept()),
                       RelayOptions(calls=[("go", {})], until_answered=True, grace=0.5, protocol="2025-11-25"),
                       [("Authorization", "Bearer TOKEN-SECRET")])
    with serving(handle), caplog.at_level(logging.DEBUG, logger="diverge_codec.relay"):
        asyncio.run(asyncio.wait_for(driver.run(), 30))
    lines = [record.getMessage() for record in caplog.records if record.levelno == logging.DEBUG]
    assert any(line.startswith("POST /mcp: HTTP 200 (") and line.endswith(" ms)") for line in lines)
    assert any(line.startswith("GET /mcp: HTTP 405 (") for line in lines)
    assert any(line.startswith("DELETE /mcp: HTTP 200 (") for line in lines)
    for secret in ("QUERY-SECRET", "TOKEN-SECRET", "COOKIE-VALUE", "s-1", "key="):
        assert secret not in caplog.text


def test_calls_answered_as_plain_json_are_said_to_be_so(caplog):
    server = Server()

    def handle(request: Any) -> Any:
        body = _body(request)
        if body.get("method") == "tools/call":
            return Response(200, headers=JSON, content=_streamed(_answer(body["id"])))
        return server.handle(request)

    with caplog.at_level(logging.INFO, logger="diverge_codec.relay"):
        report, _ = relay(handle, calls=[("slow-job", {})], until_answered=True)
    assert report["server"]["calls_as_json"] == 1
    assert ("tools/call slow-job was answered as plain JSON, not an event stream: its progress and logs cannot come"
            in caplog.text)


def test_raw_deflate_whose_first_byte_looks_like_a_zlib_header_is_still_raw():
    from diverge_codec.relay.http_body import Inflater

    data = b"x" * 40  # a stored block whose ignored bits set bit 3: 0x08, a zlib header's method, but no FCHECK
    raw = b"\x08" + len(data).to_bytes(2, "little") + (~len(data) & 0xFFFF).to_bytes(2, "little") + data + b"\x03\x00"
    assert b"".join(Inflater("deflate").feed(raw)) == data


# --- the outage's bookkeeping, sans-IO ------------------------------------------------------------------


class _Outage:
    """A host for ``http_reach.Reach``: the options and ``_fail`` it needs, nothing else."""

    def __new__(cls, window: float) -> Any:
        from diverge_codec.relay.channel import RelayOptions
        from diverge_codec.relay.http_reach import Reach

        class Host(Reach):
            def __init__(self) -> None:
                self.options = RelayOptions(reconnect_window=window)
                self.failed: list[tuple[str, str]] = []

            def _fail(self, error: str, why: str) -> None:
                self.failed.append((error, why))
        return Host()


@pytest.mark.parametrize(("value", "seconds"), [
    ("2", 2.0), ("0", 0.0), ("120", 120.0), ("soon", None), ("\u00b2", None), ("", None), ("1234567", None),
    ("Wed, 21 Oct 2015 07:28:00 GMT", None), (" 3 ", 3.0),
])
def test_retry_after_is_read_in_ascii_seconds_only(value, seconds):
    from diverge_codec.relay.http_reach import retry_after

    assert retry_after(http_client.Headers({"retry-after": value})) == seconds


@pytest.mark.parametrize(("status", "headers", "away"), [
    (502, {}, True), (503, {}, True), (504, {}, True), (500, {}, False), (429, {}, False),
    (429, {"retry-after": "1"}, True), (405, {"retry-after": "1"}, False), (200, {"retry-after": "1"}, False),
])
def test_which_answers_say_the_server_cannot_be_reached(status, headers, away):
    from diverge_codec.relay.http_reach import unreachable_status

    assert unreachable_status(status, http_client.Headers(headers)) is away


def test_an_outage_waits_at_least_retry_after_and_never_past_the_window():
    host = _Outage(window=5.0)
    assert host._unreachable_now("HTTP 429 on the event stream", 2.0) is True
    assert host._backoff_delay(0.5) == 2.0 and host._error_seen == "HTTP 429 on the event stream"
    assert host._unreachable_now("HTTP 502 on the event stream") is True
    assert host._backoff_delay(0.5) == 0.5
    host._down_since -= 4.8  # the window nearly spent: the next try at its end
    assert host._backoff_delay(8.0) <= 0.2 and host.failed == []
    host._down_since -= 1.0
    assert host._unreachable_now("HTTP 502 on the event stream") is False
    assert host.failed == [("HTTP 502 on the event stream", "connection lost")]


def test_a_retry_after_past_the_window_ends_at_once_and_an_answer_ends_the_outage():
    host = _Outage(window=5.0)
    assert host._unreachable_now("HTTP 429 on initialize", 60.0) is False
    assert host.failed == [("HTTP 429 on initialize", "connection lost")]
    other = _Outage(window=5.0)
    other._unreachable_now("connection refused")
    began = other._down_since
    other._answered_status(404)
    assert other._down_since is None and other._outage_began == began and other._backoff_delay(3.0) == 3.0
    other._answered_status(200)
    assert other._outage_began is None
