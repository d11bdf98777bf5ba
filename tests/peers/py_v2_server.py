"""A small MCP server on mcp 2.x's MCPServer, over stdio: dual-era as ``MCPServer.run`` serves
it (the client's first request picks the era), modern-only with ``--modern-only``.

Its tools send what a 2026-07-28 server can: progress and log messages on the call's own
response (the log only when the request opted in with ``io.modelcontextprotocol/logLevel``),
the list changes and a resource update (on a ``subscriptions/listen`` stream; on a 2025
session the old way), an ``input_required`` answer, and ``routed``, whose schema marks two parameters
with ``x-mcp-header`` (mirrored over HTTP). mcp 2.3 has no public modern-only
switch on stdio: ``--modern-only`` drives the SDK's own modern loop (a private name, pinned by
the [mcp] extra's version range), which answers ``initialize`` with -32022.

With ``--http PORT`` it serves Streamable HTTP on 127.0.0.1:PORT/mcp instead (``MCPServer.run``'s, dual-era:
a 2026-07-28 POST is served statelessly, ``initialize`` opens a 2025 session; there is no modern-only switch).

    python tests/peers/py_v2_server.py [--modern-only | --http PORT]
"""

from __future__ import annotations

import sys
import warnings
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import InputRequiredResult
from pydantic import Field

REPORT = "file:///srv/data/report.txt"
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
MODERN = "2026-07-28"

server = MCPServer("diverge-codec-py-v2-peer", log_level="ERROR")


@server.resource(REPORT, mime_type="text/plain")
def report() -> str:
    """A resource whose updates the server announces."""
    return "report"


@server.prompt()
def greet() -> str:
    """A prompt, so prompt list changes are real."""
    return "hello"


@server.tool()
async def emit_all(ctx: Context) -> str:
    """Progress, a log message at each level, every change notification."""
    await ctx.report_progress(0, 3, "starting")
    for depth, level in enumerate(LEVELS):
        await ctx.log(level, {"level": level, "nested": {"list": [1, 2.5, None, True, "é ✓"], "depth": depth}},
                      logger_name="py-v2-peer")
    await ctx.report_progress(1, 3)
    if ctx.protocol_version == MODERN:
        await ctx.notify_tools_changed()
        await ctx.notify_prompts_changed()
        await ctx.notify_resources_changed()
        await ctx.notify_resource_updated(REPORT)
    else:
        session = ctx.session
        await session.send_tool_list_changed()
        await session.send_prompt_list_changed()
        await session.send_resource_list_changed()
        await session.send_resource_updated(REPORT)
    await ctx.report_progress(2, 3, "changes sent")
    return "sent"


@server.tool()
async def routed(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
                 tier: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Tier"})], query: str) -> str:
    """Echoes its region; its schema marks region and tier with x-mcp-header (over HTTP a client mirrors them into
    Mcp-Param-Region and Mcp-Param-Tier, and the SDK answers a call without them 400 -32020)."""
    return f"{region} {tier}"


@server.tool()
async def ask() -> InputRequiredResult:
    """Answers input_required (state only: the relay declares no capability to ask with)."""
    return InputRequiredResult(request_state="ask-1")


async def modern_only() -> None:
    """The SDK's modern loop behind the same context-carrying stream its dual-era loop hands it."""
    import contextvars

    from mcp.server.runner import _serve_modern_stream
    from mcp.server.stdio import stdio_server
    from mcp.shared._context_streams import ContextReceiveStream

    lowlevel = server._lowlevel_server
    send, receive = anyio.create_memory_object_stream(16)

    async def relay(read_stream) -> None:
        async with send:
            async for item in read_stream:
                await send.send((contextvars.copy_context(), item))

    async with stdio_server() as (read_stream, write_stream), lowlevel.lifespan(lowlevel) as state:
        async with anyio.create_task_group() as group:
            group.start_soon(relay, read_stream)
            try:
                await _serve_modern_stream(lowlevel, ContextReceiveStream(receive), write_stream, lifespan_state=state,
                                           raise_exceptions=False)
            finally:
                await write_stream.aclose()


if __name__ == "__main__":
    warnings.simplefilter("ignore", MCPDeprecationWarning)  # logging is deprecated at 2026-07-28, still served
    if "--modern-only" in sys.argv:
        anyio.run(modern_only)
    elif "--http" in sys.argv:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run("stdio")
