"""The sequence rules of both channels, as data: states, rules, and tables of state -> frame tag -> outcome.

Both checker implementations (``_sequence_py.py`` and ``_sequence_c.pyx``) are built from
these tables, so a rule is written once.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

from ._model import McpNotificationsTag, ToolsBeginTag


class State(enum.Enum):
    """Where a checker stands. Not every channel uses every state."""

    NOT_BEGUN = "not begun"
    """tools-begin: nothing yet. mcp-notifications: nothing yet."""
    IDLE = "begun and idle"
    """tools-begin: Begun, and no period open."""
    ACTIVE = "active"
    """tools-begin: a period of activity is open."""
    STREAMING = "streaming"
    """mcp-notifications: one or more notifications so far."""
    ENDED_WITH_ERROR = "ended with error"
    """An Error arrived; only the finish may follow (``finished`` says whether it has)."""
    FINISHED = "finished"
    """The finish arrived after a sequence that kept the rules."""
    UNREADABLE = "unreadable"
    """A finish with nothing before it: the server could not read the request."""


class Rule(enum.Enum):
    """Each rule of both channels' pages; a violation names one."""

    BEGUN_FIRST = "nothing comes before Begun but an Error"
    ONE_BEGUN = "Begun is sent exactly once"
    NO_ACTIVE_IN_PERIOD = "no Active while a period is open"
    NO_INACTIVE_OUTSIDE_PERIOD = "no Inactive while no period is open"
    ERROR_IN_PLACE_OF_INACTIVE = "after Begun, an Error comes only in place of an Inactive"
    PERIOD_CLOSED_BEFORE_FINISH = "a period is closed by an Inactive or an Error before the finish"
    INACTIVE_CARRIES_ROTATING = "an Inactive carries every rotating secret Begun declared, and no other"
    NOTHING_AFTER_ERROR = "nothing follows an Error but the finish"
    NOTHING_AFTER_FINISH = "nothing follows the finish"
    ERROR_BEFORE_NOTIFICATIONS = "an Error is sent before any notification"


S, R = State, Rule
_B, _E, _A, _I = ToolsBeginTag.BEGUN, ToolsBeginTag.ERROR, ToolsBeginTag.ACTIVE, ToolsBeginTag.INACTIVE
_N, _NE = McpNotificationsTag.NOTIFICATION, McpNotificationsTag.ERROR

# tools-begin: state -> frame tag -> the next state, or the rule the frame breaks.
TOOLS_BEGIN_RULES: dict[State, dict[int, State | Rule]] = {
    S.NOT_BEGUN: {_B: S.IDLE, _E: S.ENDED_WITH_ERROR, _A: R.BEGUN_FIRST, _I: R.BEGUN_FIRST},
    S.IDLE: {_B: R.ONE_BEGUN, _E: R.ERROR_IN_PLACE_OF_INACTIVE, _A: S.ACTIVE, _I: R.NO_INACTIVE_OUTSIDE_PERIOD},
    S.ACTIVE: {_B: R.ONE_BEGUN, _E: S.ENDED_WITH_ERROR, _A: R.NO_ACTIVE_IN_PERIOD, _I: S.IDLE},
}
TOOLS_BEGIN_FINISH: dict[State, State | Rule] = {
    S.NOT_BEGUN: S.UNREADABLE, S.IDLE: S.FINISHED, S.ACTIVE: R.PERIOD_CLOSED_BEFORE_FINISH,
    S.ENDED_WITH_ERROR: S.ENDED_WITH_ERROR,
}

# mcp-notifications, as the page has it: an Error only before any notification.
MCP_NOTIFICATIONS_RULES: dict[State, dict[int, State | Rule]] = {
    S.NOT_BEGUN: {_N: S.STREAMING, _NE: S.ENDED_WITH_ERROR},
    S.STREAMING: {_N: S.STREAMING, _NE: R.ERROR_BEFORE_NOTIFICATIONS},
}
# ...and as the Rust doc comment has it: an Error may also end a stream that has begun.
MCP_NOTIFICATIONS_RULES_LATE_ERROR: dict[State, dict[int, State | Rule]] = {
    **MCP_NOTIFICATIONS_RULES, S.STREAMING: {_N: S.STREAMING, _NE: S.ENDED_WITH_ERROR},
}
MCP_NOTIFICATIONS_FINISH: dict[State, State | Rule] = {
    S.NOT_BEGUN: S.UNREADABLE, S.STREAMING: S.FINISHED, S.ENDED_WITH_ERROR: S.ENDED_WITH_ERROR,
}


def rotating_mismatch(rotating: frozenset[str], names: Iterable[str]) -> str:
    """How an Inactive's names miss the rotating declaration: counts, never a name."""
    given = set(names)
    return f"{len(rotating - given)} missing, {len(given - rotating)} not declared rotating"


__all__ = [
    "MCP_NOTIFICATIONS_FINISH", "MCP_NOTIFICATIONS_RULES", "MCP_NOTIFICATIONS_RULES_LATE_ERROR", "Rule", "State",
    "TOOLS_BEGIN_FINISH", "TOOLS_BEGIN_RULES", "rotating_mismatch",
]
