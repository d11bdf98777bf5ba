"""Relay every server of an ``mcpServers`` config in your program, each with its own consumer, on one loop.

``python examples/embedding/fleet.py CONFIG.json [--call NAME]``: each server (``command``/``args``/``env``/``cwd``,
or ``url``/``headers``) is one ``Relay``; they run side by side, each with its own bounded outbox, so one
that floods or fails delays none of the others. Prints a line per server. (``diverge-codec relay --config
FILE --out-dir DIR`` does the same from a shell, each channel to its own file.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

from diverge_codec.relay import Command, Relay, RelayOptions, Remote


def server(entry: dict[str, Any]) -> Command | Remote:
    if "url" in entry:
        return Remote(entry["url"], list(entry.get("headers", {}).items()))
    return Command([entry["command"], *entry.get("args", [])], {**os.environ, **entry.get("env", {})}, entry.get("cwd"))


async def relay_one(name: str, entry: dict[str, Any], options: RelayOptions) -> str:
    async with Relay(server(entry), options) as relay:
        count = 0
        async for _ in relay:  # act on each frame here
            count += 1
    return f"{name}: {count} notifications, {relay.report.dropped['backpressure']} dropped"


async def main(path: str, call: str | None) -> int:
    with open(path, encoding="utf-8") as file:
        servers = json.load(file)["mcpServers"]
    options = RelayOptions(calls=[(call, {})] if call else [], until_answered=call is not None)
    for line in await asyncio.gather(*(relay_one(name, entry, options) for name, entry in servers.items())):
        print(line)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config")
    parser.add_argument("--call")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.config, args.call)))
