"""How inspect writes frames: text for people, JSON Lines for programs, and a progress line.

Both writers show the same things: names, modes and methods escaped; Error messages
as their length, details and secret values as ``<redacted>`` (JSON: null), and a
notification's params not at all (JSON: null) unless ``show_values``. Nothing is kept per frame past its batch: each read's frames are written
as one block as soon as they are checked.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from .. import _json
from .._model import ErrorData, McpNotificationsTag
from ._safe import escape, json_line

WIDTH = 200
"""Longest summary in the text output; ``--json`` has everything."""
HIDDEN = "<redacted>"


def _clip(text: str) -> str:
    return text if len(text) <= WIDTH else text[: WIDTH - 3] + "..."


def _shown(value: Any) -> str:
    """A value from a frame, as compact ASCII JSON, escaped (--show-values only)."""
    return escape(json_line(value))


NOTIFICATION = McpNotificationsTag.NOTIFICATION


def variant(kind: type) -> str:
    """A frame class's variant name: a notification read by ``decode_lazy`` (as inspect reads them) is one."""
    return "Notification" if kind.__name__ == "LazyNotification" else kind.__name__


def summary(frame: Any, show_values: bool = False) -> str:
    """One line about a frame, safe to print: escaped, clipped, values hidden unless asked for."""
    name = variant(type(frame))
    if name == "Begun":
        if not frame.secrets:
            return "no secrets"
        text = "secrets: " + ", ".join(f"{escape(n)} ({m.value})" for n, m in frame.secrets.items())
    elif name == "Active":
        return "an exchange is in flight"
    elif name == "Inactive":
        if not frame.values:
            return "no rotating secrets"
        text = "rotating: " + ", ".join(f"{escape(n)}={_shown(v) if show_values else HIDDEN}" for n, v in frame.values.items())
    elif name == "Notification":
        text = f"method {escape(str(frame.method))}"
        present, params = _params(frame) if show_values else (False, None)
        if present:
            text += f" params={_shown(params)}"
    else:
        error = frame.error
        message = _shown(error.message) if show_values else f"<{len(error.message)} chars>"
        if isinstance(error, ErrorData):
            data = "" if error.data is None else f" data={_shown(error.data) if show_values else HIDDEN}"
            text = f"error {error.code}: {message}{data}"
        else:
            details = ", ".join(f"{escape(n)}={_shown(v) if show_values else HIDDEN}" for n, v in error.details.items())
            text = f"error: {message}" + (f" details: {details}" if details else "")
    return _clip(text)


def fields(frame: Any, show_values: bool = False) -> dict[str, Any]:
    """The variant's members for --json: names always, values null unless ``show_values``."""
    name = variant(type(frame))
    if name == "Begun":
        return {"secrets": {n: m.value for n, m in frame.secrets.items()}}
    if name == "Active":
        return {}
    if name == "Inactive":
        return {"names": list(frame.values), "values": dict(frame.values) if show_values else None}
    if name == "Notification":
        return {"method": frame.method, "params": _params(frame)[1] if show_values else None}
    error = frame.error
    message = {"message_chars": len(error.message), "message": error.message if show_values else None}
    if isinstance(error, ErrorData):
        present = error.data is not None
        return {"code": error.code, **message, "data_present": present, "data": error.data if show_values else None}
    return {**message, "detail_names": list(error.details), "details": dict(error.details) if show_values else None}


def _params(frame: Any) -> tuple[bool, Any]:
    """A notification's params, present (null included) and value: parsed only for --show-values, as inspect reads
    notifications lazily (``decode_lazy``'s ``params_json``); ``decode``'s keep them in ``notification``."""
    if hasattr(type(frame), "params_json"):
        params_json = frame.params_json
        return params_json is not None, None if params_json is None else _json.loads(params_json)
    notification = frame.notification
    return "params" in notification, notification.get("params")


class Text:
    """A header per channel session, a line a frame, then the count and the verdict.

    Frames' lines are gathered and written as one block at ``flush`` (the caller's, once a
    read's batch): a write a line cost as much as the rest of the line's work. A line's
    start (tag, variant) is made once a frame class, and a notification's summary once a
    method (up to ``KEPT`` of them): a live relay repeats both.
    """

    KEPT = 256

    def __init__(self, show_values: bool = False, out: IO[str] | None = None) -> None:
        self.show_values = show_values
        self.out = out or sys.stdout
        self.sessions = 0
        self.lines: list[str] = []
        self._starts: dict[type, str] = {}
        self._methods: dict[Any, str] = {}

    def begin(self, channel: str, source: str) -> None:
        if self.sessions:
            self.out.write("\n")
        self.sessions += 1
        self.out.write(f"{channel}: {escape(source)}\n    #  tag  variant          size  summary\n")

    def frame(self, channel: str, index: int, frame: Any, size: int) -> None:
        kind = type(frame)
        start = self._starts.get(kind)
        if start is None:
            start = self._starts[kind] = f"  {frame.tag.value:3d}  {variant(kind):<14} "
        if frame.tag is NOTIFICATION and not self.show_values:  # with values, each frame's params differ
            method = frame.method
            text = self._methods.get(method)
            if text is None:
                text = summary(frame, self.show_values)
                if len(self._methods) < self.KEPT:
                    self._methods[method] = text
        else:
            text = summary(frame, self.show_values)
        self.lines.append("%5d%s%6d  %s\n" % (index, start, size, text))  # %d: half the cost of a format spec

    def end(self, channel: str, source: str, frames: int, verdict: dict[str, Any]) -> None:
        self._write()
        self.out.write(f"frames: {frames}\nverdict: {escape(verdict['message'])}\n")
        self.out.flush()

    def flush(self) -> None:
        self._write()
        self.out.flush()

    def _write(self) -> None:
        if self.lines:
            self.out.write("".join(self.lines))
            self.lines.clear()


class JsonLines(Text):
    """An object a frame, then a summary object per channel session; ASCII, one line each."""

    def begin(self, channel: str, source: str) -> None:
        pass

    def frame(self, channel: str, index: int, frame: Any, size: int) -> None:
        row = {"type": "frame", "channel": channel, "index": index, "tag": frame.tag.value,
               "variant": variant(type(frame)), "size": size, **fields(frame, self.show_values)}
        self.lines.append(json_line(row) + "\n")

    def end(self, channel: str, source: str, frames: int, verdict: dict[str, Any]) -> None:
        self._write()
        self.out.write(json_line({"type": "summary", "channel": channel, "source": source, "frames": frames, **verdict}) + "\n")
        self.out.flush()


class Progress:
    """``N frames`` on a terminal's stderr, redrawn at most four times a second, cleared when done."""

    EVERY_S = 0.25

    def __init__(self, err: IO[str]) -> None:
        self.err = err
        self.drawn: bool = False
        self.last: float = time.monotonic()

    @classmethod
    def on_terminal(cls, err: IO[str] | None, out: IO[str] | None) -> Progress | None:
        """A progress line only where someone watches it: stderr a terminal, stdout not (frames would interleave)."""
        try:
            watched = err is not None and err.isatty() and not (out is not None and out.isatty())
        except (OSError, ValueError):
            return None
        return cls(err) if watched and err is not None else None

    def update(self, frames: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.EVERY_S:
            self.last = now
            self.drawn = True
            self.err.write(f"\r{frames} frames read")
            self.err.flush()

    def clear(self) -> None:
        if self.drawn:
            self.err.write("\r\x1b[K")
            self.err.flush()
            self.drawn = False
