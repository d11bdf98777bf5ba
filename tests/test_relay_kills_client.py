"""The HTTP client's connection as its users meet it (issue #45: mutants of ``relay/http_stream.py`` that every
other test let pass), on loopback in the test's own event loop (quick): bytes that arrive while the reader is
elsewhere are kept, and so is the connection; a write after the server's end is ``NotSent``, which lets the
client send the request again on a fresh connection (the request provably never left)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("h11", reason="the relay's HTTP client needs the [http] extra (h11)")
from test_http_client import Scripted, fetch, read_request, run  # noqa: E402

from diverge_codec.relay.http_client import HttpClient  # noqa: E402
from diverge_codec.relay.http_stream import NotSent, open_stream  # noqa: E402


def test_a_body_arriving_while_the_reader_is_elsewhere_is_read_whole_and_the_connection_reused():
    async def main() -> None:
        first_read, rest_sent = asyncio.Event(), asyncio.Event()

        async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab")
            await first_read.wait()
            writer.write(b"cd")
            await writer.drain()
            rest_sent.set()
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()

        async with Scripted(handler) as server, HttpClient() as client:
            async with client.stream("GET", server.url) as response:
                pieces = response.aiter_raw()
                first = bytes(await pieces.__anext__())
                first_read.set()
                await rest_sent.wait()
                await asyncio.sleep(0.05)  # "cd" reaches the connection while nobody reads it
                rest = b"".join([bytes(piece) async for piece in pieces])
            assert first + rest == b"abcd"
            assert (await fetch(client, server.url))[2] == b"ok"
            assert server.connections == 1 and server.dropped == 0
    run(main())


def test_a_write_after_the_server_ended_the_connection_is_not_sent():
    async def main() -> None:
        async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            pass  # closed at once

        async with Scripted(closing) as server:
            host, port = server.url.removeprefix("http://").split(":")
            stream = await open_stream(host, int(port))
            assert await stream.read() == b""  # the server's end
            with pytest.raises(NotSent, match="^the connection had ended before the request was written$"):
                stream.write(b"GET / HTTP/1.1\r\n\r\n")
            stream.abort()
    run(main())
