"""Which headers each request of the HTTP relay carries, per destination (issue #45): exactly, names and values
(the token's too: it is a test's), so no credential reaches a destination it was not meant for.

- the server (``--url``): the ``server/discover`` probe, ``initialize``, the notification after it, calls, answers to the server's requests,
  the GET stream (and its resumption), the DELETE, and a redirect's target within the origin: each the
  operator's ``--header`` values and the token, with the MCP headers of its kind;
- the RFC 9728 metadata (possibly another origin): ``Accept`` and ``User-Agent``, nothing of the operator's;
- a redirect to another origin: no request at all;
- under the client, on the wire (``scripted_http``): a proxy's ``CONNECT`` carries ``Proxy-Authorization`` and
  ``Host`` only (never the token, a ``--header`` or a cookie); the request inside the tunnel carries those and
  never ``Proxy-Authorization``; a request forwarded in absolute form to an http proxy carries both (the proxy
  is where it goes); a cookie goes back only to the host that set it.

The driver's requests are read as they came off the wire, under the client (``scripted_http.serving``): the
client's own headers merged in; ``Host`` and ``Content-Length`` checked apart (``sent``), the rest exactly.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any
from urllib.parse import urlsplit

import pytest

from diverge_codec import __version__
from diverge_codec.relay.channel import FileWriter, RelayOptions

pytest.importorskip("h11", reason="the HTTP driver needs the [http] extra (h11)")
from diverge_codec.relay.http_client import HttpClient  # noqa: E402
from diverge_codec.relay.remote_auth import TokenSource  # noqa: E402
from diverge_codec.relay.streamable_http import HttpRelay  # noqa: E402
from scripted_http import Response, ScriptedBackend, ScriptedStream, ok, serving  # noqa: E402
from test_http_driver import INIT, SSE, URL, _answer, _events, _Kept, _listening, _log  # noqa: E402

UA = f"diverge-codec/{__version__}"
OPERATOR = [("X-Tenant", "acme"), ("X-Api-Key", "k-123")]
TOKEN = "Bearer tok-1"
METADATA_URL = "http://auth.other.test/.well-known/oauth-protected-resource"
SERVER_SIDE = {"accept-encoding": "gzip, deflate", "x-tenant": "acme", "x-api-key": "k-123", "authorization": TOKEN,
               "user-agent": UA}
"""What every request to the server carries: the operator's headers, the token, what the relay can inflate."""
IN_SESSION = {**SERVER_SIDE, "mcp-session-id": "s-1", "mcp-protocol-version": "2025-11-25"}
OLD_SERVER = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID"}}'
POSTED = {**IN_SESSION, "accept": "application/json, text/event-stream", "content-type": "application/json"}


class Tokens(TokenSource):
    """``--token-command`` printing ``tok-1`` (the command's run is ``test_relay_token_command``'s)."""

    async def _run(self) -> str:
        self.runs += 1
        return TOKEN.removeprefix("Bearer ")


def sent(request: Any) -> dict[str, str]:
    """A request's headers by name, each name once (a header sent twice fails here), less the client's framing:
    ``Host`` (the URL's authority) and ``Content-Length`` (the body's length, on a request with a body), checked
    here."""
    headers = {name.decode(): value.decode("latin-1") for name, value in request.headers.raw}
    assert len(headers) == len(request.headers.raw)
    assert headers.pop("host") == urlsplit(request.url).netloc
    if request.content or request.method == "POST":
        assert headers.pop("content-length") == str(len(request.content))
    assert "content-length" not in headers
    return headers


class Recorder:
    """A server that pings during the call, serves a GET stream that breaks off once (resumed), and keeps
    every request as (kind, url, headers)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.gets = 0

    def handle(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else None
        kind = request.method if body is None else body.get("method") or "answer"
        self.seen.append((kind, request.url, sent(request)))
        if request.method == "GET" and request.url.startswith(METADATA_URL):
            return Response(200, headers={"content-type": "application/json"}, content=b'{"resource": "x"}')
        if request.method == "GET":
            self.gets += 1
            if self.gets == 1:
                return Response(200, headers=SSE, content=_events(_log("own"), ids=["g1"]))
            return Response(405)
        if request.method == "DELETE":
            return Response(200)
        if kind == "server/discover":  # a 2025 server (the TypeScript SDK's words): the relay falls back
            return Response(400, headers={"content-type": "application/json"}, content=OLD_SERVER)
        if kind == "initialize":
            return Response(200, headers={**SSE, "mcp-session-id": "s-1"}, content=_events(_answer(body["id"], INIT)))
        if kind == "tools/call":
            ping = json.dumps({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}).encode()
            return Response(200, headers=SSE, content=_events(ping, _answer(body["id"])))
        return Response(202)


def run_relay(handle: Any, **options: Any) -> dict[str, Any]:
    settings = {"grace": 0.5, "request_timeout": 5.0, "duration": 1.5, **options}

    async def main() -> dict[str, Any]:
        driver = HttpRelay(URL, FileWriter(_Kept()), RelayOptions(**settings), OPERATOR)
        driver.tokens = Tokens("unused")
        with serving(handle):  # the scripted server, under the client
            return (await asyncio.wait_for(driver.run(), 30)).as_dict()

    return asyncio.run(main())


def _of(server: Recorder, kind: str) -> list[dict[str, str]]:
    return [headers for seen_kind, _, headers in server.seen if seen_kind == kind]


def test_each_request_to_the_server_carries_exactly_the_operator_s_headers_the_token_and_those_of_its_kind():
    server = Recorder()
    run_relay(server.handle, calls=[("go", {})])
    assert _of(server, "server/discover") == [{**SERVER_SIDE, "accept": "application/json, text/event-stream",
                                               "content-type": "application/json", "mcp-method": "server/discover",
                                               "mcp-protocol-version": "2026-07-28"}]
    assert _of(server, "initialize") == [{**SERVER_SIDE, "accept": "application/json, text/event-stream",
                                          "content-type": "application/json"}]
    assert _of(server, "notifications/initialized") == [POSTED]
    assert _of(server, "tools/call") == [POSTED]
    assert _of(server, "answer") == [POSTED]  # the answer to the server's ping
    assert _of(server, "GET") == [{**IN_SESSION, "accept": "text/event-stream"},
                                  {**IN_SESSION, "accept": "text/event-stream", "last-event-id": "g1"}]
    assert _of(server, "DELETE") == [{**IN_SESSION, "accept": "application/json, text/event-stream"}]
    assert {url for _, url, _ in server.seen} == {URL}


class ModernRecorder:
    """A 2026-07-28 server with a tool whose schema marks ``x-mcp-header`` parameters; every request kept."""

    TOOL = {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}, "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        "where": {"type": "object", "properties": {"tier": {"type": "integer", "x-mcp-header": "tier"}}},
        "query": {"type": "string"}}}}

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []

    def handle(self, request: Any) -> Any:
        body = json.loads(request.content) if request.content else {}
        method = body.get("method", request.method)
        self.seen.append((method, request.url, sent(request)))
        if method == "server/discover":
            return _json_answer(body["id"], {"supportedVersions": ["2026-07-28"], "capabilities": {},
                                             "serverInfo": {"name": "m", "version": "0"}})
        if method == "subscriptions/listen":
            return Response(200, headers=SSE, content=_listening(
                b'{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{}}'))
        if method == "tools/list":
            return _json_answer(body["id"], {"tools": [self.TOOL]})
        return _json_answer(body["id"], {"content": []})


def _json_answer(request_id: object, result: dict[str, Any]) -> Any:
    return Response(200, headers={"content-type": "application/json"}, content=_answer(request_id, result))


def test_a_modern_call_carries_exactly_the_operator_s_headers_the_token_the_routing_and_its_param_headers():
    server = ModernRecorder()
    run_relay(server.handle, protocol="auto", until_answered=True, calls=[
        ("execute_sql", {"region": " eu ", "dry": False, "where": {"tier": 3}, "query": "SELECT 1"})])
    modern = {**SERVER_SIDE, "accept": "application/json, text/event-stream", "content-type": "application/json",
              "mcp-protocol-version": "2026-07-28"}
    assert [kind for kind, _, _ in server.seen] == ["server/discover", "subscriptions/listen", "tools/list", "tools/call"]
    assert _of(server, "tools/list") == [{**modern, "mcp-method": "tools/list"}]
    assert _of(server, "tools/call") == [{**modern, "mcp-method": "tools/call", "mcp-name": "execute_sql",
                                          "mcp-param-region": "=?base64?IGV1IA==?=", "mcp-param-dry-run": "false",
                                          "mcp-param-tier": "3"}]


@pytest.mark.parametrize(("status", "ended_by"), [(200, "session deleted"), (405, "closed")])
def test_the_delete_says_the_session_deleted_only_where_the_server_did(status, ended_by):
    server = Recorder()

    def handle(request: Any) -> Any:
        answer = server.handle(request)
        return Response(status) if request.method == "DELETE" else answer

    report = run_relay(handle, duration=0.3)
    assert report["server"]["ended_by"] == ended_by and len(_of(server, "DELETE")) == 1


def test_the_metadata_fetch_carries_nothing_of_the_operator_s_not_the_token_not_a_header():
    server = Recorder()

    def handle(request: Any) -> Any:
        if request.url == URL:  # the token refused: the challenge names metadata on another origin
            server.seen.append(("server", request.url, sent(request)))
            challenge = f'Bearer error="invalid_token", resource_metadata="{METADATA_URL}"'
            return Response(401, headers={"www-authenticate": challenge})
        return server.handle(request)

    report = run_relay(handle)
    assert [(kind, url) for kind, url, _ in server.seen] == [("server", URL), ("GET", METADATA_URL)]
    assert server.seen[1][2] == {"accept": "application/json", "user-agent": UA}
    assert server.seen[0][2]["authorization"] == TOKEN and report["server"]["error"].startswith("HTTP 401 on server/discover")


def test_a_redirect_within_the_origin_sends_the_same_headers_to_its_target():
    server = Recorder()
    target = "http://mcp.test/moved/mcp"

    def handle(request: Any) -> Any:
        if request.url == URL:
            server.seen.append(("to " + request.method, request.url, sent(request)))
            return Response(307, headers={"location": "/moved/mcp"})
        return server.handle(request)

    run_relay(handle, calls=[("go", {})], duration=0.5, protocol="2025-11-25")
    first_sent, moved = server.seen[0][2], [headers for kind, url, headers in server.seen if kind == "initialize"]
    assert moved == [first_sent] and server.seen[1][1] == target
    assert all(url in (URL, target) for _, url, _ in server.seen)


@pytest.mark.parametrize("location", ["http://elsewhere.test/mcp", "https://mcp.test/mcp", "http://mcp.test:8080/mcp"])
def test_a_redirect_to_another_origin_is_never_followed_so_nothing_goes_there(location):
    server = Recorder()

    def handle(request: Any) -> Any:
        server.seen.append((request.method, request.url, {}))
        return Response(308, headers={"location": location})

    report = run_relay(handle)
    assert [url for _, url, _ in server.seen] == [URL]
    assert report["server"]["error"] == "HTTP 308 on server/discover: redirect to another origin"


# --- on the wire, under the client: proxies and cookies -------------------------------------------------------

CLIENT_HEADERS = [("Authorization", TOKEN), ("X-Api-Key", "k-123")]


def _client(backend: ScriptedBackend, **options: Any) -> HttpClient:
    return HttpClient(headers=CLIENT_HEADERS, backend=backend, **options)


async def _get(client: HttpClient, url: str) -> bytes:
    async with client.stream("GET", url) as response:
        return b"".join([piece async for piece in response.aiter_raw()])


def _no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_a_connect_carries_the_proxy_s_credentials_alone_and_the_tunnelled_request_never_them(monkeypatch):
    _no_proxy_env(monkeypatch)
    monkeypatch.setenv("https_proxy", "http://u:pw@proxy.test:3128")
    tunnel = ScriptedStream([b"HTTP/1.1 200 Connection established\r\n\r\n", ok(b"in", "Set-Cookie: lb=7")])

    async def main() -> None:
        async with _client(ScriptedBackend(tunnel), verify=False) as client:
            assert await _get(client, "https://mcp.test/mcp") == b"in"
    asyncio.run(main())
    connect, _, inside = bytes(tunnel.sent).partition(b"\r\n\r\n")
    assert connect + b"\r\n\r\n" == (b"CONNECT mcp.test:443 HTTP/1.1\r\nHost: mcp.test:443\r\n"
                                     b"Proxy-Authorization: Basic " + base64.b64encode(b"u:pw") + b"\r\n\r\n")
    assert inside == (b"GET /mcp HTTP/1.1\r\nHost: mcp.test\r\nAuthorization: Bearer tok-1\r\nX-Api-Key: k-123\r\n"
                      b"User-Agent: " + UA.encode() + b"\r\n\r\n")


def test_a_request_forwarded_to_an_http_proxy_carries_both_for_the_proxy_is_where_it_goes(monkeypatch):
    _no_proxy_env(monkeypatch)
    monkeypatch.setenv("http_proxy", "http://u:pw@proxy.test:3128")
    proxy = ScriptedStream([ok()])

    async def main() -> None:
        async with _client(ScriptedBackend(proxy)) as client:
            await _get(client, "http://mcp.test/mcp")
    asyncio.run(main())
    assert bytes(proxy.sent) == (b"GET http://mcp.test/mcp HTTP/1.1\r\nHost: mcp.test\r\n"
                                 b"Authorization: Bearer tok-1\r\nX-Api-Key: k-123\r\nUser-Agent: " + UA.encode() +
                                 b"\r\nProxy-Authorization: Basic " + base64.b64encode(b"u:pw") + b"\r\n\r\n")


def test_a_cookie_goes_back_to_the_host_that_set_it_and_nowhere_else(monkeypatch):
    _no_proxy_env(monkeypatch)
    setter = ScriptedStream([ok(b"a", "Set-Cookie: lb=node-7; Path=/"), ok(b"b")])
    other = ScriptedStream([ok(b"c")])

    async def main() -> None:
        async with _client(ScriptedBackend(setter, other)) as client:
            await _get(client, "http://mcp.test/mcp")
            await _get(client, "http://mcp.test/mcp")
            await _get(client, "http://auth.other.test/meta")
    asyncio.run(main())
    requests = bytes(setter.sent).split(b"\r\n\r\n")
    assert b"Cookie" not in requests[0] and b"\r\nCookie: lb=node-7" in requests[1]
    assert b"Cookie" not in bytes(other.sent) and b"node-7" not in bytes(other.sent)
