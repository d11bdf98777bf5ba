"""The relay's HTTP client through real infrastructure (tests/infra.py): squid and tinyproxy as forward proxies,
nginx terminating TLS with ``keepalive_timeout 1s``, haproxy balancing two servers by an affinity cookie.

The origin is a threaded HTTP server on loopback that records each request's head as it arrived, so what a
proxy passed on (never ``Proxy-Authorization``, never a second request relayed raw) is pinned. Skipped where a
binary is missing, failed instead in CI (``.ci/infra`` installs them).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import infra

h11 = pytest.importorskip("h11", reason="the relay's HTTP client needs the [http] extra (h11)")
from diverge_codec.relay.http_client import HttpClient, ProxyError  # noqa: E402


class Origin(ThreadingHTTPServer):
    daemon_threads = True
    heads: list[str]
    tag = ""


class Answer(BaseHTTPRequestHandler):
    """Answers every request 200 with its method and path; keeps each request's head (``Origin.heads``)."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.heads.append(f"{self.requestline}\n{self.headers}")  # type: ignore[attr-defined]
        answer = f"{self.command} {self.path} {len(body)}{self.server.tag}".encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *_: Any) -> None:
        pass


@contextlib.contextmanager
def origin(tls: infra.TlsFiles | None = None, tag: str = "") -> Iterator[Origin]:
    server = Origin(("127.0.0.1", 0), Answer)
    server.heads, server.tag = [], tag
    if tls is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(tls.cert_file, tls.key_file)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


async def fetch(client: HttpClient, method: str, url: str, **kwargs: Any) -> tuple[int, bytes]:
    async with client.stream(method, url, **kwargs) as response:
        return response.status_code, b"".join([piece async for piece in response.aiter_raw()])


PROXIES = {"squid": infra.squid, "tinyproxy": infra.tinyproxy}


@pytest.mark.parametrize("credentials", [None, ("relay", "s3cret")], ids=["open", "credentials"])
@pytest.mark.parametrize("proxy_name", sorted(PROXIES))
def test_http_and_https_through_a_real_forward_proxy_whose_credentials_never_reach_the_origin(
        tmp_path, monkeypatch, proxy_name, credentials):
    tls = infra.tls_files(tmp_path)
    with PROXIES[proxy_name](credentials) as proxy, origin() as plain, origin(tls) as secure:
        monkeypatch.setenv("http_proxy", proxy.url)
        monkeypatch.setenv("https_proxy", proxy.url)
        context = ssl.create_default_context(cafile=tls.ca_file)

        async def main() -> list[tuple[int, bytes]]:
            async with HttpClient(verify=context, connect_timeout=10) as client:
                answers = []
                for url in (f"http://127.0.0.1:{plain.server_port}", f"https://localhost:{secure.server_port}"):
                    answers.append(await fetch(client, "POST", url + "/mcp", content=b"{}"))
                    answers.append(await fetch(client, "GET", url + "/mcp"))  # tinyproxy would relay it raw
                return answers
        answers = asyncio.run(asyncio.wait_for(main(), 30))
    assert answers == [(200, b"POST /mcp 2"), (200, b"GET /mcp 0")] * 2
    heads = plain.heads + secure.heads
    assert [head.split("\n")[0] for head in heads] == ["POST /mcp HTTP/1.1", "GET /mcp HTTP/1.1"] * 2
    assert not any("proxy-authorization" in head.lower() or "s3cret" in head for head in heads)


@pytest.mark.parametrize("proxy_name", sorted(PROXIES))
def test_a_real_proxy_refusing_missing_credentials_is_named_as_the_proxy(tmp_path, monkeypatch, proxy_name):
    with PROXIES[proxy_name](("relay", "s3cret")) as proxy, origin() as plain:
        bare = proxy.url.replace("relay:s3cret@", "")
        monkeypatch.setenv("http_proxy", bare)
        monkeypatch.setenv("https_proxy", bare)

        async def main() -> list[str]:
            words = []
            async with HttpClient(connect_timeout=10) as client:
                for url in (f"http://127.0.0.1:{plain.server_port}/mcp", "https://localhost:1/mcp"):
                    with pytest.raises(ProxyError) as caught:
                        await fetch(client, "GET", url)
                    words.append(str(caught.value))
            return words
        words = asyncio.run(asyncio.wait_for(main(), 30))
    assert words == ["the proxy refused the request (HTTP 407): its credentials (in *_PROXY) are missing or wrong",
                     "the proxy refused the tunnel (HTTP 407): its credentials (in *_PROXY) are missing or wrong"]
    assert plain.heads == []


REQUESTS_AT_THE_TIMEOUT = 6


def test_behind_nginx_with_keepalive_timeout_1s_no_request_spaced_at_the_timeout_fails():
    """nginx closes an idle connection after 1 s; requests 1 s apart meet that close as they are sent. Each is
    answered: a connection the server closed is found on its socket before reuse, and one that closes as the
    request crosses it gets the request again on a fresh one (GET, and POSTs marked retry_safe)."""
    with origin() as plain, infra.nginx(("127.0.0.1", plain.server_port), keepalive_timeout="1s") as proxy:
        context = ssl.create_default_context(cafile=proxy.tls.ca_file)  # type: ignore[union-attr]

        async def main() -> tuple[list[tuple[int, bytes]], int]:
            answers = []
            async with HttpClient(verify=context, idle_seconds=60) as client:  # the pool's own expiry kept out of it
                for index in range(REQUESTS_AT_THE_TIMEOUT):
                    if index:
                        await asyncio.sleep(1.0 if index % 2 else 0.995)
                    method = "GET" if index % 2 else "POST"
                    answers.append(await fetch(client, method, proxy.url + "/mcp", content=b"{}" if method == "POST"
                                               else None, retry_safe=True))
                return answers, client.retried
        answers, _ = asyncio.run(asyncio.wait_for(main(), 60))
    assert answers == [(200, b"POST /mcp 2"), (200, b"GET /mcp 0")] * (REQUESTS_AT_THE_TIMEOUT // 2)
    assert len(plain.heads) == REQUESTS_AT_THE_TIMEOUT  # each arrived once


def test_behind_haproxy_the_affinity_cookie_keeps_every_request_on_one_server_until_it_dies():
    """haproxy inserts ``SERVERID``; the client sends it back, so every request reaches the server that made the
    session. That server killed, haproxy's health check takes it out and the requests (sent again where the
    connection fails first) reach the other."""
    with origin(tag=" a") as first, origin(tag=" b") as second:
        with infra.haproxy([("127.0.0.1", first.server_port), ("127.0.0.1", second.server_port)]) as balancer:

            async def main() -> tuple[list[bytes], list[bytes]]:
                async with HttpClient() as client:
                    before = [(await fetch(client, "GET", balancer.url + "/mcp"))[1] for _ in range(6)]
                    kept = first if before[0].endswith(b" a") else second
                    await asyncio.to_thread(kept.shutdown)
                    await asyncio.to_thread(kept.server_close)
                    await asyncio.sleep(1.5)  # three health checks
                    after = [(await fetch(client, "GET", balancer.url + "/mcp"))[1] for _ in range(3)]
                    return before, after
            before, after = asyncio.run(asyncio.wait_for(main(), 30))
    assert len(set(before)) == 1 and before[0] in (b"GET /mcp 0 a", b"GET /mcp 0 b")  # one server: the cookie's
    assert set(after) == {b"GET /mcp 0 b" if before[0].endswith(b" a") else b"GET /mcp 0 a"}
