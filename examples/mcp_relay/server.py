"""A small MCP server built with the SDK's MCPServer (FastMCP in mcp 1.x), over stdio.

Its tools make it send every kind of server notification it can, so a relay in front
of it has something real to carry. ``--exit-at-once`` makes it a server that cannot be
reached: it exits before reading anything.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

server = MCPServer("diverge-codec-demo", log_level="ERROR")

CREATED = "2025-11-25T00:00:00Z"

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@server.tool()
async def emit_all(ctx: Context) -> str:
    """One of each notification kind the server side can send on a handshake session."""
    session = ctx.session
    await session.send_tool_list_changed()
    await session.send_resource_list_changed()
    await session.send_prompt_list_changed()
    await session.send_resource_updated("file:///srv/data/report.txt")
    for depth, level in enumerate(LEVELS):
        data = {"level": level, "nested": {"list": [1, 2.5, None, True, "é ✓"], "depth": depth}}
        await session.send_log_message(level=level, data=data, logger="demo")
    await session.send_log_message(level="info", data="a plain string")
    await session.send_progress_notification(7, 0.25, total=1.0, message="int token")
    await session.send_progress_notification("job-α", 0.5)
    await ctx.report_progress(3, 10, "the call's own token")
    await session.send_elicit_complete("elicitation-1")
    await session.send_notification(types.CancelledNotification(
        params=types.CancelledNotificationParams(request_id="client-request-9", reason="superseded")))
    await session.send_notification(types.TaskStatusNotification(params=types.TaskStatusNotificationParams(
        task_id="task-1", status="working", created_at=CREATED, last_updated_at=CREATED, ttl=60000)))
    custom = types.Notification[dict[str, Any], str]  # the bare Notification's params keep only _meta
    await session.send_notification(custom(method="notifications/demo/custom", params={"any": ["thing"]}))
    return "sent"


@server.tool()
async def flood(ctx: Context, count: int, size: int = 64) -> str:
    """``count`` logging messages of about ``size`` bytes of data each, as fast as it can."""
    filler = "x" * size
    for index in range(count):
        await ctx.session.send_log_message(level="info", data={"index": index, "filler": filler})
    return "flooded"


if __name__ == "__main__":
    if "--exit-at-once" in sys.argv:
        sys.exit(3)
    warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging is deprecated at 2026-07-28; we speak 2025-11-25
    server.run("stdio")
