"""The model both channels and both implementations share.

Secret modes, the provider's error, MCP's ErrorData, the tags, the one Active frame,
and the rules for reading them from parsed JSON. The compiled core calls these too,
so a rule is written once. Reprs show shape, never payload values.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn

from . import errors

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


class Refused(Exception):
    """Internal: a parsed body that is not the variant's shape. Carries a fixed reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Mode(str, enum.Enum):
    """How a program takes one secret: read it (``fixed``) or hold and change it (``rotating``)."""

    FIXED = "fixed"
    ROTATING = "rotating"

    def __str__(self) -> str:
        return self.value


MODES: dict[str, Mode] = {"fixed": Mode.FIXED, "rotating": Mode.ROTATING}


class ToolsBeginTag(enum.IntEnum):
    """The first byte of a tools-begin response frame."""

    BEGUN = 0
    ERROR = 1
    ACTIVE = 2
    INACTIVE = 3


class McpNotificationsTag(enum.IntEnum):
    """The first byte of an mcp-notifications channel response frame."""

    NOTIFICATION = 0
    ERROR = 1


def _immutable(self: object, name: str, value: object = None) -> NoReturn:
    raise AttributeError(f"{type(self).__name__} is immutable")


class ProviderError:
    """The provider's error, ``{"message": str, ...}``: a message, and any other members kept in order."""

    __slots__ = ("message", "details")
    __match_args__ = ("message",)
    message: str
    details: dict[str, Any]

    def __init__(self, message: str, /, **details: Any) -> None:
        if not isinstance(message, str):
            raise TypeError(f"ProviderError message must be a str, not {type(message).__name__}")
        object.__setattr__(self, "message", str(message))
        object.__setattr__(self, "details", details)

    __setattr__ = __delattr__ = _immutable

    def __eq__(self, other: object) -> bool:
        if type(other) is not ProviderError:
            return NotImplemented
        return self.message == other.message and self.details == other.details

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ProviderError(message=<{len(self.message)} chars>, details=<{len(self.details)} members>)"

    def __reduce__(self) -> tuple[Any, ...]:
        return _provider_error_from_parts, (self.message, self.details)

    def to_json(self) -> dict[str, Any]:
        """The JSON object: ``message`` first, then the details in order."""
        return {"message": self.message, **self.details}


def _provider_error_from_parts(message: str, details: dict[str, Any]) -> ProviderError:
    return ProviderError(message, **details)


def provider_error_from_json(obj: Any) -> ProviderError:
    """Read the provider's error from parsed JSON, or raise Refused."""
    if type(obj) is not dict:
        raise Refused(errors.NOT_AN_OBJECT)
    message = obj.get("message")
    if type(message) is not str:
        raise Refused(errors.MESSAGE_NOT_A_STRING)
    error = object.__new__(ProviderError)
    object.__setattr__(error, "message", message)
    object.__setattr__(error, "details", {k: v for k, v in obj.items() if k != "message"})
    return error


class ErrorData:
    """MCP's (rmcp's) ErrorData: ``{"code": i32, "message": str, "data"?: any}``.

    ``data`` None means absent, as rmcp's ``Option`` has it: ``"data": null`` reads as
    None and is not written back.
    """

    __slots__ = ("code", "message", "data")
    __match_args__ = ("code", "message", "data")
    code: int
    message: str
    data: Any

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        if not isinstance(code, int) or isinstance(code, bool):
            raise TypeError(f"ErrorData code must be an int, not {type(code).__name__}")
        if not I32_MIN <= code <= I32_MAX:
            raise ValueError("ErrorData code must fit in 32 signed bits")
        if not isinstance(message, str):
            raise TypeError(f"ErrorData message must be a str, not {type(message).__name__}")
        object.__setattr__(self, "code", int(code))
        object.__setattr__(self, "message", str(message))
        object.__setattr__(self, "data", data)

    __setattr__ = __delattr__ = _immutable

    def __eq__(self, other: object) -> bool:
        if type(other) is not ErrorData:
            return NotImplemented
        return (self.code, self.message, self.data) == (other.code, other.message, other.data)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        data = "None" if self.data is None else "<present>"
        return f"ErrorData(code={self.code}, message=<{len(self.message)} chars>, data={data})"

    def __reduce__(self) -> tuple[Any, ...]:
        return ErrorData, (self.code, self.message, self.data)

    def to_json(self) -> dict[str, Any]:
        """The JSON object; ``data`` only when it is not None."""
        if self.data is None:
            return {"code": self.code, "message": self.message}
        return {"code": self.code, "message": self.message, "data": self.data}


def error_data_from_json(obj: Any) -> ErrorData:
    """Read ErrorData from parsed JSON, or raise Refused: a float or bool code is no i32."""
    if type(obj) is not dict:
        raise Refused(errors.NOT_AN_OBJECT)
    code = obj.get("code")
    if type(code) is not int:
        raise Refused(errors.CODE_INVALID)
    if not I32_MIN <= code <= I32_MAX:
        raise Refused(errors.CODE_OUT_OF_RANGE)
    message = obj.get("message")
    if type(message) is not str:
        raise Refused(errors.MESSAGE_NOT_A_STRING)
    error = object.__new__(ErrorData)
    object.__setattr__(error, "code", code)
    object.__setattr__(error, "message", message)
    object.__setattr__(error, "data", obj.get("data"))
    return error


class Active:
    """An exchange is in flight where none was: tools-begin tag 2, and nothing after it.

    There is one: ``Active()`` returns ``ACTIVE``, and decoding ``b"\\x02"`` returns it
    without allocating.
    """

    __slots__ = ()
    __match_args__ = ()
    tag = ToolsBeginTag.ACTIVE
    _the_one: Active

    def __new__(cls) -> Active:
        return cls._the_one

    __setattr__ = __delattr__ = _immutable

    def __repr__(self) -> str:
        return "Active()"

    def __reduce__(self) -> tuple[Any, ...]:
        return Active, ()


Active._the_one = object.__new__(Active)
ACTIVE = Active._the_one


def declaration_from_json(obj: Any) -> dict[str, Mode]:
    """A Begun's registration from parsed JSON: ``secrets`` absent means empty; else or Refused."""
    if type(obj) is not dict:
        raise Refused(errors.NOT_AN_OBJECT)
    if "secrets" not in obj:
        return {}
    return declaration(obj["secrets"], Refused)


def declaration(secrets: Any, failure: type[Exception] = ValueError) -> dict[str, Mode]:
    """Name to Mode, in order; every mode exactly ``"fixed"`` or ``"rotating"`` (or a Mode)."""
    if not isinstance(secrets, Mapping):
        raise failure(errors.SECRETS_NOT_AN_OBJECT)
    declared: dict[str, Mode] = {}
    for position, (name, mode) in enumerate(secrets.items()):
        found = MODES.get(mode) if isinstance(mode, str) else None
        if found is None or not isinstance(name, str):
            raise failure(errors.MODE_INVALID.format(position=position))
        declared[name] = found
    return declared


def notification_problem(notification: Any) -> str | None:
    """Why this is no notification, or None: a string ``method``; ``params`` absent, null or an object."""
    if type(notification) is not dict:
        return errors.NOT_AN_OBJECT
    if type(notification.get("method")) is not str:
        return errors.METHOD_NOT_A_STRING
    params = notification.get("params")
    if params is None:
        return None
    if type(params) is not dict:
        return errors.PARAMS_INVALID
    meta = params.get("_meta")
    if meta is not None and type(meta) is not dict:
        return errors.META_INVALID
    return None


def values_from(values: Any) -> dict[str, Any]:
    """A constructor's copy of Inactive values: a mapping of str names."""
    if not isinstance(values, Mapping):
        raise TypeError(f"Inactive values must be a mapping, not {type(values).__name__}")
    copied = dict(values)
    if not all(isinstance(name, str) for name in copied):
        raise TypeError("Inactive values must be keyed by str names")
    return copied


def as_bytes(obj: Any) -> bytes | None:
    """A bytes-like object's bytes, copied (so a later change to it changes nothing); None for others.

    A str is not bytes-like here, though it has an encoding: a payload is bytes.
    """
    if isinstance(obj, str):
        return None
    try:
        view = memoryview(obj)
    except TypeError:
        return None
    return view.tobytes()


def repr_names(names: Iterable[str]) -> str:
    return "[" + ", ".join(repr(name) for name in names) + "]"


def repr_begun(secrets: Mapping[str, Mode]) -> str:
    inner = ", ".join(f"{name!r}: {mode.value!r}" for name, mode in secrets.items())
    return f"Begun(secrets={{{inner}}})"


def repr_inactive(values: Mapping[str, Any]) -> str:
    return f"Inactive(names={repr_names(values)})"


def repr_notification(method: str, notification: Mapping[str, Any]) -> str:
    params = notification.get("params")
    shape = "None" if params is None else f"<{len(params)} members>"
    return f"Notification(method={method!r}, params={shape})"
