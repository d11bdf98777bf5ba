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
    size_t dc_plain_string(const unsigned char* s, size_t pos, size_t end, int* ascii) nogil
    size_t dc_unescape(const unsigned char* s, size_t pos, unsigned char* out, size_t* close) nogil


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
    str PyUnicode_New(Py_ssize_t size, Py_UCS4 maxchar)
    void* PyUnicode_DATA(object text)
    double PyOS_string_to_double(const char* text, char** end, PyObject* overflow_exception) except? -1.0
    bint PyUnicode_IS_ASCII(object text)
    Py_ssize_t PyUnicode_GET_LENGTH(object text)


# The last ASCII method read: a stream repeats its methods, and handing the same str again
# costs a compare where a new one costs a decode, an allocation and a free (docs/internals.md).
# Not on a free-threaded build, where threads would race on it.
cdef str _last_method = ""


cdef str _method_of(const char* text, Py_ssize_t size):
    """The method's str from its UTF-8 between the quotes, with no escape (strict, as the scan checked)."""
    global _last_method
    cdef str last = _last_method
    if GIL_BUILD and PyUnicode_GET_LENGTH(last) == size and memcmp(PyUnicode_DATA(last), text, size) == 0:
        return last  # ASCII, so its characters are its bytes
    cdef str method = PyUnicode_DecodeUTF8(text, size, NULL)
    if GIL_BUILD and PyUnicode_IS_ASCII(method):
        _last_method = method
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


# decode of a short notification (_SCANNED_UP_TO): the scan validates the body as orjson reads it and
# finds its top-level members, and the mapping is built from them here (_built), as orjson would build
# it; a body with anything _built leaves (a long number, deep nesting) goes to orjson whole.
# orjson.loads pays ~180 ns a call before it reads a byte, a third of a 180-byte body's parse.
cdef str _JSONRPC_KEY = _loads(b'{"jsonrpc":0}').popitem()[0]


# What _built leaves to the parser: an integer of more than 18 digits, a number too long to copy, or
# nesting past _BUILT_DEPTH.
cdef object _UNBUILT = object()
DEF _BUILT_DEPTH = 32


cdef inline size_t _skip_space(const char* s, size_t pos) noexcept:
    while s[pos] == b" " or s[pos] == b"\n" or s[pos] == b"\r" or s[pos] == b"\t":
        pos += 1
    return pos


cdef inline str _text(const char* text, Py_ssize_t size, bint ascii):
    """The str of a string's UTF-8 (strict, as the scan checked): ASCII copied straight in."""
    cdef str made
    if not ascii:
        return PyUnicode_DecodeUTF8(text, size, NULL)
    made = PyUnicode_New(size, 127)
    memcpy(PyUnicode_DATA(made), text, size)
    return made


cdef object _unescaped(const char* s, size_t pos, size_t end, size_t* close):
    """The str of a string with an escape whose text starts at s[pos] (*close: its closing quote); _UNBUILT
    where more than 256 bytes are left (decode builds bodies of at most 255)."""
    cdef unsigned char text[256]
    if end - pos > sizeof(text):
        return _UNBUILT
    return PyUnicode_DecodeUTF8(<char*>text, <Py_ssize_t>dc_unescape(<const unsigned char*>s, pos, text, close), NULL)


# The powers of ten a double holds exactly: a number of at most 15 significant digits times or over
# one of them is one correctly rounded operation, the value orjson reads (Clinger's fast path).
cdef double[23] _POWERS = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                           1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]


cdef object _number(const char* s, size_t* at):
    """The number at s[at[0]], as orjson reads it: an int where it has no fraction or exponent
    (of at most 18 digits here), else the correctly rounded double."""
    cdef size_t pos = at[0], start = at[0]
    cdef long long value = 0, exponent = 0, scale = 0
    cdef int exponent_digits = 0
    cdef bint negative = s[pos] == b"-", exact = True, negative_exponent
    cdef double result
    cdef char text[40]
    pos += negative
    while s[pos] >= b"0" and s[pos] <= b"9":
        if value < 100000000000000000LL:  # 10**17: the next digit fits
            value = value * 10 + (s[pos] - 48)
        else:
            exact = False
        pos += 1
    if s[pos] != b"." and s[pos] != b"e" and s[pos] != b"E":
        if pos - start - negative > 18:
            return _UNBUILT
        at[0] = pos
        return PyLong_FromLongLong(-value if negative else value)
    if s[pos] == b".":
        pos += 1
        while s[pos] >= b"0" and s[pos] <= b"9":
            if value < 100000000000000000LL:
                value = value * 10 + (s[pos] - 48)
                scale -= 1
            else:
                exact = False
            pos += 1
    if s[pos] == b"e" or s[pos] == b"E":
        pos += 1
        negative_exponent = s[pos] == b"-"
        pos += s[pos] == b"-" or s[pos] == b"+"
        while s[pos] >= b"0" and s[pos] <= b"9":
            exponent = exponent * 10 + (s[pos] - 48) if exponent_digits < 5 else exponent
            exponent_digits += 1
            pos += 1
        scale += -exponent if negative_exponent else exponent
    if exact and exponent_digits <= 5 and value <= 9007199254740992LL and -22 <= scale <= 22:  # 2**53
        result = <double>value * _POWERS[scale] if scale >= 0 else <double>value / _POWERS[-scale]
        at[0] = pos
        return PyFloat_FromDouble(-result if negative else result)
    if pos - start >= sizeof(text):
        return _UNBUILT
    memcpy(text, s + start, pos - start)
    text[pos - start] = 0
    at[0] = pos
    return PyFloat_FromDouble(PyOS_string_to_double(text, NULL, NULL))


cdef object _built(const char* s, size_t* at, size_t end, int depth):
    """The valid JSON value at s[at[0]] (the scan read it: no check here), at[0] moved past it; _UNBUILT
    where it is left to the parser. Objects are dicts, keys and strings str, as orjson builds them."""
    cdef size_t pos = at[0], quote
    cdef char c = s[pos]
    cdef int ascii
    cdef object key, value
    cdef dict members
    cdef list items
    if c == b'"':
        ascii = 1
        quote = dc_plain_string(<const unsigned char*>s, pos + 1, end, &ascii)
        if quote == DC_NONE:
            value = _unescaped(s, pos + 1, end, &quote)
        else:
            value = _text(s + pos + 1, <Py_ssize_t>(quote - pos - 1), ascii)
        at[0] = quote + 1
        return value
    if c == b"{":
        if depth == 0:
            return _UNBUILT
        members = {}
        pos = _skip_space(s, pos + 1)
        while s[pos] == b'"':
            ascii = 1
            quote = dc_plain_string(<const unsigned char*>s, pos + 1, end, &ascii)
            if quote == DC_NONE:
                key = _unescaped(s, pos + 1, end, &quote)
                if key is _UNBUILT:
                    return _UNBUILT
            else:
                key = _key_of(s + pos + 1, <Py_ssize_t>(quote - pos - 1))
            at[0] = _skip_space(s, _skip_space(s, quote + 1) + 1)  # past the colon
            value = _built(s, at, end, depth - 1)
            if value is _UNBUILT:
                return _UNBUILT
            members[key] = value
            pos = _skip_space(s, at[0])
            if s[pos] == b",":
                pos = _skip_space(s, pos + 1)
        at[0] = pos + 1  # the closing brace
        return members
    if c == b"[":
        if depth == 0:
            return _UNBUILT
        items = []
        pos = _skip_space(s, pos + 1)
        while s[pos] != b"]":
            at[0] = pos
            value = _built(s, at, end, depth - 1)
            if value is _UNBUILT:
                return _UNBUILT
            PyList_Append(items, value)
            pos = _skip_space(s, at[0])
            if s[pos] == b",":
                pos = _skip_space(s, pos + 1)
        at[0] = pos + 1
        return items
    if c == b"t":
        at[0] = pos + 4
        return True
    if c == b"f":
        at[0] = pos + 5
        return False
    if c == b"n":
        at[0] = pos + 4
        return None
    return _number(s, at)


# The keys last made, by length and first byte: a stream's notifications repeat their keys, and the
# same str again costs a compare where a new one costs a decode, an allocation and a hash. Not on a
# free-threaded build (as _last_method).
cdef list _KEYS = [""] * 256


cdef str _key_of(const char* text, Py_ssize_t size):
    cdef Py_ssize_t slot = ((<unsigned char>text[0] if size else 0) + size * 31) & 255
    cdef str last = <str>_KEYS[slot]
    if GIL_BUILD and PyUnicode_GET_LENGTH(last) == size and PyUnicode_IS_ASCII(last) \
            and memcmp(PyUnicode_DATA(last), text, size) == 0:
        return last
    cdef str key = PyUnicode_DecodeUTF8(text, size, NULL)
    if GIL_BUILD and PyUnicode_IS_ASCII(key):
        hash(key)
        _KEYS[slot] = key
    return key


cdef object _member_key(const char* data, dc_member_span* member):
    """The member's key: the parser's own str for the envelope's names, else the key's text."""
    cdef const char* text = data + member.key + 1
    cdef Py_ssize_t size = member.key_end - member.key - 2
    if member.key_escaped:
        return _UNBUILT
    if size == 6 and memcmp(text, b"method", 6) == 0:
        return _METHOD
    if size == 6 and memcmp(text, b"params", 6) == 0:
        return _PARAMS
    if size == 7 and memcmp(text, b"jsonrpc", 7) == 0:
        return _JSONRPC_KEY
    return _key_of(text, size)


cdef object _scanned_notification(const char* data, Py_ssize_t size):
    """decode's Notification for a tag-0 payload of bytes (data: the tag, then the body) read by the scan
    and built from it; None where the parser reads it (not valid as orjson reads it, no object, too
    many members, a piece _built leaves)."""
    cdef dc_fields fields
    cdef int status = dc_scan_fields(data + 1, <size_t>(size - 1), &fields)
    cdef size_t index, at
    cdef dict members
    cdef str method
    cdef Notification notification
    if status == DC_METHOD or status == DC_PARAMS or status == DC_META:
        raise NotificationParseError(<str>_SHAPE_PROBLEMS[status])
    if status != DC_NOTIFICATION or fields.nmembers > DC_MAX_MEMBERS or fields.method_escaped:
        return None
    data += 1
    method = _method_of(data + fields.method_start + 1, fields.method_end - fields.method_start - 2)
    members = {}
    for index in range(fields.nmembers):
        key = _member_key(data, &fields.members[index])
        if key is _UNBUILT:
            return None
        if fields.members[index].value == fields.method_start:
            value = method
        else:
            at = fields.members[index].value
            value = _built(data, &at, <size_t>(size - 1), _BUILT_DEPTH)
            if value is _UNBUILT:
                return None
        members[key] = value
    notification = Notification.__new__(Notification)
    notification._notification = members
    notification._method = method
    return notification
