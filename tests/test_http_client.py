"""The relay's HTTP/1.1 client (``relay.http_client``) against scripted servers on loopback.

Each server is a coroutine given the raw connection: it reads what the client sent and writes exact bytes
(well-formed, cut short, oversized, never answering), so every framing of a body, the pool's reuse and
refusal, each timeout and each error's words are pinned, with the bytes the client put on the wire.
"""

from __future__ import annotations

import asyncio
import base64
import socket
import ssl
import struct
import sys
import types
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

h11 = pytest.importorskip("h11", reason="the relay's HTTP client needs the [http] extra (h11)")
from diverge_codec._version import __version__  # noqa: E402
from diverge_codec.relay import http_client, http_tls  # noqa: E402
from scripted_http import HandlerBackend, Request, Response, ScriptedStream  # noqa: E402
from diverge_codec.relay.cookies import COOKIE_BYTES  # noqa: E402
from diverge_codec.relay.http_client import (  # noqa: E402
    ConnectError, ConnectTimeout, HttpClient, HttpError, HttpProtocolError, ProxyError, WriteTimeout, proxy_for,
)
from diverge_codec.relay.http_proxy import proxy_authorization  # noqa: E402

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's head and (Content-Length) body, as sent."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return head + (await reader.readexactly(length) if length else b"")


class Scripted:
    """A loopback server running ``handler`` on each connection; ``connections`` counts them."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.dropped = 0
        """Connections the client closed while the handler still read or wrote."""
        self.server: asyncio.base_events.Server | None = None
        self.url = ""

    async def __aenter__(self) -> Scripted:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.connections += 1
            try:
                await self.handler(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                self.dropped += 1
            finally:
                writer.close()
        self.server = await asyncio.start_server(serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()


def run(coroutine: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 20))


async def fetch(client: HttpClient, url: str, method: str = "GET", **kwargs: Any) -> tuple[int, dict[str, str], bytes]:
    async with client.stream(method, url, **kwargs) as response:
        body = b"".join([bytes(piece) async for piece in response.aiter_raw()])
        return response.status_code, {name: response.headers[name] for name in response.headers}, body


def answering(*responses: bytes, seen: list[bytes] | None = None) -> Handler:
    """A server answering each request on a connection with the next of ``responses`` (in turn, shared)."""
    queue = list(responses)

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while queue:
            request = await read_request(reader)
            if seen is not None:
                seen.append(request)
            writer.write(queue.pop(0))
            await writer.drain()
    return handler


@pytest.mark.parametrize(("response", "body"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", b"hello"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n", b"hello"),
    (b"HTTP/1.0 200 OK\r\n\r\nhello", b"hello"),  # read until the server closes
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", b"ok"),
])
def test_each_framing_of_a_body_arrives_whole(response, body):
    async def main() -> None:
        async with Scripted(answering(response)) as server, HttpClient() as client:
            status, _, got = await fetch(client, server.url + "/x")
            assert (status, got) == (200, body)
    run(main())


def test_the_request_on_the_wire_merges_the_clients_headers_under_the_requests():
    seen: list[bytes] = []

    async def main() -> None:
        async with Scripted(answering(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", seen=seen)) as server:
            async with HttpClient(headers=[("Accept", "*/*"), ("X-Key", "k")]) as client:
                status, headers, body = await fetch(client, server.url + "/mcp?a=1#frag", "POST",
                                                    headers={"accept": "application/json"}, content=b'{"id":1}')
        assert (status, body) == (202, b"")
        port = server.url.rsplit(":", 1)[1]
        assert seen == [f"POST /mcp?a=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Key: k\r\naccept: application/json\r\n"
                        f"User-Agent: diverge-codec/{__version__}\r\nContent-Length: 8\r\n\r\n".encode() + b'{"id":1}']
    run(main())


def test_a_body_read_to_its_end_keeps_the_connection_one_left_unread_closes_it():
    async def main() -> None:
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        big = b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n" + bytes(1_000_000)
        async with Scripted(answering(ok, ok, big, ok, ok)) as server, HttpClient() as client:
            await fetch(client, server.url)
            await fetch(client, server.url)
            assert server.connections == 1
            async with client.stream("GET", server.url) as response:
                async for _ in response.aiter_raw():
                    break  # a few KiB read, the rest left
            assert (await fetch(client, server.url))[2] == b"ok"
            assert server.connections == 2
            await asyncio.sleep(0.05)
            assert server.dropped == 1 and len(client._open) == 1  # the one left unread, closed at once and forgotten
            idle = list(client._open)
            await client.aclose()
            assert idle[0].stream.transport.is_closing() and not client._open
            await asyncio.sleep(0.05)
            assert server.dropped == 2  # the idle one, closed with the client
    run(main())


def test_a_connection_the_server_closed_while_idle_is_not_reused():
    async def main() -> None:
        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()  # then closed at once, as a keep-alive timeout does
        async with Scripted(handler) as server, HttpClient() as client:
            await fetch(client, server.url)
            await asyncio.sleep(0.1)
            assert (await fetch(client, server.url))[2] == b"ok"
            assert server.connections == 2 and len(client._open) <= 1  # the closed one forgotten
    run(main())


@pytest.mark.parametrize(("response", "words"), [
    (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n", "the server's response head is too large"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "the server closed the connection in the middle of a response"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "the server closed the connection in the middle of a response"),
    (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "the server's response is not HTTP/1.1"),
    (b"", "the server closed the connection without answering"),
])
def test_a_server_that_breaks_http_is_a_protocol_error_in_words(response, words):
    async def main() -> None:
        async with Scripted(answering(response)) as server, HttpClient() as client:
            with pytest.raises(HttpProtocolError) as caught:
                await fetch(client, server.url)
            assert str(caught.value) == words
            assert caught.value.__cause__ is None and caught.value.__context__ is None  # h11's text can quote the server
    run(main())


def test_nothing_listening_is_a_connect_error_naming_nothing():
    async def main() -> None:
        async with Scripted(answering()) as server:
            url = server.url
        async with HttpClient(headers=[("Authorization", "Bearer SECRET")]) as client:
            with pytest.raises(ConnectError) as caught:
                await fetch(client, url + "/mcp")
        assert str(caught.value) == "the server could not be reached"
        assert isinstance(caught.value.__cause__, ConnectionRefusedError)
        assert "SECRET" not in repr(caught.value.__cause__)
    run(main())


@pytest.mark.parametrize(("scheme", "method", "content", "error", "words"), [
    ("https", "GET", None, ConnectTimeout, "not connected within the connect timeout"),  # a TLS handshake unanswered
    ("http", "POST", bytes(64 << 20), WriteTimeout, "the server did not take the request within the write timeout"),
])
def test_a_server_that_neither_answers_nor_reads_is_a_timeout(scheme, method, content, error, words):
    async def main() -> None:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await asyncio.sleep(5)
        async with Scripted(silent) as server, HttpClient(connect_timeout=0.3, write_timeout=0.3) as client:
            with pytest.raises(error) as caught:
                await fetch(client, server.url.replace("http", scheme, 1), method, content=content)
        assert str(caught.value) == words
    run(main())


def test_connections_are_capped_the_rest_wait_their_turn():
    async def main() -> None:
        async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            await asyncio.sleep(0.2)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
        async with Scripted(slow) as server, HttpClient(max_connections=2) as client:
            results = await asyncio.gather(*(fetch(client, server.url) for _ in range(4)))
            assert [body for _, _, body in results] == [b"ok"] * 4 and server.connections == 2
    run(main())


def test_cookies_the_server_sets_go_back_to_it_until_it_removes_them():
    seen: list[bytes] = []

    async def main() -> None:
        async with Scripted(answering(
                b"HTTP/1.1 200 OK\r\nSet-Cookie: AWSALB=abc; Path=/; Max-Age=600\r\nSet-Cookie:  lang = en ;\r\n"
                b"Set-Cookie: tls=1; Secure\r\nSet-Cookie: junk\r\nContent-Length: 0\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nSet-Cookie: lang=; Max-Age=0\r\nContent-Length: 0\r\n\r\n",
                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", seen=seen)) as server:
            async with HttpClient(headers=[("User-Agent", "t")]) as client:
                for _ in range(3):
                    await fetch(client, server.url)
        cookies = [next((line for line in request.split(b"\r\n") if line.startswith(b"Cookie")), None) for request in seen]
        assert cookies == [None, b"Cookie: AWSALB=abc; lang=en", b"Cookie: AWSALB=abc"]  # "tls" is Secure: https only
    run(main())


def test_a_connection_reset_mid_body_is_a_read_error():
    async def main() -> None:
        async def reset(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()  # with SO_LINGER 0: a reset, not an orderly close
        async with Scripted(reset) as server, HttpClient() as client:
            with pytest.raises(http_client.ReadError) as caught:
                await fetch(client, server.url)
        assert str(caught.value) == "the connection failed while the answer was read"
        assert isinstance(caught.value.__cause__, ConnectionResetError)
    run(main())


@pytest.mark.parametrize(("environ", "url", "proxy"), [
    ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "localhost,.internal"}, "https://example.com/mcp", "http://proxy:3128"),
    ({"http_proxy": "proxy:8080"}, "http://example.com/mcp", "http://proxy:8080"),
    ({"http_proxy": "proxy:8080", "NO_PROXY": "localhost,.internal"}, "http://localhost:8000/mcp", None),
    ({"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "localhost,.internal"}, "https://mcp.internal/mcp", None),
    ({"ALL_PROXY": "http://p:1", "no_proxy": "*"}, "http://example.com/", None),
    ({}, "http://example.com/", None),
    ({"ALL_PROXY": "http://p:1", "NO_PROXY": "x"}, "http:///path", None),
])
def test_proxies_come_from_the_environment_less_no_proxy(monkeypatch, environ, url, proxy):
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert proxy_for(url) == proxy
    assert proxy_authorization("http://user@p:1") == [("Proxy-Authorization", "Basic dXNlcjo=")]  # "user:"


def test_an_http_url_goes_through_the_proxy_in_absolute_form_with_its_credentials(monkeypatch):
    seen: list[bytes] = []

    async def main() -> None:
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        async with Scripted(answering(ok, seen=seen)) as proxy:
            monkeypatch.setenv("http_proxy", proxy.url.replace("http://", "http://us%40er:p%3Ass@"))
            async with HttpClient() as client:
                assert (await fetch(client, "http://mcp.example:8000/mcp"))[2] == b"ok"
        credentials = base64.b64encode(b"us@er:p:ss").decode()
        assert seen == [f"GET http://mcp.example:8000/mcp HTTP/1.1\r\nHost: mcp.example:8000\r\n"
                        f"User-Agent: diverge-codec/{__version__}\r\nProxy-Authorization: Basic {credentials}\r\n\r\n".encode()]
    run(main())


def test_a_tunnel_the_proxy_refuses_is_a_proxy_error_and_an_https_proxy_is_refused(monkeypatch):
    seen: list[bytes] = []

    async def main() -> None:
        refusal = b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"
        async with Scripted(answering(refusal, refusal, seen=seen)) as proxy:  # it would take a second request
            monkeypatch.setenv("https_proxy", proxy.url)
            async with HttpClient() as client:
                with pytest.raises(ProxyError) as caught:
                    await fetch(client, "https://mcp.example/mcp")
        assert str(caught.value) == "the proxy refused the tunnel (HTTP 407): its credentials (in *_PROXY) are missing or wrong"
        await asyncio.sleep(0.05)
        assert proxy.dropped == 1  # the refused connection closed, not left open
        assert seen == [b"CONNECT mcp.example:443 HTTP/1.1\r\nHost: mcp.example:443\r\n\r\n"]
        monkeypatch.setenv("https_proxy", "socks5://127.0.0.1:1080")
        async with HttpClient() as client:
            with pytest.raises(ProxyError) as caught:
                await fetch(client, "https://mcp.example/mcp")
        assert str(caught.value) == "the proxy must be an http:// URL (the environment's *_PROXY)"
    run(main())


def _tls_pair(tmp_path: Any) -> tuple[ssl.SSLContext, ssl.SSLContext, str]:
    trustme = pytest.importorskip("trustme", reason="the TLS tests make their CA with trustme (the test extra)")
    authority = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("mcp.example", "127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    authority.configure_trust(client)
    path = str(tmp_path / "ca.pem")
    authority.cert_pem.write_to_path(path)
    return server, client, path


def tunneling(port: int, tunnels: list[bytes], ended: asyncio.Event | None = None) -> Handler:
    """A proxy: ``CONNECT`` kept in ``tunnels``, then bytes piped both ways to ``port`` until either side closes."""
    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        tunnels.append(await read_request(reader))
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            finally:
                sink.close()
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer), return_exceptions=True)
        if ended is not None:
            ended.set()
    return proxy


def test_https_through_a_proxy_tunnel_whose_credentials_stay_with_the_proxy(tmp_path, monkeypatch):
    server_tls, client_tls, _ = _tls_pair(tmp_path)
    tunnels: list[bytes] = []
    arrived: list[bytes] = []

    async def main() -> None:
        async def origin(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            arrived.append(await read_request(reader))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecret")
            await writer.drain()
        target = await asyncio.start_server(origin, "127.0.0.1", 0, ssl=server_tls)
        port = target.sockets[0].getsockname()[1]

        async with Scripted(tunneling(port, tunnels)) as forward:
            proxy_url = forward.url.replace("http://", "http://u:pw@")
            monkeypatch.setenv("https_proxy", proxy_url)
            async with HttpClient(verify=client_tls) as client:
                assert (await fetch(client, f"https://mcp.example:{port}/mcp"))[2] == b"secret"
        target.close()
        assert tunnels == [f"CONNECT mcp.example:{port} HTTP/1.1\r\nHost: mcp.example:{port}\r\n"
                           f"Proxy-Authorization: Basic {base64.b64encode(b'u:pw').decode()}\r\n\r\n".encode()]
        assert arrived == [f"GET /mcp HTTP/1.1\r\nHost: mcp.example:{port}\r\n"
                           f"User-Agent: diverge-codec/{__version__}\r\n\r\n".encode()]  # no proxy credentials
    run(main())


def test_tls_that_fails_through_the_tunnel_closes_it_and_a_tunnel_cut_short_is_a_proxy_error(tmp_path, monkeypatch):
    server_tls, _, _ = _tls_pair(tmp_path)
    stranger = ssl.create_default_context()  # trusts the system's CAs, not the test's: the handshake fails

    async def main() -> None:
        target = await asyncio.start_server(answering(), "127.0.0.1", 0, ssl=server_tls)
        port = target.sockets[0].getsockname()[1]
        ended = asyncio.Event()
        async with Scripted(tunneling(port, [], ended)) as forward:
            monkeypatch.setenv("https_proxy", forward.url)
            async with HttpClient(verify=stranger) as client:
                with pytest.raises(http_client.TlsError) as caught:
                    await fetch(client, f"https://mcp.example:{port}/mcp")
            assert str(caught.value) == ("TLS: the server's certificate is not signed by a CA this machine trusts: "
                                         "give its CA with --cacert FILE (or SSL_CERT_FILE)")
            await asyncio.wait_for(ended.wait(), 2)  # the tunnel was closed, not left open
        target.close()

        async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
        async with Scripted(hang_up) as forward:
            monkeypatch.setenv("https_proxy", forward.url)
            async with HttpClient() as client:
                with pytest.raises(ProxyError) as refused:
                    await fetch(client, "https://mcp.example/mcp")
        assert str(refused.value) == "the proxy's tunnel failed (the proxy hung up, or did not answer in HTTP/1.1)"
    run(main())


def test_a_server_under_the_client_sees_the_request_the_client_built_with_its_headers_merged():
    """A scripted server below the client (``scripted_http.HandlerBackend``: h11 parsing what the client wrote)
    sees the request as built: the client's headers, then the request's, a User-Agent, Host, Content-Length;
    a chunked answer of two pieces is read back whole, on the one connection kept for the next request."""
    seen: list[Request] = []

    async def handle(request: Request) -> Response:
        seen.append(request)
        return Response(201, {"Content-Type": "text/plain"}, [b"a", b"b"])

    async def main() -> None:
        backend = HandlerBackend(handle)
        async with HttpClient(headers=[("X-A", "1")], backend=backend) as client:
            status, headers, body = await fetch(client, "http://mcp.test/p?q", "POST", headers={"x-b": "2"}, content=b"{}")
            assert (status, headers, body) == (201, {"content-type": "text/plain", "transfer-encoding": "chunked"}, b"ab")
            request = seen[0]
            assert (request.method, request.url, request.path, request.content) == ("POST", "http://mcp.test/p?q", "/p", b"{}")
            assert await fetch(client, "http://mcp.test/") == (201, headers, b"ab")
            async with client.stream("GET", "http://mcp.test/") as response:
                assert repr(response) == "<Response 201>"
        assert seen[1].content == b"" and "content-length" not in seen[1].headers.keys()
        assert len(backend.opened) == 1  # one connection, kept between the requests
        assert dict(request.headers) == {"host": "mcp.test", "x-a": "1", "x-b": "2",
                                         "user-agent": f"diverge-codec/{__version__}", "content-length": "2"}
        assert repr(request.headers) == "Headers(['host', 'x-a', 'x-b', 'user-agent', 'content-length'])"
        with pytest.raises(KeyError):
            request.headers["x-c"]
    run(main())


@pytest.mark.parametrize(("url", "words"), [
    ("ftp://example.com/", "not an http:// or https:// URL with a host"),
    ("http:///path", "not an http:// or https:// URL with a host"),
    ("http://example.com:99999/", "the URL's port is not valid"),
])
def test_a_url_the_client_cannot_use_is_refused_naming_nothing(url, words):
    async def main() -> None:
        async with HttpClient() as client:
            with pytest.raises(HttpError) as caught:
                await fetch(client, url)
        assert str(caught.value) == words
    run(main())


def test_an_empty_post_says_its_length_and_a_cookie_past_4_kib_is_not_kept():
    seen: list[bytes] = []

    async def main() -> None:
        big = b"c=" + b"x" * COOKIE_BYTES
        async with Scripted(answering(b"HTTP/1.1 200 OK\r\nSet-Cookie: " + big + b"\r\nContent-Length: 0\r\n\r\n",
                                      b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", seen=seen)) as server:
            async with HttpClient(headers=[("User-Agent", "t")]) as client:
                await fetch(client, server.url, "POST")
                await fetch(client, server.url)
        port = server.url.rsplit(":", 1)[1]
        assert seen == [f"POST / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: t\r\nContent-Length: 0\r\n\r\n".encode(),
                        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: t\r\n\r\n".encode()]
    run(main())


def test_the_chunks_of_one_read_are_one_piece_and_what_came_before_a_break_comes_first():
    """A server writes an event a chunk: the relay is handed each read's chunks joined (one call a read, not one
    an event); a malformed chunk after them does not lose them."""
    async def main() -> list[bytes]:
        reader = ScriptedStream([])
        connection = http_client._Connection(("http", "h", 80), reader)
        connection.h11.send(h11.Request(method="GET", target="/", headers=[("Host", "h")]))
        connection.h11.send(h11.EndOfMessage())
        reader.feed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n1\r\nb\r\n1\r\nc\r\n")
        assert (await connection.head()).status_code == 200
        pieces: list[bytes] = []
        body = HttpClient()._body(connection)
        pieces.append(bytes(await body.__anext__()))
        reader.feed(b"2\r\nde\r\nzz\r\n")
        pieces.append(bytes(await body.__anext__()))
        with pytest.raises(HttpProtocolError) as caught:
            await body.__anext__()
        assert str(caught.value) == "the server's response is not HTTP/1.1"
        return pieces
    assert run(main()) == [b"abc", b"de"]


@pytest.mark.parametrize(("system_paths", "bundles", "certifi", "expected"), [
    (True, ["/b1"], True, None),            # SSL_CERT_FILE/SSL_CERT_DIR or OpenSSL's own paths: as OpenSSL reads them
    (False, ["/b0", "/b1"], True, "/b1"),   # none there: the first bundle file present
    (False, [], True, "/certifi.pem"),      # no bundle either: certifi's, where installed
    (False, [], False, None),               # nor certifi: OpenSSL's defaults, whatever they hold
])
def test_the_system_cas_are_openssls_paths_then_the_usual_bundles_then_certifi(monkeypatch, system_paths, bundles,
                                                                                 certifi, expected):
    made: list[str | None] = []
    existing = set(bundles[1:]) | ({"/openssl/cert.pem"} if system_paths else set())
    paths = ssl.DefaultVerifyPaths("/openssl/cert.pem", None, "", "", "", "")
    monkeypatch.setattr(ssl, "get_default_verify_paths", lambda: paths)
    monkeypatch.setattr(ssl, "create_default_context", lambda cafile=None: made.append(cafile) or "context")
    def exists(path: str) -> bool:
        if not isinstance(path, str):
            raise TypeError("a path is a str")  # as os.stat says of None
        return path in existing
    monkeypatch.setattr(http_tls.os.path, "exists", exists)
    monkeypatch.setattr(http_tls.os.path, "isfile", exists)
    monkeypatch.setattr(http_tls, "CA_FILES", tuple(bundles))
    monkeypatch.setattr(http_tls.sys, "platform", "linux")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.setitem(sys.modules, "certifi", types.SimpleNamespace(where=lambda: "/certifi.pem") if certifi else None)
    assert http_tls.default_tls() == "context"
    assert made == [expected]


def test_system_cas_that_cannot_be_loaded_are_a_connect_error(monkeypatch):
    def unreadable() -> None:
        raise ssl.SSLError("no CA")
    monkeypatch.setattr(http_tls, "default_tls", unreadable)

    async def main() -> None:
        async with HttpClient() as client:
            with pytest.raises(ConnectError) as caught:
                await fetch(client, "https://mcp.example/")
        assert str(caught.value) == "the system's CA certificates cannot be loaded"
    run(main())


# -- issue #41 on real sockets: what a loopback server shows of the pool, the retry and TLS's words ----------------

def per_connection(*handlers: Handler) -> Handler:
    """A server running ``handlers[i]`` on its connection ``i``."""
    count = [0]

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        count[0] += 1
        await handlers[min(count[0], len(handlers)) - 1](reader, writer)
    return handler


def test_a_stale_response_written_while_idle_is_never_read_as_the_next_answer():
    async def main() -> None:
        async def stale(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none")
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")  # while the client is idle
            await writer.drain()
            await asyncio.sleep(1)
        async with Scripted(per_connection(stale, answering(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo"))) as server:
            async with HttpClient() as client:
                assert (await fetch(client, server.url))[2] == b"one"
                await asyncio.sleep(0.2)
                assert (await fetch(client, server.url))[::2] == (200, b"two")
        assert server.connections == 2
    run(main())


def test_an_unrequested_answer_after_a_response_is_never_read_as_the_next_one():
    async def main() -> None:
        async def surplus(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none" + b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nextra!")
            await writer.drain()
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
            await writer.drain()
        async with Scripted(per_connection(surplus, answering(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo"))) as server:
            async with HttpClient() as client:
                assert (await fetch(client, server.url))[2] == b"one"
                assert (await fetch(client, server.url))[2] == b"two"
        assert server.connections == 2
    run(main())


@pytest.mark.parametrize(("method", "retry_safe", "outcome"), [
    ("GET", False, b"two"), ("POST", True, b"two"), ("POST", False, http_client.RequestNotAnswered)])
def test_a_connection_closed_as_the_request_crosses_it_retries_only_what_may_be_repeated(method, retry_safe, outcome):
    async def main() -> None:
        async def hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none")
            await writer.drain()
            await read_request(reader)  # read, then closed unanswered: a keep-alive timeout's race
        async with Scripted(per_connection(hangs_up, answering(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo"))) as server:
            async with HttpClient() as client:
                await fetch(client, server.url)
                if isinstance(outcome, bytes):
                    assert (await fetch(client, server.url, method, content=b"{}", retry_safe=retry_safe))[2] == outcome
                else:
                    with pytest.raises(outcome):
                        await fetch(client, server.url, method, content=b"{}")
        assert server.connections == (2 if isinstance(outcome, bytes) else 1)
    run(main())


@pytest.mark.parametrize(("issue", "words"), [
    ("unknown CA", "TLS: the server's certificate is not signed by a CA this machine trusts: give its CA with "
                   "--cacert FILE (or SSL_CERT_FILE)"),
    ("mismatch", "TLS: the server's certificate is not for the URL's host; it holds mcp.example"),
    ("expired", "TLS: the server's certificate expired on 2021-03-04 05:06:07 UTC"),
])
def test_real_tls_refusals_are_told_apart_with_the_fix(tmp_path, issue, words):
    trustme = pytest.importorskip("trustme", reason="the TLS tests make their CA with trustme (the test extra)")
    import datetime
    authority = trustme.CA()
    dates = {"not_before": datetime.datetime(2020, 1, 1), "not_after": datetime.datetime(2021, 3, 4, 5, 6, 7)}
    issued = authority.issue_cert("mcp.example", **(dates if issue == "expired" else {}))
    if issue != "mismatch":
        issued = authority.issue_cert("localhost", **(dates if issue == "expired" else {}))
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    issued.configure_cert(server_tls)
    client_tls = ssl.create_default_context()
    if issue != "unknown CA":
        authority.configure_trust(client_tls)

    async def main() -> None:
        target = await asyncio.start_server(answering(), "127.0.0.1", 0, ssl=server_tls)
        port = target.sockets[0].getsockname()[1]
        async with HttpClient(verify=client_tls) as client:
            with pytest.raises(http_client.TlsError) as caught:
                await fetch(client, f"https://localhost:{port}/mcp")
        assert str(caught.value) == words
        target.close()
    run(main())


def test_http_and_https_mixed_up_are_named_as_such_and_alpn_offers_http11(tmp_path):
    server_tls, client_tls, _ = _tls_pair(tmp_path)
    server_tls.set_alpn_protocols(["h2", "http/1.1"])
    chosen: list[str | None] = []

    async def main() -> None:
        async def tls_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            chosen.append(writer.get_extra_info("ssl_object").selected_alpn_protocol())
            await answering(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")(reader, writer)
            writer.close()
        secure = await asyncio.start_server(tls_answer, "127.0.0.1", 0, ssl=server_tls)
        port = secure.sockets[0].getsockname()[1]
        async with HttpClient(verify=http_client_tls(client_tls)) as client:
            assert (await fetch(client, f"https://127.0.0.1:{port}/"))[2] == b"ok"
            with pytest.raises(HttpProtocolError) as plain_to_tls:
                await fetch(client, f"http://127.0.0.1:{port}/")
        assert str(plain_to_tls.value) == "the server answered with TLS: use an https:// URL"
        secure.close()
        async def refuses_garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1)  # a plain HTTP server reading a ClientHello: a 400, then closed
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
        async with Scripted(refuses_garbage) as plain:
            async with HttpClient(verify=client_tls) as client:
                with pytest.raises(http_client.TlsError) as tls_to_plain:
                    await fetch(client, plain.url.replace("http", "https", 1))
        assert str(tls_to_plain.value) == "TLS: the server answered in plain HTTP, not TLS: use an http:// URL"
    run(main())
    assert chosen == ["http/1.1", "http/1.1"]  # the request's connection, and the probe that found TLS


def http_client_tls(context: ssl.SSLContext) -> ssl.SSLContext:
    return http_tls.offer_http11(context)


def test_every_real_connection_has_so_keepalive_set():
    async def main() -> None:
        ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        async with Scripted(answering(ok, ok)) as server, HttpClient() as client:  # the second keeps it open
            await fetch(client, server.url)
            (connection,) = client._open
            sock = connection.stream.transport.get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            if hasattr(socket, "TCP_KEEPIDLE"):
                assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
    run(main())
