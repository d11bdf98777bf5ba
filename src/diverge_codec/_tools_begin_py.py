"""The tools-begin response codec in pure Python: the twin of ``_tools_begin_c.pyx``.

A payload is one tag byte, then that variant's JSON, or, for Active, nothing.
This module is also the typed reference: under TYPE_CHECKING the public module
imports from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

from . import _json, errors
from ._model import (
    ACTIVE,
    Active,
    Mode,
    ProviderError,
    Refused,
    _immutable,
    _slot,
    _view,
    as_bytes,
    declaration,
    declaration_from_json,
    immutable_error,
    never_initialised,
    provider_error_from_json,
    repr_begun,
    repr_error,
    repr_inactive,
    unset_attribute,
    values_from,
)
from ._model import ToolsBeginTag as Tag
from .errors import ToolsBeginBegunParseError as BegunParseError
from .errors import ToolsBeginEmptyFrameError as EmptyFrameError
from .errors import ToolsBeginErrorParseError as ErrorParseError
from .errors import ToolsBeginFrameError as FrameError
from .errors import ToolsBeginInactiveParseError as InactiveParseError
from .errors import ToolsBeginUnknownTagError as UnknownTagError
from typing import ClassVar  # (annotations)
from ._model import DelAttr, SetAttr

__all__ = [
    "ACTIVE", "Active", "Begun", "BegunParseError", "EmptyFrameError", "Error",
    "ErrorParseError", "Frame", "FrameError", "Inactive", "InactiveParseError", "Tag",
    "UnknownTagError", "decode", "encode", "encode_into", "frame_inactive",
]

_EMPTY: Mapping[str, Any] = {}
_CHANNEL = "tools begin"


class Begun:
    """The connection has begun; these are the secrets the program takes, by name, in order. Tag 0.

    ``secrets`` is a read-only view (name to Mode).
    """

    __slots__ = ("_secrets",)
    __match_args__ = ("secrets",)
    tag = Tag.BEGUN
    _secrets: dict[str, Mode]

    def __init__(self, secrets: Mapping[str, Mode | str] = _EMPTY) -> None:
        declared = declaration(secrets) if _slot(self, "_secrets") is None else immutable_error(self)
        if type(declared) is not dict:
            secrets = None  # type: ignore[assignment]  # a traceback's captured locals show no value
            raise declared  # type: ignore[misc]
        object.__setattr__(self, "_secrets", declared)

    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

    @property
    def secrets(self) -> Mapping[str, Mode]:
        return _view(self, "_secrets", "secrets")

    def __eq__(self, other: object) -> bool:
        if type(other) is not Begun:
            return NotImplemented
        return _slot(self, "_secrets") == _slot(other, "_secrets")  # type: ignore[no-any-return]

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr_begun(_slot(self, "_secrets"))

    def __reduce__(self) -> tuple[Any, ...]:
        return Begun, (self._secrets,)


class Error:
    """A failure, and the end of the scope: the provider's error. Tag 1."""

    __slots__ = ("error",)
    __match_args__ = ("error",)
    tag = Tag.ERROR
    error: ProviderError

    def __init__(self, error: ProviderError) -> None:
        if _slot(self, "error") is not None:
            raise immutable_error(self)
        if type(error) is not ProviderError:
            failure = TypeError(f"Error takes a ProviderError, not {type(error).__name__}")
            error = None  # type: ignore[assignment]  # a traceback's captured locals show no value
            raise failure
        object.__setattr__(self, "error", error)

    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

    def __getattr__(self, name: str) -> Any:
        # Reached where the slot is unset (made with __new__): the compiled core's message, which
        # CPython 3.13+ would otherwise give as "'diverge_codec._tools_begin_py.Error' object ...".
        raise unset_attribute(self, name)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Error:
            return NotImplemented
        return _slot(self, "error") == _slot(other, "error")  # type: ignore[no-any-return]

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr_error(_slot(self, "error"))

    def __reduce__(self) -> tuple[Any, ...]:
        return Error, (self.error,)


class Inactive:
    """The last exchange was answered; these are the rotating secrets, by name. Tag 3.

    ``values`` is a read-only view; the values inside it are the caller's, and encode
    checks them again. The repr names the secrets and never shows a value.
    """

    __slots__ = ("_values",)
    __match_args__ = ("values",)
    tag = Tag.INACTIVE
    _values: dict[str, Any]

    def __init__(self, values: Mapping[str, Any]) -> None:
        copied = values_from(values) if _slot(self, "_values") is None else immutable_error(self)
        if type(copied) is not dict:
            values = None  # type: ignore[assignment]  # a traceback's captured locals show no value
            raise copied  # type: ignore[misc]
        object.__setattr__(self, "_values", copied)

    __setattr__: ClassVar[SetAttr] = _immutable
    __delattr__: ClassVar[DelAttr] = _immutable

    @property
    def values(self) -> Mapping[str, Any]:
        return _view(self, "_values", "values")

    def __eq__(self, other: object) -> bool:
        if type(other) is not Inactive:
            return NotImplemented
        return _slot(self, "_values") == _slot(other, "_values")  # type: ignore[no-any-return]

    __hash__: ClassVar[None] = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr_inactive(_slot(self, "_values"))

    def __reduce__(self) -> tuple[Any, ...]:
        return Inactive, (self._values,)


Frame = Union[Begun, Error, Active, Inactive]

_new = object.__new__
_set_secrets = Begun._secrets.__set__  # type: ignore[attr-defined,misc]
_set_error = Error.error.__set__  # type: ignore[attr-defined,misc]
_set_values = Inactive._values.__set__  # type: ignore[attr-defined,misc]


def decode(payload: bytes | bytearray | memoryview, /) -> Frame:
    """Read one tools-begin response payload. Raises a FrameError subclass, never quoting the payload."""
    data = payload if type(payload) is bytes else as_bytes(payload)
    if data is None:
        failure: Exception = errors.payload_type_error(_CHANNEL, payload)
        payload = None  # type: ignore[assignment]  # a traceback's captured locals show no value
        raise failure
    if not data:
        raise EmptyFrameError()
    tag = data[0]
    if tag == 2:
        return ACTIVE
    if tag > 3:
        payload = data = None  # type: ignore[assignment]  # a traceback's captured locals show no value
        raise UnknownTagError(tag)
    reason = ""
    try:
        parsed = _json.loads(data[1:] if len(data) <= _json.VIEW_FROM else memoryview(data)[1:])  # no second copy
    except _json.DecodeFailure as problem:
        reason = _json.failure_reason(problem)
    else:
        try:
            if tag == 0:
                frame: Frame = _new(Begun)
                _set_secrets(frame, declaration_from_json(parsed))
                return frame
            if tag == 3:
                if type(parsed) is not dict:
                    raise Refused(errors.NOT_AN_OBJECT)
                frame = _new(Inactive)
                _set_values(frame, parsed)
                return frame
            frame = _new(Error)
            _set_error(frame, provider_error_from_json(parsed))
            return frame
        except Refused as refused:
            reason = refused.reason
    payload = data = parsed = None  # type: ignore[assignment]  # a traceback's captured locals show no value
    raise (BegunParseError if tag == 0 else InactiveParseError if tag == 3 else ErrorParseError)(reason)


_TAGS = {Begun: b"\x00", Error: b"\x01", Inactive: b"\x03"}


def _body(frame: Frame) -> bytes:
    """The JSON of a frame, by the one writing contract (``_json.encode_problem``)."""
    kind = type(frame)
    try:
        if kind is Inactive:
            body: Any = frame._values  # type: ignore[union-attr]
        elif kind is Begun:
            secrets = frame._secrets  # type: ignore[union-attr]
            body = {"secrets": {name: mode.value for name, mode in secrets.items()}} if secrets else {}
        elif kind is Error:
            body = frame.error  # type: ignore[union-attr]
        else:
            raise TypeError(f"not a tools begin response frame: {kind.__name__}")
    except AttributeError:
        raise never_initialised(_CHANNEL, frame) from None
    if kind is Error:
        body = body.to_json()
    reason = ""
    try:
        return _json.dumps(body)
    except _json.EncodeFailure as problem:
        reason = _json.failure_reason(problem)
    body = frame = None  # type: ignore[assignment]  # a traceback's captured locals show no value
    raise errors.EncodeError(f"tools begin {kind.__name__} could not be encoded: {reason}")


def encode(frame: Frame, /) -> bytes:
    """The payload for a frame: its tag, then its JSON (Active: the tag alone)."""
    if frame is ACTIVE:
        return b"\x02"
    body = _body(frame)
    return _TAGS[type(frame)] + body


def encode_into(frame: Frame, buffer: bytearray) -> None:
    """Append a frame's payload (``encode(frame)``, exactly) to ``buffer``, a bytearray; on failure it is left as it was."""
    if type(buffer) is not bytearray:
        raise TypeError(f"encode_into appends to a bytearray, not {type(buffer).__name__}")
    buffer += encode(frame)  # the whole payload first: a refusal leaves the buffer untouched


def frame_inactive(values_json: bytes | bytearray | memoryview, /) -> bytes:
    """Tag 3 and JSON this does not read: for a relay that carries the values unopened."""
    raw = values_json if type(values_json) is bytes else as_bytes(values_json)
    if raw is None:
        failure = errors.raw_json_type_error("frame_inactive", values_json)
        values_json = None  # type: ignore[assignment]  # a traceback's captured locals show no value
        raise failure
    return b"\x03" + raw
