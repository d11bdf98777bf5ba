"""The relay: an MCP server's notifications onto a mcp-notifications channel over a socket.

The proxy starts the container's MCP server as a subprocess over stdio, speaks to it
as its client (initialize, then the tool calls it is given), and puts every
notification the server writes on the channel: the JSON-RPC envelope removed, framed
with ``frame_notification``, never parsed (see ``diverge_codec.relay``). The channel's
payloads travel as records of ``diverge_codec.stream``; closing the socket is the
channel's finish.

- A server that exits, or never answers ``initialize``, before any notification: one
  Error frame, then the finish.
- A server that goes away later: the finish alone (the page puts an Error only before
  any notification).
- A consumer slower than the server: the socket's buffer fills, ``drain`` waits, and
  the outbox, bounded in bytes, drops and counts what does not fit. Memory stays
  bounded by the outbox, the transport's high-water mark and one line.
- A request the server makes of its client (``ping``, sampling, roots) is not
  answered here: this relay is the channel's side, not a full MCP client.

Run ``python examples/mcp_relay/relay.py`` for a demonstration against ``server.py``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diverge_codec import mcp_notifications, relay, stream

PROTOCOL_VERSION = "2025-11-25"
"""The handshake revision the relay offers: one where the SDK still sends logging notifications."""

LINE_LIMIT = 16 << 20
"""The longest server line read; the stream envelope's default record limit."""

READ_SIZE = 1 << 16
"""The server's output is read in chunks this large and split into lines here: a
``readline`` per message costs more than the relay's whole work on it."""

SERVER = Path(__file__).with_name("server.py")


@dataclass
class RelayReport:
    """What one relay run did: notifications seen, relayed and dropped, and how it ended."""

    seen: int = 0
    dropped: int = 0
    refused: int = 0
    """Notifications the channel refuses (not JSON, a lone surrogate, ...): counted, never sent."""
    high_water_bytes: int = 0
    unreachable: bool = False
    answered: bool = False
    """Every call answered: the server has written all it will, and the relay has read it."""
    captured: list[bytes] = field(default_factory=list)

    @property
    def relayed(self) -> int:
        return self.seen - self.dropped


def _request(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n"


def _response_id(line: bytes) -> Any:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("id") if isinstance(message, dict) and "method" not in message else None


class _Channel:
    """The writing side: an outbox drained into the socket as fast as the consumer reads."""

    def __init__(self, writer: asyncio.StreamWriter, outbox_bytes: int) -> None:
        self.writer = writer
        self.outbox = relay.Outbox(outbox_bytes)
        self.ready = asyncio.Event()
        self.closing = False

    def offer(self, payload: bytes) -> None:
        if self.outbox.offer(payload):
            self.ready.set()

    async def pump(self) -> None:
        while True:
            await self.ready.wait()
            batch = self.outbox.take()
            if not batch:
                self.ready.clear()
                if self.closing:
                    return
                continue
            chunk = bytearray()
            stream.write_records(chunk, batch)
            self.writer.write(chunk)
            await self.writer.drain()

    async def finish(self) -> None:
        self.closing = True
        self.ready.set()


async def relay_server(
    command: Sequence[str],
    writer: asyncio.StreamWriter,
    calls: Sequence[tuple[str, dict[str, Any]]] = (("emit_all", {}),),
    *,
    outbox_bytes: int = 1 << 20,
    capture: bool = False,
    answer_timeout: float = 30.0,
    report: RelayReport | None = None,
    frame: Callable[[bytes], bytes | None] = relay.relay_frame,
) -> RelayReport:
    """Run ``command`` as the MCP server, make ``calls``, relay its notifications to ``writer``.

    When every call is answered the relay ends the session (closes the server's
    stdin); the channel finishes (the socket is closed) when the server's output
    ends, so a notification written after the last answer is still relayed.
    ``capture`` keeps each line the server wrote, for tests; ``report``, if given, is
    filled in as the relay runs; ``frame`` turns a server line into a channel payload
    (None for what is no notification), so a benchmark can swap it.
    """
    report = RelayReport() if report is None else report
    channel = _Channel(writer, outbox_bytes)
    pump = asyncio.create_task(channel.pump())
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdin is not None and process.stdout is not None
    pending = {0}  # request ids still to be answered; 0 is initialize
    await _send(process, _request(0, "initialize", {
        "protocolVersion": PROTOCOL_VERSION, "capabilities": {},
        "clientInfo": {"name": "diverge-codec-relay", "version": "0"},
    }))
    buffered = b""
    try:
        while True:
            try:
                data = await asyncio.wait_for(process.stdout.read(READ_SIZE), answer_timeout)
            except asyncio.TimeoutError:  # silent too long: as good as gone
                data = b""
            if not data:  # the server went away: the connection has ended
                report.unreachable = bool(pending) and report.seen == 0
                break
            lines = (buffered + data).split(b"\n")
            buffered = lines.pop()
            if len(buffered) > LINE_LIMIT:  # no MCP server writes this: treat it as gone
                report.unreachable = bool(pending) and report.seen == 0
                break
            for line in lines:
                if capture:
                    report.captured.append(line + b"\n")
                try:
                    payload = frame(line)
                except mcp_notifications.NotificationParseError:
                    report.refused += 1
                    continue
                if payload is not None:
                    report.seen += 1
                    channel.offer(payload)
                elif (answered := _response_id(line)) in pending:
                    pending.discard(answered)
                    if answered == 0:
                        await _send(process, _after_initialize(calls, pending))
                    if not pending:  # every call answered: end the session; the server's EOF follows
                        report.answered = True
                        process.stdin.close()
    finally:
        if report.unreachable:
            channel.offer(relay.unreachable_frame())
        await channel.finish()
        await pump
        writer.close()
        await _stop(process)
    report.dropped = channel.outbox.dropped
    report.high_water_bytes = channel.outbox.high_water
    return report


def _after_initialize(calls: Sequence[tuple[str, dict[str, Any]]], pending: set[int]) -> bytes:
    """The initialized notification and every tool call, their ids added to ``pending``."""
    requests = [b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n']
    for request_id, (tool, arguments) in enumerate(calls, start=1):
        requests.append(_request(request_id, "tools/call", {
            "name": tool, "arguments": arguments, "_meta": {"progressToken": f"call-{request_id}"},
        }))
        pending.add(request_id)
    return b"".join(requests)


async def _send(process: asyncio.subprocess.Process, data: bytes) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(data)
        await process.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):  # it has gone; its EOF says so next
        pass


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.stdin is not None and not process.stdin.is_closing():
        process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), 5)
    except asyncio.TimeoutError:
        process.kill()
        await process.wait()


async def _demo() -> int:
    from consumer import consume  # noqa: PLC0415 - beside this file

    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        done.set_result(await consume(reader))
        writer.close()

    listener = await asyncio.start_server(accepted, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    report = await relay_server([sys.executable, str(SERVER)], writer)
    consumed = await done
    listener.close()
    print(f"relayed {report.relayed} of {report.seen} notifications, dropped {report.dropped}")
    for notification in consumed.notifications:
        print(" ", notification["method"], json.dumps(notification.get("params"))[:80])
    print("channel:", consumed.state.value)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(asyncio.run(_demo()))
