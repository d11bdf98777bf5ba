"""``diverge-codec encode``: JSON Lines describing frames in, a capture out."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .. import mcp_notifications, samples, tools_begin
from .._model import ErrorData, ProviderError
from ._common import CHANNELS, UsageError, read_input


def frame_from_line(channel: str, line: dict[str, Any]) -> Any:
    """One JSON Lines description into a frame of the chosen implementation."""
    variant = line.get("variant")
    if channel == "tools-begin":
        tb = tools_begin
        if variant == "begun":
            return tb.Begun(line.get("secrets", {}))
        if variant == "error":
            error = dict(line.get("error", {}))
            return tb.Error(ProviderError(error.pop("message", ""), **error))
        if variant == "active":
            return tb.ACTIVE
        if variant == "inactive":
            return tb.Inactive(line.get("values", {}))
        raise UsageError(f"unknown tools-begin variant {variant!r}: expected begun, error, active or inactive")
    mn = mcp_notifications
    if variant == "notification":
        return mn.Notification(line.get("notification", {}))
    if variant == "error":
        error = line.get("error", {})
        return mn.Error(ErrorData(error.get("code", 0), error.get("message", ""), error.get("data")))
    raise UsageError(f"unknown mcp-notifications variant {variant!r}: expected notification or error")


def cmd_encode(args: argparse.Namespace) -> int:
    data = read_input(args.file)
    codec = CHANNELS[args.channel]
    payloads = []
    for number, text in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
            if not isinstance(line, dict):
                raise UsageError("expected a JSON object")
            payloads.append(codec.encode(frame_from_line(args.channel, line)))
        except (ValueError, TypeError, UsageError) as error:
            reason = error.msg if isinstance(error, json.JSONDecodeError) else str(error)
            raise UsageError(f"line {number}: {reason}") from None
    if args.hex:
        output = "".join(payload.hex() + "\n" for payload in payloads).encode()
    else:
        output = samples.capture(payloads)
    if args.output in (None, "-"):
        sys.stdout.buffer.write(output)
        sys.stdout.buffer.flush()
    else:
        try:
            with open(args.output, "wb") as file:
                file.write(output)
        except OSError as error:
            raise UsageError(f"cannot write {args.output}: {error.strerror or error}") from None
    return 0


def register(commands: Any) -> None:
    encode = commands.add_parser("encode", help="JSON Lines describing frames in, a capture out")
    encode.add_argument("file", nargs="?", default="-", metavar="FILE|-")
    encode.add_argument("--channel", choices=list(CHANNELS), required=True)
    encode.add_argument("--hex", action="store_true", help="write one payload a line in hex")
    encode.add_argument("-o", "--output", help="where to write (default: standard output)")
    encode.set_defaults(run=cmd_encode)
