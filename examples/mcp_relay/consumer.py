"""The consumer: reads a mcp-notifications channel off a socket, checks it, validates it.

Every record is decoded, fed to the sequence checker (which raises on a broken
sequence), and each notification is read into the MCP SDK's own model, which raises if
the SDK would not accept it. A method the SDK has no model for (a custom one; the
channel carries every notification) is read into its generic ``Notification`` and
counted, not refused.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from diverge_codec import mcp_notifications, mcp_sdk, stream
from diverge_codec.sequence import McpNotificationsChecker, State


@dataclass
class Consumed:
    """What arrived: each notification as decoded, its SDK model, the methods the SDK does not know,
    the error if one came, the end state."""

    notifications: list[dict[str, Any]] = field(default_factory=list)
    models: list[Any] = field(default_factory=list)
    unknown_methods: Counter[str] = field(default_factory=Counter)
    error: Any = None
    state: State = State.NOT_BEGUN


async def consume(reader: asyncio.StreamReader, *, chunk: int = 1 << 16) -> Consumed:
    """Read the channel to its finish, ``chunk`` bytes at a time."""
    consumed = Consumed()
    records = stream.RecordReader()
    checker = McpNotificationsChecker()
    while data := await reader.read(chunk):
        for payload in records.feed(data):
            frame = checker.payload(payload)
            if isinstance(frame, mcp_notifications.Notification):
                consumed.notifications.append(frame.notification)
                consumed.models.append(mcp_sdk.server_notification(frame))
                if frame.method not in mcp_sdk.MODELED_METHODS:
                    consumed.unknown_methods[frame.method] += 1
            else:
                consumed.error = frame.error
    records.close()  # a stream that stopped inside a record raises here
    consumed.state = checker.finish()
    return consumed
