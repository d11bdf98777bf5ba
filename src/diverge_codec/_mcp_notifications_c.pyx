# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, binding=False, always_allow_keywords=False
"""The mcp-notifications channel response codec, compiled: the twin of ``_mcp_notifications_py.py``.

This is the hot path of a relay: decoding a notification checks its shape in C
and builds the frame from a free list; framing one copies its bytes once.
"""

cimport cython
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_CheckExact, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_Append
from cpython.object cimport PyObject
from libc.string cimport memcmp, memcpy


cdef extern from "Python.h":
    PyObject* PyDict_GetItemWithError(object mp, object key) except? NULL

from cpython.dict cimport PyDictProxy_New

from diverge_codec._payload cimport (
    bytes_owner,
    new_shared_body,
    owned,
    parse_body,
    parse_shared,
    parsed_or_null,
    payload_owner,
    reraise,
    tagged,
)
from diverge_codec._values cimport encodable

from diverge_codec import _json, errors
from diverge_codec._model import (
    ErrorData,
    Refused,
    error_data_from_json,
    immutable_error,
    never_initialised,
    notification_from,
    notification_problem,
    repr_error,
    repr_notification,
    unset_attribute,
)
from diverge_codec._model import McpNotificationsTag as Tag
from diverge_codec.errors import McpNotificationsBodyParseError as BodyParseError
from diverge_codec.errors import McpNotificationsEmptyFrameError as EmptyFrameError
from diverge_codec.errors import McpNotificationsErrorParseError as ErrorParseError
from diverge_codec.errors import McpNotificationsFrameError as FrameError
from diverge_codec.errors import McpNotificationsNotificationParseError as NotificationParseError
from diverge_codec.errors import McpNotificationsUnknownTagError as UnknownTagError

__all__ = [
    "BodyParseError", "EmptyFrameError", "Error", "ErrorParseError", "FrameError",
    "Notification", "NotificationParseError", "Tag", "UnknownTagError", "decode",
    "decode_many", "encode", "encode_into", "frame_notification", "frame_notifications",
    "JSONRPC_NOTIFICATION_PREFIX", "splice_notification",
]

cdef object _loads = _json.loads
cdef object _shared_body = new_shared_body(_loads, _json.VIEW_READ_AT_ONCE)
cdef enum:
    # decode reads a tag-0 payload up to this size in one pass that checks and builds it (_built_notification):
    # orjson.loads costs ~180 ns before it reads a byte (its parse buffer), which the build saves, and
    # the build reads each string and list item dearer than orjson, which loses past ~250 B (CPU time,
    # benchmarks/cpu_time.py: 100 B 0.92x, 180 B 0.99x orjson.loads; 540 B 1.23x, 1.8 KB 1.29x).
    _SCANNED_UP_TO = 256
cdef object _raw_dumps = _json.raw_dumps
cdef object _encode_problem = _json.encode_problem
cdef bint _FULL_WALK = not _json.BACKEND_REFUSES_THE_REST
cdef object _DecodeFailure = _json.DecodeFailure
cdef object _EncodeFailure = _json.EncodeFailure
cdef object _failure_reason = _json.failure_reason
cdef str _CHANNEL = "mcp notifications"
# The keys are looked up with the str objects the parser hands out for them: orjson keeps one
# per short key in its cache, so the lookup matches by identity instead of comparing characters
# (docs/internals.md). Where the parser makes new ones, they are equal keys.
cdef str _METHOD, _PARAMS, _META
_METHOD, _PARAMS, _META = _loads(b'{"method":0,"params":0,"_meta":0}')
cdef str _NOT_AN_OBJECT = errors.NOT_AN_OBJECT
cdef str _METHOD_NOT_A_STRING = errors.METHOD_NOT_A_STRING
cdef str _PARAMS_INVALID = errors.PARAMS_INVALID
cdef str _META_INVALID = errors.META_INVALID


@cython.final
@cython.freelist(64)
cdef class Notification:
    """Notification(notification)
--

One notification, every member as the server sent it (``_meta`` and ``jsonrpc`` too). Tag 0.

    ``notification`` is a read-only view; the members inside it (``params``) are the
    caller's, and encode checks the whole notification again.
    """

    # decode leaves the members unbuilt where they are the envelope alone (method, params, "jsonrpc":
    # "2.0", each at most once): _order holds their order (_members_in), _params the params, and
    # _notification is made from them the first time it is asked for. The dict and its freeing were a
    # sixth of a short notification's decode (issue 44), and a consumer that reads method and params
    # never needs it. Everywhere else _order is 0 and _notification is the members.
    cdef dict _notification
    cdef str _method
    cdef object _params
    cdef int _order
    __match_args__ = ("notification",)
    tag = Tag.NOTIFICATION

    def __init__(self, notification):
        if self._method is not None:
            raise immutable_error(self)
        copied = notification_from(notification)
        if type(copied) is not dict:
            raise copied
        self._notification = copied
        self._method = copied["method"]

    def __setattr__(self, name, value):
        raise immutable_error(self)

    def __delattr__(self, name):
        raise immutable_error(self)

    cdef dict _members(self):
        """The members, made where decode left them unbuilt; None where __new__ alone made the frame."""
        cdef dict made
        if self._notification is None and self._order:
            made = _members_in(self._order, self._method, self._params)
            if self._notification is None:  # the allocation may have run code that made them first
                self._notification = made
        return self._notification

    @property
    def notification(self):
        if self._method is None:
            raise unset_attribute(self, "notification")
        return PyDictProxy_New(self._members())

    @property
    def method(self):
        if self._method is None:
            raise unset_attribute(self, "method")
        return self._method

    @property
    def params(self):
        """The params member, the same dict ``notification`` holds; None where it is absent or null."""
        if self._method is None:
            raise unset_attribute(self, "params")
        if self._order:
            return self._params
        return self._notification.get(_PARAMS)

    def __eq__(self, other):
        if type(other) is not Notification:
            return NotImplemented
        return self._members() == (<Notification>other)._members()

    __hash__ = None

    def __repr__(self):
        return repr_notification(self._method, self._members())

    def __reduce__(self):
        return Notification, (self.notification if self._method is None else self._members(),)


@cython.final
@cython.freelist(8)
cdef class Error:
    """Error(error)
--

The stream ended early, and this is why: rmcp's ErrorData. Tag 1."""

    cdef object _error
    __match_args__ = ("error",)
    tag = Tag.ERROR

    def __init__(self, error):
        if self._error is not None:
            raise immutable_error(self)
        if type(error) is not ErrorData:
            raise TypeError(f"Error takes an ErrorData, not {type(error).__name__}")
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


cdef inline str _params_problem(dict parsed):
    """The params half of notification_problem, in C for the hot path: absent, null or an object."""
    cdef PyObject* found = PyDict_GetItemWithError(parsed, _PARAMS)
    if found is NULL or <object>found is None:
        return None
    if type(<object>found) is not dict:
        return _PARAMS_INVALID
    found = PyDict_GetItemWithError(<object>found, _META)
    if found is NULL or <object>found is None or type(<object>found) is dict:
        return None
    return _META_INVALID


cdef inline object _notification_or_reason(object parsed):
    """The Notification for a parsed body, or the str reason the channel refuses it: notification_problem's rules, inlined, the method looked up once."""
    cdef PyObject* method
    cdef str method_name
    cdef Notification notification
    if type(parsed) is not dict:
        return _NOT_AN_OBJECT
    method = PyDict_GetItemWithError(parsed, _METHOD)
    if method is NULL or type(<object>method) is not str:
        return _METHOD_NOT_A_STRING
    # owned, not borrowed: the allocation below may run a GC callback that finds the dict
    # (gc.get_objects) and drops the member
    method_name = <str>method
    reason = _params_problem(<dict>parsed)
    if reason is not None:
        return reason
    notification = Notification.__new__(Notification)
    notification._notification = <dict>parsed
    notification._method = method_name
    return notification


cdef object _decode(object payload):
    cdef const char* data = NULL
    cdef Py_ssize_t size = 0
    cdef PyObject* result
    cdef Error error
    cdef object owner = bytes_owner(payload, &data, &size)
    if owner is None:
        raise errors.payload_type_error(_CHANNEL, payload)
    if size == 0:
        raise EmptyFrameError()
    cdef unsigned char tag = <unsigned char>data[0]
    if tag == 0:
        if _shared_body is not None and size <= _SCANNED_UP_TO:
            frame = _built_notification(data, size)
            if frame is not None:
                return frame
        result = NULL
        if _shared_body is not None:
            result = parsed_or_null(_shared_body, data, size, _DecodeFailure)
        # one call site, so the C compiler inlines the rules
        frame = _notification_or_reason(owned(result) if result != NULL else _parsed(owner, data, size, tag))
        if type(frame) is Notification:
            return frame
        raise NotificationParseError(frame)
    if tag > 1:
        raise UnknownTagError(tag)
    parsed = _parsed(owner, data, size, tag)
    reason = None
    try:
        error = Error.__new__(Error)
        error._error = error_data_from_json(parsed)
        return error
    except Refused as refused:
        reason = refused.reason
    raise ErrorParseError(reason)  # outside the except: no __context__


cdef object _parsed(object owner, const char* data, Py_ssize_t size, unsigned char tag):
    """The parser's result for the body (read in whichever way parse_body reads it); a refusal raised as the variant's ParseError, worded."""
    try:
        return parse_body(_loads, _shared_body, owner, data, size)
    except _DecodeFailure as problem:
        reason = _failure_reason(problem)
    raise (NotificationParseError if tag == 0 else ErrorParseError)(reason)  # outside the except: no __context__


def decode(payload):
    """Read one channel response payload. Raises a FrameError subclass, never quoting the payload."""
    return _decode(payload)


def decode_many(payloads):
    """Decode each payload in order. A failure is raised with ``.index`` naming the payload."""
    cdef list frames = []
    cdef Py_ssize_t index = 0
    try:
        for payload in payloads:
            PyList_Append(frames, _decode(payload))
            index += 1
    except FrameError as failure:
        failure.index = index
        raise
    return frames


cdef extern from "_jsonwrite.h":
    ctypedef struct dc_writer:
        char* data
        Py_ssize_t size
    void dc_writer_init(dc_writer* w) noexcept
    void dc_writer_free(dc_writer* w) noexcept
    bint dc_write_json(dc_writer* w, object value, bint notification) noexcept
    bytes dc_writer_bytes(dc_writer* w)
    int dc_append_tagged(object out, int tag_byte, const char* data, Py_ssize_t size) except -1
    bint dc_append(object out, int tag_byte, object body, bint notification, const char* data, Py_ssize_t size) noexcept


cdef object _encode_refused(object kind, object reason):
    return errors.EncodeError(f"mcp notifications {kind.__name__} could not be encoded: {reason}")


cdef object _checked_body(object frame):
    """What a frame writes: a notification's dict, its shape checked again (its params may have changed), or an ErrorData's."""
    cdef object kind = type(frame)
    cdef object body
    cdef object reason
    if kind is Notification:
        body = (<Notification>frame)._members()
        if body is None:
            raise never_initialised(_CHANNEL, frame)
        reason = _params_problem(<dict>body)  # the members are read-only, the params are not
        if reason is not None:
            raise _encode_refused(kind, reason)
        return body
    if kind is Error:
        body = (<Error>frame)._error
        if body is None:
            raise never_initialised(_CHANNEL, frame)
        return body.to_json()
    raise TypeError(f"not an mcp notifications response frame: {kind.__name__}")


cdef bytes _backend_body(object body, object kind):
    """The JSON of what the compiled writer leaves to the backend: the one writing contract, its checks and messages."""
    cdef object reason
    if encodable(body, _FULL_WALK):
        try:
            return _raw_dumps(body)
        except _EncodeFailure as problem:  # the backend refused what the walk leaves to it
            reason = _encode_problem(body) or _failure_reason(problem)
    else:
        reason = _encode_problem(body) or "refused"
    raise _encode_refused(kind, reason)


cdef inline object _unchecked_body(object frame):
    """What a frame writes, a notification's params not checked yet: the writer checks them as it writes them."""
    if type(frame) is Notification and (<Notification>frame)._method is not None:
        return (<Notification>frame)._members()
    return _checked_body(frame)


cdef bytes _backend_json(object frame, object body):
    """The JSON where the compiled writer does not take the body: the checks again in full, then the backend's."""
    if type(frame) is Notification:
        body = _checked_body(frame)  # the refusal of the params' shape comes first
    return _backend_body(body, type(frame))


def encode(frame):
    """The payload for a frame: its tag, then its JSON."""
    cdef dc_writer w
    cdef object body = _unchecked_body(frame)
    cdef bint notification = type(frame) is Notification
    dc_writer_init(&w)
    w.data[0] = <char>(0 if notification else 1)
    w.size = 1
    if dc_write_json(&w, body, notification):
        return dc_writer_bytes(&w)
    dc_writer_free(&w)
    cdef bytes raw = _backend_json(frame, body)
    return tagged(0 if notification else 1, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))


def encode_into(frame, buffer):
    """Append a frame's payload (``encode(frame)``, exactly) to ``buffer``, a bytearray; on failure it is left as it was."""
    if not PyByteArray_CheckExact(buffer):
        raise TypeError(f"encode_into appends to a bytearray, not {type(buffer).__name__}")
    cdef object body = _unchecked_body(frame)
    cdef bint notification = type(frame) is Notification
    # buffer is read only from here, where nothing runs Python code: written in place, or after the backend's JSON
    if dc_append(buffer, 0 if notification else 1, body, notification, NULL, 0):
        return
    cdef bytes raw = _backend_json(frame, body)
    dc_append_tagged(buffer, 0 if notification else 1, PyBytes_AS_STRING(raw), PyBytes_GET_SIZE(raw))


cdef inline bytes _frame_notification(object raw_json):
    cdef const char* data
    cdef Py_ssize_t size
    if PyBytes_CheckExact(raw_json):
        return tagged(0, PyBytes_AS_STRING(raw_json), PyBytes_GET_SIZE(raw_json))
    cdef object owner = payload_owner(raw_json, &data, &size)
    if owner is None:
        raise errors.raw_json_type_error("frame_notification", raw_json)
    return tagged(0, data, size)


def frame_notification(raw_json):
    """Tag 0 and a notification's JSON, not parsed: the relay's hot path."""
    return _frame_notification(raw_json)


def frame_notifications(raw_jsons):
    """frame_notification of each, in order."""
    cdef list framed = []
    for raw in raw_jsons:
        PyList_Append(framed, _frame_notification(raw))
    return framed


JSONRPC_NOTIFICATION_PREFIX = b'{"jsonrpc":"2.0","method":"'
"""How mcp 2.x begins a JSON-RPC notification (the TypeScript SDK and mcp 1.x put the envelope last)."""


cdef extern from "_jsonscan.h":
    enum:
        DC_NOTIFICATION, DC_NOT_NOTIFICATION, DC_INVALID, DC_METHOD, DC_PARAMS, DC_META, DC_UNSURE
        DC_MAX_CUTS
    ctypedef struct dc_splice:
        size_t start, end, ncuts, removed
        size_t id_start, id_end, method_start, method_end
        size_t cuts[DC_MAX_CUTS][2]
    int dc_scan_notification(const char* data, size_t size, dc_splice* out) nogil
    size_t DC_WINDOW_FROM
    int dc_long_strings_reader(int wanted) nogil


_SCAN_WINDOW_FROM = DC_WINDOW_FROM
"""The least document size the compiled scan reads with its window (the tests and fuzzers pad to it)."""


_SIMD_PATHS = ("sse2", "avx2", "avx512")


def _long_strings_reader(wanted=None):
    """The long-string reader this module uses: "sse2", "avx2" or "avx512". A name chooses it (or the
    best below it that the build and the CPU have), "best" chooses the best there is, and None asks
    (the first time: the best, capped by the environment's DIVERGE_CODEC_SIMD). The tests run each."""
    return _SIMD_PATHS[dc_long_strings_reader(-1 if wanted is None else (2 if wanted == "best" else _SIMD_PATHS.index(wanted)))]


from diverge_codec._mcp_notifications_py import splice_notification as _parsed_splice

cdef tuple _SHAPE_PROBLEMS = (None, None, None, _METHOD_NOT_A_STRING, _PARAMS_INVALID, _META_INVALID)


cdef bytes _spliced(const char* data, dc_splice* splice):
    """Tag 0 and the document's bytes but the cuts. data must be owned by an immutable object."""
    cdef bytes payload = PyBytes_FromStringAndSize(NULL, splice.end - splice.start - splice.removed + 1)
    cdef char* out = PyBytes_AS_STRING(payload)
    cdef size_t at = splice.start, index
    out[0] = 0
    out += 1
    for index in range(splice.ncuts):
        memcpy(out, data + at, splice.cuts[index][0] - at)
        out += splice.cuts[index][0] - at
        at = splice.cuts[index][1]
    memcpy(out, data + at, splice.end - at)
    return payload


def splice_notification(message):
    """The channel payload for one JSON-RPC message: tag 0 and the notification, envelope removed.

    None for a message that is no notification (an object with an ``id``, JSON that is
    not an object, or a line of JSON whitespace alone); NotificationParseError, as ``decode`` words it, for one the
    channel refuses (not JSON as orjson reads it, a method that is no string, params or
    params._meta of the wrong kind). Every top-level ``jsonrpc`` member is removed
    wherever it stands, and every other byte of the document is kept. The compiled scan
    builds no Python object; what it cannot settle goes to the parsing twin.
    """
    cdef const char* data
    cdef Py_ssize_t size
    cdef object owner
    cdef dc_splice splice
    cdef int status
    if PyBytes_CheckExact(message):
        owner = message
        data, size = PyBytes_AS_STRING(message), PyBytes_GET_SIZE(message)
    elif PyByteArray_CheckExact(message):  # its buffer can move while the payload is allocated: copy it
        owner = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(message), PyByteArray_GET_SIZE(message))
        data, size = PyBytes_AS_STRING(owner), PyBytes_GET_SIZE(owner)
    else:
        owner = payload_owner(message, &data, &size)
        if owner is None:
            raise errors.raw_json_type_error("splice_notification", message)
    status = dc_scan_notification(data, <size_t>size, &splice)
    if status == DC_NOTIFICATION:
        return _spliced(data, &splice)
    if status == DC_NOT_NOTIFICATION:
        return None
    if status == DC_METHOD or status == DC_PARAMS or status == DC_META:
        raise NotificationParseError(<str>_SHAPE_PROBLEMS[status])
    return _parsed_splice(owner)  # refused (the parser words why) or beyond the splice's records


def _scan_status(message):
    """The compiled scan's verdict on bytes, for the differential tests and the fuzzer."""
    cdef dc_splice splice
    cdef bytes owned = bytes(message)
    return dc_scan_notification(PyBytes_AS_STRING(owned), <size_t>PyBytes_GET_SIZE(owned), &splice)


include "_mcp_notifications_chunks.pxi"
__all__ += ["ChunkFramer"]

include "_mcp_notifications_lazy.pxi"
__all__ += ["LazyNotification", "decode_lazy"]

include "_mcp_notifications_build.pxi"
