"""What every subcommand shares: the channels by name, the usage error, reading an input."""

from __future__ import annotations

import sys

from .. import mcp_notifications, tools_begin

CHANNELS = {"tools-begin": tools_begin, "mcp-notifications": mcp_notifications}


class UsageError(Exception):
    """Input the tool cannot read: reported as one line, exit 2."""


def read_input(name: str) -> bytes:
    """The whole of a file, or of standard input for ``-``."""
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        with open(name, "rb") as file:
            return file.read()
    except OSError as error:
        raise UsageError(f"cannot read {name}: {error.strerror or error}") from None
