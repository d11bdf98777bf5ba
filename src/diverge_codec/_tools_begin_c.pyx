# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, binding=False, always_allow_keywords=False
"""The tools-begin response codec, compiled: the twin of ``_tools_begin_py.py``, same names, same behaviour.

Every variant is decoded and encoded here with no call into Python code: a Begun's
registration is read straight from its bytes and written straight to them
(``_tools_begin_scan.h``) in its common form, and so are Inactive values (objects,
arrays, plain strings, short integers, literals); any other form goes to orjson
(through ``_json``) and the shared model's rules, which word every refusal, so the
rules are written once. Inactive values are orjson's to write, an error's body to read
and write.
"""

cimport cython
from cpython.bytearray cimport PyByteArray_CheckExact
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDictProxy_New, PyDict_Copy
from cpython.number cimport PyNumber_InPlaceAdd
from cpython.object cimport PyObject

from diverge_codec._payload cimport bytes_owner, new_shared_body, owned, parse_body, parsed_or_null, payload_owner, tagged
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
cdef object _shared_body = new_shared_body(_loads, _json.VIEW_READ_AT_ONCE)
cdef object _raw_dumps = _json.raw_dumps
cdef object _encode_problem = _json.encode_problem
cdef bint _FULL_WALK = not _json.BACKEND_REFUSES_THE_REST
cdef object _DecodeFailure = _json.DecodeFailure
cdef object _EncodeFailure = _json.EncodeFailure
cdef object _failure_reason = _json.failure_reason
cdef object _ACTIVE = ACTIVE
cdef object _EMPTY = {}
cdef str _CHANNEL = "tools begin"
cdef object _FIXED = Mode.FIXED
cdef object _ROTATING = Mode.ROTATING
cdef type _ProviderError = ProviderError
cdef object _Refused = Refused
cdef str _MESSAGE = "message"
cdef bytes _EMPTY_BEGUN = b"\x00{}"


cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object obj, object name, object value) except -1


cdef extern from "_tools_begin_scan.h":
    object dt_declaration_or_none(const char* data, size_t size, object fixed, object rotating)
    object dt_begun_payload(object secrets, object fixed, object rotating)
    object dt_values_or_none(const char* data, size_t size)


@cython.freelist(8)
cdef class Begun:  # its fields and finality: _tools_begin_c.pxd
    """Begun(secrets={})
--

The connection has begun; these are the secrets the program takes, by name, in order. Tag 0.

    ``secrets`` is a read-only view (name to Mode).
    """

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


@cython.freelist(8)
cdef class Error:
    """Error(error)
--

A failure, and the end of the scope: the provider's error. Tag 1."""

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


@cython.freelist(32)
cdef class Inactive:
    """Inactive(values)
--

The last exchange was answered; these are the rotating secrets, by name. Tag 3.

    ``values`` is a read-only view; the values inside it are the caller's, and encode
    checks them again. The repr names the secrets and never shows a value.
    """

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
    cdef object owner = bytes_owner(payload, &data, &size)
    if owner is None:
        raise errors.payload_type_error(_CHANNEL, payload)
    return _decode(owner, data, size)


cdef inline object _decode(object owner, const char* data, Py_ssize_t size):
    """The frame in the size bytes at data, which the bytes object owner holds (data[size] is 0, and nothing can move them)."""
    cdef Begun begun
    cdef Inactive inactive
    cdef PyObject* result
    if size == 0:
        raise EmptyFrameError()
    cdef unsigned char tag = <unsigned char>data[0]
    if tag == 3:
        values = dt_values_or_none(data + 1, <size_t>(size - 1))
        if values is not None:
            inactive = Inactive.__new__(Inactive)
            inactive._values = <dict>values
            return inactive
    if tag == 3 and _shared_body is not None:
        result = parsed_or_null(_shared_body, data, size, _DecodeFailure)
        if result == NULL:
            return _parsed_frame(owner, data, size, 3)  # which words the refusal
        parsed = owned(result)
        if type(parsed) is not dict:
            parsed = None  # a traceback's captured locals show no value
            raise InactiveParseError(errors.NOT_AN_OBJECT)
        inactive = Inactive.__new__(Inactive)
        inactive._values = <dict>parsed
        return inactive
    if tag == 2:
        return _ACTIVE
    if tag > 3:
        raise UnknownTagError(tag)
    if tag == 0:
        declared = dt_declaration_or_none(data + 1, <size_t>(size - 1), _FIXED, _ROTATING)
        if declared is not None:
            begun = Begun.__new__(Begun)
            begun._secrets = <dict>declared
            return begun
    return _parsed_frame(owner, data, size, tag)


cdef object _parsed_frame(object owner, const char* data, Py_ssize_t size, unsigned char tag):
    """The frame from the body orjson parses; a refusal raised as the variant's ParseError."""
    cdef object reason
    cdef Begun begun
    cdef Error error
    cdef Inactive inactive
    try:
        parsed = parse_body(_loads, _shared_body, owner, data, size)
    except _DecodeFailure as problem:
        reason = _failure_reason(problem)
    else:
        if tag == 3:
            if type(parsed) is dict:
                inactive = Inactive.__new__(Inactive)
                inactive._values = <dict>parsed
                return inactive
            reason = errors.NOT_AN_OBJECT
        elif tag == 1:
            reason = _provider_error(parsed)
            if type(reason) is _ProviderError:
                error = Error.__new__(Error)
                error._error = reason
                return error
        else:
            reason = None
            try:
                declared = declaration_from_json(parsed)  # the model's rules word each refusal
            except _Refused as refused:
                reason = refused.reason
            if reason is None:
                begun = Begun.__new__(Begun)
                begun._secrets = declared
                return begun
    parsed = None  # a traceback's captured locals show no value
    if tag == 0:
        raise BegunParseError(reason)
    if tag == 3:
        raise InactiveParseError(reason)
    raise ErrorParseError(reason)


cdef object _provider_error(object parsed):
    """provider_error_from_json in C: the ProviderError, or the reason (a str) it is none."""
    if type(parsed) is not dict:
        return errors.NOT_AN_OBJECT
    message = (<dict>parsed).get(_MESSAGE)
    if type(message) is not str:
        return errors.MESSAGE_NOT_A_STRING
    cdef dict details = PyDict_Copy(parsed)
    details.pop(_MESSAGE, None)  # a GC callback during the copy may have changed the parsed dict: no KeyError
    error = _ProviderError.__new__(_ProviderError)
    PyObject_GenericSetAttr(error, _MESSAGE, message)  # the slots, past its __setattr__ that refuses
    PyObject_GenericSetAttr(error, "_details", details)
    return error


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


cdef object _begun_payload(dict secrets):
    """A declaration's whole payload written in C, or None where a name needs escaping (orjson writes it)."""
    if not secrets:
        return _EMPTY_BEGUN
    return dt_begun_payload(secrets, _FIXED, _ROTATING)


cdef dict _error_body(object error):
    """ProviderError.to_json in C: message first, then the details in order."""
    cdef dict body = {_MESSAGE: error.message}
    body.update(error._details)
    return body


cdef bytes _payload(object frame):
    """The payload of a frame (the tag, then its JSON), or TypeError / EncodeError."""
    cdef object kind = type(frame)
    cdef dict secrets
    cdef object body
    cdef unsigned char tag
    cdef bytes written
    if kind is Inactive:
        tag = 3
        body = (<Inactive>frame)._values
    elif kind is Begun:
        tag = 0
        secrets = (<Begun>frame)._secrets
        if secrets is not None:
            written = _begun_payload(secrets)
            if written is not None:
                return written
        body = secrets if secrets is None else {"secrets": {k: (<object>m).value for k, m in secrets.items()}}
    elif kind is Error:
        tag = 1
        body = (<Error>frame)._error
        if body is not None:
            body = _error_body(body)
    elif frame is _ACTIVE:
        return b"\x02"
    else:
        raise TypeError(f"not a tools begin response frame: {kind.__name__}")
    if body is None:
        raise never_initialised(_CHANNEL, frame)
    written = _dumped(frame, body)
    return tagged(tag, PyBytes_AS_STRING(written), PyBytes_GET_SIZE(written))


def encode(frame):
    """The payload for a frame: its tag, then its JSON (Active: the tag alone)."""
    return _payload(frame)


def encode_into(frame, buffer):
    """Append a frame's payload (``encode(frame)``, exactly) to ``buffer``, a bytearray; on failure it is left as it was."""
    if not PyByteArray_CheckExact(buffer):
        raise TypeError(f"encode_into appends to a bytearray, not {type(buffer).__name__}")
    PyNumber_InPlaceAdd(buffer, _payload(frame))  # one resize and copy, or none


def frame_inactive(values_json):
    """Tag 3 and JSON this does not read: for a relay that carries the values unopened."""
    cdef const char* data = NULL
    cdef Py_ssize_t size = 0
    cdef object owner = payload_owner(values_json, &data, &size)
    if owner is None:
        raise errors.raw_json_type_error("frame_inactive", values_json)
    return tagged(3, data, size)


def _read_declaration(body):
    """The compiled reader's declaration of a Begun body (bytes-like), or None where it hands the body on: for the tests and the fuzzer."""
    cdef bytes owned = bytes(body)  # held: data[size] is 0 and nothing can move it
    return dt_declaration_or_none(PyBytes_AS_STRING(owned), <size_t>PyBytes_GET_SIZE(owned), _FIXED, _ROTATING)


def _read_values(body):
    """The compiled reader's Inactive values of a body (bytes-like), or None where it hands the body on: for the tests and the fuzzer."""
    cdef bytes owned = bytes(body)  # held: data[size] is 0 and nothing can move it
    return dt_values_or_none(PyBytes_AS_STRING(owned), <size_t>PyBytes_GET_SIZE(owned))
