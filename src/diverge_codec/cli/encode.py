"""diverge-codec encode: JSON Lines describing frames in, a capture out.

Every member of a line must have a place in the frame: an unknown, misplaced or
misspelled member, or one of the wrong type, is refused naming the member, never
written as an empty or default frame. Lines are read and written one at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from typing import IO, Any

from .. import mcp_notifications, stream, tools_begin
from .._model import ErrorData, ProviderError
from ._common import CHANNELS, CHUNK, chunks
from ._safe import UsageError, create_private, escape

LONGEST_LINE = 64 * 1024 * 1024

# variant -> (members it must have, members it may have), besides "variant"
MEMBERS: dict[str, dict[str, tuple[frozenset[str], frozenset[str]]]] = {
    "tools-begin": {
        "begun": (frozenset({"secrets"}), frozenset()),
        "error": (frozenset({"error"}), frozenset()),
        "active": (frozenset(), frozenset()),
        "inactive": (frozenset({"values"}), frozenset()),
    },
    "mcp-notifications": {
        "notification": (frozenset({"notification"}), frozenset()),
        "error": (frozenset({"error"}), frozenset()),
    },
}
OBJECT_MEMBERS = frozenset({"secrets", "error", "values", "notification"})


def _member(name: str) -> str:
    return f"member '{escape(name)}'"


def _check_members(where: str, line: dict[str, Any], required: frozenset[str], optional: frozenset[str]) -> None:
    for name in line:
        if name not in required and name not in optional:
            raise UsageError(f"{where} has no {_member(name)}")
    for name in sorted(required - line.keys()):
        raise UsageError(f"{where} needs {_member(name)}")


def frame_from_line(channel: str, line: dict[str, Any]) -> Any:
    """One JSON Lines description into a frame of the chosen implementation."""
    variant = line.get("variant")
    variants = MEMBERS[channel]
    if not isinstance(variant, str) or variant not in variants:
        what = "no member 'variant'" if variant is None else "an unknown variant in member 'variant'"
        raise UsageError(f"{what}: a {channel} line's is one of {', '.join(variants)}")
    where = f"a {variant} line"
    required, optional = variants[variant]
    _check_members(where, {k: v for k, v in line.items() if k != "variant"}, required, optional)
    for name in OBJECT_MEMBERS & line.keys():
        if not isinstance(line[name], dict):
            raise UsageError(f"{_member(name)} must be a JSON object, not {_json_type(line[name])}")
    if channel == "tools-begin":
        tb = tools_begin
        if variant == "begun":
            return tb.Begun(line["secrets"])
        if variant == "error":
            details = dict(line["error"])
            if not isinstance(details.pop("message", None), str):
                raise UsageError(f"{_member('error')} needs a string member 'message'")
            return tb.Error(ProviderError(line["error"]["message"], **details))
        if variant == "active":
            return tb.ACTIVE
        return tb.Inactive(line["values"])
    mn = mcp_notifications
    if variant == "notification":
        return mn.Notification(line["notification"])
    error = line["error"]
    _check_members(f"{_member('error')} of an error line", error, frozenset({"code", "message"}), frozenset({"data"}))
    if type(error["code"]) is not int:
        raise UsageError(f"{_member('code')} must be an integer, not {_json_type(error['code'])}")
    if not isinstance(error["message"], str):
        raise UsageError(f"{_member('message')} must be a string, not {_json_type(error['message'])}")
    return mn.Error(ErrorData(error["code"], error["message"], error.get("data")))


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def lines(name: str) -> Iterator[tuple[int, bytes]]:
    """Numbered lines of a file or standard input, one at a time; a line may not outgrow LONGEST_LINE."""
    pending = bytearray()
    number = 0
    for chunk in chunks(name):
        pending += chunk
        if b"\n" not in chunk:
            if len(pending) > LONGEST_LINE:
                raise UsageError(f"line {number + 1} is longer than {LONGEST_LINE} bytes")
            continue
        *whole, rest = pending.split(b"\n")
        pending = bytearray(rest)
        for line in whole:
            number += 1
            yield number, bytes(line)
    if pending:
        yield number + 1, bytes(pending)


def payload_of(channel: str, number: int, raw: bytes) -> bytes | None:
    """The payload a line describes (None for a blank line); UsageError naming the line otherwise."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"line {number}: not UTF-8") from None
    if not text.strip():
        return None
    try:
        line = json.loads(text)
        if not isinstance(line, dict):
            raise UsageError(f"expected a JSON object, not {_json_type(line)}")
        payload: bytes = CHANNELS[channel].encode(frame_from_line(channel, line))
        return payload
    except json.JSONDecodeError as error:
        raise UsageError(f"line {number}: not JSON: {error.msg} at column {error.colno}") from None
    except RecursionError:
        raise UsageError(f"line {number}: nested too deeply") from None
    except (ValueError, TypeError, UsageError) as error:  # the codec's messages name members and types, never values
        raise UsageError(f"line {number}: {escape(str(error))}") from None


def cmd_encode(args: argparse.Namespace) -> int:
    out: IO[bytes]
    if args.output in (None, "-"):
        out, path = sys.stdout.buffer, None
    else:
        path = args.output
        out = open(create_private(path), "wb", buffering=CHUNK)  # noqa: SIM115 - closed (and removed on failure) below
    try:
        for number, raw in lines(args.file):
            payload = payload_of(args.channel, number, raw)
            if payload is not None:
                out.write(payload.hex().encode() + b"\n" if args.hex else stream.record(payload))
        out.flush()
    except BaseException:
        if path is not None:
            out.close()
            os.unlink(path)
        raise
    if path is not None:
        try:
            out.close()
        except OSError as error:
            raise UsageError(f"cannot write {escape(path)}: {error.strerror or type(error).__name__}") from None
    return 0


EPILOG = """\
input: one JSON object a line, "variant" naming the frame, and exactly its members:
  tools-begin        {"variant": "begun", "secrets": {"NAME": "fixed" | "rotating", ...}}
                     {"variant": "error", "error": {"message": "...", OTHER: ...}}
                     {"variant": "active"}
                     {"variant": "inactive", "values": {"NAME": VALUE, ...}}
  mcp-notifications  {"variant": "notification", "notification": {"method": "...", ...}}
                     {"variant": "error", "error": {"code": INT, "message": "...", "data": ...}}
Blank lines are skipped. A line that cannot be placed ends the run, exit 2, naming the
line and the member; with -o the file is then removed.

examples:
  echo '{"variant": "begun", "secrets": {"k": "rotating"}}' | diverge-codec encode --channel tools-begin > capture.bin
  diverge-codec encode frames.jsonl --channel mcp-notifications --hex
"""


def register(commands: Any) -> None:
    encode = commands.add_parser("encode", help="JSON Lines describing frames in, a capture out",
                                 description="JSON Lines describing frames in, a capture (the stream envelope) out.", epilog=EPILOG)
    encode.add_argument("file", nargs="?", default="-", metavar="FILE|-", help="the JSON Lines (default: standard input)")
    encode.add_argument("--channel", choices=list(CHANNELS), required=True)
    encode.add_argument("--hex", action="store_true", help="write one payload a line in hex")
    encode.add_argument("-o", "--output", metavar="FILE", help="where to write (default: standard output): a new file, mode 0600, "
                        "replacing a file there; a symbolic link or a directory there is refused")
    encode.set_defaults(run=cmd_encode)
