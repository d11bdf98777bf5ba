"""The protocol's plain data that the errors and the rules share: a checker's states and the sequence rules.

A leaf: it imports nothing of the package, so ``errors`` can name a ``Rule`` without an
import circle (``errors`` -> ``_rules`` -> ``_model`` -> ``errors``). ``_rules`` and
``sequence`` re-export both names.
"""

from __future__ import annotations

import enum


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


__all__ = ["Rule", "State"]
