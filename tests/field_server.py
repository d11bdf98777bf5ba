"""A Streamable HTTP MCP server for the relay's tests behind real proxies (stdlib asyncio only, HTTP/1.1 keep-alive).

``python field_server.py [PORT [TICK]]`` listens on 127.0.0.1:PORT (0: any; printed on stdout), so a test can
kill it and start it again on the same port: a restarted server knows none of the old sessions (404).

- ``initialize``: answered as JSON with a new ``Mcp-Session-Id`` (unique to this process);
- a request with an unknown session: 404; a notification: 202; an answer to the server's ping: 202;
- ``tools/call pinger {"count": N, "every": S, "comments": C}``: an event stream that sends N ``ping`` requests
  S seconds apart, numbered from 1 as the TypeScript SDK's server numbers them (the relay's first call is 1 too),
  each awaiting the relay's POSTed answer, a comment every C seconds between (a stream a proxy keeps open), then
  the call's answer ``{"pongs": N}``; any other call is answered at once;
- GET: the session's own stream: an event with id K (``data`` a log notification of K) every TICK seconds
  (default 0.5), from the one after ``Last-Event-ID`` when given (nothing is lost across a reopened stream);
- DELETE: 200.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

TICK = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
SESSIONS: dict[str, dict[str, asyncio.Future[None]]] = {}
STARTED = time.monotonic()
REASONS = {200: "OK", 202: "Accepted", 404: "Not Found", 405: "Method Not Allowed"}


def _log(number: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": number}}).encode()


def _head(status: int, headers: dict[str, str], length: int | None) -> bytes:
    lines = [f"HTTP/1.1 {status} {REASONS[status]}", *(f"{name}: {value}" for name, value in headers.items())]
    lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def _whole(writer: asyncio.StreamWriter, status: int, headers: dict[str, str] | None = None, body: bytes = b"") -> None:
    writer.write(_head(status, headers or {}, len(body)) + body)
    await writer.drain()


async def _chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    await writer.drain()


async def _pinger(writer: asyncio.StreamWriter, session: str, request_id: object, arguments: dict[str, float]) -> None:
    writer.write(_head(200, {"Content-Type": "text/event-stream"}, None))
    count, every, comments = int(arguments.get("count", 1)), float(arguments.get("every", 1)), float(arguments.get("comments", 0))
    for number in range(1, count + 1):
        waited = 0.0
        while waited < every:
            step = min(comments or every, every - waited)
            await asyncio.sleep(step)
            waited += step
            if comments and waited < every:
                await _chunk(writer, b": waiting\n\n")
        pong = SESSIONS[session][str(number)] = asyncio.get_running_loop().create_future()
        await _chunk(writer, b"data: " + json.dumps({"jsonrpc": "2.0", "id": number, "method": "ping"}).encode() + b"\n\n")
        await asyncio.wait_for(pong, 60)
    answer = {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": f"pongs {count}"}]}}
    await _chunk(writer, b"data: " + json.dumps(answer).encode() + b"\n\n")
    await _chunk(writer, b"")


async def _own_stream(writer: asyncio.StreamWriter, last: str | None) -> None:
    writer.write(_head(200, {"Content-Type": "text/event-stream"}, None))
    number = int(last) + 1 if last and last.isdigit() else 0
    due = int((time.monotonic() - STARTED) / TICK)  # the events the clock says were sent by now
    while True:
        while number <= due:
            await _chunk(writer, f"id: {number}\ndata: ".encode() + _log(number) + b"\n\n")
            number += 1
        await asyncio.sleep(TICK)
        due += 1


async def _post(writer: asyncio.StreamWriter, headers: dict[str, str], body: bytes) -> None:
    message = json.loads(body)
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        session = f"fs-{os.getpid()}-{len(SESSIONS)}"
        SESSIONS[session] = {}
        result = {"protocolVersion": "2025-11-25", "capabilities": {"logging": {}, "tools": {}},
                  "serverInfo": {"name": "field", "version": "0"}}
        answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
        return await _whole(writer, 200, {"Content-Type": "application/json", "Mcp-Session-Id": session}, answer)
    session = headers.get("mcp-session-id", "")
    if session not in SESSIONS:
        return await _whole(writer, 404)
    if method is None:  # the relay's answer to a ping
        waiter = SESSIONS[session].pop(str(request_id), None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return await _whole(writer, 202)
    if request_id is None:
        return await _whole(writer, 202)
    if method == "tools/call" and message["params"].get("name") == "pinger":
        return await _pinger(writer, session, request_id, message["params"].get("arguments") or {})
    answer = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}).encode()
    await _whole(writer, 200, {"Content-Type": "application/json"}, answer)


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line.strip():
                return
            method = line.split(b" ")[0]
            headers: dict[str, str] = {}
            while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = header.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method == b"POST":
                await _post(writer, headers, body)
            elif method == b"GET":
                if headers.get("mcp-session-id", "") not in SESSIONS:
                    await _whole(writer, 404)
                else:
                    await _own_stream(writer, headers.get("last-event-id"))
            elif method == b"DELETE":
                SESSIONS.pop(headers.get("mcp-session-id", ""), None)
                await _whole(writer, 200)
            else:  # a load balancer's health check
                await _whole(writer, 200)
            if headers.get("connection", "").lower() == "close":
                return
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError):
        return
    finally:
        writer.close()


async def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = await asyncio.start_server(_serve, "127.0.0.1", port)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
