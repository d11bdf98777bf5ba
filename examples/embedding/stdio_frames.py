"""Relay a stdio MCP server inside your program and act on each notification as it comes.

``python examples/embedding/stdio_frames.py [--call NAME] -- COMMAND [ARG...]`` starts the server, makes the
call, prints each notification's method (and progress, where it is one), then the call's answer and the report.
Leaving the ``async with`` block, normally or by Ctrl-C, ends the server and whatever it left behind.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Mapping

from diverge_codec.mcp_notifications import Notification
from diverge_codec.relay import Command, Relay, RelayOptions


async def main(command: list[str], call: str | None) -> int:
    options = RelayOptions(calls=[(call, {})] if call else [], until_answered=call is not None)
    async with Relay(Command(command), options) as relay:
        async for frame in relay:
            if not isinstance(frame, Notification):  # the one Error frame: the server was never reached
                print("unreachable:", frame.error.message)
                continue
            notification = frame.notification  # a read-only mapping: method, params
            params = notification.get("params")
            progress = params.get("progress") if isinstance(params, Mapping) else None
            print(notification["method"], "" if progress is None else f"progress={progress}")
        if call:
            answer = await relay.answer(f"tools/call {call}")
            print("answer:", json.dumps(answer.message, sort_keys=True))
    print("report:", json.dumps(relay.report.as_dict()["calls"]), "relayed", relay.report.relayed)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--call")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    raise SystemExit(asyncio.run(main(command, args.call)))
