"""The sequence checkers in pure Python: the twin of ``_sequence_c.pyx``.

Each checker turns its channel's table (``_rules.py``) into rows whose entries carry
the next row, so a step is one dict lookup and hashes no enum.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from . import mcp_notifications, tools_begin
from ._model import McpNotificationsTag, Mode, ToolsBeginTag
from ._rules import (
    MCP_NOTIFICATIONS_FINISH, MCP_NOTIFICATIONS_RULES, MCP_NOTIFICATIONS_RULES_LATE_ERROR, TOOLS_BEGIN_FINISH,
    TOOLS_BEGIN_RULES, Rule, State, rotating_mismatch,
)
from .errors import LocalProtocolError, RemoteProtocolError

_B, _E, _A, _I = ToolsBeginTag.BEGUN, ToolsBeginTag.ERROR, ToolsBeginTag.ACTIVE, ToolsBeginTag.INACTIVE
_N, _NE = McpNotificationsTag.NOTIFICATION, McpNotificationsTag.ERROR

Row = dict[int, tuple["State | Rule", "Row | None"]]


def _compile(rules: dict[State, dict[int, State | Rule]], tags: tuple[int, ...]) -> dict[State, Row]:
    """Turn a table into rows whose entries carry the next row, so a step hashes no enum."""
    rows: dict[State, Row] = {state: {} for state in rules}
    rows[State.ENDED_WITH_ERROR] = {tag: (Rule.NOTHING_AFTER_ERROR, None) for tag in tags}
    for state, row in rules.items():
        for tag, outcome in row.items():
            rows[state][int(tag)] = (outcome, rows.get(outcome) if isinstance(outcome, State) else None)
    return rows


class _Checker:
    """The part both channels share: a compiled table, a state, a count, and the finish.

    ``codec`` is the channel's codec module that ``payload`` decodes with: None means
    the public one (``tools_begin`` or ``mcp_notifications``).
    """

    channel = ""
    _variants: dict[int, str] = {}

    def __init__(self, rules: dict[State, dict[int, State | Rule]], finish: dict[State, State | Rule], codec: ModuleType) -> None:
        tags = tuple(self._variants)
        self._rows = _compile(rules, tags)
        self._row: Row = self._rows[State.NOT_BEGUN]
        self._after_finish: Row = {tag: (Rule.NOTHING_AFTER_FINISH, None) for tag in tags}
        self._finish, self.codec = finish, codec
        self.state = State.NOT_BEGUN
        self.finished = False
        self.frames = 0
        """How many frames have been read, which is also the index of the next."""
        self.violation: RemoteProtocolError | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} state={self.state.name} frames={self.frames} finished={self.finished}>"

    def _usable(self) -> None:
        if self.violation is not None:
            raise LocalProtocolError(f"{self.channel} checker already reported a violation: {self.violation}")

    def _break(self, rule: Rule, index: int | None, variant: str, detail: str = "") -> RemoteProtocolError:
        self.violation = RemoteProtocolError(self.channel, rule, index, variant, detail)
        self._row = {}
        return self.violation

    def _step(self, tag: int) -> None:
        """The slow path of a step: raise the rule the frame breaks (or move on, where it breaks none)."""
        entry = self._row.get(tag)
        if entry is None:
            self._usable()
            raise TypeError(f"not a {self.channel} response frame (tag {tag!r})")
        outcome, row = entry
        index = self.frames
        self.frames = index + 1
        if row is None:
            raise self._break(outcome, index, self._variants[tag])  # type: ignore[arg-type]
        self.state, self._row = outcome, row  # type: ignore[assignment]

    def payload(self, payload: bytes | bytearray | memoryview) -> Any:
        """Decode one payload with the channel's codec, check it, and return the frame."""
        frame = self.codec.decode(payload)
        self.frame(frame)
        return frame

    def frame(self, frame: Any) -> None:  # pragma: no cover - each channel defines it
        raise NotImplementedError

    def finish(self) -> State:
        """The channel finished. Returns the final state; raises if the finish broke a rule."""
        self._usable()
        if self.finished:
            raise self._break(Rule.NOTHING_AFTER_FINISH, None, "finish")
        outcome = self._finish[self.state]
        if isinstance(outcome, Rule):
            raise self._break(outcome, None, "finish")
        self.state, self.finished, self._row = outcome, True, self._after_finish
        return outcome

    @property
    def unreadable(self) -> bool:
        """The finish came with nothing before it: the server could not read the request."""
        return self.state is State.UNREADABLE


class ToolsBeginChecker(_Checker):
    """Checks a tools-begin response sequence: Begun, then periods of Active and Inactive; or an Error.

    ``declaration`` is what Begun declared (None before it), ``periods`` the number
    of periods closed by an Inactive.
    """

    channel = "tools-begin"
    _variants = {_B: "Begun", _E: "Error", _A: "Active", _I: "Inactive"}

    def __init__(self, codec: ModuleType | None = None) -> None:
        super().__init__(TOOLS_BEGIN_RULES, TOOLS_BEGIN_FINISH, tools_begin if codec is None else codec)
        self.declaration: dict[str, Mode] | None = None
        self.rotating: frozenset[str] = frozenset()
        self.periods = 0

    def frame(self, frame: Any) -> None:
        """Check one frame; raises RemoteProtocolError at once if it breaks a rule."""
        tag = frame.tag
        entry = self._row.get(tag)
        if entry is None or entry[1] is None:
            self._step(tag)  # raises: the frame breaks a rule, or is no frame
        if tag == _I:
            values, rotating = frame.values, self.rotating
            # Equal sizes and no name outside the rotating set: the same names (faster than keys() != set).
            if len(values) != len(rotating) or not rotating.issuperset(values):
                index = self.frames
                self.frames += 1
                raise self._break(Rule.INACTIVE_CARRIES_ROTATING, index, "Inactive", rotating_mismatch(rotating, values))
            self.periods += 1
        elif tag == _B:
            self.declaration = dict(frame.secrets)
            self.rotating = frozenset(name for name, mode in frame.secrets.items() if mode is Mode.ROTATING)
        self.state, self._row = entry  # type: ignore[assignment,misc]
        self.frames += 1


class McpNotificationsChecker(_Checker):
    """Checks an mcp-notifications sequence: notifications in order, or one Error first, then the finish.

    The page puts the Error before any notification; the Rust doc comment speaks of
    an Error ending a stream that stopped. ``allow_error_after_notifications=True``
    accepts that too, as the last frame.
    """

    channel = "mcp-notifications"
    _variants = {_N: "Notification", _NE: "Error"}

    def __init__(self, codec: ModuleType | None = None, *, allow_error_after_notifications: bool = False) -> None:
        rules = MCP_NOTIFICATIONS_RULES_LATE_ERROR if allow_error_after_notifications else MCP_NOTIFICATIONS_RULES
        super().__init__(rules, MCP_NOTIFICATIONS_FINISH, mcp_notifications if codec is None else codec)
        self.notifications = 0

    def frame(self, frame: Any) -> None:
        """Check one frame; raises RemoteProtocolError at once if it breaks a rule."""
        tag = frame.tag
        entry = self._row.get(tag)
        if entry is None or entry[1] is None:
            self._step(tag)  # raises: the frame breaks a rule, or is no frame
        self.state, self._row = entry  # type: ignore[assignment,misc]
        self.frames += 1
        if tag == _N:
            self.notifications += 1


__all__ = ["McpNotificationsChecker", "ToolsBeginChecker"]
