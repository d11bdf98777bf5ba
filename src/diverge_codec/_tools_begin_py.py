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
    as_bytes,
    declaration,
    declaration_from_json,
    provider_error_from_json,
    repr_begun,
    repr_inactive,
    values_from,
)
from ._model import ToolsBeginTag as Tag
from .errors import ToolsBeginBegunParseError as BegunParseError
from .errors import ToolsBeginEmptyFrameError as EmptyFrameError
from .errors import ToolsBeginErrorParseError as ErrorParseError
from .errors import ToolsBeginFrameError as FrameError
from .errors import ToolsBeginInactiveParseError as InactiveParseError
from .errors import ToolsBeginUnknownTagError as UnknownTagError

__all__ = [
    "ACTIVE", "Active", "Begun", "BegunParseError", "EmptyFrameError", "Error",
    "ErrorParseError", "Frame", "FrameError", "Inactive", "InactiveParseError", "Tag",
    "UnknownTagError", "decode", "encode", "encode_into", "frame_inactive",
]

_EMPTY: Mapping[str, Any] = {}
_CHANNEL = "tools begin"


def _frozen(self: object, name: str, value: object = None) -> None:
    raise AttributeError(f"{type(self).__name__} is immutable")


class Begun:
    """The connection has begun; these are the secrets the program takes, by name, in order. Tag 0."""

    __slots__ = ("secrets",)
    __match_args__ = ("secrets",)
    tag = Tag.BEGUN
    secrets: dict[str, Mode]

    def __init__(self, secrets: Mapping[str, Mode | str] = _EMPTY) -> None:
        object.__setattr__(self, "secrets", declaration(secrets))

    __setattr__ = __delattr__ = _frozen

    def __eq__(self, other: object) -> bool:
        if type(other) is not Begun:
            return NotImplemented
        return self.secrets == other.secrets

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr_begun(self.secrets)

    def __reduce__(self) -> tuple[Any, ...]:
        return Begun, (self.secrets,)


class Error:
    """A failure, and the end of the scope: the provider's error. Tag 1."""

    __slots__ = ("error",)
    __match_args__ = ("error",)
    tag = Tag.ERROR
    error: ProviderError

    def __init__(self, error: ProviderError) -> None:
        if type(error) is not ProviderError:
            raise TypeError(f"Error takes a ProviderError, not {type(error).__name__}")
        object.__setattr__(self, "error", error)

    __setattr__ = __delattr__ = _frozen

    def __eq__(self, other: object) -> bool:
        if type(other) is not Error:
            return NotImplemented
        return self.error == other.error

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Error(error={self.error!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return Error, (self.error,)


class Inactive:
    """The last exchange was answered; these are the rotating secrets, by name. Tag 3.

    The repr names the secrets and never shows a value.
    """

    __slots__ = ("values",)
    __match_args__ = ("values",)
    tag = Tag.INACTIVE
    values: dict[str, Any]

    def __init__(self, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "values", values_from(values))

    __setattr__ = __delattr__ = _frozen

    def __eq__(self, other: object) -> bool:
        if type(other) is not Inactive:
            return NotImplemented
        return self.values == other.values

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr_inactive(self.values)

    def __reduce__(self) -> tuple[Any, ...]:
        return Inactive, (self.values,)


Frame = Union[Begun, Error, Active, Inactive]

_new = object.__new__
_set_secrets = Begun.secrets.__set__  # type: ignore[attr-defined,misc]
_set_error = Error.error.__set__  # type: ignore[attr-defined,misc]
_set_values = Inactive.values.__set__  # type: ignore[attr-defined,misc]


def decode(payload: bytes | bytearray | memoryview, /) -> Frame:
    """Read one tools-begin response payload. Raises a FrameError subclass, never quoting the payload."""
    data = payload if type(payload) is bytes else as_bytes(payload)
    if data is None:
        raise errors.payload_type_error(_CHANNEL, payload)
    if not data:
        raise EmptyFrameError()
    tag = data[0]
    if tag == 2:
        return ACTIVE
    if tag > 3:
        raise UnknownTagError(tag)
    failure: type[FrameError]
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
    failure = BegunParseError if tag == 0 else InactiveParseError if tag == 3 else ErrorParseError
    raise failure(reason)


def _body(frame: Frame) -> bytes:
    kind = type(frame)
    reason = ""
    try:
        if kind is Inactive:
            return _json.dumps(frame.values)  # type: ignore[union-attr]
        if kind is Begun:
            secrets = frame.secrets  # type: ignore[union-attr]
            return _json.dumps({"secrets": secrets} if secrets else {})
        if kind is Error:
            return _json.dumps(frame.error.to_json())  # type: ignore[union-attr]
    except _json.EncodeFailure as problem:
        reason = _json.failure_reason(problem)
    if reason:
        raise errors.EncodeError(f"tools begin {kind.__name__} could not be encoded: {reason}")
    raise TypeError(f"not a tools begin response frame: {kind.__name__}")


def encode(frame: Frame, /) -> bytes:
    """The payload for a frame: its tag, then its JSON (Active: the tag alone)."""
    if frame is ACTIVE:
        return b"\x02"
    body = _body(frame)
    return bytes((frame.tag,)) + body


def encode_into(frame: Frame, out: bytearray) -> None:
    """Append a frame's payload to ``out``, a bytearray."""
    if type(out) is not bytearray:
        raise TypeError(f"encode_into appends to a bytearray, not {type(out).__name__}")
    if frame is ACTIVE:
        out.append(2)
        return
    body = _body(frame)
    out.append(frame.tag)
    out += body


def frame_inactive(values_json: bytes | bytearray | memoryview, /) -> bytes:
    """Tag 3 and JSON this does not read: for a relay that carries the values unopened."""
    raw = values_json if type(values_json) is bytes else as_bytes(values_json)
    if raw is None:
        raise errors.raw_json_type_error("frame_inactive", values_json)
    return b"\x03" + raw
