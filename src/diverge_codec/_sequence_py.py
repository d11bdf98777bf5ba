"""The sequence checkers in pure Python: the twin of ``_sequence_c.pyx``.

Each checker turns its channel's table (``_rules.py``) into rows whose entries carry
the next row, so a step is one dict lookup and hashes no enum.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

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

_NOT_READY: Row = {}
"""The row of a checker whose __init__ has not run to the end: every frame takes the slow path, which says so."""
NOT_READY = "{} is not initialised: its __init__ did not run to the end"
INIT_TWICE = "{}.__init__ runs once: make a new checker instead of re-initialising one"
NO_PICKLE = "{} cannot be pickled or copied: make a new checker and feed it the frames"


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
    _claimed = False
    _row: Row = _NOT_READY
    # What a checker whose __init__ has not run to the end reads as, as the compiled twin's fields do.
    _state: State = None  # type: ignore[assignment]  # None until __init__ runs (read by repr and the slow path only)
    _finished = False
    _frames = 0
    _violation: RemoteProtocolError | None = None
    _codec: ModuleType = None  # type: ignore[assignment]  # None until __init__ runs

    def _claim(self) -> None:
        """Refuse a second __init__, as the compiled twin does."""
        if self._claimed:
            raise RuntimeError(INIT_TWICE.format(type(self).__name__))
        self._claimed = True

    def _setup(self, rules: dict[State, dict[int, State | Rule]], finish: dict[State, State | Rule], codec: ModuleType) -> None:
        """Set every field, the row last: until that one store the checker says it is not ready."""
        tags = tuple(self._variants)
        rows = _compile(rules, tags)
        self._after_finish: Row = {tag: (Rule.NOTHING_AFTER_FINISH, None) for tag in tags}
        self._finish, self._codec = finish, codec
        self._state = State.NOT_BEGUN
        self._finished = False
        self._frames = 0
        self._violation: RemoteProtocolError | None = None
        self._row = rows[State.NOT_BEGUN]

    def __reduce__(self) -> Any:
        raise TypeError(NO_PICKLE.format(type(self).__name__))

    # Read-only, as the compiled twin's are: where a checker stands is the checker's to say.
    @property
    def state(self) -> State:
        """Where the checker stands (a State)."""
        return self._state

    @property
    def finished(self) -> bool:
        """Whether the finish has been read."""
        return self._finished

    @property
    def frames(self) -> int:
        """How many frames have been read, which is also the index of the next."""
        return self._frames

    @property
    def violation(self) -> RemoteProtocolError | None:
        """The RemoteProtocolError reported, if one was."""
        return self._violation

    @property
    def codec(self) -> ModuleType:
        """The codec module ``payload`` decodes with."""
        return self._codec

    def __repr__(self) -> str:
        if self._row is _NOT_READY:
            return f"<{type(self).__name__} not initialised>"
        return f"<{type(self).__name__} state={self._state.name} frames={self._frames} finished={self._finished}>"

    def _ready(self) -> None:
        if self._row is _NOT_READY:
            raise RuntimeError(NOT_READY.format(type(self).__name__))

    def _usable(self) -> None:
        self._ready()
        if self._violation is not None:
            raise LocalProtocolError(f"{self.channel} checker already reported a violation: {self._violation}")

    def _break(self, rule: Rule, index: int | None, variant: str, detail: str = "") -> RemoteProtocolError:
        self._violation = RemoteProtocolError(self.channel, rule, index, variant, detail)
        self._row = {}
        return self._violation

    def _step(self, tag: int) -> None:
        """The slow path of a step: raise the rule the frame breaks (or move on, where it breaks none)."""
        entry = self._row.get(tag)
        if entry is None:
            self._usable()
            raise TypeError(f"not a {self.channel} response frame (tag {tag!r})")
        outcome, row = entry
        index = self._frames
        self._frames = index + 1
        if row is None:
            raise self._break(outcome, index, self._variants[tag])  # type: ignore[arg-type]
        self._state, self._row = outcome, row  # type: ignore[assignment]

    def payload(self, payload: bytes | bytearray | memoryview) -> Any:
        """Decode one payload with the channel's codec, check it, and return the frame."""
        self._ready()
        try:
            frame = self._codec.decode(payload)
        except Exception:
            payload = None  # type: ignore[assignment]  # captured locals (error trackers) show no payload
            raise
        self.frame(frame)
        return frame

    def frame(self, frame: Any) -> None:  # pragma: no cover - each channel defines it
        raise NotImplementedError

    def finish(self) -> State:
        """The channel finished. Returns the final state; raises if the finish broke a rule."""
        self._usable()
        if self._finished:
            raise self._break(Rule.NOTHING_AFTER_FINISH, None, "finish")
        outcome = self._finish[self._state]
        if isinstance(outcome, Rule):
            raise self._break(outcome, None, "finish")
        self._state, self._finished, self._row = outcome, True, self._after_finish
        return outcome

    @property
    def unreadable(self) -> bool:
        """The finish came with nothing before it: the server could not read the request."""
        return self._state is State.UNREADABLE


class ToolsBeginChecker(_Checker):
    """Checks a tools-begin response sequence: Begun, then periods of Active and Inactive; or an Error.

    ``declaration`` is what Begun declared (None before it), ``periods`` the number
    of periods closed by an Inactive.
    """

    channel = "tools-begin"
    _variants = {_B: "Begun", _E: "Error", _A: "Active", _I: "Inactive"}

    if TYPE_CHECKING:  # the frame types this channel's codec gives (the shared method is typed Any)
        def payload(self, payload: bytes | bytearray | memoryview) -> tools_begin.Frame: ...
    _declaration: dict[str, Mode] | None = None
    _rotating: frozenset[str] = None  # type: ignore[assignment]  # None until __init__ runs
    _periods = 0

    def __init__(self, codec: ModuleType | None = None) -> None:
        self._claim()
        self._declaration: dict[str, Mode] | None = None
        self._rotating: frozenset[str] = frozenset()
        self._periods = 0
        self._setup(TOOLS_BEGIN_RULES, TOOLS_BEGIN_FINISH, tools_begin if codec is None else codec)

    @property
    def declaration(self) -> dict[str, Mode] | None:
        """What Begun declared, name to Mode; None before it."""
        return self._declaration

    @property
    def rotating(self) -> frozenset[str]:
        """The names Begun declared rotating."""
        return self._rotating

    @property
    def periods(self) -> int:
        """How many periods an Inactive has closed."""
        return self._periods

    def frame(self, frame: tools_begin.Frame) -> None:
        """Check one frame; raises RemoteProtocolError at once if it breaks a rule."""
        tag = frame.tag
        entry = self._row.get(tag)
        if entry is None or entry[1] is None:
            self._step(tag)  # raises: the frame breaks a rule, or is no frame
        if tag == _I:
            values, rotating = frame.values, self._rotating  # type: ignore[union-attr]  # the tag says Inactive
            # Equal sizes and no name outside the rotating set: the same names (faster than keys() != set).
            if len(values) != len(rotating) or not rotating.issuperset(values):
                index = self._frames
                self._frames += 1
                raise self._break(Rule.INACTIVE_CARRIES_ROTATING, index, "Inactive", rotating_mismatch(rotating, values))
            self._periods += 1
        elif tag == _B:
            self._declaration = dict(frame.secrets)  # type: ignore[union-attr]  # the tag says Begun
            self._rotating = frozenset(name for name, mode in frame.secrets.items() if mode is Mode.ROTATING)  # type: ignore[union-attr]
        self._state, self._row = entry  # type: ignore[assignment,misc]
        self._frames += 1


class McpNotificationsChecker(_Checker):
    """Checks an mcp-notifications sequence: notifications in order, or one Error first, then the finish.

    The page puts the Error before any notification; the Rust doc comment speaks of
    an Error ending a stream that stopped. ``allow_error_after_notifications=True``
    accepts that too, as the last frame.
    """

    channel = "mcp-notifications"
    _variants = {_N: "Notification", _NE: "Error"}

    if TYPE_CHECKING:  # the frame types this channel's codec gives (the shared method is typed Any)
        def payload(self, payload: bytes | bytearray | memoryview) -> mcp_notifications.Frame: ...

    _notifications = 0

    def __init__(self, codec: ModuleType | None = None, *, allow_error_after_notifications: bool = False) -> None:
        self._claim()
        self._notifications = 0
        rules = MCP_NOTIFICATIONS_RULES_LATE_ERROR if allow_error_after_notifications else MCP_NOTIFICATIONS_RULES
        self._setup(rules, MCP_NOTIFICATIONS_FINISH, mcp_notifications if codec is None else codec)

    @property
    def notifications(self) -> int:
        """How many notifications have been read."""
        return self._notifications

    def frame(self, frame: mcp_notifications.Frame) -> None:
        """Check one frame; raises RemoteProtocolError at once if it breaks a rule."""
        tag = frame.tag
        entry = self._row.get(tag)
        if entry is None or entry[1] is None:
            self._step(tag)  # raises: the frame breaks a rule, or is no frame
        self._state, self._row = entry  # type: ignore[assignment,misc]
        self._frames += 1
        if tag == _N:
            self._notifications += 1


__all__ = ["McpNotificationsChecker", "ToolsBeginChecker"]
