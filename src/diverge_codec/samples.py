"""Built-in sample sessions of both channels, as capture files in the stream envelope.

They let ``diverge-codec inspect`` run right after install, and give tests and
benchmarks a realistic session. The secret values in them are made up.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import mcp_notifications, stream, tools_begin
from ._model import ErrorData, ProviderError


def tools_begin_session() -> list[bytes]:
    """Begun with a fixed and a rotating secret, then two periods of activity."""
    tb = tools_begin
    frames: list[tools_begin.Frame] = [
        tb.Begun({"api_key": "fixed", "session": "rotating"}),
        tb.ACTIVE,
        tb.Inactive({"session": {"token": "sample-token-1", "expires": 1767225600}}),
        tb.ACTIVE,
        tb.Inactive({"session": {"token": "sample-token-2", "expires": 1767229200}}),
    ]
    return [tb.encode(frame) for frame in frames]


def tools_begin_refused() -> list[bytes]:
    """A begin whose arguments the container refused."""
    return [tools_begin.encode(tools_begin.Error(ProviderError("the image does not take argument 'region'", argument="region")))]


def mcp_notifications_session() -> list[bytes]:
    """A tools list change, progress with an int and a string token, and logging at two levels."""
    mn = mcp_notifications
    bodies: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 50, "total": 100}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "job-7", "progress": 0.5, "message": "halfway"}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "logger": "tools", "data": {"event": "started"}}},
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "error", "data": ["disk", {"free": 0}]}},
    ]
    return [mn.encode(mn.Notification(body)) for body in bodies]


def mcp_notifications_unreachable() -> list[bytes]:
    """The client of the container cannot be reached: one Error, then the finish."""
    return [mcp_notifications.encode(mcp_notifications.Error(ErrorData(-32000, "the container's client cannot be reached")))]


SESSIONS = {"tools-begin": tools_begin_session, "mcp-notifications": mcp_notifications_session}


def capture(payloads: list[bytes]) -> bytes:
    """The payloads as a capture file in the stream envelope."""
    out = bytearray()
    stream.write_records(out, payloads)
    return bytes(out)


def notification_stream() -> Iterator[bytes]:
    """Notifications without end, as a live relay would send them: progress, and a 2 KB log line every tenth.

    For tests and benchmarks of streaming (a capture of any length, an input that never ends).
    """
    mn = mcp_notifications
    log = mn.encode(mn.Notification({"jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": "info", "logger": "app", "data": {"lines": [f"line {i} of the log, with some words in it" for i in range(38)]}}}))
    count = 0
    while True:
        count += 1
        if count % 10 == 0:
            yield log
        else:
            yield mn.encode(mn.Notification({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": "tok-1234567890", "progress": count, "total": 1 << 40, "message": "Downloading layer"}}))
