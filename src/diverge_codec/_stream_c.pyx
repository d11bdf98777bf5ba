# cython: language_level=3, cdivision=True, binding=False
"""The stream envelope, compiled: the twin of ``_stream_py.py``, same names, same behaviour.

Splitting reads each 4-byte big-endian length straight from the buffer, without an int or
a slice object per prefix, in two passes: the first walks the lengths and raises before
any record is made, the second makes them. A record below VIEW_FROM is a bytes copy (one
allocation, into a list made at its size); a view costs a slice, two ints and a GC-tracked
memoryview (docs/performance.md, "Records").
"""

cimport cython
from cpython.bytes cimport PyBytes_CheckExact, PyBytes_FromStringAndSize
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.ref cimport Py_INCREF

from diverge_codec._payload cimport payload_owner

from diverge_codec._stream_py import DEFAULT_MAX_RECORD
from diverge_codec.errors import RecordTooLargeError, TruncatedStreamError

__all__ = ["DEFAULT_MAX_RECORD", "RecordReader", "record", "split_records", "write_record", "write_records"]

cdef enum:
    PREFIX = 4
    VIEW_FROM = 2048  # the pure twin's VIEW_FROM: records this long are views, shorter ones copies


cdef inline unsigned long long _be32(const unsigned char* at) noexcept:
    return (<unsigned long long>at[0] << 24) | (<unsigned long long>at[1] << 16) | (<unsigned long long>at[2] << 8) | at[3]


# Writing records. The payload's bytes are read where they cannot move: bytes as they are;
# a bytearray with its buffer exported (held while the record is allocated, so code that
# an allocation runs, a GC callback, cannot resize it); anything else copied to bytes first.
# The out bytearray's size is read right before its one resize, and its pointer after.

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_CheckExact, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_CheckExact, PyList_GET_ITEM, PyList_GET_SIZE
from libc.string cimport memcpy

cdef extern from "Python.h":
    const Py_ssize_t PY_SSIZE_T_MAX

from diverge_codec._model import as_bytes

cdef Py_ssize_t _LARGEST = 0xFFFFFFFF
cdef str _TOO_LARGE = "a record holds at most 4294967295 bytes"


cdef inline void _put_be32(char* into, Py_ssize_t length) noexcept:
    into[0] = <char>((length >> 24) & 0xFF)
    into[1] = <char>((length >> 16) & 0xFF)
    into[2] = <char>((length >> 8) & 0xFF)
    into[3] = <char>(length & 0xFF)


cdef bytes _framed_at(const char* data, Py_ssize_t size):
    """A new bytes: the length prefix, then a copy of size bytes at data (which nothing may move meanwhile)."""
    if size > _LARGEST:
        raise ValueError(_TOO_LARGE)
    cdef bytes framed = PyBytes_FromStringAndSize(NULL, PREFIX + size)
    cdef char* into = PyBytes_AS_STRING(framed)
    _put_be32(into, size)
    if size:
        memcpy(into + PREFIX, data, <size_t>size)
    return framed


cdef bytes _framed(object payload):
    """One record of a bytes-like payload, as the pure twin's ``record``."""
    cdef Py_buffer view
    cdef object owned
    if PyBytes_CheckExact(payload):
        return _framed_at(PyBytes_AS_STRING(payload), PyBytes_GET_SIZE(payload))
    if PyByteArray_CheckExact(payload):
        PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE)  # an export: the bytearray cannot be resized
        try:
            return _framed_at(<const char*>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
    owned = as_bytes(payload)
    if owned is None:
        raise TypeError(f"record takes bytes, bytearray or memoryview, not {type(payload).__name__}")
    return _framed_at(PyBytes_AS_STRING(owned), PyBytes_GET_SIZE(owned))


cdef int _append(bytearray out, bytes data, bint prefixed) except -1:
    """Append data (behind its length prefix if prefixed) to out with one resize; data is bytes: it cannot move."""
    cdef Py_ssize_t size = PyBytes_GET_SIZE(data)
    cdef Py_ssize_t extra = size + (PREFIX if prefixed else 0)
    if prefixed and size > _LARGEST:
        raise ValueError(_TOO_LARGE)
    cdef Py_ssize_t held = PyByteArray_GET_SIZE(out)
    if held > PY_SSIZE_T_MAX - extra:
        raise MemoryError()
    PyByteArray_Resize(out, held + extra)  # BufferError while out is exported, as ``out +=`` raises
    cdef char* into = PyByteArray_AS_STRING(out) + held
    if prefixed:
        _put_be32(into, size)
        into += PREFIX
    if size:
        memcpy(into, PyBytes_AS_STRING(data), <size_t>size)
    return 0


cdef int _write(object out, object payload) except -1:
    cdef bytes framed
    if PyByteArray_CheckExact(out):
        if PyBytes_CheckExact(payload):
            return _append(out, payload, True)
        return _append(out, _framed(payload), False)
    framed = _framed(payload)
    if isinstance(out, bytearray):
        out += framed
    else:
        out.write(framed)
    return 0


def record(payload):
    """One record: the length prefix and the payload."""
    return _framed(payload)


def write_record(out, payload):
    """Append one record to a bytearray, or write it to a binary file."""
    _write(out, payload)


cdef bint _append_all(bytearray out, list payloads) except -1:
    """Every payload appended with one resize, if all are bytes within the limit; False (nothing written) if not.

    No Python code runs from the first read of the list to the last copy (type checks,
    sizes, one realloc, memcpy), so neither the list nor its bytes can change meanwhile.
    """
    cdef Py_ssize_t count = PyList_GET_SIZE(payloads), index, size, total = 0
    cdef object payload
    for index in range(count):
        payload = <object>PyList_GET_ITEM(payloads, index)
        if not PyBytes_CheckExact(payload):
            return False
        size = PyBytes_GET_SIZE(payload)
        if size > _LARGEST or total > PY_SSIZE_T_MAX - PREFIX - size:
            return False
        total += PREFIX + size
    cdef Py_ssize_t held = PyByteArray_GET_SIZE(out)
    if held > PY_SSIZE_T_MAX - total:
        raise MemoryError()
    PyByteArray_Resize(out, held + total)
    cdef char* into = PyByteArray_AS_STRING(out) + held
    for index in range(count):
        payload = <object>PyList_GET_ITEM(payloads, index)
        size = PyBytes_GET_SIZE(payload)
        _put_be32(into, size)
        memcpy(into + PREFIX, PyBytes_AS_STRING(payload), <size_t>size)
        into += PREFIX + size
    return True


def write_records(out, payloads):
    """write_record of each payload, in order."""
    if PyByteArray_CheckExact(out) and PyList_CheckExact(payloads) and _append_all(out, payloads):
        return
    for payload in payloads:
        _write(out, payload)


cdef unsigned long long _limit(object max_record) except? 0xFFFFFFFFFFFF:
    if type(max_record) is not int or not 0 <= max_record <= 0xFFFFFFFF:
        raise ValueError("max_record must be an int from 0 to 4294967295")
    return max_record


cdef object _owner(object data, const char** pointer, Py_ssize_t* size, str what):
    """A bytes object holding the data, with pointer/size set: bytes as they are, anything else copied.

    The pointer stays valid for as long as the caller holds the owner, whatever Python
    code runs meanwhile: bytes cannot change.
    """
    cdef object owner = payload_owner(data, pointer, size)
    if owner is None:
        raise TypeError(f"{what} takes bytes, bytearray or memoryview, not {type(data).__name__}")
    return owner


cdef Py_ssize_t _scan(const char* data, Py_ssize_t at, Py_ssize_t size, unsigned long long limit,
                     Py_ssize_t* count, bint* large) except -1:
    """Walk the whole records from at: where the first one not whole starts (size if none); count and large
    (one is VIEW_FROM or longer) set. Raises RecordTooLargeError at a length over the limit, before any record is made."""
    cdef unsigned long long length
    while size - at >= PREFIX:
        length = _be32(<const unsigned char*>data + at)
        if length > limit:
            raise RecordTooLargeError(length, limit)
        if <unsigned long long>(size - at - PREFIX) < length:
            break
        if length >= VIEW_FROM:
            large[0] = True
        count[0] += 1
        at += PREFIX + <Py_ssize_t>length
    return at


cdef list _cut(object owner, const char* data, Py_ssize_t at, Py_ssize_t count, bint views, object first):
    """The count records from at that _scan walked, after first unless it is None: bytes, or views into owner
    (a bytes object holding data) for records of VIEW_FROM bytes or more if views.

    _scan checked every length against the end, and bytes cannot change: the walk needs no check.
    Without a view to make, the list is made at its size and filled in place (no append, no
    resize): a bytes allocation runs no Python code (no GC), so nothing sees the slots not yet
    filled. A view can (a GC callback); then the list grows by append.
    """
    cdef bint in_place = not views
    cdef list out = PyList_New(count + (first is not None)) if in_place else []
    cdef Py_ssize_t index = 0, length
    cdef object item = first, view = None
    if first is not None:
        if in_place:
            Py_INCREF(item)
            PyList_SET_ITEM(out, index, item)
        else:
            out.append(item)
        index = 1
    for _ in range(count):
        length = <Py_ssize_t>_be32(<const unsigned char*>data + at)
        at += PREFIX
        if length < VIEW_FROM or not views:  # a copy: one allocation; a view: a slice, two ints, a GC-tracked memoryview
            item = PyBytes_FromStringAndSize(data + at, length)
        else:
            if view is None:
                view = memoryview(owner)
            item = view[at:at + length]
        if in_place:
            Py_INCREF(item)  # the reference the list's slot takes
            PyList_SET_ITEM(out, index, item)
            index += 1
        else:
            out.append(item)
        at += length
    return out


def split_records(buffer, max_record=DEFAULT_MAX_RECORD):
    """Every record of a whole stream: bytes below 2 KiB, else a view into it (copied first unless it is bytes).

    Raises if it ends inside a record.
    """
    cdef unsigned long long limit = _limit(max_record)
    cdef const char* data = NULL
    cdef Py_ssize_t size = 0, count = 0, end
    cdef bint large = False
    # data points into owner, a bytes object held here: no Python code (a GC callback while a
    # view is made) can move or free it
    cdef object owner = _owner(buffer, &data, &size, "split_records")
    end = _scan(data, 0, size, limit, &count, &large)
    if size - end:
        if size - end < PREFIX:
            raise TruncatedStreamError(PREFIX - (size - end), "length prefix")
        raise TruncatedStreamError(_be32(<const unsigned char*>data + end) - <unsigned long long>(size - end - PREFIX))
    return _cut(owner, data, 0, count, large, None)


cdef str _NOT_READY = "RecordReader is not initialised: its __init__ did not run to the end"
cdef str _INIT_TWICE = "RecordReader.__init__ runs once: make a new reader instead of re-initialising one"
cdef str _BUSY = ("RecordReader is in use: feed and close cannot run inside a feed or close of the same reader "
                  "(from a callback, a hook or another thread)")
cdef str _CHANGED = "RecordReader's buffer changed under it"
cdef str _NO_PICKLE = "RecordReader cannot be pickled or copied: make a new reader"


cdef unsigned long long _length(bytearray buffer, unsigned long long limit) except? 0xFFFFFFFFFFFF:
    """The length prefix at the start of the buffer, checked against the limit; the size is checked here, at the read."""
    if len(buffer) < PREFIX:
        raise RuntimeError(_CHANGED)
    cdef unsigned long long length = _be32(<const unsigned char*><char*>buffer)
    if length > limit:
        raise RecordTooLargeError(length, limit)
    return length


cdef bytes _record_from(bytearray buffer, Py_ssize_t length):
    """The record at the buffer's start, in one copy (a slice then bytes() made two: three sizes at the peak)."""
    cdef bytes record = PyBytes_FromStringAndSize(NULL, length)
    # The allocation runs no Python code, but the size is read again after it, not trusted across it.
    if PyByteArray_GET_SIZE(buffer) < PREFIX + length:
        raise RuntimeError(_CHANGED)
    memcpy(PyBytes_AS_STRING(record), PyByteArray_AS_STRING(buffer) + PREFIX, <size_t>length)
    return record


cdef Py_ssize_t _extend(bytearray buffer, const char* data, Py_ssize_t size) except -1:
    """Append size bytes at data (which nothing may move meanwhile) to the reader's buffer; returns size.

    The size is read right before the resize and the pointer after it: a resize runs no Python code.
    """
    if size <= 0:
        return 0
    cdef Py_ssize_t held = PyByteArray_GET_SIZE(buffer)
    PyByteArray_Resize(buffer, held + size)
    memcpy(PyByteArray_AS_STRING(buffer) + held, data, <size_t>size)
    return size


@cython.auto_pickle(False)
cdef class RecordReader:
    """RecordReader(max_record=16777216)
--

Feed bytes as they arrive; get whole payloads back.

    Each record is ``bytes``, except one of 2 KiB or more that lies whole inside a fed
    ``bytes`` chunk: that one is a read-only memoryview into the chunk (zero-copy; bytes
    cannot change).
    A record from any other chunk (bytearray, memoryview) is a copy, so a later change
    to the caller's buffer changes nothing. ``close()`` marks the end of the stream,
    the channel's finish. One reader reads one stream: a feed or close from inside
    another (a callback, a hook, another thread) raises RuntimeError.
    """

    cdef readonly unsigned long long max_record
    cdef bytearray _buffer  # None until __init__ has run to the end
    cdef readonly Py_ssize_t records
    cdef readonly bint closed
    cdef bint _claimed  # __init__ has begun: it never runs again
    cdef bint _busy  # a feed or close is running

    def __init__(self, max_record=DEFAULT_MAX_RECORD):
        if self._claimed:
            raise RuntimeError(_INIT_TWICE)
        self._claimed = True
        cdef unsigned long long limit = _limit(max_record)
        cdef bytearray buffer = bytearray()
        self.max_record, self.records, self.closed = limit, 0, False
        self._buffer = buffer  # the commit: from here the reader is ready

    def __repr__(self):
        if self._buffer is None:
            return "<RecordReader not initialised>"
        return f"<RecordReader records={self.records} pending={len(self._buffer)} closed={self.closed}>"

    def __reduce__(self):
        raise TypeError(_NO_PICKLE)

    @property
    def pending(self):
        """Bytes held that do not yet make a whole record."""
        return 0 if self._buffer is None else len(self._buffer)

    cdef int _enter(self) except -1:
        """Refuse a reader that is not ready, or in use; no Python code runs between the check and the mark."""
        if self._buffer is None:
            raise RuntimeError(_NOT_READY)
        if self._busy:
            raise RuntimeError(_BUSY)
        self._busy = True
        return 0

    def feed(self, data):
        """Take the next bytes of the stream; return the payloads they complete, in order."""
        self._enter()
        try:
            if self.closed:
                raise ValueError("feed after close: the stream has ended")
            return self._feed(data)
        finally:
            self._busy = False

    cdef list _feed(self, object data):
        cdef const char* pointer = NULL
        cdef Py_ssize_t size = 0, count = 0, end
        cdef bint large = False
        # pointer reads owner, a bytes object this call holds: no Python code can move or free it
        cdef object owner = _owner(data, &pointer, &size, "feed")
        cdef object first = None
        cdef bytearray buffer = self._buffer  # the reader's own: it never holds more than one record
        cdef unsigned long long limit = self.max_record, length
        cdef Py_ssize_t at = 0, held = PyByteArray_GET_SIZE(buffer)
        if held:  # finish the record that spans chunks
            if held < PREFIX:
                at = min(PREFIX - held, size)
                _extend(buffer, pointer, at)
                if held + at < PREFIX:
                    return []
            length = _length(buffer, limit)
            at += _extend(buffer, pointer + at, min(<Py_ssize_t>(PREFIX + length) - PyByteArray_GET_SIZE(buffer), size - at))
            if <unsigned long long>PyByteArray_GET_SIZE(buffer) < PREFIX + length:
                return []
            first = _record_from(buffer, <Py_ssize_t>length)
            PyByteArray_Resize(buffer, 0)
        end = _scan(pointer, at, size, limit, &count, &large)
        # a view only into bytes the caller gave: any other chunk was copied, and may change after feed
        cdef list out = _cut(owner, pointer, at, count, large and PyBytes_CheckExact(data), first)
        _extend(buffer, pointer + end, size - end)
        self.records += count + (first is not None)
        return out

    def close(self):
        """The stream ended: raises TruncatedStreamError if it ended inside a record."""
        self._enter()
        try:
            self.closed = True
            held = len(self._buffer)
            if not held:
                return
            if held < PREFIX:
                raise TruncatedStreamError(PREFIX - held, "length prefix")
            raise TruncatedStreamError(<Py_ssize_t>(PREFIX + _length(self._buffer, self.max_record)) - held)
        finally:
            self._busy = False
