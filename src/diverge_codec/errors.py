"""Every exception the codec raises, shared by both implementations.

Messages are built here, from fixed phrases, tags, positions and counts, so the
compiled and pure cores cannot word a failure differently, and no text from a
payload ever reaches an exception: not its message, args, attributes or chain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # errors imports nothing of the package but the leaf _protocol
    from ._protocol import Rule

_E = TypeVar("_E", bound=BaseException)


def _public(module: str, name: str) -> Callable[[type[_E]], type[_E]]:
    """Show a class under the public name it is caught by: ``module.name``.

    The channel modules export ``tools_begin.EmptyFrameError`` and the like as these
    classes; with their name and place set to that, a repr, a traceback and the docs
    name the public class, and pickle finds it there (the same object). Only strings are
    set: errors still imports nothing of the package.
    """

    def named(cls: type[_E]) -> type[_E]:
        cls.__name__ = cls.__qualname__ = name
        cls.__module__ = module
        return cls

    return named


_TOOLS_BEGIN = "diverge_codec.tools_begin"
_MCP_NOTIFICATIONS = "diverge_codec.mcp_notifications"


class _Rebuilt:
    """Mixin: pickles and copies with every attribute (``index``, ``__notes__`` too), not only its args.

    An exception whose ``__init__`` takes other arguments than ``args`` cannot use
    BaseException's pickling, which calls the class with ``args``; each names its own.
    """

    def _init_args(self) -> tuple[Any, ...]:
        raise NotImplementedError

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), self._init_args(), dict(vars(self)) or None


class DecodeError(ValueError):
    """A payload that could not be read, on either channel. ``tag``, ``reason`` and ``index`` are None where they do not apply."""

    tag: int | None = None
    """The unknown tag (UnknownTagError)."""
    reason: str | None = None
    """Why a body did not parse (the ParseErrors): a fixed phrase or the parser's, never a value."""
    index: int | None = None
    """Set by the batch calls: which payload of the batch failed."""


class EncodeError(TypeError):
    """A frame whose contents are not JSON (a set, a non-str key, an int past 64 bits)."""


def _kind(obj: object) -> str:
    """A type's name; a released memoryview says so (it is no payload, as any other non-buffer)."""
    if type(obj) is memoryview:
        try:
            obj.nbytes
        except ValueError:
            return "memoryview (released)"
    return type(obj).__name__


def payload_type_error(channel: str, payload: object) -> TypeError:
    """The TypeError for a payload that is not bytes-like; it names the type, never the value."""
    return TypeError(f"{channel} payload must be bytes, bytearray or memoryview, not {_kind(payload)}")


def raw_json_type_error(function: str, raw: object) -> TypeError:
    """The TypeError for relay framing given something other than bytes-like JSON."""
    return TypeError(f"{function} takes bytes-like JSON (bytes, bytearray, memoryview), not {_kind(raw)}")


class _Empty(_Rebuilt):
    """Mixin: a payload of no bytes at all, so not even a tag."""

    channel = ""

    def __init__(self) -> None:
        ValueError.__init__(self, f"{self.channel} response frame is empty")  # type: ignore[arg-type]

    def _init_args(self) -> tuple[()]:
        return ()


class _UnknownTag(_Rebuilt):
    """Mixin: a tag that is none of the channel's."""

    channel = ""
    tag: int | None  # set by __init__: always an int here (DecodeError types it for every error)

    def __init__(self, tag: int) -> None:
        ValueError.__init__(self, f"unknown {self.channel} response frame tag {tag}")  # type: ignore[arg-type]
        self.tag = tag

    def _init_args(self) -> tuple[int | None]:
        return (self.tag,)


class _DidNotParse(_Rebuilt):
    """Mixin: a body that is not JSON, or not the variant's shape. ``reason`` says which."""

    prefix = ""
    reason: str | None  # set by __init__: always a str here (DecodeError types it for every error)

    def __init__(self, reason: str) -> None:
        ValueError.__init__(self, f"{self.prefix}: {reason}")  # type: ignore[arg-type]
        self.reason = reason

    def _init_args(self) -> tuple[str | None]:
        return (self.reason,)


# tools-begin ---------------------------------------------------------------


@_public(_TOOLS_BEGIN, "FrameError")
class ToolsBeginFrameError(DecodeError):
    """A tools-begin response frame that could not be read."""


@_public(_TOOLS_BEGIN, "EmptyFrameError")
class ToolsBeginEmptyFrameError(_Empty, ToolsBeginFrameError):
    channel = "tools begin"


@_public(_TOOLS_BEGIN, "UnknownTagError")
class ToolsBeginUnknownTagError(_UnknownTag, ToolsBeginFrameError):
    channel = "tools begin"


@_public(_TOOLS_BEGIN, "BegunParseError")
class ToolsBeginBegunParseError(_DidNotParse, ToolsBeginFrameError):
    """What the program declared did not parse."""

    prefix = "tools begin registration did not parse"


@_public(_TOOLS_BEGIN, "ErrorParseError")
class ToolsBeginErrorParseError(_DidNotParse, ToolsBeginFrameError):
    """The error did not parse."""

    prefix = "tools begin error did not parse"


@_public(_TOOLS_BEGIN, "InactiveParseError")
class ToolsBeginInactiveParseError(_DidNotParse, ToolsBeginFrameError):
    """The rotating secrets did not parse; the reason quotes no value."""

    prefix = "tools begin inactive secrets did not parse"


# mcp-notifications ---------------------------------------------------------


@_public(_MCP_NOTIFICATIONS, "FrameError")
class McpNotificationsFrameError(DecodeError):
    """An mcp-notifications channel response frame that could not be read."""


@_public(_MCP_NOTIFICATIONS, "EmptyFrameError")
class McpNotificationsEmptyFrameError(_Empty, McpNotificationsFrameError):
    channel = "mcp notifications"


@_public(_MCP_NOTIFICATIONS, "UnknownTagError")
class McpNotificationsUnknownTagError(_UnknownTag, McpNotificationsFrameError):
    channel = "mcp notifications"


@_public(_MCP_NOTIFICATIONS, "BodyParseError")
class McpNotificationsBodyParseError(_DidNotParse, McpNotificationsFrameError):
    """A body that did not parse; the subclass says which variant's."""

    prefix = "mcp notifications response frame did not parse"


@_public(_MCP_NOTIFICATIONS, "NotificationParseError")
class McpNotificationsNotificationParseError(McpNotificationsBodyParseError):
    """A Notification's body did not parse."""


@_public(_MCP_NOTIFICATIONS, "ErrorParseError")
class McpNotificationsErrorParseError(McpNotificationsBodyParseError):
    """An Error's body (ErrorData) did not parse."""


# Why a body was refused: fixed phrases, shared so both cores word them alike.
NOT_AN_OBJECT = "expected a JSON object"
SECRETS_NOT_AN_OBJECT = "secrets must be an object"
MODE_INVALID = 'the mode of secret {position} must be "fixed" or "rotating"'
MESSAGE_NOT_A_STRING = "message must be a string"
METHOD_NOT_A_STRING = "method must be a string"
PARAMS_INVALID = "params must be an object or null"
META_INVALID = "params._meta must be an object"
CODE_INVALID = "code must be an integer"
CODE_OUT_OF_RANGE = "code must fit in 32 signed bits"


# sequences -----------------------------------------------------------------


class SequenceError(Exception):
    """A channel's frames out of the order its page allows, or a state machine used out of turn."""


class RemoteProtocolError(_Rebuilt, SequenceError):
    """The peer broke a sequence rule. Names the rule and the frame by variant and position, never a value."""

    channel: str
    """``"tools-begin"`` or ``"mcp-notifications"``."""
    rule: Rule
    """The rule the frame (or the finish) broke."""
    index: int | None
    """The frame's position in the sequence; None for the finish."""
    variant: str
    """The frame's variant (``"Begun"``, ``"Notification"``, ...), or ``"finish"``."""
    detail: str
    """What more the rule's text does not say (counts, never a name or value); ``""`` if nothing."""

    def __init__(self, channel: str, rule: Rule, index: int | None, variant: str, detail: str = "") -> None:
        where = "the finish" if index is None else f"frame {index} ({variant})"
        text = f"{channel}: {where} breaks the rule: {getattr(rule, 'value', rule)}"
        super().__init__(text + (f" ({detail})" if detail else ""))
        self.channel, self.rule, self.index, self.variant = channel, rule, index, variant
        self.detail = detail

    def _init_args(self) -> tuple[Any, ...]:
        return self.channel, self.rule, self.index, self.variant, self.detail


class LocalProtocolError(SequenceError):
    """This side asked a state machine for something its state does not allow."""


# the stream envelope --------------------------------------------------------


class StreamError(ValueError):
    """A byte stream of length-prefixed records that could not be split."""


class RecordTooLargeError(_Rebuilt, StreamError):
    """A record's length prefix is over the limit; refused before anything is allocated for it."""

    length: int
    """The length the prefix gave."""
    limit: int
    """The reader's ``max_record``."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(f"record of {length} bytes is over the limit of {limit} bytes")
        self.length, self.limit = length, limit

    def _init_args(self) -> tuple[int, int]:
        return self.length, self.limit


class TruncatedStreamError(_Rebuilt, StreamError):
    """The stream ended inside a record (or inside its length prefix)."""

    missing: int
    """How many bytes the record (or its prefix) still needed."""
    inside: str
    """``"record"`` or ``"length prefix"``: what the stream ended inside."""

    def __init__(self, missing: int, inside: str = "record") -> None:
        super().__init__(f"stream ended inside a {inside}: {missing} bytes missing")
        self.missing, self.inside = missing, inside

    def _init_args(self) -> tuple[int, str]:
        return self.missing, self.inside
