"""diverge-codec inspect: list a capture's frames and check its sequence, as the capture arrives.

The capture is read a chunk at a time and each frame is checked and printed as it
comes; only the checker's state and running counts are kept, so memory is bounded by
the largest record plus a constant, and an endless input (a pipe from a live relay) is
processed live. Reading stops at the first frame that decides the verdict, at
``--max-frames``, or on SIGINT/SIGTERM (the summary is still written).
"""

from __future__ import annotations

import argparse
import os
import shlex
import stat
import signal
import sys
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from .. import mcp_notifications, samples, stream, tools_begin
from ..errors import DecodeError, RemoteProtocolError, StreamError
from ..sequence import McpNotificationsChecker, State, ToolsBeginChecker
from . import _records
from ._common import CHANNELS, Input, max_record_help, record_limit
from ._output import JsonLines, Progress, Text
from ._records import Payload
from ._safe import UsageError


class _Interrupted(Exception):
    """A signal arrived while the tool waited for input."""


class _Signals:
    """SIGINT and SIGTERM end the reading: at once while waiting for input, else after the current frame."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.waiting = False
        self._saved: dict[int, Any] = {}

    def _handle(self, signum: int, _frame: Any) -> None:
        self.received = signum
        if self.waiting:
            raise _Interrupted

    def __enter__(self) -> _Signals:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                self._saved[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._saved.items():
            signal.signal(signum, handler)


class Session:
    """One channel's capture: checks each payload, keeps the verdict and the counts, never the frames."""

    def __init__(self, channel: str, *, allow_late_error: bool = False) -> None:
        self.channel: str = channel
        self.codec: ModuleType = CHANNELS[channel]
        self.checker: ToolsBeginChecker | McpNotificationsChecker = (
            ToolsBeginChecker(self.codec) if channel == "tools-begin"
            else McpNotificationsChecker(self.codec, allow_error_after_notifications=allow_late_error)
        )
        self.frames: int = 0
        self.verdict: dict[str, Any] | None = None
        # A notification is validated whole as decode does (the same refusals) but no params object is built:
        # inspect shows its method, and parses its params only for --show-values.
        self._decode = self.codec.decode_lazy if channel == "mcp-notifications" else self.codec.decode

    def frame(self, payload: Payload) -> tools_begin.Frame | mcp_notifications.Frame | mcp_notifications.LazyNotification | None:
        """Decode and check the next payload: the frame, or None when it decided the verdict (invalid)."""
        index = self.frames
        try:
            frame: tools_begin.Frame | mcp_notifications.Frame | mcp_notifications.LazyNotification = self._decode(payload)
        except DecodeError as error:
            self._fail("undecodable", index, None, f"frame {index} could not be decoded: {error}")
            return None
        self.frames += 1
        try:
            self.checker.frame(frame)  # type: ignore[arg-type]  # the codec and the checker are one channel's
        except RemoteProtocolError as error:
            self._fail("violation", index, error.rule, str(error))
        return frame

    def _fail(self, kind: str, index: int | None, rule: Any, message: str) -> None:
        self.verdict = _verdict(False, kind, message, index=index, rule=getattr(rule, "name", None if rule is None else str(rule)))

    def stream_broke(self, error: StreamError) -> None:
        self._fail("stream", None, None, f"invalid stream: {error}")

    def stop(self, kind: str, why: str) -> None:
        """Reading stopped before the end ("limit", "interrupted"): the verdict so far."""
        self.verdict = _verdict(True, kind, f"ok so far: {why} after {self.frames} frames ({self.checker.state.value})")

    def end(self, finished: bool) -> dict[str, Any]:
        """The verdict, after the input ended (the channel's finish, unless ``finished`` is false)."""
        if self.verdict is None:
            self.verdict = self._finish(finished)
        self.verdict["state"] = self.checker.state.value
        return self.verdict

    def _finish(self, finished: bool) -> dict[str, Any]:
        checker = self.checker
        if not finished:
            return _verdict(True, "open", f"ok so far: still open ({checker.state.value})")
        try:
            state = checker.finish()
        except RemoteProtocolError as error:
            return _verdict(False, "violation", str(error), rule=getattr(error.rule, "name", str(error.rule)))
        if state is State.UNREADABLE:  # both channels: the protocol's meaning of a bare finish, not a broken rule
            return _verdict(True, "unreadable", f"ok: {UNREADABLE if self.channel == 'tools-begin' else NOTHING_CAME}")
        if state is State.ENDED_WITH_ERROR:
            return _verdict(True, "error", "ok: ended with an error, then the finish")
        count = (f"{checker.periods} periods of activity" if isinstance(checker, ToolsBeginChecker)
                 else f"{checker.notifications} notifications")
        return _verdict(True, "finished", f"ok: finished after {count}")


UNREADABLE = "a finish with nothing: the server could not read the request"
"""An input with no frame (a 0-byte capture): valid, as the specification gives a bare finish this meaning."""
NOTHING_CAME = ("a finish with nothing: no notification came (the specification reads a bare finish as a request "
                "the server could not read; a relay's report says what happened: calls answered, as plain JSON, ...)")
"""The same on the mcp-notifications channel, where all a capture can tell is that no notification came: a relay
writes a bare finish too for a server that answered every call without one (its report says so)."""


def _verdict(valid: bool, kind: str, message: str, *, index: int | None = None, rule: str | None = None) -> dict[str, Any]:
    return {"valid": valid, "kind": kind, "index": index, "rule": rule, "message": message}


def run_session(session: Session, batches: Iterator[list[Payload]], output: Any, signals: _Signals, *,
                finished: bool = True, max_frames: int | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Drive a session over its batches, writing each frame as it comes; the summary's verdict."""
    try:
        while session.verdict is None and not _at_limit(session, max_frames):
            signals.waiting = True
            try:
                if signals.received:  # it came while a frame was written: do not wait for more input
                    raise _Interrupted
                batch = next(batches, None)
            finally:
                signals.waiting = False
            if batch is None:
                break
            check, write, channel = session.frame, output.frame, session.channel
            for payload in batch:
                index = session.frames
                frame = check(payload)
                if frame is not None:
                    write(channel, index, frame, len(payload))
                if (session.verdict is not None or signals.received
                        or (max_frames is not None and _at_limit(session, max_frames))):
                    break
            if signals.received and session.verdict is None:
                session.stop("interrupted", "interrupted")
            output.flush()
            if progress:
                progress.update(session.frames)
    except _Interrupted:
        session.stop("interrupted", "interrupted")
    except StreamError as error:
        session.stream_broke(error)
    finally:
        if progress:
            progress.clear()
    return session.end(finished)


def _at_limit(session: Session, max_frames: int | None) -> bool:
    if max_frames is None or session.frames < max_frames or session.verdict is not None:
        return False
    session.stop("limit", "--max-frames reached")
    return True


def cmd_inspect(args: argparse.Namespace) -> int:
    output = JsonLines(args.show_values) if args.json else Text(args.show_values)
    runs: list[tuple[str, str, Iterator[list[Payload]]]]
    if args.file is None and not args.sample:
        _sample_instead_of_stdin()
    if args.file is None:
        runs = [(name, "built-in sample session", iter([list[Payload](make())])) for name, make in samples.SESSIONS.items()
                if args.channel in (None, name)]
    else:
        if args.sample:
            raise UsageError("--sample shows the built-in sample sessions: give it no FILE")
        if args.channel is None:
            raise UsageError("--channel is required with a FILE")
        source = Input(args.file)  # a missing file or a directory: refused before the header
        if source.regular and _records.json_instead(source.head(), args.max_record, hex=args.hex):
            raise UsageError(_json_hint(args.file, _records.HEX if args.hex else _records.RECORDS))
        reader = _records.hex_lines if args.hex else _records.envelope
        runs = [(args.channel, args.file, reader(source, args.max_record))]
    valid = True
    with _Signals() as signals:
        for channel, name, batches in runs:
            session = Session(channel, allow_late_error=args.allow_late_error)
            output.begin(channel, name)
            try:
                verdict = run_session(session, batches, output, signals, finished=not args.open, max_frames=args.max_frames,
                                      progress=Progress.on_terminal(sys.stderr, sys.stdout))
            except _records.NotRecords as error:  # a pipe: known at its first bytes, after the header
                raise UsageError(_json_hint(name, error.expected)) from None
            output.end(channel, name, session.frames, verdict)
            valid = valid and verdict["valid"]
            if signals.received:
                return 128 + signals.received
    return 0 if valid else 1


def _sample_instead_of_stdin() -> None:
    """No FILE and no ``--sample``: the sample sessions where no input can be meant, else a refusal naming ``-``.

    A terminal, a closed standard input or the null device (a CI job, ``< /dev/null``) means nothing
    was given: the sample is shown, saying so on stderr. A pipe, file or socket means input was given
    and ``-`` was forgotten (``relay ... | inspect --channel mcp-notifications``): showing the sample
    there would be a convincing wrong answer, so it is refused, exit 2.
    """
    if _stdin_is_input():
        raise UsageError("standard input is not a terminal, but no FILE was given: to inspect it, add - "
                         "(diverge-codec inspect --channel CHANNEL -); for the built-in sample sessions, --sample")
    print("diverge-codec: no FILE given: showing the built-in sample sessions (--sample); "
          "to inspect a capture, give FILE, or - for standard input", file=sys.stderr, flush=True)


def _stdin_is_input() -> bool:
    """Standard input is something that can carry a capture: open, not a terminal, not the null device."""
    try:
        if os.isatty(0):
            return False
        mode, device = os.fstat(0).st_mode, os.fstat(0).st_rdev
    except OSError:  # closed
        return False
    if stat.S_ISCHR(mode):
        try:
            return device != os.stat(os.devnull).st_rdev
        except OSError:
            return True
    return True


def _json_hint(name: str, expected: str) -> str:
    """What to run on JSON text or JSON Lines (a capture of a server's lines): the relay replays it as the channel.

    Names the input, never quotes its bytes (``main`` escapes the line).
    """
    what = "standard input" if name == "-" else name
    path = "FILE" if name == "-" else shlex.quote(name)
    return (f"{what} is JSON text or JSON Lines, not {expected}; to inspect a capture of a server's lines, run: "
            f"diverge-codec relay -- cat {path} | diverge-codec inspect --channel mcp-notifications -")


EPILOG = """\
output:
  text: a line a frame (index, tag, variant, size in bytes, summary), then the
  frame count and the verdict. --json: JSON Lines, one object a frame
  ({"type": "frame", ...}) then one summary object ({"type": "summary", "valid":
  ..., "kind": ..., "message": ...}) per channel session; see docs/cli.md.

what is shown: secret names, modes and a notification's method, escaped so that
no control character, escape sequence, newline or bidi override reaches the
terminal. Error messages are shown as their length in characters, error details
and secret values as <redacted>, and a notification's params not at all, unless
--show-values (text: each summary clipped to 200 characters; --json: whole).

exit status: 0 valid (or valid so far with --open, --max-frames), 1 a frame or
the stream breaks the channel's rules, 2 bad usage or unreadable input,
130/143 interrupted by SIGINT/SIGTERM (the summary is still written).

FILE: a capture, or - for standard input. With none, --sample shows the built-in
sample session of each channel; without --sample, standard input that could be a
capture (a pipe, a file, a socket) is refused (exit 2, naming -), and on a
terminal, a closed standard input or /dev/null the sample is shown, saying so.

examples:
  diverge-codec inspect --sample
  diverge-codec inspect capture.bin --channel tools-begin
  diverge-codec relay ... | diverge-codec inspect - --channel mcp-notifications --json
  diverge-codec inspect payloads.hex --channel mcp-notifications --hex --max-frames 100
  diverge-codec relay -- cat server-lines.jsonl | diverge-codec inspect --channel mcp-notifications -
      (a capture of a server's JSON Lines is replayed by the relay, not inspected as is)
"""


def register(commands: Any) -> None:
    inspect = commands.add_parser(
        "inspect", help="list a capture's frames and check its sequence",
        description="List a capture's frames and check its sequence, as the capture arrives.", epilog=EPILOG,
    )
    inspect.add_argument("file", nargs="?", metavar="FILE|-", help="a capture (- for standard input)")
    inspect.add_argument("--sample", action="store_true", help="inspect the built-in sample session of each channel (or of --channel)")
    inspect.add_argument("--channel", choices=list(CHANNELS), help="the channel the capture is of (required with FILE)")
    inspect.add_argument("--hex", action="store_true", help="one payload a line, in hex, instead of the stream envelope")
    inspect.add_argument("--json", action="store_true", help="JSON Lines: an object a frame, then a summary object")
    inspect.add_argument("--open", action="store_true", help="the capture stops before the finish")
    inspect.add_argument("--allow-late-error", action="store_true", help="mcp-notifications: accept one Error after notifications")
    inspect.add_argument("--max-record", type=record_limit, default=stream.DEFAULT_MAX_RECORD, metavar="BYTES", help=max_record_help())
    inspect.add_argument("--max-frames", type=_count, metavar="N", help="stop after N frames (the verdict is then 'ok so far')")
    inspect.add_argument(
        "--show-values", action="store_true",
        help="also print what frames carry: a notification's params, Error messages and details (the container's words, "
             "which can hold values by mistake) and the rotating secrets' values of Inactive frames (credentials); "
             "escaped and clipped all the same",
    )
    inspect.set_defaults(run=cmd_inspect)


def _count(text: str) -> int:
    if not text.isdigit() or int(text) > 2**63:
        raise argparse.ArgumentTypeError("--max-frames takes a whole number")
    return int(text)
