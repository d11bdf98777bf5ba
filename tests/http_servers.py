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
- ``flood:COUNT[:SIZE]``: a call's stream carries COUNT log notifications of about SIZE bytes each, with
  event ids as the SDKs send them (not logged), then the answer. ``flood-modern:COUNT[:SIZE]``: the same
  call stream from a 2026-07-28 server (stateless: ``server/discover`` answered, the listen stream
  acknowledged and ended).

Hostile and restarting ones (the relay must stay bounded, end in bounded time, start new sessions):

- ``restart``: ``initialize``'s stream carries a log line ("before"); once ``notifications/initialized`` is
  accepted the server "restarts" (a new session id): every request with the old one gets server-everything's
  400 ("No valid session ID provided"). In the new session a request other than a call is answered on a
  stream that first carries a log line ("after"). Each method received is logged to ``$SENT_LOG`` as
  ``"<- METHOD"``. GET: 400 for the old session, 405 for the new.
- ``forget-post``: like ``restart`` but the old session gets 404, and GET is always 405 (only the POST path
  can tell).
- ``strict-version``: a request after ``initialize`` without ``MCP-Protocol-Version: 2025-11-25`` gets 400.
- ``bomb-text``/``bomb-500``: a call's answer is 1 MiB of gzip inflating to 1 GiB, ``text/plain`` (200 or 500).
- ``bomb-events``: a call's stream is gzip inflating to 1 GiB of tiny events (never answered).
- ``plain:MB``: a call's answer is MB MiB of plain ``text/plain``.
- ``endless-head``: a call's answer is a status line, then header lines without end.
- ``slow-calls:SECONDS``: each call's stream answers after SECONDS.
- ``bad-session-id``: ``initialize``'s ``Mcp-Session-Id`` holds a non-ASCII letter.
- ``replay``: GET: ``retry: 0``, events with ids 1 and 2, then the stream closes, every time (whatever
  ``Last-Event-ID`` says).
- ``redirect-same``/``redirect-other``/``redirect-loop``: ``/mcp`` answers 307 to ``/mcp/`` (served), to another
  port, or to itself.
- ``hang``: never answers ``initialize``.
- ``json-calls``: calls answered with one JSON body (``enableJsonResponse``): their progress cannot arrive.
- ``sse-elsewhere``: the older HTTP+SSE transport whose ``endpoint`` event names another origin.
- ``bearer:VALID``: every request needs ``Authorization: Bearer tok-N``; ``tok-1`` serves the first VALID
  requests, then only a later ``tok-N`` (a token that expires mid-session). Without a usable token: 401 with
  ``WWW-Authenticate: Bearer error="invalid_token", resource_metadata="..."``, and the metadata (RFC 9728) is
  served at ``/.well-known/oauth-protected-resource``.

With ``TLS_CERT`` and ``TLS_KEY`` in the environment it serves https (and with ``TLS_CLIENT_CA`` it requires a
client certificate that CA signed).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import zlib

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
    reason = {200: "OK", 202: "Accepted", 307: "Temporary Redirect", 400: "Bad Request", 401: "Unauthorized",
              404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error"}[status]
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


STATE = {"session": SESSION, "restarted": False}
NO_SESSION = b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}'


def _bomb() -> bytes:
    """1 MiB of gzip that inflates to 1 GiB of zeros, made once."""
    if "bomb" not in STATE:
        squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = bytes(1 << 20)
        STATE["bomb"] = b"".join(squeeze.compress(block) for _ in range(1024)) + squeeze.flush()
    return STATE["bomb"]  # type: ignore[return-value]


def _event_bomb() -> bytes:
    """gzip of 1 GiB of tiny events (``data: x`` and a blank line), made once."""
    if "event-bomb" not in STATE:
        squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
        block = b"data: {}\n\n" * (1 << 16)
        STATE["event-bomb"] = b"".join(squeeze.compress(block) for _ in range((1 << 30) // len(block))) + squeeze.flush()
    return STATE["event-bomb"]  # type: ignore[return-value]


def _bearer_refused(headers: dict[str, str]) -> bool:
    """``bearer:VALID``: whether this request's token is refused (tok-1 for the first VALID requests, then later ones)."""
    if not MODE.startswith("bearer"):
        return False
    STATE["requests"] = int(STATE.get("requests", 0)) + 1  # type: ignore[call-overload]
    token = headers.get("authorization", "").removeprefix("Bearer ")
    number = int(token[4:]) if token.startswith("tok-") and token[4:].isdigit() else 0
    return number < 1 or (number == 1 and int(STATE["requests"]) > int(MODE.partition(":")[2]))  # type: ignore[call-overload]


CHALLENGE = 'Bearer error="invalid_token", resource_metadata="http://127.0.0.1:{port}/.well-known/oauth-protected-resource"'


async def _post(writer: asyncio.StreamWriter, headers: dict[str, str], body: bytes, path: str = "/mcp") -> None:
    message = json.loads(body)
    method, request_id = message.get("method"), message.get("id")
    _log(f"<- {method}".encode())
    if MODE == "refuse":
        return await _respond(writer, 401, {}, b"no")
    if MODE == "sse-elsewhere":
        return await _respond(writer, 405, {"Allow": "GET"})
    if _bearer_refused(headers):
        _log(f"refused {headers.get('authorization', '')[:10]}".encode())
        return await _respond(writer, 401, {"WWW-Authenticate": CHALLENGE.format(port=PORT[0])}, b"no")
    if MODE.startswith("redirect") and path == "/mcp":
        target = {"redirect-same": "/mcp/", "redirect-loop": "/mcp",
                  "redirect-other": f"http://127.0.0.1:{PORT[0] + 1}/mcp"}[MODE]
        return await _respond(writer, 307, {"Location": target})
    if MODE == "hang":
        await asyncio.sleep(3600)
    if MODE.startswith("flood-modern"):
        return await _modern(writer, method, request_id)
    if method == "initialize":
        session = STATE["session"] if MODE != "bad-session-id" else "s\u00e9ssion"
        head = {**SSE, "Mcp-Session-Id": session}
        before = b'{"method":"notifications/message","params":{"level":"info","data":"before"},"jsonrpc":"2.0"}'
        first = [_event(before)] if MODE in ("restart", "forget-post") and not STATE["restarted"] else []
        return await _respond(writer, 200, head, chunks=[*first, _event(_result(request_id, INIT))])
    if MODE in ("restart", "forget-post") and method == "notifications/initialized" and not STATE["restarted"]:
        await _respond(writer, 202, {})
        STATE["restarted"], STATE["session"] = True, "session-after-restart"
        return None
    if MODE == "strict-version" and headers.get("mcp-protocol-version") != "2025-11-25":
        return await _respond(writer, 400, {"Content-Type": "application/json"}, b'{"error":"version"}')
    if MODE == "forget" or headers.get("mcp-session-id") != STATE["session"]:
        if MODE == "restart":
            return await _respond(writer, 400, {"Content-Type": "application/json"}, NO_SESSION)
        return await _respond(writer, 404, {})
    if request_id is None:
        return await _respond(writer, 202, {})
    if MODE in ("restart", "forget-post") and method != "tools/call":
        line = b'{"method":"notifications/message","params":{"level":"info","data":"after"},"jsonrpc":"2.0"}'
        return await _respond(writer, 200, {**SSE, "Mcp-Session-Id": STATE["session"]},
                              chunks=[_event(line), _event(_result(request_id, {}))])
    if method != "tools/call":
        return await _respond(writer, 200, {"Content-Type": "application/json"}, _result(request_id, {}))
    answer = _result(request_id, {"content": []})
    if MODE == "json-calls":
        return await _respond(writer, 200, {"Content-Type": "application/json"}, answer)
    if MODE.startswith("bomb"):
        status = 500 if MODE == "bomb-500" else 200
        if MODE == "bomb-events":
            return await _respond(writer, 200, {**SSE, "Content-Encoding": "gzip"}, _event_bomb())
        return await _respond(writer, status, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, _bomb())
    if MODE == "endless-head":  # a head that never ends: header lines, 64 KiB at a time, until the client leaves
        writer.write(b"HTTP/1.1 200 OK\r\n")
        while True:
            writer.write(b"X-Pad: " + b"a" * 65_000 + b"\r\n")
            await writer.drain()
    if MODE.startswith("plain"):
        size = int(MODE.partition(":")[2]) << 20
        return await _respond(writer, 200, {"Content-Type": "text/plain"}, chunks=[bytes(1 << 20)] * (size >> 20))
    if MODE.startswith("slow-calls"):
        await asyncio.sleep(float(MODE.partition(":")[2]))
        return await _respond(writer, 200, SSE, chunks=[_event(answer)])
    if MODE.startswith("flood"):
        return await _flood(writer, answer)
    if MODE == "bytes":
        events = [_event(data) for data in ODD]
        events[1] = b": a comment\r\n" + events[1].replace(b"\n", b"\r\n")
        return await _respond(writer, 200, SSE, chunks=[*events, _event(answer)])
    if not MODE.startswith("drop"):
        return await _respond(writer, 200, SSE, chunks=[_event(answer)])
    ids = MODE == "drop"
    first = b'{"method":"notifications/progress","params":{"progressToken":"call-1","progress":1},"jsonrpc":"2.0"}'
    DROPPED[str(request_id)] = answer
    return await _respond(writer, 200, SSE, chunks=[_event(first, "e1" if ids else None)], drop=True)


DROPPED: dict[str, bytes] = {}
DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {"logging": {}}, "serverInfo": {"name": "odd", "version": "0"}}


async def _flood(writer: asyncio.StreamWriter, answer: bytes) -> None:
    """``flood:COUNT[:SIZE]``'s call stream: COUNT log notifications of about SIZE bytes, then the answer."""
    _, _, spec = MODE.partition(":")
    count_text, _, size_text = spec.partition(":")
    count = int(count_text or 1000)
    line = b'{"method":"notifications/message","params":{"level":"info","data":"%d' + b"x" * max(
        0, int(size_text or 0) - 96) + b'"},"jsonrpc":"2.0"}'
    chunks = [b"".join(b"id: %d\ndata: " % index + line % index + b"\n\n"
                       for index in range(start, min(start + 1000, count)))
              for start in range(0, count, 1000)]
    return await _respond(writer, 200, SSE, chunks=[*chunks, _event(answer)])


async def _modern(writer: asyncio.StreamWriter, method: str, request_id: object) -> None:
    """``flood-modern``: the 2026-07-28 binding, stateless: discover answered, the listen stream acknowledged and
    ended, a call's stream flooded as ``flood``'s."""
    if method == "server/discover":
        return await _respond(writer, 200, {"Content-Type": "application/json"}, _result(request_id, DISCOVERED))
    if method == "subscriptions/listen":
        ack = b'{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{}}'
        return await _respond(writer, 200, SSE, chunks=[_event(ack), _event(_result(request_id, {}))])
    if method == "tools/call":
        return await _flood(writer, _result(request_id, {"content": []}))
    return await _respond(writer, 200, {"Content-Type": "application/json"}, _result(request_id, {}))


async def _get(writer: asyncio.StreamWriter, headers: dict[str, str], path: str = "/mcp") -> None:
    if MODE in ("refuse",):
        return await _respond(writer, 401, {})
    if path == "/.well-known/oauth-protected-resource":
        metadata = {"resource": f"http://127.0.0.1:{PORT[0]}/mcp", "authorization_servers": ["https://auth.example.com"]}
        return await _respond(writer, 200, {"Content-Type": "application/json"}, json.dumps(metadata).encode())
    if MODE == "sse-elsewhere":
        return await _respond(writer, 200, {"Content-Type": "text/event-stream"},
                              chunks=[b"event: endpoint\ndata: http://127.0.0.1:1/messages?s=1\n\n"])
    if MODE == "restart" and headers.get("mcp-session-id") != STATE["session"]:
        return await _respond(writer, 400, {"Content-Type": "application/json"}, NO_SESSION)
    if MODE == "replay":
        one = b'{"method":"notifications/message","params":{"level":"info","data":1},"jsonrpc":"2.0"}'
        two = b'{"method":"notifications/message","params":{"level":"info","data":2},"jsonrpc":"2.0"}'
        return await _respond(writer, 200, SSE, chunks=[b"retry: 0\n\n", _event(one, "1"), _event(two, "2")])
    if MODE == "forget":
        return await _respond(writer, 404, {})
    if MODE == "drop" and headers.get("last-event-id") == "e1":
        second = b'{"method":"notifications/progress","params":{"progressToken":"call-1","progress":2},"jsonrpc":"2.0"}'
        answers = [_event(answer, f"e{index + 3}") for index, answer in enumerate(DROPPED.values())]
        return await _respond(writer, 200, SSE, chunks=[_event(second, "e2"), *answers])
    await _respond(writer, 405, {})


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            line = await reader.readline()
            if not line:
                return
            method, path = line.split(b" ")[0], line.split(b" ")[1].decode()
            headers: dict[str, str] = {}
            while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = header.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if method == b"POST":
                await _post(writer, headers, body, path)
            elif method == b"GET":
                await _get(writer, headers, path)
            else:  # DELETE
                await _respond(writer, 200, {})
            if writer.transport.is_closing():
                return
    except (ConnectionError, asyncio.IncompleteReadError):
        return
    finally:
        writer.close()


PORT = [0]


def _tls() -> object:
    if not os.environ.get("TLS_CERT"):
        return None
    import ssl

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(os.environ["TLS_CERT"], os.environ["TLS_KEY"])
    if os.environ.get("TLS_CLIENT_CA"):
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(os.environ["TLS_CLIENT_CA"])
    return context


async def main() -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", 0, ssl=_tls())
    PORT[0] = server.sockets[0].getsockname()[1]
    print(PORT[0], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
