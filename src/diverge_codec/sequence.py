"""The sequence rules of both channels, as data, and checkers that apply them (sans-IO).

A checker is fed the peer's frames (or payloads) one at a time, then told the channel
finished, and raises :class:`~diverge_codec.errors.RemoteProtocolError` the moment a
rule breaks, naming the rule and the frame by variant and position, never a value.
It does no I/O: drive it from asyncio, trio or a plain loop.

A finish with nothing before it is not a violation: it states that the server could
not read the request, and the checker ends in ``UNREADABLE``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._implementation import IMPLEMENTATION
from ._rules import (
    MCP_NOTIFICATIONS_FINISH, MCP_NOTIFICATIONS_RULES, MCP_NOTIFICATIONS_RULES_LATE_ERROR, TOOLS_BEGIN_FINISH,
    TOOLS_BEGIN_RULES, Rule, State,
)

if TYPE_CHECKING or IMPLEMENTATION == "python":
    from ._sequence_py import McpNotificationsChecker, ToolsBeginChecker
else:
    from ._sequence_c import McpNotificationsChecker, ToolsBeginChecker


def check(checker: ToolsBeginChecker | McpNotificationsChecker, payloads: Iterable[bytes | bytearray | memoryview], finished: bool = True) -> State:
    """Feed every payload to a checker, then the finish if ``finished``: the final state."""
    for payload in payloads:
        checker.payload(payload)
    return checker.finish() if finished else checker.state


__all__ = [
    "MCP_NOTIFICATIONS_FINISH", "MCP_NOTIFICATIONS_RULES", "MCP_NOTIFICATIONS_RULES_LATE_ERROR",
    "McpNotificationsChecker", "Rule", "State", "TOOLS_BEGIN_FINISH", "TOOLS_BEGIN_RULES",
    "ToolsBeginChecker", "check",
]
