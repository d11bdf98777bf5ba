"""The relay: an MCP server's notifications onto a mcp-notifications channel over a socket.

A proxy starts the container's MCP server and relays what it sends with
``diverge_codec.relay``: the handshake, the tool calls it is given, every
notification framed for the channel (see ``diverge_codec.relay``), the shutdown. The
channel here is a loopback socket to ``consumer.py``; closing it is the finish.

The same from a shell, for any stdio server::

    diverge-codec relay --call emit_all --until-answered -- python server.py | diverge-codec inspect --channel mcp-notifications -

Run ``python examples/mcp_relay/relay.py`` for a demonstration against ``server.py``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path
from typing import Any

from diverge_codec.relay import RelayOptions, relay

SERVER = Path(__file__).with_name("server.py")


async def relay_to_socket(command: list[str], options: RelayOptions, consume: Any, *,
                          small_buffers: bool = False) -> tuple[Any, Any]:
    """Relay ``command`` to ``consume(reader)`` over a loopback socket: (the relay's report, what was consumed).

    ``small_buffers`` shrinks the socket's buffers (64 KiB each way, 16 KiB in the
    transport), so a slow consumer is absorbed by the outbox rather than by the kernel.
    """
    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if small_buffers:
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        try:
            done.set_result(await consume(reader))
        except Exception as failure:  # the caller sees the consumer's failure, not a hang
            done.set_exception(failure)
        writer.close()

    listener = await asyncio.start_server(accepted, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    if small_buffers:
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        writer.transport.set_write_buffer_limits(high=16384)
    report = await relay(command, writer, options)
    consumed = await done
    listener.close()
    await listener.wait_closed()
    return report, consumed


async def _demo() -> int:
    from consumer import consume  # noqa: PLC0415 - beside this file

    # The demo server sends every kind a 2025 handshake session can carry (elicitation complete, task status): that era.
    options = RelayOptions(calls=[("emit_all", {})], until_answered=True, protocol="2025-11-25")
    report, consumed = await relay_to_socket([sys.executable, str(SERVER)], options, consume)
    print(f"relayed {report.relayed} of {report.seen} notifications, dropped {sum(report.dropped.values())}")
    for notification in consumed.notifications:
        print(" ", notification["method"], json.dumps(notification.get("params"))[:80])
    if consumed.unknown_methods:
        print("unknown methods:", dict(consumed.unknown_methods))
    print("channel:", consumed.state.value)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    raise SystemExit(asyncio.run(_demo()))
