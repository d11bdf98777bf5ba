# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The stream envelope, compiled: the twin of ``_stream_py.py``, same names, same behaviour.

The splitting loop reads each 4-byte big-endian length straight from the buffer and
slices views without creating an int or a slice object per prefix.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.list cimport PyList_Append

from diverge_codec._payload cimport payload_owner

from diverge_codec._stream_py import DEFAULT_MAX_RECORD, record, write_record, write_records
from diverge_codec.errors import RecordTooLargeError, TruncatedStreamError

__all__ = ["DEFAULT_MAX_RECORD", "RecordReader", "record", "split_records", "write_record", "write_records"]

cdef enum:
    PREFIX = 4


cdef inline unsigned long long _be32(const unsigned char* at) noexcept:
    return (<unsigned long long>at[0] << 24) | (<unsigned long long>at[1] << 16) | (<unsigned long long>at[2] << 8) | at[3]


cdef unsigned long long _limit(object max_record) except? 0xFFFFFFFFFFFF:
    if type(max_record) is not int or not 0 <= max_record <= 0xFFFFFFFF:
        raise ValueError("max_record must be an int from 0 to 4294967295")
    return max_record


cdef object _owner(object data, const char** pointer, Py_ssize_t* size, str what):
    """bytes as they are; anything else bytes-like copied to bytes, as the pure twin's as_bytes does."""
    cdef object owner
    if PyBytes_CheckExact(data):
        owner = data
    else:
        owner = payload_owner(data, pointer, size)
        if owner is None:
            raise TypeError(f"{what} takes bytes, bytearray or memoryview, not {type(data).__name__}")
        if not PyBytes_CheckExact(owner):
            owner = PyBytes_FromStringAndSize(pointer[0], size[0])
    pointer[0] = PyBytes_AS_STRING(owner)
    size[0] = PyBytes_GET_SIZE(owner)
    return owner


def split_records(buffer, max_record=DEFAULT_MAX_RECORD):
    """Every record of a whole stream, as views into it (copies first unless it is bytes); raises if it ends inside one."""
    cdef unsigned long long limit = _limit(max_record)
    cdef const char* data = NULL
    cdef Py_ssize_t size = 0
    cdef object owner = _owner(buffer, &data, &size, "split_records")
    cdef object view = memoryview(owner)
    cdef list records = []
    cdef Py_ssize_t at = 0, start
    cdef unsigned long long length
    while at < size:
        if size - at < PREFIX:
            raise TruncatedStreamError(PREFIX - (size - at), "length prefix")
        length = _be32(<const unsigned char*>data + at)
        if length > limit:
            raise RecordTooLargeError(length, limit)
        start = at + PREFIX
        if <unsigned long long>(size - start) < length:
            raise TruncatedStreamError(length - (size - start))
        PyList_Append(records, view[start:start + <Py_ssize_t>length])
        at = start + <Py_ssize_t>length
    return records


cdef class RecordReader:
    """Feed bytes as they arrive; get whole payloads back.

    A payload that lies whole inside a fed ``bytes`` chunk comes back as a view into
    it (zero-copy; bytes cannot change); one that spans chunks is copied out of the
    reader's buffer. ``close()`` marks the end of the stream, the channel's finish.
    """

    cdef readonly unsigned long long max_record
    cdef bytearray _buffer
    cdef public Py_ssize_t records
    cdef public bint closed

    def __init__(self, max_record=DEFAULT_MAX_RECORD):
        self.max_record = _limit(max_record)
        self._buffer = bytearray()
        self.records = 0
        self.closed = False

    def __repr__(self):
        return f"<RecordReader records={self.records} pending={len(self._buffer)} closed={self.closed}>"

    @property
    def pending(self):
        """Bytes held that do not yet make a whole record."""
        return len(self._buffer)

    cdef unsigned long long _length(self) except? 0xFFFFFFFFFFFF:
        cdef unsigned long long length = _be32(<const unsigned char*><char*>self._buffer)
        if length > self.max_record:
            raise RecordTooLargeError(length, self.max_record)
        return length

    def feed(self, data):
        """Take the next bytes of the stream; return the payloads they complete, in order."""
        if self.closed:
            raise ValueError("feed after close: the stream has ended")
        cdef bint whole = PyBytes_CheckExact(data)
        cdef const char* pointer = NULL
        cdef Py_ssize_t size = 0
        cdef object owner = _owner(data, &pointer, &size, "feed")
        cdef object view = memoryview(owner)
        cdef list out = []
        cdef bytearray buffer = self._buffer
        cdef Py_ssize_t at = 0, take, held
        cdef unsigned long long length
        while len(buffer):  # finish the record that spans chunks
            held = len(buffer)
            if held < PREFIX:
                if at == size:
                    break
                take = min(PREFIX - held, size - at)
                buffer += view[at:at + take]
                at += take
                continue
            length = self._length()
            take = min(<Py_ssize_t>(PREFIX + length) - held, size - at)
            buffer += view[at:at + take]
            at += take
            if <unsigned long long>len(buffer) < PREFIX + length:
                break
            PyList_Append(out, bytes(buffer[PREFIX:]))
            del buffer[:]
        if not len(buffer):
            while size - at >= PREFIX:
                length = _be32(<const unsigned char*>pointer + at)
                if length > self.max_record:
                    raise RecordTooLargeError(length, self.max_record)
                if <unsigned long long>(size - at - PREFIX) < length:
                    break
                if whole:
                    PyList_Append(out, view[at + PREFIX:at + PREFIX + <Py_ssize_t>length])
                else:
                    PyList_Append(out, PyBytes_FromStringAndSize(pointer + at + PREFIX, <Py_ssize_t>length))
                at += PREFIX + <Py_ssize_t>length
            buffer += view[at:]
            if len(buffer) >= PREFIX:
                self._length()
        self.records += len(out)
        return out

    def close(self):
        """The stream ended: raises TruncatedStreamError if it ended inside a record."""
        self.closed = True
        cdef Py_ssize_t held = len(self._buffer)
        if not held:
            return
        if held < PREFIX:
            raise TruncatedStreamError(PREFIX - held, "length prefix")
        raise TruncatedStreamError(<Py_ssize_t>(PREFIX + self._length()) - held)
