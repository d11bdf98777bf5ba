"""What the stdlib peers share: read a JSON-RPC line, write one as the TypeScript SDK does.

They write ``{"method"|"result":…,"jsonrpc":"2.0"[,"id":…]}`` (``jsonrpc`` after the
body, as ``{...message, jsonrpc: "2.0"}`` in the TS SDK puts it), compact, one per line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL_VERSION = "2025-11-25"


def read_message() -> dict[str, Any] | None:
    """The next JSON object on stdin, None at EOF; lines that are not one are skipped."""
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            return message
    return None


def write(message: dict[str, Any]) -> None:
    """One message on stdout, ``jsonrpc`` after the body, flushed."""
    body = {key: value for key, value in message.items() if key != "id"}
    body["jsonrpc"] = "2.0"
    if "id" in message:
        body["id"] = message["id"]
    sys.stdout.buffer.write(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")
    sys.stdout.buffer.flush()


def initialize_result(request: dict[str, Any], name: str) -> dict[str, Any]:
    """The answer to ``initialize``: the client's protocol version if given, logging declared."""
    version = request.get("params", {}).get("protocolVersion", PROTOCOL_VERSION)
    return {"id": request["id"], "result": {
        "protocolVersion": version, "capabilities": {"logging": {}, "tools": {}},
        "serverInfo": {"name": name, "version": "1.0.0"}}}


def log(level: str, data: Any) -> None:
    """A ``notifications/message`` on stdout."""
    write({"method": "notifications/message", "params": {"level": level, "data": data}})
