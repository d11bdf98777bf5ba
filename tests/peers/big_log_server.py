"""An MCP stdio server that writes one large logging notification, then ends at stdin EOF.

It answers ``initialize``; after ``notifications/initialized`` it writes one
``notifications/message`` whose data is a string of ``--size`` bytes (default 2 MiB:
above the relay's default 1 MiB outbox, below the 16 MiB line limit), then one small
one, and answers ``tools/call`` with an empty result. Stdlib only.
"""

from __future__ import annotations

import argparse

from _stdio import initialize_result, log, read_message, write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=2 << 20)
    args = parser.parse_args()
    while (message := read_message()) is not None:
        method = message.get("method")
        if method == "initialize" and "id" in message:
            write(initialize_result(message, "big-log"))
        elif method == "notifications/initialized":
            log("info", "x" * args.size)
            log("info", "after the big one")
        elif "id" in message and method is not None:
            write({"id": message["id"], "result": {"content": []}})


if __name__ == "__main__":
    main()
