"""Regenerates ``data/mcp_server_capture.jsonl``: what the example MCP server writes for 25 ``emit_all`` calls.

Run from the repository root: ``python benchmarks/capture_server.py``. The relay
benchmark replays this file, so the server's own cost stays out of its figures.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples" / "mcp_relay"))

from relay import SERVER, relay_server  # noqa: E402

CAPTURE = Path(__file__).with_name("data") / "mcp_server_capture.jsonl"


async def _capture() -> list[bytes]:
    _, writer = await asyncio.open_connection(*(await _sink()))
    report = await relay_server([sys.executable, str(SERVER)], writer, [("emit_all", {})] * 25, capture=True)
    return report.captured


async def _sink() -> tuple[str, int]:
    async def discard(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(1 << 16):
            pass
        writer.close()

    listener = await asyncio.start_server(discard, "127.0.0.1", 0)
    return listener.sockets[0].getsockname()[:2]


if __name__ == "__main__":
    lines = asyncio.run(_capture())
    CAPTURE.write_bytes(b"".join(lines))
    print(f"{CAPTURE}: {len(lines)} lines")
