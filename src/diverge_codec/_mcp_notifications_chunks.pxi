# ChunkFramer, the relay's hot loop, compiled: the twin of ChunkFramer in _mcp_notifications_py.py.
# Included by _mcp_notifications_c.pyx, whose scan (dc_scan_notification), parsing twin
# (_parsed_splice) and errors it uses. A chunk is split, scanned and written as records without a
# Python object per notification (a short line is scanned where it lies in the chunk, its newline
# ending the scan as a NUL does; a longer one, or one begun in an earlier chunk, is copied alone into
# the framer's buffer, a NUL after it); only the lines that are no notification become bytes.

from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.mem cimport PyMem_Free, PyMem_Realloc
from cpython.ref cimport Py_XDECREF
from cpython.sequence cimport PySequence_Contains
from libc.limits cimport LLONG_MIN
from libc.string cimport memchr

cdef extern from "Python.h":
    PyObject* _new_bytes "PyBytes_FromStringAndSize"(const char* data, Py_ssize_t size) except NULL
    int _PyBytes_Resize(PyObject** bytes, Py_ssize_t size) except -1
    char* _bytes_data "PyBytes_AS_STRING"(PyObject* bytes)

from diverge_codec._mcp_notifications_py import (
    FRAMER_BUSY as _FRAMER_BUSY,
    FRAMER_INIT_TWICE as _FRAMER_INIT_TWICE,
    FRAMER_NO_PICKLE as _FRAMER_NO_PICKLE,
    FRAMER_NOT_READY as _FRAMER_NOT_READY,
    framer_awaiting as _framer_awaiting,
    framer_chunk as _framer_chunk,
    framer_limits as _framer_limits,
    framer_messages as _framer_messages,
    framer_parse as _framer_parse,
    framer_wanted as _framer_wanted,
    request_head as _parsed_request_head,
)


cdef struct _Records:
    PyObject* owned  # a bytes object nothing else refers to: no Python code can reach or resize it
    Py_ssize_t size, capacity, count, total, largest


cdef inline char* _record(_Records* out, Py_ssize_t payload) except NULL:
    """Room for one record of ``payload`` bytes at the end of ``out``, its length written: where the payload goes.

    The pointer is good until the next call that can run Python code or resize ``out``."""
    cdef Py_ssize_t need = out.size + 4 + payload, capacity
    if need > out.capacity:
        capacity = need if need > out.capacity + (out.capacity >> 1) else out.capacity + (out.capacity >> 1)
        _PyBytes_Resize(&out.owned, capacity)  # on failure: owned is NULL, MemoryError set
        out.capacity = capacity
    cdef unsigned char* at = <unsigned char*>_bytes_data(out.owned) + out.size
    at[0] = <unsigned char>(payload >> 24)
    at[1] = <unsigned char>(payload >> 16)
    at[2] = <unsigned char>(payload >> 8)
    at[3] = <unsigned char>payload
    out.size = need
    out.count += 1
    out.total += payload
    if payload > out.largest:
        out.largest = payload
    return <char*>(at + 4)


cdef extern from "_jsonscan.h":
    int dc_space(unsigned char c) noexcept nogil
    ctypedef struct dc_memo:
        size_t len, method_end, nshapes
        unsigned long chunk
        unsigned int rest
    int dc_relay_scan_line(const char* data, size_t size, dc_splice* out, dc_memo* memo, const char* previous,
                           int entered) nogil
    int dc_relay_walk_line(const char* data, size_t avail, dc_splice* out, dc_memo* memo, size_t* size) nogil


cdef inline bint _blank(const char* data, Py_ssize_t size) noexcept:
    cdef Py_ssize_t index
    for index in range(size):
        if not dc_space(<unsigned char>data[index]):
            return False
    return True


@cython.final
@cython.auto_pickle(False)
cdef class ChunkFramer:
    """ChunkFramer(max_line, record_limit, *, awaiting=None)
--

The relay's hot loop: a server's output in, the channel's records out, one call per chunk.

    ``feed`` splits a chunk into lines (a partial last line is carried to the next call),
    makes each notification a record (the 4-byte big-endian length, then
    ``splice_notification``'s payload) and returns ``(records, count, payload_bytes,
    largest, others)``: the records, how many, their payloads' total and largest size, and
    the lines that are no notification (answers, requests, other JSON), in order. Blank
    lines (JSON whitespace only) are dropped. A line over ``max_line`` (its newline not
    counted; never held whole) and a payload over ``record_limit`` add to ``too_large``, a
    notification the channel would refuse to ``invalid``: the counters only grow. With
    ``awaiting`` (the ids a client waits on: a dict or set it keeps changing), only requests
    and the responses whose integer ``id`` is in it come back; other lines that are no
    notification add to ``ignored`` instead, unparsed by the compiled core.
    ``feed_messages`` reads whole messages (an HTTP body, an event's data) as lines;
    ``close`` reads the last line when the output ended inside one. One framer reads one
    stream: a call from inside another (a callback, a hook, another thread) raises
    RuntimeError.
    """

    cdef readonly Py_ssize_t max_line, record_limit, invalid, too_large, ignored
    cdef readonly object awaiting
    cdef char* _buffer  # the partial line carried, then the line being read and its NUL
    cdef Py_ssize_t _capacity, _held  # the buffer's size; the partial line's, at its start
    cdef bint _ready  # __init__ has run to the end
    cdef bint _skipping  # a line over max_line is being skipped to its newline
    cdef bint _claimed, _busy
    cdef dc_memo _memo  # the relay scan's memo of a line's opening bytes, and its shapes (_jsonscan.h): zeroed, none

    def __init__(self, max_line, record_limit, *, awaiting=None):
        if self._claimed:
            raise RuntimeError(_FRAMER_INIT_TWICE)
        self._claimed = True
        cdef tuple limits = _framer_limits(max_line, record_limit)
        self.awaiting = _framer_awaiting(awaiting)
        self.max_line = limits[0]
        self.record_limit = limits[1]
        self._ready = True  # the commit: from here the framer is ready

    def __dealloc__(self):
        PyMem_Free(self._buffer)

    @property
    def pending(self):
        """Bytes of a partial line held for the next call."""
        return self._held

    def __repr__(self):
        if not self._ready:
            return "<ChunkFramer not initialised>"
        return (f"<ChunkFramer invalid={self.invalid} too_large={self.too_large} ignored={self.ignored}"
                f" pending={self._held}>")

    def __reduce__(self):
        raise TypeError(_FRAMER_NO_PICKLE)

    cdef int _enter(self) except -1:
        """Refuse a framer that is not ready, or in use; no Python code runs between the check and the mark."""
        if not self._ready:
            raise RuntimeError(_FRAMER_NOT_READY)
        if self._busy:
            raise RuntimeError(_FRAMER_BUSY)
        self._busy = True
        return 0

    def feed(self, data):
        """Read the next chunk of the server's output: the records of the lines it completes."""
        return self._call(0, data)

    def feed_messages(self, messages):
        """Read whole messages, each as one line (newlines inside it are JSON whitespace)."""
        return self._call(1, messages)

    def close(self):
        """The output ended: the record of its last line if it had no newline (the framer starts afresh)."""
        return self._call(2, None)

    cdef tuple _call(self, int which, object argument):
        """One guarded entry for the three calls (one copy of the guard's code)."""
        self._enter()
        try:
            if which == 0:
                return self._feed(_framer_chunk(argument, "feed"))
            if which == 1:
                return self._feed_messages(_framer_messages(argument))
            return self._close()
        finally:
            self._busy = False

    cdef int _reserve(self, Py_ssize_t size) except -1:
        """Room for ``size`` bytes and a NUL in the buffer, the partial line at its start kept. It grows
        by half again; one grown for a long line is given back once it holds little."""
        cdef Py_ssize_t need = size + 1, capacity
        if need <= self._capacity and not (self._capacity > 1 << 22 and need < self._capacity >> 3):
            return 0
        capacity = need + (need >> 1)
        if capacity < 1 << 16:
            capacity = 1 << 16
        cdef char* grown = <char*>PyMem_Realloc(self._buffer, <size_t>capacity)
        if grown == NULL:
            raise MemoryError()
        self._buffer, self._capacity = grown, capacity
        return 0

    cdef tuple _feed(self, bytes chunk):
        """The chunk's whole lines: a short one scanned where it lies (its newline ends the relay's scan of a
        line as a NUL does), a longer one or one begun in an earlier chunk copied alone into the framer's
        buffer with a NUL after it (the scan reads up to one); the partial last line held there for the next call.
        Consecutive lines in the chunk that open alike share the scan of their opening bytes (the framer's memo);
        a line that differs from a notification scanned earlier in the chunk only in its values is read from it,
        its end found by that reading (no search for its newline)."""
        cdef const char* data = PyBytes_AS_STRING(chunk)
        cdef Py_ssize_t size = PyBytes_GET_SIZE(chunk), at = 0, end, held, length
        cdef const char* newline
        cdef const char* previous = NULL
        cdef bint walked = False  # the shapes were tried on the line at `at`, and none held it
        cdef size_t walked_size
        cdef dc_splice splice
        self._memo.chunk += 1  # the lines the scan reads others from (its shapes) lie in this chunk only
        if self._skipping:  # the rest of a line over max_line, up to its newline: never held
            newline = <const char*>memchr(data, 10, <size_t>size)
            if newline == NULL:
                return (b"", 0, 0, 0, [])
            self._skipping = False
            at = newline - data + 1
        newline = <const char*>memchr(data + at, 10, <size_t>(size - at))
        if newline == NULL:  # no line ends here
            self._hold(data + at, size - at)
            return (b"", 0, 0, 0, [])
        cdef list others = []
        cdef _Records out
        out.owned = NULL
        out.size = out.count = out.total = out.largest = 0
        out.capacity = size - at + self._held + 64
        try:
            out.owned = _new_bytes(NULL, out.capacity)
            self._reserve(self._held)  # a buffer grown for a long line is given back here
            while newline != NULL:
                end = newline - data
                held, self._held = self._held, 0  # the line's start, held from earlier chunks
                length = held + end - at
                if length > self.max_line:
                    self.too_large += 1
                    previous = NULL
                elif held == 0 and length < <Py_ssize_t>DC_WINDOW_FROM:
                    self._line(data + at, length, None, &out, others, True, previous, walked)  # chunk holds it: no copy
                    previous = data + at  # the next line's to open as, for the memo
                else:
                    if length >= self._capacity:
                        self._reserve(length)
                    # A copy per line: glibc copies a whole chunk with rep movsb, which callgrind
                    # counts a byte at a time, a line of a few hundred bytes with vector moves.
                    memcpy(self._buffer + held, data + at, <size_t>(end - at))
                    self._buffer[length] = 0
                    self._line(self._buffer, length, None, &out, others, False, NULL, False)
                    previous = NULL
                at = end + 1
                walked = False
                while self._memo.nshapes != 0 and self._memo.rest == 0 and at < size:
                    # the next lines, each read from a shape where one holds it; the first none holds is searched
                    # for its newline and scanned below (the C reads stay in the chunk: data[size] is its NUL)
                    if not dc_relay_walk_line(data + at, <size_t>(size - at), &splice, &self._memo, &walked_size):
                        walked = True
                        break
                    length = <Py_ssize_t>walked_size
                    if length > self.max_line:
                        self.too_large += 1
                        previous = NULL
                    else:
                        self._framed_notification(data + at, &splice, &out)
                        self._memo.method_end = splice.method_end
                        previous = data + at
                    at += length + 1
                newline = <const char*>memchr(data + at, 10, <size_t>(size - at))
            self._hold(data + at, size - at)
            return _framed(&out, others)
        finally:
            Py_XDECREF(out.owned)

    cdef int _hold(self, const char* data, Py_ssize_t size) except -1:
        """Keep a partial line for the next call, or skip it to its newline once it is over max_line."""
        if size == 0:
            return 0
        if self._held + size > self.max_line:
            self._held = 0
            self._skipping = True
            self.too_large += 1
            return 0
        self._reserve(self._held + size)
        memcpy(self._buffer + self._held, data, <size_t>size)
        self._held += size
        return 0

    cdef tuple _feed_messages(self, list messages):
        cdef list others = []
        cdef _Records out
        cdef bytes message
        cdef Py_ssize_t capacity = 64
        for message in messages:
            capacity += PyBytes_GET_SIZE(message)
        out.owned = NULL
        out.size = out.count = out.total = out.largest = 0
        out.capacity = capacity
        try:
            out.owned = _new_bytes(NULL, out.capacity)
            for message in messages:  # our own list of bytes, each ending in a NUL: nothing else can change them
                self._line(PyBytes_AS_STRING(message), PyBytes_GET_SIZE(message), message, &out, others, False, NULL,
                           False)
            return _framed(&out, others)
        finally:
            Py_XDECREF(out.owned)

    cdef tuple _close(self):
        cdef Py_ssize_t held = self._held
        cdef bint skipping = self._skipping
        self._held, self._skipping = 0, False
        if skipping or not held:
            return (b"", 0, 0, 0, [])
        return self._feed_messages([PyBytes_FromStringAndSize(self._buffer, held)])  # the last line, alone

    cdef int _line(self, const char* data, Py_ssize_t size, object line, _Records* out, list others,
                   bint in_chunk, const char* previous, bint walked) except -1:
        """One line, its newline left out, followed by a NUL, or (``in_chunk``: under DC_WINDOW_FROM bytes,
        no newline in it) by its newline in the chunk. ``data`` lies in a bytes object the caller holds
        (``line``, if not None, holds exactly these bytes; the chunk) or in the framer's buffer, which only
        a call of this busy framer changes: it stays good across Python code. ``previous`` (in the chunk
        only): the line before it in the same chunk, or NULL; a line opening as it records the scan's memo.
        ``walked`` (in the chunk only): the shapes were tried on it, and none held it."""
        cdef dc_splice splice
        cdef int status
        cdef Py_ssize_t length
        if size > self.max_line:
            self.too_large += 1
            return 0
        if in_chunk:
            status = dc_relay_scan_line(data, <size_t>size, &splice, &self._memo, previous, walked)
            self._memo.method_end = splice.method_end  # what the next line in the chunk is held to
        else:
            status = dc_scan_notification(data, <size_t>size, &splice)
        if status == DC_NOTIFICATION:
            return self._framed_notification(data, &splice, out)
        if status == DC_NOT_NOTIFICATION:
            if _blank(data, size):
                return 0
            if self.awaiting is not None and not _wanted(data, &splice, self.awaiting):
                self.ignored += 1  # Python code may have run: data is not read again
                return 0
            others.append(line if line is not None else PyBytes_FromStringAndSize(data, size))
            return 0
        if status == DC_INVALID or status == DC_METHOD or status == DC_PARAMS or status == DC_META:
            self.invalid += 1  # the scan refuses what orjson refuses: no parse needed, no words are kept
            return 0
        if line is None:
            line = PyBytes_FromStringAndSize(data, size)
        payload = _framer_parse(line)  # Python code: what the scan leaves to the parser (DC_UNSURE)
        if payload is False:
            self.invalid += 1
            return 0
        if payload is None:
            if self.awaiting is None or _framer_wanted(line, self.awaiting):
                others.append(line)
            else:
                self.ignored += 1
            return 0
        length = PyBytes_GET_SIZE(payload)
        if length > self.record_limit:
            self.too_large += 1
            return 0
        memcpy(_record(out, length), PyBytes_AS_STRING(payload), <size_t>length)
        return 0

    cdef inline int _framed_notification(self, const char* data, dc_splice* splice, _Records* out) except -1:
        """A notification's record: the tag, then its bytes less the splice's cuts (no Python code runs)."""
        cdef Py_ssize_t length = <Py_ssize_t>(splice.end - splice.start - splice.removed + 1), index
        cdef size_t at = splice.start
        if length > self.record_limit:
            self.too_large += 1
            return 0
        cdef char* into = _record(out, length)
        into[0] = 0
        into += 1
        for index in range(<Py_ssize_t>splice.ncuts):
            memcpy(into, data + at, splice.cuts[index][0] - at)
            into += splice.cuts[index][0] - at
            at = splice.cuts[index][1]
        memcpy(into, data + at, splice.end - at)
        return 0


cdef int _wanted(const char* data, dc_splice* splice, object awaiting) except -1:
    """framer_wanted's answer from the scan of a message that is no notification, without a parse:
    1 for a request, or a response whose integer id ``awaiting`` holds (asking it may run Python code)."""
    if splice.id_end == 0:  # no object
        return 0
    if splice.method_end != 0:
        return 1
    cdef object request_id = _integer(<const unsigned char*>data + splice.id_start, <Py_ssize_t>(splice.id_end - splice.id_start))
    if request_id is None:
        return 0
    return PySequence_Contains(awaiting, request_id)


cdef object _integer(const unsigned char* text, Py_ssize_t size):
    """The int a JSON number reads as (the scan has checked its form), or None for one the parser reads as a
    float, or a value that is no number: a fraction or an exponent, or outside [-2**63, 2**64)."""
    cdef bint negative = text[0] == 45  # '-'
    cdef Py_ssize_t index = negative
    cdef unsigned long long value = 0, digit
    while index < size:  # a digit after the sign: the scan has read the value as JSON
        if not 48 <= text[index] <= 57:
            return None
        digit = text[index] - 48
        if value > (0xFFFFFFFFFFFFFFFFULL - digit) // 10:
            return None
        value = value * 10 + digit
        index += 1
    if not negative:
        return PyLong_FromUnsignedLongLong(value)
    if value > 0x8000000000000000ULL:
        return None
    if value == 0x8000000000000000ULL:
        return PyLong_FromLongLong(LLONG_MIN)
    return PyLong_FromLongLong(-<long long>value)


def request_head(line):
    """``(id, method)`` of a JSON-RPC request (an object with both members: the last of each, read as
    the parser reads them); None for any other line. What the relay answers a server's request by:
    the scan finds the two values in ``bytes``, and the parser reads only those."""
    cdef dc_splice splice
    if type(line) is not bytes:  # what the relay never passes: the parsing twin, which takes what loads takes
        return _parsed_request_head(line)
    if dc_scan_notification(PyBytes_AS_STRING(line), <size_t>PyBytes_GET_SIZE(line), &splice) != DC_NOT_NOTIFICATION:
        return None
    if splice.id_end == 0 or splice.method_end == 0:
        return None
    return (_loads(line[splice.id_start:splice.id_end]), _loads(line[splice.method_start:splice.method_end]))


cdef tuple _framed(_Records* out, list others):
    """The call's result; ``out`` gives up its bytes object to it."""
    _PyBytes_Resize(&out.owned, out.size)
    cdef object records = <object>out.owned
    Py_XDECREF(out.owned)
    out.owned = NULL
    return (records, out.count, out.total, out.largest, others)
