"""The sequence rules of both channels, as data: tables of state -> frame tag -> outcome.

Both checker implementations (``_sequence_py.py`` and ``_sequence_c.pyx``) are built from
these tables, so a rule is written once. The states and rules themselves are in the leaf
``_protocol`` (which ``errors`` imports too); they are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._model import McpNotificationsTag, ToolsBeginTag
from ._protocol import Rule, State

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
