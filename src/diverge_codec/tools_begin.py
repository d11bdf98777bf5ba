"""The tools-begin response channel: Begun, then Active and Inactive for each period of activity, or an Error.

::

    [0][registration JSON]   Begun: the secrets the program takes
    [1][error JSON]          Error: not begun, or the rotating secrets could not be collected
    [2]                      Active: an exchange is in flight where none was
    [3][values JSON]         Inactive: the last exchange was answered; the rotating secrets

The frame classes and codec functions come from the compiled core where it is
built, else from the pure twin; both behave alike, and the errors and tags are
shared by both.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._implementation import IMPLEMENTATION
from ._model import ACTIVE, Active
from ._model import ToolsBeginTag as Tag
from .errors import ToolsBeginBegunParseError as BegunParseError
from .errors import ToolsBeginEmptyFrameError as EmptyFrameError
from .errors import ToolsBeginErrorParseError as ErrorParseError
from .errors import ToolsBeginFrameError as FrameError
from .errors import ToolsBeginInactiveParseError as InactiveParseError
from .errors import ToolsBeginUnknownTagError as UnknownTagError

if TYPE_CHECKING or IMPLEMENTATION == "python":
    from ._tools_begin_py import Begun, Error, Frame, Inactive, decode, encode, encode_into, frame_inactive
else:
    from ._tools_begin_c import Begun, Error, Inactive, decode, encode, encode_into, frame_inactive

    Frame = Begun | Error | Active | Inactive

BEGUN, ERROR, INACTIVE = Tag.BEGUN, Tag.ERROR, Tag.INACTIVE

__all__ = [
    "ACTIVE", "Active", "Begun", "BegunParseError", "EmptyFrameError", "Error",
    "ErrorParseError", "Frame", "FrameError", "Inactive", "InactiveParseError", "Tag",
    "UnknownTagError", "decode", "encode", "encode_into", "frame_inactive",
]
