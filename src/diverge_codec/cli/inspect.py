"""``diverge-codec inspect``: list a capture's frames and check its sequence."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable
from typing import IO, Any

from .. import samples, stream
from .._model import ErrorData
from ..errors import DecodeError, RemoteProtocolError, StreamError
from ..sequence import McpNotificationsChecker, State, ToolsBeginChecker
from ._common import CHANNELS, UsageError, read_input

PROGRESS_EVERY = 50_000


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def summary(frame: Any) -> str:
    """One line about a frame. Secret values are always redacted; a notification's method is shown."""
    name = type(frame).__name__
    if name == "Begun":
        if not frame.secrets:
            return "no secrets"
        return "secrets: " + ", ".join(f"{n} ({m.value})" for n, m in frame.secrets.items())
    if name == "Active":
        return "an exchange is in flight"
    if name == "Inactive":
        if not frame.values:
            return "no rotating secrets"
        return "rotating: " + ", ".join(f"{n}=<redacted>" for n in frame.values)
    if name == "Notification":
        return f"method {frame.method}"
    error = frame.error
    if isinstance(error, ErrorData):
        return f"error {error.code}: {_clip(repr(error.message))}"
    extra = f" (+{len(error.details)} more)" if error.details else ""
    return f"error: {_clip(repr(error.message))}{extra}"


def inspect_payloads(payloads: Iterable[bytes | memoryview], channel: str, *, finished: bool = True,
                     allow_late_error: bool = False, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Decode and check a channel's payloads: the frames as rows, and the verdict."""
    codec = CHANNELS[channel]
    checker: ToolsBeginChecker | McpNotificationsChecker = (
        ToolsBeginChecker(codec) if channel == "tools-begin"
        else McpNotificationsChecker(codec, allow_error_after_notifications=allow_late_error)
    )
    rows: list[dict[str, Any]] = []
    verdict: dict[str, Any] | None = None
    for index, payload in enumerate(payloads):
        if progress and index and index % PROGRESS_EVERY == 0:
            progress(index)
        try:
            frame = codec.decode(payload)
        except DecodeError as error:
            verdict = {"valid": False, "kind": "undecodable", "index": index, "message": f"frame {index} could not be decoded: {error}"}
            break
        rows.append({"index": index, "tag": frame.tag.value, "variant": type(frame).__name__, "size": len(payload), "summary": summary(frame)})
        try:
            checker.frame(frame)
        except RemoteProtocolError as error:
            verdict = {"valid": False, "kind": "violation", "index": index, "rule": getattr(error.rule, "name", str(error.rule)), "message": str(error)}
            break
    if verdict is None:
        verdict = _finish(checker, finished)
    verdict["state"] = checker.state.value
    return {"channel": channel, "frames": rows, "verdict": verdict}


def _finish(checker: ToolsBeginChecker | McpNotificationsChecker, finished: bool) -> dict[str, Any]:
    if not finished:
        return {"valid": True, "kind": "open", "message": f"ok so far: still open ({checker.state.value})"}
    try:
        state = checker.finish()
    except RemoteProtocolError as error:
        return {"valid": False, "kind": "violation", "index": None, "rule": getattr(error.rule, "name", str(error.rule)), "message": str(error)}
    if state is State.UNREADABLE:
        return {"valid": True, "kind": "unreadable", "message": "the server could not read the request (a finish with nothing before it)"}
    if state is State.ENDED_WITH_ERROR:
        return {"valid": True, "kind": "error", "message": "ok: ended with an error, then the finish"}
    count = (f"{checker.periods} periods of activity" if isinstance(checker, ToolsBeginChecker)
             else f"{checker.notifications} notifications")
    return {"valid": True, "kind": "finished", "message": f"ok: finished after {count}"}


def render(report: dict[str, Any], title: str) -> str:
    lines = [f"{report['channel']}: {title} ({len(report['frames'])} frames)", "    #  tag  variant          size  summary"]
    for row in report["frames"]:
        lines.append(f"{row['index']:5d}  {row['tag']:3d}  {row['variant']:<14} {row['size']:6d}  {row['summary']}")
    lines.append(f"verdict: {report['verdict']['message']}")
    return "\n".join(lines)


def _hex_payloads(data: bytes) -> list[bytes]:
    payloads = []
    for number, line in enumerate(data.decode("ascii", errors="replace").splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            payloads.append(bytes.fromhex(line))
        except ValueError:
            raise UsageError(f"line {number} is not hex") from None
    return payloads


def _progress(stderr: IO[str]) -> Callable[[int], None] | None:
    if not stderr.isatty():
        return None
    return lambda count: print(f"\r{count} frames…", end="", file=stderr, flush=True)


def cmd_inspect(args: argparse.Namespace) -> int:
    if args.file is None:
        reports = [(name, inspect_payloads(make(), name), "built-in sample session") for name, make in samples.SESSIONS.items()
                   if args.channel in (None, name)]
    else:
        if args.channel is None:
            raise UsageError("--channel is required with a FILE")
        data = read_input(args.file)
        verdict_of_stream = None
        if args.hex:
            payloads: list[Any] = _hex_payloads(data)
        else:
            try:
                payloads = stream.split_records(data, max_record=args.max_record)
            except StreamError as error:
                payloads, verdict_of_stream = stream.split_records(data[: _whole_prefix(data, args.max_record)]), str(error)
        report = inspect_payloads(payloads, args.channel, finished=not args.open and verdict_of_stream is None,
                                  allow_late_error=args.allow_late_error, progress=_progress(sys.stderr))
        if verdict_of_stream is not None:
            report["verdict"] = {"valid": False, "kind": "stream", "message": f"invalid stream: {verdict_of_stream}",
                                 "state": report["verdict"]["state"]}
        reports = [(args.channel, report, args.file)]
    valid = all(report["verdict"]["valid"] for _, report, _ in reports)
    if args.json:
        print(json.dumps([report for _, report, _ in reports] if args.file is None else reports[0][1], indent=2))
    else:
        print("\n\n".join(render(report, title) for _, report, title in reports))
    return 0 if valid else 1


def _whole_prefix(data: bytes, limit: int) -> int:
    """How many leading bytes of a broken stream are whole records: those are still inspected."""
    at = 0
    while len(data) - at >= 4:
        length = int.from_bytes(data[at:at + 4], "big")
        if length > limit or len(data) - at - 4 < length:
            break
        at += 4 + length
    return at


def register(commands: Any) -> None:
    inspect = commands.add_parser("inspect", help="list a capture's frames and check its sequence")
    inspect.add_argument("file", nargs="?", metavar="FILE|-", help="a capture; none: the built-in sample sessions")
    inspect.add_argument("--channel", choices=list(CHANNELS), help="the channel the capture is of")
    inspect.add_argument("--hex", action="store_true", help="one payload a line, in hex, instead of the stream envelope")
    inspect.add_argument("--json", action="store_true", help="machine-readable output")
    inspect.add_argument("--open", action="store_true", help="the capture stops before the finish")
    inspect.add_argument("--allow-late-error", action="store_true", help="mcp-notifications: accept one Error after notifications")
    inspect.add_argument("--max-record", type=int, default=stream.DEFAULT_MAX_RECORD, help="largest record accepted, in bytes")
    inspect.set_defaults(run=cmd_inspect)
