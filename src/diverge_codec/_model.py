"""The model both channels and both implementations share.

Secret modes, the provider's error, MCP's ErrorData, the tags, the one Active frame,
and the rules for reading them from parsed JSON. The compiled core calls these too,
so a rule is written once. Reprs show shape, never payload values.

Return the exception, let the caller raise it. A check here (``*_problem``,
``*_from``, ``immutable_error``, ``unset_attribute``...) returns the exception it
would raise, or the checked value, instead of raising: a traceback keeps each frame's
locals (debuggers, ``traceback.TracebackException(capture_locals=True)``, error
reporters show them), and the frames that held the payload (a secret, a message, the
values) would be in it. The caller drops its own references to the payload first
(``message = details = None``), then raises what it was handed, so the traceback holds
only the constructor's frame with no value in it. The compiled core calls the same
functions and raises the same way. docs/internals.md says the same.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Callable, ClassVar, NoReturn

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


def immutable_error(self: object) -> AttributeError:
    """What changing a frame or a model value raises, in both cores (re-running ``__init__`` too)."""
    return AttributeError(f"{type(self).__name__} is immutable")


def _immutable(self: object, name: str, value: object = None) -> NoReturn:
    raise immutable_error(self)


SetAttr = Callable[[object, str, object], NoReturn]
"""The declared type of a frame's ``__setattr__`` (``_immutable``): it always raises."""
DelAttr = Callable[[object, str], NoReturn]
"""The declared type of a frame's ``__delattr__`` (``_immutable``): it always raises."""


def exact_str(text: str) -> str:
    """A str subclass's text as a plain str (its own ``__str__`` is not asked): decode gives plain ones."""
    return text if type(text) is str else str.__str__(text)


UNSET = "<not initialised>"
"""What a repr shows for a value made with ``__new__`` and never initialised: it must not fail."""


def _size(value: Any, unit: str) -> str:
    return f"<{len(value)} {unit}>" if value is not None else UNSET


class ProviderError:
    """The provider's error, ``{"message": str, ...}``: a message, and any other members kept in order.

    ``details`` is a read-only view. A detail named ``message`` is refused: on the
    wire it would be the message.
    """

    __slots__ = ("message", "_details")
    __match_args__ = ("message",)
    message: str
    _details: dict[str, Any]

    def __init__(self, message: str, /, **details: Any) -> None:
        problem = _provider_error_problem(self, message, details)
        if problem is not None:
            message = details = None  # type: ignore[assignment]  # a traceback's captured locals show no value
            raise problem
        object.__setattr__(self, "message", exact_str(message))
        object.__setattr__(self, "_details", {exact_str(name): value for name, value in details.items()})

    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

    @property
    def details(self) -> Mapping[str, Any]:
        """The members other than ``message``, in order: a read-only view."""
        return _view(self, "_details", "details")

    def __eq__(self, other: object) -> bool:
        if type(other) is not ProviderError:
            return NotImplemented
        return _slot(self, "message") == _slot(other, "message") and _slot(self, "_details") == _slot(other, "_details")  # type: ignore[no-any-return]

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        message, details = _slot(self, "message"), _slot(self, "_details")
        return f"ProviderError(message={_size(message, 'chars')}, details={_size(details, 'members')})"

    def __reduce__(self) -> tuple[Any, ...]:
        return _provider_error_from_parts, (self.message, self._details)

    def to_json(self) -> dict[str, Any]:
        """The JSON object: ``message`` first, then the details in order."""
        return {"message": self.message, **self._details}


def _slot(obj: Any, name: str) -> Any:
    """A slot's value, or None where ``__new__`` made the object and nothing set it."""
    try:
        return object.__getattribute__(obj, name)
    except AttributeError:
        return None


def _view(obj: Any, slot: str, name: str) -> Mapping[str, Any]:
    """A read-only view of a frame's own dict: no copy, and no way to change the frame through it."""
    held = _slot(obj, slot)
    if held is None:
        raise unset_attribute(obj, name)
    return MappingProxyType(held)


def _provider_error_problem(error: ProviderError, message: Any, details: dict[str, Any]) -> Exception | None:
    if _slot(error, "message") is not None:
        return immutable_error(error)
    if not isinstance(message, str):
        return TypeError(f"ProviderError message must be a str, not {type(message).__name__}")
    if "message" in details:
        return TypeError("ProviderError got a detail named 'message', which is its message on the wire")
    return None


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
    object.__setattr__(error, "_details", {k: v for k, v in obj.items() if k != "message"})
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
        problem = _error_data_problem(self, code, message)
        if problem is not None:
            code = message = data = None  # type: ignore[assignment]  # a traceback's captured locals show no value
            raise problem
        object.__setattr__(self, "code", operator.index(code))  # a plain int; PyPy's int.__int__ asks the override
        object.__setattr__(self, "message", exact_str(message))
        object.__setattr__(self, "data", data)

    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

    def __eq__(self, other: object) -> bool:
        if type(other) is not ErrorData:
            return NotImplemented
        return all(_slot(self, name) == _slot(other, name) for name in ErrorData.__slots__)

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        code, message = _slot(self, "code"), _slot(self, "message")
        if code is None:
            return f"ErrorData({UNSET})"
        data = "None" if _slot(self, "data") is None else "<present>"
        return f"ErrorData(code={code}, message={_size(message, 'chars')}, data={data})"

    def __reduce__(self) -> tuple[Any, ...]:
        return ErrorData, (self.code, self.message, self.data)

    def to_json(self) -> dict[str, Any]:
        """The JSON object; ``data`` only when it is not None."""
        if self.data is None:
            return {"code": self.code, "message": self.message}
        return {"code": self.code, "message": self.message, "data": self.data}


def _error_data_problem(error: ErrorData, code: Any, message: Any) -> Exception | None:
    if _slot(error, "code") is not None:
        return immutable_error(error)
    if not isinstance(code, int) or isinstance(code, bool):
        return TypeError(f"ErrorData code must be an int, not {type(code).__name__}")
    if not I32_MIN <= code <= I32_MAX:
        return ValueError("ErrorData code must fit in 32 signed bits")
    if not isinstance(message, str):
        return TypeError(f"ErrorData message must be a str, not {type(message).__name__}")
    return None


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

    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

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
    declared = declaration(obj["secrets"])
    if type(declared) is not dict:
        raise Refused(str(declared))
    return declared


def declaration(secrets: Any) -> dict[str, Mode] | Exception:
    """Name to Mode, in order; every mode exactly ``"fixed"`` or ``"rotating"`` (or a Mode).

    The failure is returned, not raised, as the other constructor checks here are: the
    constructor raises it after dropping its arguments, so a traceback's captured locals
    (what error trackers record) hold no value.
    """
    if not isinstance(secrets, Mapping):
        return ValueError(errors.SECRETS_NOT_AN_OBJECT)
    declared: dict[str, Mode] = {}
    for position, (name, mode) in enumerate(secrets.items()):
        found = MODES.get(mode) if isinstance(mode, str) else None
        if found is None or not isinstance(name, str):
            return ValueError(errors.MODE_INVALID.format(position=position))
        declared[exact_str(name)] = found
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


def values_from(values: Any) -> dict[str, Any] | Exception:
    """A constructor's copy of Inactive values, a mapping of str names; or the failure, returned."""
    if not isinstance(values, Mapping):
        return TypeError(f"Inactive values must be a mapping, not {type(values).__name__}")
    copied = dict(values)
    if not all(isinstance(name, str) for name in copied):
        return TypeError("Inactive values must be keyed by str names")
    if all(type(name) is str for name in copied):
        return copied
    return {exact_str(name): value for name, value in copied.items()}


def notification_from(notification: Any) -> dict[str, Any] | Exception:
    """A constructor's copy of a notification (any mapping: another frame's view too), checked after
    it is copied, so nothing can change between the check and the copy; or the failure, returned."""
    copied = dict(notification) if isinstance(notification, Mapping) else None
    problem = notification_problem(copied)
    if problem is not None:
        return (TypeError if problem is errors.NOT_AN_OBJECT else ValueError)(f"Notification: {problem}")
    return copied  # type: ignore[return-value]


def unset_attribute(obj: object, name: str) -> AttributeError:
    """Reading a frame's member where ``__new__`` made the frame and nothing initialised it."""
    return AttributeError(f"{type(obj).__name__!r} object has no attribute {name!r}")


def never_initialised(channel: str, obj: object) -> Exception:
    """Encoding a frame that ``__new__`` made and nothing initialised: refused, in both cores."""
    return errors.EncodeError(f"{channel} {type(obj).__name__} could not be encoded: it was never initialised")


def as_bytes(obj: Any) -> bytes | None:
    """A bytes-like object's bytes, copied (so a later change to it changes nothing); None for others.

    A str is not bytes-like here, though it has an encoding: a payload is bytes. A
    released memoryview (ValueError) or a buffer export that fails (BufferError) is
    no payload either: the caller raises the same TypeError as for any other.
    """
    if isinstance(obj, str):
        return None
    try:
        with memoryview(obj) as view:  # released at once: on PyPy an unreleased export would block resizing obj
            return view.tobytes()
    except (TypeError, ValueError, BufferError):
        return None


def repr_names(names: Iterable[str]) -> str:
    return "[" + ", ".join(repr(name) for name in names) + "]"


def repr_begun(secrets: Mapping[str, Mode] | None) -> str:
    if secrets is None:
        return f"Begun({UNSET})"
    inner = ", ".join(f"{name!r}: {mode.value!r}" for name, mode in secrets.items())
    return f"Begun(secrets={{{inner}}})"


def repr_inactive(values: Mapping[str, Any] | None) -> str:
    if values is None:
        return f"Inactive({UNSET})"
    return f"Inactive(names={repr_names(values)})"


def repr_notification(method: str | None, notification: Mapping[str, Any] | None) -> str:
    if method is None or notification is None:
        return f"Notification({UNSET})"
    params = notification.get("params")
    shape = "None" if type(params) is not dict else f"<{len(params)} members>"
    return f"Notification(method={method!r}, params={shape})"


def repr_error(error: object) -> str:
    return f"Error({UNSET})" if error is None else f"Error(error={error!r})"
