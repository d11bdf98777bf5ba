# Included at the end of _mcp_notifications_c.pyx: decode_lazy, routing without parsing.
# The twin is the end of _mcp_notifications_py.py.

from cpython.float cimport PyFloat_FromDouble
from cpython.long cimport PyLong_FromLongLong
from cpython.unicode cimport PyUnicode_DecodeUTF8

from diverge_codec._payload cimport GIL_BUILD

from diverge_codec._mcp_notifications_py import _params_span


cdef extern from "_jsonscan.h":
    ctypedef struct dc_member_span:
        size_t key, key_end, value, end
        int key_escaped, value_escaped
    enum:
        DC_MAX_MEMBERS
    ctypedef struct dc_fields:
        size_t method_start, method_end, params_start, params_end
        int method_escaped
        size_t nmembers
        dc_member_span members[DC_MAX_MEMBERS]
    size_t DC_NONE
    int dc_scan_fields(const char* data, size_t size, dc_fields* fields) nogil


@cython.final
@cython.freelist(64)
cdef class LazyNotification:
    """LazyNotification(*args, **kwargs)
--

A notification read for routing: its ``method``, and its params as the JSON bytes sent.

    ``params_json`` is None where the notification has no ``params`` member, and
    ``b"null"`` where it is null: the bytes as sent, never re-serialized. ``materialize()``
    is what ``decode`` gives. Made by ``decode_lazy`` only; immutable; its repr shows the
    method and the params' size, never a value.
    """

    tag = Tag.NOTIFICATION

    # One made by __new__ alone has no payload: it refuses what the pure twin's empty
    # slots refuse, with the same AttributeError, rather than hand out None and b"".
    cdef str _method
    cdef bytes _payload  # the tag and the body, immutable; None where __new__ alone made it
    cdef Py_ssize_t _params_start, _params_end  # offsets in _payload; -1 where params is absent

    def __init__(self, *args, **kwargs):
        raise TypeError("LazyNotification is made by decode_lazy")

    def __setattr__(self, name, value):
        raise immutable_error(self)

    def __delattr__(self, name):
        raise immutable_error(self)

    @property
    def method(self):
        if self._method is None:
            raise unset_attribute(self, "method")
        return self._method

    @property
    def params_json(self):
        if self._payload is None:
            raise unset_attribute(self, "params_json")
        if self._params_start < 0:
            return None
        return PyBytes_FromStringAndSize(PyBytes_AS_STRING(self._payload) + self._params_start,
                                         self._params_end - self._params_start)

    cdef bytes _payload_or_raise(self):
        if self._payload is None:
            raise unset_attribute(self, "_payload")  # the pure twin's slot error, word for word
        return self._payload

    def materialize(self):
        """The Notification that ``decode`` gives for this payload (the params parsed now)."""
        return _decode(self._payload_or_raise())

    def __eq__(self, other):
        if type(other) is not LazyNotification:
            return NotImplemented
        return self._payload_or_raise() == (<LazyNotification>other)._payload_or_raise()

    __hash__ = None

    def __repr__(self):
        if self._payload is None:
            return "LazyNotification(<not initialised>)"
        params = "None" if self._params_start < 0 else f"<{self._params_end - self._params_start} bytes>"
        return f"LazyNotification(method={self._method!r}, params_json={params})"

    def __reduce__(self):
        return decode_lazy, (self._payload_or_raise(),)


cdef extern from "Python.h":
    void* PyUnicode_DATA(object text)
    bint PyUnicode_IS_ASCII(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)


# The ASCII methods last read, one a slot by length and last byte: a stream repeats its methods (two
# or three by turns), and handing the same str again costs a compare where a new one costs a decode,
# an allocation and a free (docs/internals.md). Not on a free-threaded build, where threads would race on it.
cdef list _METHODS = [""] * 16


cdef str _method_of(const char* text, Py_ssize_t size):
    """The method's str from its UTF-8 between the quotes, with no escape (strict, as the scan checked)."""
    cdef Py_ssize_t slot = (size + (<unsigned char>text[size - 1] if size else 0)) & 15
    cdef str last = <str>_METHODS[slot]
    if GIL_BUILD and PyUnicode_GET_LENGTH(last) == size and memcmp(PyUnicode_DATA(last), text, size) == 0:
        return last  # ASCII, so its characters are its bytes
    cdef str method = PyUnicode_DecodeUTF8(text, size, NULL)
    if GIL_BUILD and PyUnicode_IS_ASCII(method):
        _METHODS[slot] = method
    return method


cdef LazyNotification _lazy(bytes payload, str method, Py_ssize_t params_start, Py_ssize_t params_end):
    cdef LazyNotification lazy = LazyNotification.__new__(LazyNotification)
    lazy._method = method
    lazy._payload = payload
    lazy._params_start = params_start
    lazy._params_end = params_end
    return lazy


cdef object _lazy_from_decode(bytes payload):
    """What the scan could not settle: decode words the refusal, or (never yet seen) accepts, and the twin's span stands."""
    frame = _decode(payload)
    span = _params_span(payload)
    if span is None:
        return _lazy(payload, (<Notification?>frame).method, -1, -1)
    return _lazy(payload, (<Notification?>frame).method, span[0], span[1])


def decode_lazy(payload):
    """Read a payload for routing: a LazyNotification (method, raw params) for tag 0, else what ``decode`` gives.

    It accepts and refuses exactly what ``decode`` does, with the same errors: the
    compiled scanner validates the whole body, and builds only the method.
    """
    cdef const char* data
    cdef Py_ssize_t size
    cdef object owner
    cdef dc_fields fields
    cdef int status
    cdef str method
    if PyBytes_CheckExact(payload):
        owner = payload
        data, size = PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload)
    elif PyByteArray_CheckExact(payload):  # kept and read after allocations that may resize it: copy it
        owner = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(payload), PyByteArray_GET_SIZE(payload))
        data, size = PyBytes_AS_STRING(owner), PyBytes_GET_SIZE(owner)
    else:
        owner = payload_owner(payload, &data, &size)
        if owner is None:
            raise errors.payload_type_error(_CHANNEL, payload)
        if type(owner) is not bytes:
            owner = PyBytes_FromStringAndSize(data, size)
            data, size = PyBytes_AS_STRING(owner), PyBytes_GET_SIZE(owner)
    if size == 0 or data[0] != 0:
        return _decode(owner)  # empty, an Error frame, or an unknown tag
    status = dc_scan_fields(data + 1, <size_t>(size - 1), &fields)
    if status == DC_METHOD or status == DC_PARAMS or status == DC_META:
        raise NotificationParseError(<str>_SHAPE_PROBLEMS[status])
    if status != DC_NOTIFICATION:
        return _lazy_from_decode(owner)
    if fields.method_escaped:
        method = _loads(PyBytes_FromStringAndSize(data + 1 + fields.method_start, fields.method_end - fields.method_start))
    else:
        method = _method_of(data + 2 + fields.method_start, fields.method_end - fields.method_start - 2)
    if fields.params_start == DC_NONE:
        return _lazy(owner, method, -1, -1)
    return _lazy(owner, method, fields.params_start + 1, fields.params_end + 1)
