# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, binding=False, always_allow_keywords=False
"""The tools-begin response codec, compiled: the twin of ``_tools_begin_py.py``, same names, same behaviour.

Tag split, dispatch and frame building happen here; JSON bodies go to orjson
(through ``_json``); the rules for a registration and an error are the shared
model's, so they are written once.
"""

cimport cython
from cpython.bytearray cimport PyByteArray_CheckExact
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDictProxy_New

from diverge_codec._payload cimport new_shared_view, parse_body, payload_owner, tagged
from diverge_codec._values cimport encodable

from diverge_codec import _json, errors
from diverge_codec._model import (
    ACTIVE,
    Active,
    Mode,
    ProviderError,
    Refused,
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
from diverge_codec._model import ToolsBeginTag as Tag
from diverge_codec.errors import ToolsBeginBegunParseError as BegunParseError
from diverge_codec.errors import ToolsBeginEmptyFrameError as EmptyFrameError
from diverge_codec.errors import ToolsBeginErrorParseError as ErrorParseError
from diverge_codec.errors import ToolsBeginFrameError as FrameError
from diverge_codec.errors import ToolsBeginInactiveParseError as InactiveParseError
from diverge_codec.errors import ToolsBeginUnknownTagError as UnknownTagError

__all__ = [
    "ACTIVE", "Active", "Begun", "BegunParseError", "EmptyFrameError", "Error",
    "ErrorParseError", "FrameError", "Inactive", "InactiveParseError", "Tag",
    "UnknownTagError", "decode", "encode", "encode_into", "frame_inactive",
]

cdef object _loads = _json.loads
cdef object _body_view = new_shared_view(_json.VIEW_READ_AT_ONCE)
cdef object _raw_dumps = _json.raw_dumps
cdef object _encode_problem = _json.encode_problem
cdef bint _FULL_WALK = not _json.BACKEND_REFUSES_THE_REST
cdef object _DecodeFailure = _json.DecodeFailure
cdef object _EncodeFailure = _json.EncodeFailure
cdef object _failure_reason = _json.failure_reason
cdef object _ACTIVE = ACTIVE
cdef object _EMPTY = {}
cdef str _CHANNEL = "tools begin"


@cython.final
@cython.freelist(8)
cdef class Begun:
    """The connection has begun; these are the secrets the program takes, by name, in order. Tag 0.

    ``secrets`` is a read-only view (name to Mode).
    """

    cdef dict _secrets
    __match_args__ = ("secrets",)
    tag = Tag.BEGUN

    def __init__(self, secrets=_EMPTY):
        if self._secrets is not None:
            raise immutable_error(self)
        declared = declaration(secrets)
        if type(declared) is not dict:
            raise declared
        self._secrets = declared

    def __setattr__(self, name, value):
        raise immutable_error(self)

    def __delattr__(self, name):
        raise immutable_error(self)

    @property
    def secrets(self):
        if self._secrets is None:
            raise unset_attribute(self, "secrets")
        return PyDictProxy_New(self._secrets)

    def __eq__(self, other):
        if type(other) is not Begun:
            return NotImplemented
        return self._secrets == (<Begun>other)._secrets

    __hash__ = None

    def __repr__(self):
        return repr_begun(self._secrets)

    def __reduce__(self):
        return Begun, (self.secrets if self._secrets is None else self._secrets,)


@cython.final
@cython.freelist(8)
cdef class Error:
    """A failure, and the end of the scope: the provider's error. Tag 1."""

    cdef object _error
    __match_args__ = ("error",)
    tag = Tag.ERROR

    def __init__(self, error):
        if self._error is not None:
            raise immutable_error(self)
        if type(error) is not ProviderError:
            raise TypeError(f"Error takes a ProviderError, not {type(error).__name__}")
        self._error = error

    def __setattr__(self, name, value):
        raise immutable_error(self)

    def __delattr__(self, name):
        raise immutable_error(self)

    @property
    def error(self):
        if self._error is None:
            raise unset_attribute(self, "error")
        return self._error

    def __eq__(self, other):
        if type(other) is not Error:
            return NotImplemented
        return self._error == (<Error>other)._error

    __hash__ = None

    def __repr__(self):
        return repr_error(self._error)

    def __reduce__(self):
        return Error, (self.error,)


@cython.final
@cython.freelist(32)
cdef class Inactive:
    """The last exchange was answered; these are the rotating secrets, by name. Tag 3.

    ``values`` is a read-only view; the values inside it are the caller's, and encode
    checks them again. The repr names the secrets and never shows a value.
    """

    cdef dict _values
    __match_args__ = ("values",)
    tag = Tag.INACTIVE

    def __init__(self, values):
        if self._values is not None:
            raise immutable_error(self)
        copied = values_from(values)
        if type(copied) is not dict:
            raise copied
        self._values = copied

    def __setattr__(self, name, value):
        raise immutable_error(self)

    def __delattr__(self, name):
        raise immutable_error(self)

    @property
    def values(self):
        if self._values is None:
            raise unset_attribute(self, "values")
        return PyDictProxy_New(self._values)

    def __eq__(self, other):
        if type(other) is not Inactive:
            return NotImplemented
        return self._values == (<Inactive>other)._values

    __hash__ = None

    def __repr__(self):
        return repr_inactive(self._values)

    def __reduce__(self):
        return Inactive, (self.values if self._values is None else self._values,)


def decode(payload):
    """Read one tools-begin response payload. Raises a FrameError subclass, never quoting the payload."""
    cdef const char* data = NULL
    cdef Py_ssize_t size = 0
    cdef object owner = payload_owner(payload, &data, &size)
    if owner is None:
        raise errors.payload_type_error(_CHANNEL, payload)
    if size == 0:
        raise EmptyFrameError()
    cdef unsigned char tag = <unsigned char>data[0]
    if tag == 2:
        return _ACTIVE
    if tag > 3:
        raise UnknownTagError(tag)
    cdef object reason = None
    cdef Begun begun
    cdef Error error
    cdef Inactive inactive
    try:
        parsed = parse_body(_loads, _body_view, owner, data, size)
    except _DecodeFailure as problem:
        reason = _failure_reason(problem)
    else:
        try:
            if tag == 3:
                if type(parsed) is not dict:
                    raise Refused(errors.NOT_AN_OBJECT)
                inactive = Inactive.__new__(Inactive)
                inactive._values = parsed
                return inactive
            if tag == 0:
                begun = Begun.__new__(Begun)
                begun._secrets = declaration_from_json(parsed)
                return begun
            error = Error.__new__(Error)
            error._error = provider_error_from_json(parsed)
            return error
        except Refused as refused:
            reason = refused.reason
    if tag == 0:
        raise BegunParseError(reason)
    if tag == 3:
        raise InactiveParseError(reason)
    raise ErrorParseError(reason)


cdef bytes _dumped(object frame, object body):
    """body as JSON by the one writing contract: the walk in C, and the phrase from _json where it refuses."""
    cdef object reason = None
    if encodable(body, _FULL_WALK):
        try:
            return _raw_dumps(body)
        except _EncodeFailure as problem:  # the backend refused what the walk leaves to it
            reason = _encode_problem(body) or _failure_reason(problem)
    else:
        reason = _encode_problem(body) or "refused"
    raise errors.EncodeError(f"tools begin {type(frame).__name__} could not be encoded: {reason}")


cdef bytes _body(object frame, unsigned char* tag):
    """The JSON of a frame, and its tag."""
    cdef object kind = type(frame)
    cdef dict secrets
    cdef object body
    if kind is Inactive:
        tag[0] = 3
        body = (<Inactive>frame)._values
    elif kind is Begun:
        tag[0] = 0
        secrets = (<Begun>frame)._secrets
        body = secrets if secrets is None else {"secrets": {k: (<object>m).value for k, m in secrets.items()}} if secrets else {}
    elif kind is Error:
        tag[0] = 1
        body = (<Error>frame)._error
        if body is not None:
            body = body.to_json()
    else:
        raise TypeError(f"not a tools begin response frame: {kind.__name__}")
    if body is None:
        raise never_initialised(_CHANNEL, frame)
    return _dumped(frame, body)


def encode(frame):
    """The payload for a frame: its tag, then its JSON (Active: the tag alone)."""
    if frame is _ACTIVE:
        return b"\x02"
    cdef unsigned char tag = 0
    cdef bytes body = _body(frame, &tag)
    return tagged(tag, PyBytes_AS_STRING(body), PyBytes_GET_SIZE(body))


def encode_into(frame, out):
    """Append a frame's payload to ``out``, a bytearray."""
    if not PyByteArray_CheckExact(out):
        raise TypeError(f"encode_into appends to a bytearray, not {type(out).__name__}")
    if frame is _ACTIVE:
        (<bytearray>out).append(2)
        return
    cdef unsigned char tag = 0
    cdef bytes body = _body(frame, &tag)
    (<bytearray>out).append(tag)
    (<bytearray>out).extend(body)


def frame_inactive(values_json):
    """Tag 3 and JSON this does not read: for a relay that carries the values unopened."""
    cdef const char* data = NULL
    cdef Py_ssize_t size = 0
    cdef object owner = payload_owner(values_json, &data, &size)
    if owner is None:
        raise errors.raw_json_type_error("frame_inactive", values_json)
    return tagged(3, data, size)
