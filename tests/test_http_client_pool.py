"""The relay's HTTP client over scripted connections (``tests/scripted_http.py``): no socket, no server.

Its real request building, pool, retries and reading run above a scripted backend, so each rule of issue #41
is pinned with the exact bytes the client wrote: a connection reused only while idle, unexpired and with
nothing to read; surplus bytes and ambiguous framing closing a connection; one retry on a fresh connection
where RFC 9110 §9.2.2 allows it and ``RequestNotAnswered`` where it does not; 1xx heads bounded; a connection
through a forwarding proxy never reused; errors that name the hop (the proxy, TLS) with the fix.
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
from typing import Any

import pytest

h11 = pytest.importorskip("h11", reason="the relay's HTTP client needs the [http] extra (h11)")
from diverge_codec._version import __version__  # noqa: E402
from diverge_codec.relay import http_client, http_stream, http_tls  # noqa: E402
from diverge_codec.relay.http_client import (  # noqa: E402
    ConnectTimeout, HttpClient, HttpProtocolError, ProxyError, ReadError, RequestNotAnswered, TlsError,
)
from diverge_codec.relay.http_proxy import proxy_for  # noqa: E402
from scripted_http import END, RESET, UNWRITABLE, ScriptedBackend, ScriptedStream, ok  # noqa: E402

UA = f"User-Agent: diverge-codec/{__version__}\r\n"
GET = f"GET /mcp HTTP/1.1\r\nHost: h\r\n{UA}\r\n".encode()


def post(body: bytes = b"{}") -> bytes:
    return f"POST /mcp HTTP/1.1\r\nHost: h\r\n{UA}Content-Length: {len(body)}\r\n\r\n".encode() + body


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 10))


async def fetch(client: HttpClient, method: str = "GET", url: str = "http://h/mcp", **kwargs: Any) -> tuple[int, bytes]:
    async with client.stream(method, url, **kwargs) as response:
        return response.status_code, b"".join([piece async for piece in response.aiter_raw()])


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "NO_PROXY", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def client_on(*streams: ScriptedStream | BaseException, **kwargs: Any) -> tuple[HttpClient, ScriptedBackend, Clock]:
    backend = ScriptedBackend(*streams)
    client = HttpClient(backend=backend, **kwargs)
    clock = Clock()
    client.clock = clock
    return client, backend, clock


# -- the pool: reused only while idle, unexpired, with nothing to read ---------------------------------------------

def test_a_kept_connection_carries_the_next_request_with_the_exact_bytes():
    first = ScriptedStream([ok(b"one"), ok(b"two")])
    client, backend, _ = client_on(first)

    async def main() -> None:
        assert await fetch(client) == (200, b"one")
        assert await fetch(client, "POST", content=b"{}") == (200, b"two")
    run(main())
    assert bytes(first.sent) == GET + post() and len(backend.opened) == 1 and not first.aborted


def test_an_idle_connection_expires_after_idle_seconds_or_sooner_when_the_server_says_so():
    streams = [ScriptedStream([ok(), ok()]), ScriptedStream([ok(b"a", "Keep-Alive: timeout=2")] * 2),
               ScriptedStream([ok()])]
    client, backend, clock = client_on(*streams)

    async def main() -> None:
        await fetch(client)
        clock.now += http_client.IDLE_SECONDS - 0.01
        await fetch(client)  # still fresh: the same connection
        assert len(backend.opened) == 1
        clock.now += http_client.IDLE_SECONDS
        await fetch(client)  # expired: a new one, the old closed
        assert len(backend.opened) == 2 and streams[0].aborted
        clock.now += 0.99
        await fetch(client)  # Keep-Alive: timeout=2 keeps it 1 s at most
        assert len(backend.opened) == 2
        clock.now += 1.0
        await fetch(client)
        assert len(backend.opened) == 3 and streams[1].aborted
    run(main())
    assert http_client.IDLE_SECONDS < 5  # below the usual servers' 5 s keep-alive


@pytest.mark.parametrize("written_while_idle", [
    b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", END, RESET])
def test_a_connection_with_anything_to_read_while_idle_is_never_reused(written_while_idle):
    first, second = ScriptedStream([ok(b"one")]), ScriptedStream([ok(b"two")])
    client, backend, _ = client_on(first, second)

    async def main() -> None:
        await fetch(client)
        first.feed(written_while_idle)  # the server wrote (a stale 408), closed or reset while the client was idle
        assert await fetch(client) == (200, b"two")  # never the stale 408
    run(main())
    assert len(backend.opened) == 2 and first.aborted and bytes(first.sent) == GET and bytes(second.sent) == GET


@pytest.mark.parametrize("answer", [
    ok(b"one") + ok(b"unrequested"),  # surplus bytes after the answer: RFC 9112 §6.3
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\none\r\n0\r\n\r\n",  # §6.1
])
def test_a_response_followed_by_surplus_bytes_or_framed_both_ways_closes_its_connection(answer):
    first, second = ScriptedStream([answer]), ScriptedStream([ok(b"two")])
    client, backend, _ = client_on(first, second)

    async def main() -> None:
        assert await fetch(client) == (200, b"one")
        assert await fetch(client) == (200, b"two")  # never the unrequested answer
    run(main())
    assert len(backend.opened) == 2 and first.aborted


# -- one retry, on a fresh connection, where RFC 9110 §9.2.2 allows it -------------------------------------------

@pytest.mark.parametrize("failure", [END, RESET, UNWRITABLE])
@pytest.mark.parametrize(("method", "retry_safe"), [("GET", False), ("DELETE", False), ("POST", True)])
def test_a_retry_safe_request_failing_on_a_reused_connection_is_sent_once_more_on_a_fresh_one(failure, method, retry_safe):
    first, second = ScriptedStream([ok(b"one"), failure]), ScriptedStream([ok(b"two")])
    client, backend, _ = client_on(first, second)

    async def main() -> None:
        await fetch(client)
        content = b"{}" if method == "POST" else None
        assert await fetch(client, method, content=content, retry_safe=retry_safe) == (200, b"two")
    run(main())
    request = post() if method == "POST" else GET.replace(b"GET", method.encode())
    assert bytes(second.sent) == request and client.retried == 1 and first.aborted
    assert bytes(first.sent) == GET + (b"" if failure is UNWRITABLE else request)


@pytest.mark.parametrize("failure", [END, RESET])
def test_a_post_not_marked_retry_safe_fails_alone_as_request_not_answered(failure):
    first, spare = ScriptedStream([ok(b"one"), failure]), ScriptedStream([ok(b"two")])
    client, backend, _ = client_on(first, spare)

    async def main() -> None:
        await fetch(client)
        with pytest.raises(RequestNotAnswered) as caught:
            await fetch(client, "POST", content=b"{}")
        assert str(caught.value) == ("the server closed a kept-alive connection before answering; the request may "
                                     "have reached it")
        assert isinstance(caught.value, http_client.HttpError) and not isinstance(caught.value, http_client.ConnectError)
        assert await fetch(client) == (200, b"two")  # the client goes on: a fresh connection
    run(main())
    assert client.retried == 0 and bytes(first.sent) == GET + post()


def test_a_post_that_never_left_is_sent_again_whatever_its_method():
    first, second = ScriptedStream([ok(b"one"), UNWRITABLE]), ScriptedStream([ok(b"two")])
    client, _, _ = client_on(first, second)

    async def main() -> None:
        await fetch(client)
        assert await fetch(client, "POST", content=b"{}") == (200, b"two")
    run(main())
    assert bytes(first.sent) == GET and bytes(second.sent) == post()


@pytest.mark.parametrize("header, closes", [("Connection: close", True), ("Connection: keep-alive", False),
                                             ("X-Note: closed for lunch", False)])
def test_a_408_on_a_reused_connection_is_sent_again_only_when_it_closes_the_connection(header, closes):
    """Only ``Connection: close`` says the server timed the idle connection out (the request goes again, once, on a
    fresh connection); a 408 keeping its connection, or a ``close`` in another header, is the server's answer to
    this request, returned as it is."""
    timeout = f"HTTP/1.1 408 Request Timeout\r\n{header}\r\nContent-Length: 0\r\n\r\n".encode()
    first, second = ScriptedStream([ok(b"one"), [timeout, END] if closes else timeout]), ScriptedStream([ok(b"two")])
    client, backend, _ = client_on(first, second)

    async def main() -> None:
        await fetch(client)
        assert await fetch(client, "POST", content=b"{}") == ((200, b"two") if closes else (408, b""))
    run(main())
    assert (client.retried, len(backend.opened)) == ((1, 2) if closes else (0, 1))


@pytest.mark.parametrize("case", ["fresh", "answer begun", "second failure"])
def test_no_retry_on_a_fresh_connection_after_an_answer_began_or_twice(case):
    cut = b"HTTP/1.1 200 OK\r\nContent-Le"
    if case == "fresh":
        streams = [ScriptedStream([END])]
    elif case == "answer begun":
        streams = [ScriptedStream([ok(), [cut, END]])]
    else:
        streams = [ScriptedStream([ok(), END]), ScriptedStream([END])]
    client, backend, _ = client_on(*streams)

    async def main() -> None:
        if case != "fresh":
            await fetch(client)
        with pytest.raises(HttpProtocolError) as caught:
            await fetch(client)
        assert str(caught.value) == ("the server closed the connection in the middle of a response" if case == "answer begun"
                                     else "the server closed the connection without answering")
    run(main())
    assert len(backend.opened) == len(streams) and client.retried == (1 if case == "second failure" else 0)
    assert len(backend.dialled) == len(streams) + (case != "answer begun")  # a probe for TLS on a fresh one


def test_an_http_url_to_a_server_that_hangs_up_but_speaks_tls_is_named_as_such():
    """A TLS server reads plain HTTP as garbage and closes without a byte: a TLS handshake on the same port
    (verifying nothing, sending no request) tells that apart from a server that closed unanswered."""
    tls_server = ScriptedStream([])
    client, backend, _ = client_on(ScriptedStream([END]), tls_server)

    async def main() -> None:
        with pytest.raises(HttpProtocolError) as caught:
            await fetch(client)
        assert str(caught.value) == "the server answered with TLS: use an https:// URL"
    run(main())
    assert tls_server.tls[0].verify_mode == ssl.CERT_NONE and tls_server.aborted and not tls_server.sent


def test_a_reset_on_a_fresh_connection_is_a_read_error_not_retried():
    client, backend, _ = client_on(ScriptedStream([RESET]))

    async def main() -> None:
        with pytest.raises(ReadError):
            await fetch(client, "DELETE")
    run(main())
    assert len(backend.opened) == 1


# -- 1xx heads bounded ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("count", "fails"), [(http_client.MAX_INFORMATIONAL, False), (http_client.MAX_INFORMATIONAL + 1, True),
                                              (10_000, True)])
def test_1xx_heads_are_bounded_in_number(count, fails):
    answer = b"HTTP/1.1 100 Continue\r\n\r\n" * count + ok()
    client, _, _ = client_on(ScriptedStream([answer]))

    async def main() -> None:
        if fails:
            with pytest.raises(HttpProtocolError) as caught:
                await fetch(client)
            assert str(caught.value) == f"the server sent more than {http_client.MAX_INFORMATIONAL} 1xx heads before an answer"
        else:
            assert await fetch(client) == (200, b"ok")
    run(main())


# -- proxies -------------------------------------------------------------------------------------------------------

def test_a_connection_through_a_forwarding_proxy_carries_one_request(monkeypatch):
    monkeypatch.setenv("http_proxy", "http://u:p@proxy:3128")
    streams = [ScriptedStream([ok(b"one")]), ScriptedStream([ok(b"two")])]
    client, backend, _ = client_on(*streams)

    async def main() -> None:
        await fetch(client)
        await fetch(client)
    run(main())
    assert backend.dialled == [("proxy", 3128), ("proxy", 3128)] and all(stream.aborted for stream in streams)
    for stream in streams:  # tinyproxy would relay a second request raw, Proxy-Authorization and all, to the origin
        assert bytes(stream.sent) == (f"GET http://h/mcp HTTP/1.1\r\nHost: h\r\n{UA}"
                                      "Proxy-Authorization: Basic dTpw\r\n\r\n").encode()


@pytest.mark.parametrize(("answer", "words"), [
    (b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n",
     "the proxy refused the request (HTTP 407): its credentials (in *_PROXY) are missing or wrong"),
    (b"HTTP/1.1 403 Forbidden\r\nX-Squid-Error: ERR_ACCESS_DENIED 0\r\nContent-Length: 0\r\n\r\n",
     "the proxy refused the request (HTTP 403)"),
    (b"HTTP/1.1 403 Forbidden\r\nServer: tinyproxy/1.11.1\r\nContent-Length: 0\r\n\r\n",
     "the proxy refused the request (HTTP 403)"),
    (b"HTTP/1.1 403 Forbidden\r\nProxy-Status: proxy; error=http_request_denied\r\nContent-Length: 0\r\n\r\n",
     "the proxy refused the request (HTTP 403)"),
])
def test_a_proxys_own_refusal_of_an_http_url_names_the_proxy(monkeypatch, answer, words):
    monkeypatch.setenv("http_proxy", "http://proxy:3128")
    client, _, _ = client_on(ScriptedStream([answer]))

    async def main() -> None:
        with pytest.raises(ProxyError) as caught:
            await fetch(client)
        assert str(caught.value) == words
    run(main())


def test_a_403_from_the_server_through_a_proxy_is_the_servers(monkeypatch):
    monkeypatch.setenv("http_proxy", "http://proxy:3128")
    client, _, _ = client_on(ScriptedStream([b"HTTP/1.1 403 Forbidden\r\nServer: uvicorn\r\nContent-Length: 2\r\n\r\nno"]))
    assert run(fetch(client)) == (403, b"no")


@pytest.mark.parametrize(("scheme", "variable"), [("http", "http_proxy"), ("https", "https_proxy")])
def test_a_dead_proxy_is_named_as_the_hop_that_failed(monkeypatch, scheme, variable):
    monkeypatch.setenv(variable, "http://proxy:3128")
    client, _, _ = client_on(ConnectionRefusedError(111, "Connection refused"))

    async def main() -> None:
        with pytest.raises(ProxyError) as caught:
            await fetch(client, url=f"{scheme}://h/mcp")
        assert str(caught.value) == f"the proxy ({variable} in the environment) is not reachable (connection refused)"
        assert caught.value.__cause__ is None and caught.value.__context__ is None  # the OS's error is no server's
    run(main())


@pytest.mark.parametrize("how", ["timeout", "cancelled", "refused"])
def test_a_connect_through_a_proxy_that_fails_times_out_or_is_cancelled_closes_its_socket(monkeypatch, how):
    monkeypatch.setenv("https_proxy", "http://proxy:3128")
    refusal = b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"
    tunnel = ScriptedStream([refusal] if how == "refused" else [])  # [] never answers the CONNECT
    client, _, _ = client_on(tunnel, connect_timeout=0.05)

    async def main() -> None:
        request = asyncio.ensure_future(fetch(client, url="https://h/mcp"))
        if how == "cancelled":
            await asyncio.sleep(0.01)
            request.cancel()
        with pytest.raises({"timeout": ConnectTimeout, "cancelled": asyncio.CancelledError, "refused": ProxyError}[how]):
            await request
    run(main())
    assert tunnel.aborted and bytes(tunnel.sent) == b"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\n\r\n"


def test_proxies_are_read_by_the_standard_librarys_rules(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://upper:1")
    monkeypatch.setenv("https_proxy", "http://lower:1")
    assert proxy_for("https://example.com/") == "http://lower:1"  # the lower-case name wins, whatever the order
    monkeypatch.setenv("https_proxy", "")
    assert proxy_for("https://example.com/") is None  # an empty lower-case value turns it off
    monkeypatch.setenv("HTTP_PROXY", "http://attacker:1")
    assert proxy_for("http://example.com/") == "http://attacker:1"
    monkeypatch.setenv("REQUEST_METHOD", "GET")  # a CGI context: HTTP_PROXY may be a client's Proxy: header
    assert proxy_for("http://example.com/") is None
    monkeypatch.setenv("http_proxy", "proxy:8080")
    assert proxy_for("http://example.com/") == "http://proxy:8080"
    monkeypatch.setenv("all_proxy", "http://all:1")
    monkeypatch.setenv("no_proxy", "example.com:8443, ::1, [fd00::1]:9000, .internal")
    assert proxy_for("https://example.com:8443/") is None  # an entry with a port matches that port
    assert proxy_for("https://example.com/") == "http://all:1"  # and only that port
    assert proxy_for("http://[::1]:8000/") is None  # an IPv6 literal
    assert proxy_for("http://[fd00::1]:9000/") is None and proxy_for("http://[fd00::1]:9001/") == "http://proxy:8080"
    assert proxy_for("http://mcp.internal/") is None
    monkeypatch.setenv("no_proxy", "example.com:443,example.org:80")
    assert proxy_for("https://example.com/") is None and proxy_for("http://example.com/") == "http://proxy:8080"
    assert proxy_for("http://example.org/") is None and proxy_for("https://example.org/") == "http://all:1"
    assert proxy_for("http://example.org:99999/") is None  # no port: the client refuses such a URL itself


# -- TLS: each failure in words, with the fix --------------------------------------------------------------------

def _verify_error(code: int, message: str) -> ssl.SSLCertVerificationError:
    error = ssl.SSLCertVerificationError(1, f"[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: {message}")
    error.verify_code, error.verify_message, error.reason = code, message, "CERTIFICATE_VERIFY_FAILED"
    return error


def _certificate(**kwargs: Any) -> bytes:
    trustme = pytest.importorskip("trustme", reason="the TLS tests make their CA with trustme (the test extra)")
    issued = trustme.CA().issue_cert("mcp.example", "*.mcp.example", "10.0.0.7", **kwargs)
    return ssl.PEM_cert_to_DER_cert(issued.cert_chain_pems[0].bytes().decode())


@pytest.mark.parametrize(("code", "message", "certificate", "words"), [
    (20, "unable to get local issuer certificate", None,
     "TLS: the server's certificate is not signed by a CA this machine trusts: give its CA with --cacert FILE (or "
     "SSL_CERT_FILE)"),
    (19, "self-signed certificate in certificate chain", None,
     "TLS: the server's certificate is not signed by a CA this machine trusts: give its CA with --cacert FILE (or "
     "SSL_CERT_FILE)"),
    (62, "Hostname mismatch, certificate is not valid for 'h'.", {},
     "TLS: the server's certificate is not for the URL's host; it holds mcp.example, *.mcp.example, 10.0.0.7"),
    (10, "certificate has expired",
     {"not_before": datetime.datetime(2020, 1, 1), "not_after": datetime.datetime(2021, 3, 4, 5, 6, 7)},
     "TLS: the server's certificate expired on 2021-03-04 05:06:07 UTC"),
])
def test_a_refused_certificate_is_said_with_the_fix(code, message, certificate, words):
    refused = ScriptedStream([])
    refused.tls_error = _verify_error(code, message)
    streams = [refused]
    if certificate is not None:
        probe = ScriptedStream([])
        probe.certificate = _certificate(**certificate)
        streams.append(probe)
    client, backend, _ = client_on(*streams, verify=http_tls.offer_http11(ssl.create_default_context()))

    async def main() -> None:
        with pytest.raises(TlsError) as caught:
            await fetch(client, url="https://h/mcp")
        assert str(caught.value) == words
        assert caught.value.__cause__ is None and caught.value.__context__ is None
    run(main())
    assert all(stream.aborted and not stream.sent for stream in backend.opened)  # the probe sends no request
    if certificate is not None:
        assert backend.opened[1].tls[0].verify_mode == ssl.CERT_NONE


def test_tls_failures_other_than_a_certificate_are_said_plainly():
    plain = ssl.SSLError(1, "[SSL: WRONG_VERSION_NUMBER] wrong version number")
    plain.reason = "WRONG_VERSION_NUMBER"
    assert http_tls.failure_words(plain) == "TLS: the server answered in plain HTTP, not TLS: use an http:// URL"
    other = ssl.SSLError(1, "[SSL: TLSV1_ALERT_INTERNAL_ERROR] internal error")
    other.reason = "TLSV1_ALERT_INTERNAL_ERROR"
    assert http_tls.failure_words(other) == "TLS: TLSV1_ALERT_INTERNAL_ERROR"
    assert http_tls.failure_words(_verify_error(26, "unsuitable certificate purpose")) == (
        "TLS: the server's certificate was refused (unsuitable certificate purpose)")
    assert http_tls.certificate_facts(b"\x30\x03\x02\x01") is None  # not a certificate: nothing said of it


def test_an_http_url_to_a_tls_server_is_named_as_such():
    alert = b"\x15\x03\x01\x00\x02\x02\x46"  # a TLS alert record: what a TLS server says to plain HTTP
    client, _, _ = client_on(ScriptedStream([[alert, END]]))

    async def main() -> None:
        with pytest.raises(HttpProtocolError) as caught:
            await fetch(client)
        assert str(caught.value) == "the server answered with TLS: use an https:// URL"
    run(main())


def test_the_default_context_offers_http11_by_alpn_and_truststore_only_where_it_helps(monkeypatch):
    offered: list[list[str]] = []

    class Context:
        def __init__(self, *_: Any) -> None:
            pass

        def set_alpn_protocols(self, protocols: list[str]) -> None:
            offered.append(protocols)
    import sys
    import types
    monkeypatch.setitem(sys.modules, "truststore", types.SimpleNamespace(SSLContext=Context))
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    for platform, trusted in (("darwin", True), ("win32", True), ("linux", False)):
        monkeypatch.setattr(http_tls.sys, "platform", platform)
        assert isinstance(http_tls.default_tls(), Context) is trusted
    class OpenSsl(Context):
        pass
    monkeypatch.setattr(http_tls.sys, "platform", "darwin")
    monkeypatch.setattr(ssl, "create_default_context", lambda cafile=None: OpenSsl())
    monkeypatch.setattr(http_tls.os.path, "exists", lambda path: path == "/chosen.pem")
    monkeypatch.setattr(ssl, "get_default_verify_paths", lambda: ssl.DefaultVerifyPaths("/chosen.pem", None, "", "", "", ""))
    for variable in ("SSL_CERT_FILE", "SSL_CERT_DIR"):  # a CA file or folder chosen by hand is OpenSSL's to read
        monkeypatch.setenv(variable, "/chosen.pem")
        assert type(http_tls.default_tls()) is OpenSsl
        monkeypatch.delenv(variable)
    assert offered == [["http/1.1"]] * 4  # macOS, Windows, and each chosen by hand (Linux's real context is OpenSSL's)


# -- each connection: keep-alive probes and Happy Eyeballs ---------------------------------------------------------

def test_every_connection_has_so_keepalive_and_happy_eyeballs(monkeypatch):
    with socket.socket() as sock:
        http_stream.keepalive(sock)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == http_stream.KEEPALIVE_IDLE
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == http_stream.KEEPALIVE_COUNT
    asked: dict[str, Any] = {}

    async def main() -> None:
        loop = asyncio.get_running_loop()

        async def create_connection(factory: Any, host: str, port: int, **kwargs: Any) -> Any:
            asked.update(kwargs, host=host, port=port)
            raise ConnectionRefusedError(111, "refused")
        monkeypatch.setattr(loop, "create_connection", create_connection)
        with pytest.raises(http_client.ConnectError):
            await fetch(HttpClient())
    run(main())
    assert asked == {"host": "h", "port": 80, "happy_eyeballs_delay": http_stream.HAPPY_EYEBALLS_DELAY}


@pytest.mark.parametrize("server_does", ["writes", "closes"])
def test_the_socket_itself_is_asked_before_reuse_not_what_the_loop_has_read(server_does):
    """A server's close or stale bytes that the event loop has not yet read (asyncio's ``at_eof()`` would still say
    open) make the connection readable at once: ``poll`` on the socket, as httpcore does."""
    async def main() -> list[bool]:
        ours, theirs = socket.socketpair()
        with theirs:
            _, stream = await asyncio.get_running_loop().create_connection(http_stream.SocketStream, sock=ours)
            seen = [stream.readable()]
            if server_does == "writes":
                theirs.sendall(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
            else:
                theirs.shutdown(socket.SHUT_WR)
            seen.append(stream.readable())  # no turn of the loop between: only the socket knows
            stream.abort()
            return seen
    assert run(main()) == [False, True]


def test_a_reused_connection_whose_server_does_not_read_is_a_write_timeout_not_retried():
    class Unread(ScriptedStream):
        async def drain(self) -> None:
            if self.requests:
                await asyncio.sleep(10)  # the server stopped reading
            await super().drain()
    first = Unread([ok()])
    client, backend, _ = client_on(first, ScriptedStream([ok()]), write_timeout=0.05)

    async def main() -> None:
        await fetch(client)
        with pytest.raises(http_client.WriteTimeout):
            await fetch(client, "DELETE")
    run(main())
    assert len(backend.opened) == 1 and client.retried == 0
