"""A small MCP server on the standalone ``fastmcp`` package (4.x, itself on mcp 2.x), over stdio.

Its own API first (``Context.log`` at every level, ``Context.report_progress``, a tool
hidden and shown again for the session, which fastmcp announces itself), then the session's senders for
the kinds fastmcp has no helper for. ``flood`` sends many logging messages. Runs in
its own venv with ``fastmcp==4.2.3`` (``.ci/peers`` makes it), never the project's.
"""

from __future__ import annotations

from fastmcp import Context, FastMCP

server = FastMCP("diverge-codec-fastmcp-peer")

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@server.tool
async def emit_all(ctx: Context) -> str:
    """One of each notification kind: fastmcp's helpers, then the session's."""
    await ctx.report_progress(0, 4, "starting")
    for depth, level in enumerate(LEVELS):
        await ctx.log(f"{level} é ✓ 😀", level=level, logger_name="fastmcp-peer", extra={"depth": depth, "list": [1, 2.5, None, True]})
    await ctx.report_progress(1, 4)
    await ctx.disable_components(names={"added"})  # fastmcp announces tool, resource and prompt
    await ctx.enable_components(names={"added"})  # list changes itself, to this session
    session = ctx.session
    await session.send_resource_updated("file:///srv/data/report.txt")
    await session.send_log_message(level="info", data="a plain string")
    await session.send_elicit_complete("elicitation-1")
    await ctx.report_progress(4, 4, "done")
    return "sent"


@server.tool
def added() -> str:
    """A tool ``emit_all`` hides and shows again for its session."""
    return "added"


@server.tool
async def flood(ctx: Context, count: int, size: int = 64, every: int = 0) -> str:
    """``count`` logging messages of about ``size`` bytes of data each; progress every ``every``."""
    filler = "x" * size
    for index in range(count):
        await ctx.info(f"{index} {filler}")
        if every and (index + 1) % every == 0:
            await ctx.report_progress(index + 1, count)
    return "flooded"


if __name__ == "__main__":
    server.run("stdio")
