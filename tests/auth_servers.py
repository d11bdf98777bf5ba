"""Servers for the relay's authorization and logging tests (stdlib asyncio only; loopback).

``python auth_servers.py MODE`` listens on 127.0.0.1, prints its port, and serves ``/mcp``, one request a
connection (``Connection: close``):

- ``challenge:N``: 401 to everything, ``WWW-Authenticate: Bearer`` and N letters (what took 62.9 s).
- ``challenge-hang:N``: the same, the challenge naming ``resource_metadata`` at ``/hang``, which never answers.
- ``trickle``: the status line of an answer, then a byte of a header every 0.1 s, for ever.
- ``cookies``: a small MCP server that sets ``Set-Cookie: sid=COOKIE-SECRET-7`` with ``initialize``'s answer
  (a session id too), answers a call on an event stream with a log notification first, 405 to GET, 200 to
  DELETE; each request's method and ``Cookie`` header are appended to ``$SEEN_LOG`` (one JSON line each).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "cookies"
INIT = {"protocolVersion": "2025-11-25", "capabilities": {"logging": {}}, "serverInfo": {"name": "auth", "version": "0"}}
COOKIE = "COOKIE-SECRET-7"


async def _read(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (item.partition(":") for item in lines if item)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return line.split(" ")[0], headers, body


def _answer(status: int, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"HTTP/1.1 {status} X", "Connection: close", f"Content-Length: {len(body)}",
             *(f"{name}: {value}" for name, value in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def _mcp(method: str, headers: dict[str, str], body: bytes) -> bytes:
    log = os.environ.get("SEEN_LOG")
    if log:
        with open(log, "a") as file:
            file.write(json.dumps({"method": method, "cookie": headers.get("cookie")}) + "\n")
    if method == "GET":
        return _answer(405, {})
    if method == "DELETE":
        return _answer(200, {})
    message = json.loads(body)
    if message.get("method") == "initialize":
        result = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": INIT}).encode()
        return _answer(200, {"Content-Type": "application/json", "Mcp-Session-Id": "s-1",
                             "Set-Cookie": f"sid={COOKIE}; Path=/; HttpOnly"}, result)
    if "id" not in message:
        return _answer(202, {})
    note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}}
    events = b"".join(b"data: " + json.dumps(item).encode() + b"\n\n" for item in (note, answer))
    return _answer(200, {"Content-Type": "text/event-stream"}, events)


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        method, headers, body = await _read(reader)
        if MODE.startswith("challenge"):
            if headers.get("accept") == "application/json":  # the metadata, asked for with no header of the relay's
                await asyncio.sleep(3600)
            port = writer.get_extra_info("sockname")[1]
            named = f'resource_metadata="http://127.0.0.1:{port}/hang", ' if MODE.startswith("challenge-hang") else ""
            writer.write(_answer(401, {"WWW-Authenticate": f"Bearer {named}" + "a" * int(MODE.partition(":")[2])}))
        elif MODE == "trickle":
            writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while True:
                await writer.drain()
                await asyncio.sleep(0.1)
                writer.write(b"a")
        else:
            writer.write(_mcp(method, headers, body))
        await writer.drain()
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
