"""Deliberately odd Streamable HTTP MCP servers for the relay's HTTP tests (stdlib asyncio only).

``python http_servers.py MODE`` listens on 127.0.0.1, prints its port on stdout, and serves
``/mcp``. Every event and body it sends is also appended to ``$SENT_LOG`` (one JSON string
per line, latin-1 of the bytes), so a test compares the channel with the exact bytes sent.

- ``bytes``: answers ``initialize`` as SSE; a ``tools/call``'s stream carries notifications
  spelled oddly (``jsonrpc`` first, in the middle, with whitespace, split over two ``data:``
  lines, invalid UTF-8, a comment and CRLF line ends), then the answer. GET: 405.
- ``refuse``: 401 to everything.
- ``forget``: a session at ``initialize``, then 404 to everything (the server forgot it).
- ``drop``: a call's stream sends a progress event with an id, then breaks off; a GET with
  ``Last-Event-ID`` resumes it with the rest and the answer. GET without it: 405.
- ``drop-no-ids``: the same stream without event ids (it cannot be resumed).
- ``flood:COUNT``: a call's stream carries COUNT log notifications (not logged), then the answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "bytes"
SESSION = "session-7f3a"
SENT_LOG = os.environ.get("SENT_LOG")


def _log(payload: bytes) -> None:
    if SENT_LOG:
        with open(SENT_LOG, "a") as file:
            file.write(json.dumps(payload.decode("latin-1")) + "\n")


def _event(data: bytes, event_id: str | None = None) -> bytes:
    _log(data)
    head = f"id: {event_id}\n".encode() if event_id else b""
    return head + b"".join(b"data: " + line + b"\n" for line in data.split(b"\n")) + b"\n"


def _result(request_id: object, result: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, separators=(",", ":")).encode()


INIT = {"protocolVersion": "2025-11-25", "capabilities": {"logging": {}, "tools": {}}, "serverInfo": {"name": "odd", "version": "0"}}
ODD = [
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"first"}}',
    b'{"method":"notifications/message", "jsonrpc" : "2.0" ,"params":{"level":"info","data":[1, 2.50, "\\u00e9"]}}',
    b'{"method":"notifications/progress","params":{"progressToken":"call-1","progress":1},\n"jsonrpc":"2.0"}',
    b'{"method":"notifications/message","params":{"level":"info","data":"\xff"},"jsonrpc":"2.0"}',
    b'{"method":"x/custom","params":{"_meta":{"k":1}},"jsonrpc":"2.0"}',
]


async def _respond(writer: asyncio.StreamWriter, status: int, headers: dict[str, str], body: bytes = b"",
                   *, chunks: list[bytes] | None = None, drop: bool = False) -> None:
    reason = {200: "OK", 202: "Accepted", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed"}[status]
    head = [f"HTTP/1.1 {status} {reason}"]
    if chunks is None:
        head.append(f"Content-Length: {len(body)}")
    else:
        head.append("Transfer-Encoding: chunked")
    head += [f"{name}: {value}" for name, value in headers.items()]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
    if chunks is None:
        writer.write(body)
    else:
        for chunk in chunks:
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
            await asyncio.sleep(0.01)
        if drop:
            writer.transport.abort()
            return
        writer.write(b"0\r\n\r\n")
    await writer.drain()


SSE = {"Content-Type": "text/event-stream", "Mcp-Session-Id": SESSION}


async def _post(writer: asyncio.StreamWriter, headers: dict[str, str], body: bytes) -> None:
    message = json.loads(body)
    method, request_id = message.get("method"), message.get("id")
    if MODE == "refuse":
        return await _respond(writer, 401, {}, b"no")
    if method == "initialize":
        return await _respond(writer, 200, SSE, chunks=[_event(_result(request_id, INIT))])
    if MODE == "forget" or headers.get("mcp-session-id") != SESSION:
        return await _respond(writer, 404, {})
    if request_id is None:
        return await _respond(writer, 202, {})
    if method != "tools/call":
        return await _respond(writer, 200, {"Content-Type": "application/json"}, _result(request_id, {}))
    answer = _result(request_id, {"content": []})
    if MODE.startswith("flood"):
        line = b'{"method":"notifications/message","params":{"level":"info","data":"%d"},"jsonrpc":"2.0"}'
        count = int(MODE.partition(":")[2] or 1000)
        chunks = [b"".join(b"data: " + line % index + b"\n\n" for index in range(start, min(start + 1000, count)))
                  for start in range(0, count, 1000)]
        return await _respond(writer, 200, SSE, chunks=[*chunks, _event(answer)])
    if MODE == "bytes":
        events = [_event(data) for data in ODD]
        events[1] = b": a comment\r\n" + events[1].replace(b"\n", b"\r\n")
        return await _respond(writer, 200, SSE, chunks=[*events, _event(answer)])
    ids = MODE == "drop"
    first = b'{"method":"notifications/progress","params":{"progressToken":"call-1","progress":1},"jsonrpc":"2.0"}'
    DROPPED[str(request_id)] = answer
    return await _respond(writer, 200, SSE, chunks=[_event(first, "e1" if ids else None)], drop=True)


DROPPED: dict[str, bytes] = {}


async def _get(writer: asyncio.StreamWriter, headers: dict[str, str]) -> None:
    if MODE in ("refuse",):
        return await _respond(writer, 401, {})
    if MODE == "forget":
        return await _respond(writer, 404, {})
    if MODE == "drop" and headers.get("last-event-id") == "e1":
        second = b'{"method":"notifications/progress","params":{"progressToken":"call-1","progress":2},"jsonrpc":"2.0"}'
        answers = [_event(answer, f"e{index + 2}") for index, answer in enumerate(DROPPED.values())]
        return await _respond(writer, 200, SSE, chunks=[_event(second, "e2"), *answers])
    await _respond(writer, 405, {})


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            method = line.split(b" ")[0]
            headers: dict[str, str] = {}
            while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = header.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method == b"POST":
                await _post(writer, headers, body)
            elif method == b"GET":
                await _get(writer, headers)
            else:  # DELETE
                await _respond(writer, 200, {})
            if writer.transport.is_closing():
                return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()


async def main() -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
