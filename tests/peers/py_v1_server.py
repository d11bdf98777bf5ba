"""A small MCP server on the Python SDK's v1 line (mcp 1.x, ``FastMCP``), over stdio.

The same tools as ``examples/mcp_relay/server.py`` (mcp 2.x), so the two lines' output
can be compared: ``emit_all`` sends one of each notification kind the session can send,
``flood`` many logging messages, ``emit_surrogate`` tries a log message holding a lone
surrogate (Python's ``surrogateescape`` makes such strings from undecodable bytes).
Runs in its own venv with ``mcp==1.30.0`` (``.ci/peers`` makes it), never the project's.
"""

from __future__ import annotations

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("diverge-codec-v1-peer", log_level="ERROR")

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@server.tool()
async def emit_all(ctx: Context) -> str:
    """One of each notification kind the server side can send on a handshake session."""
    session = ctx.session
    await ctx.report_progress(0, 4, "starting")
    await session.send_tool_list_changed()
    await session.send_resource_list_changed()
    await session.send_prompt_list_changed()
    await session.send_resource_updated("file:///srv/data/report.txt")
    for depth, level in enumerate(LEVELS):
        data = {"level": level, "nested": {"list": [1, 2.5, None, True, "é ✓ 😀"], "depth": depth}}
        await session.send_log_message(level=level, data=data, logger="v1-peer")
    await session.send_log_message(level="info", data="a plain string")
    await ctx.report_progress(1, 4)
    await ctx.info("through Context.info")
    await session.send_progress_notification("job-α", 0.5)
    await session.send_elicit_complete("elicitation-1")
    await ctx.report_progress(4, 4, "done")
    return "sent"


@server.tool()
async def flood(ctx: Context, count: int, size: int = 64, every: int = 0) -> str:
    """``count`` logging messages of about ``size`` bytes of data each; progress every ``every``."""
    filler = "x" * size
    for index in range(count):
        await ctx.session.send_log_message(level="info", data={"index": index, "filler": filler})
        if every and (index + 1) % every == 0:
            await ctx.report_progress(index + 1, count)
    return "flooded"


@server.tool()
async def emit_surrogate(ctx: Context) -> str:
    """A log message holding a lone surrogate, as ``b"\\xff".decode("utf-8", "surrogateescape")`` makes."""
    await ctx.session.send_log_message(level="info", data=b"name-\xff".decode("utf-8", "surrogateescape"))
    return "sent"


if __name__ == "__main__":
    server.run("stdio")
