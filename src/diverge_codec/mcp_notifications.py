"""The mcp-notifications channel response: a Notification per frame, or one Error, then the finish.

::

    [0][notification JSON]   Notification: one, as the container's server sent it
    [1][error JSON]          Error: rmcp's ErrorData; the client of the container cannot be reached

``frame_notification`` frames a notification's JSON without parsing it, the relay's
hot path; ``splice_notification`` does the same for a JSON-RPC message as the MCP SDKs
write it, dropping the envelope (see ``diverge_codec.relay``), and ``ChunkFramer`` does it
for a whole chunk of a server's output, records out (the relay's hot loop); ``decode_lazy`` reads
a notification's method and leaves its params as the JSON bytes sent, for routing. The frame classes and codec functions come from the compiled core where
it is built, else from the pure twin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._implementation import IMPLEMENTATION
from ._mcp_notifications_py import Framed
from ._model import McpNotificationsTag as Tag
from .errors import McpNotificationsBodyParseError as BodyParseError
from .errors import McpNotificationsEmptyFrameError as EmptyFrameError
from .errors import McpNotificationsErrorParseError as ErrorParseError
from .errors import McpNotificationsFrameError as FrameError
from .errors import McpNotificationsNotificationParseError as NotificationParseError
from .errors import McpNotificationsUnknownTagError as UnknownTagError

if TYPE_CHECKING or IMPLEMENTATION == "python":
    from ._mcp_notifications_py import (
        JSONRPC_NOTIFICATION_PREFIX, ChunkFramer, Error, Frame, LazyNotification, Notification, decode, decode_lazy,
        decode_many, encode, encode_into, frame_notification, frame_notifications, splice_notification,
    )
else:
    from ._mcp_notifications_c import (
        JSONRPC_NOTIFICATION_PREFIX, ChunkFramer, Error, LazyNotification, Notification, decode, decode_lazy,
        decode_many, encode, encode_into, frame_notification, frame_notifications, splice_notification,
    )

    Frame = Notification | Error

__all__ = [
    "BodyParseError", "ChunkFramer", "Framed", "EmptyFrameError", "Error", "ErrorParseError", "Frame", "FrameError",
    "LazyNotification", "Notification", "NotificationParseError", "Tag", "UnknownTagError", "decode",
    "decode_lazy", "decode_many", "encode", "encode_into", "frame_notification", "frame_notifications",
    "JSONRPC_NOTIFICATION_PREFIX", "splice_notification",
]
