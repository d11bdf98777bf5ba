# cython: language_level=3, cdivision=True, binding=False
"""Server-sent events as bytes, compiled: the twin of ``_eventstream_py.py``, same names, same behaviour.

One call per chunk: its lines are found with memchr (the next CR and the next LF, each
searched once per stretch), read in place, and a ``message`` event costs one bytes object,
its data. The parser's own memory (the line that spans chunks, the event's data) is in C
buffers no Python code can reach: a feed, close or __init__ from inside another (a GC
callback, a finalizer, another thread) raises, so nothing can resize them under a read.
The chunk is read through a bytes object this call holds (a copy of anything else). The
buffers come from PyMem_Raw*, so tracemalloc sees them as it sees the pure twin's.
"""

cimport cython
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_Append
from cpython.object cimport PyObject_Hash
from libc.stdint cimport uint64_t
from cpython.mem cimport PyMem_RawCalloc, PyMem_RawFree, PyMem_RawRealloc
from libc.string cimport memchr, memcmp, memcpy

from diverge_codec._payload cimport bytes_owner, payload_owner

from diverge_codec._eventstream_py import (
    BUSY, INIT_TWICE, LINE_SLACK, MAX_CAPACITY, MAX_DATA, MAX_RETRY_MS, NAMED_DATA_LIMIT, NAMED_LIMIT, NO_PICKLE,
    NOT_READY, check_settings,
)

__all__ = ["LINE_SLACK", "MAX_DATA", "MAX_RETRY_MS", "NAMED_DATA_LIMIT", "NAMED_LIMIT", "EventParser", "RecentIds"]

cdef enum:
    SKIP_OTHER = 1
    SKIP_EVENT = 2
    SKIP_RETRY = 3
    RETRY_CAP = 600001  # MAX_RETRY_MS + 1 (checked at import below)
    NAMED_MOST = 16  # NAMED_LIMIT
    NAMED_DATA_MOST = 4096  # NAMED_DATA_LIMIT
    SLACK = 64  # LINE_SLACK

if (RETRY_CAP, NAMED_MOST, NAMED_DATA_MOST, SLACK) != (MAX_RETRY_MS + 1, NAMED_LIMIT, NAMED_DATA_LIMIT, LINE_SLACK):
    raise ImportError("_eventstream_c's constants differ from _eventstream_py's")

cdef const unsigned char* BOM = b"\xef\xbb\xbf"


cdef inline uint64_t _key(bytes event_id) except? 0:
    """What RecentIds keeps of an id: its 64-bit hash (bytes' SipHash, as the pure twin's hash()), never 0."""
    cdef uint64_t key = <uint64_t>PyObject_Hash(event_id)
    return key if key else 1


cdef bytes _id_bytes(object event_id):
    cdef const char* data = NULL
    cdef Py_ssize_t size = 0
    cdef object owner = payload_owner(event_id, &data, &size)
    if owner is None:
        raise TypeError(f"RecentIds takes bytes, bytearray or memoryview, not {type(event_id).__name__}")
    return owner


@cython.auto_pickle(False)
cdef class RecentIds:
    """RecentIds(capacity=65536)
--

Event ids already relayed in one session, bounded memory (a replay is an event whose id was seen).

    It keeps a 64-bit hash of each id, not the id: memory is bounded by ``capacity``
    whatever the ids' lengths, and the oldest id is forgotten first.
    """

    cdef readonly Py_ssize_t capacity
    cdef uint64_t* _ring  # the keys in arrival order; a ring (from _oldest) once _count == capacity
    cdef Py_ssize_t _ring_size, _count, _oldest
    cdef uint64_t* _table  # open addressing, linear probing, 0 empty; at most half full
    cdef size_t _mask  # its size - 1; 0 while there is none

    def __init__(self, capacity=65536):
        if type(capacity) is not int or not 1 <= capacity <= MAX_CAPACITY:
            raise ValueError(f"capacity must be an int from 1 to {MAX_CAPACITY}")
        self._forget()
        self.capacity = capacity

    def __dealloc__(self):
        self._forget()

    cdef void _forget(self) noexcept:
        PyMem_RawFree(self._ring)
        PyMem_RawFree(self._table)
        self._ring, self._table = NULL, NULL
        self._ring_size = self._count = self._oldest = 0
        self._mask = 0

    def clear(self):
        """Forget every id: a new session."""
        self._forget()

    def __len__(self):
        return self._count

    def __contains__(self, event_id):
        return self._has(_key(_id_bytes(event_id)))

    def add(self, event_id):
        """Remember ``event_id``: True if it is new, False if it was seen (nothing changes then)."""
        return self._add(_key(_id_bytes(event_id))) == 1

    def __repr__(self):
        return f"<RecentIds {self._count} of {self.capacity}>"

    def __reduce__(self):
        raise TypeError(NO_PICKLE.format("RecentIds"))

    cdef inline size_t _slot(self, uint64_t key) noexcept:
        """Where key is in the table, or the empty slot where it would go (the table exists, and has an empty slot)."""
        cdef size_t at = <size_t>key & self._mask
        while self._table[at] != 0 and self._table[at] != key:
            at = (at + 1) & self._mask
        return at

    cdef bint _has(self, uint64_t key) noexcept:
        return self._mask != 0 and self._table[self._slot(key)] == key

    cdef int _delete(self, uint64_t key) noexcept:
        """Take key out of the table, shifting back the keys after it that probed past its slot."""
        cdef size_t hole = self._slot(key), at = hole, home
        if self._table[hole] != key:
            return 0
        while True:
            at = (at + 1) & self._mask
            if self._table[at] == 0:
                break
            home = <size_t>self._table[at] & self._mask
            # the key at `at` stays unless its home slot lies cyclically outside (hole, at]
            if (home > hole and home <= at) if hole <= at else (home > hole or home <= at):
                continue
            self._table[hole] = self._table[at]
            hole = at
        self._table[hole] = 0
        return 0

    cdef int _grow(self) except -1:
        """Room for one more key: the ring and the table grow by doubling (the table stays at most half full)."""
        cdef Py_ssize_t size
        cdef uint64_t* ring
        cdef uint64_t* table
        cdef uint64_t* old = self._table
        cdef size_t old_size = self._mask + 1 if self._mask else 0, index, slots
        if self._count == self._ring_size:
            size = min(self.capacity, max(16, 2 * self._ring_size))
            ring = <uint64_t*>PyMem_RawRealloc(self._ring, <size_t>size * sizeof(uint64_t))
            if ring == NULL:
                raise MemoryError()
            self._ring, self._ring_size = ring, size
        if <size_t>(self._count + 1) * 2 <= old_size:
            return 0
        slots = max(<size_t>32, 2 * old_size)
        table = <uint64_t*>PyMem_RawCalloc(slots, sizeof(uint64_t))
        if table == NULL:
            raise MemoryError()
        self._table, self._mask = table, slots - 1
        for index in range(old_size):
            if old[index]:
                self._table[self._slot(old[index])] = old[index]
        PyMem_RawFree(old)
        return 0

    cdef int _add(self, uint64_t key) except -1:
        """1 if key is new (it is kept, the oldest forgotten if full), 0 if it was there. No Python code runs here."""
        if self._has(key):
            return 0
        if self._count == self.capacity:
            self._delete(self._ring[self._oldest])
            self._ring[self._oldest] = key
            self._oldest = (self._oldest + 1) % self.capacity
        else:
            self._grow()
            self._ring[self._count] = key
            self._count += 1
        self._table[self._slot(key)] = key
        return 1


cdef inline bint _all_digits(const char* at, Py_ssize_t size) noexcept:
    cdef Py_ssize_t index
    for index in range(size):
        if not (c'0' <= at[index] <= c'9'):
            return False
    return True


cdef long long _more_digits(long long value, const char* at, Py_ssize_t size) noexcept:
    """value (at most RETRY_CAP) followed by the size digits at at, capped at RETRY_CAP: never more than 13 digits' worth."""
    cdef Py_ssize_t index
    if not value:
        while size and at[0] == c'0':
            at += 1
            size -= 1
    if size > 7:
        return RETRY_CAP
    for index in range(size):
        value = value * 10 + (at[index] - c'0')
    return min(value, <long long>RETRY_CAP)


cdef inline const char* _find(const char* at, const char* end, int byte) noexcept:
    """The first byte in [at, end), or end."""
    cdef const char* found = <const char*>memchr(at, byte, <size_t>(end - at))
    return found if found != NULL else end


@cython.auto_pickle(False)
cdef class EventParser:
    """EventParser(max_data, seen=None)
--

The events of one server-sent event stream, fed in chunks of any size; after ``close()``, of the next.

    ``feed`` returns the data of each event of type ``message`` (or none); ``close`` ends a
    stream (a response body) and keeps ``last_event_id`` and ``retry_ms`` for the stream that
    resumes it.
    """

    cdef readonly Py_ssize_t max_data
    cdef readonly RecentIds seen
    cdef public object last_event_id
    cdef public object retry_ms
    cdef public Py_ssize_t too_large, replayed, named_dropped
    cdef readonly list named
    cdef Py_ssize_t _limit  # the longest line kept: max_data + SLACK
    cdef bint _claimed, _ready, _busy
    # the stream
    cdef char* _held  # the line that spans chunks, so far (at most _limit bytes)
    cdef Py_ssize_t _held_len, _held_cap
    cdef int _skip  # a SKIP_* while a line too long to keep passes
    cdef bint _retry_ok
    cdef long long _retry_value
    cdef int _bom  # bytes of a leading BOM matched; 3 once past the stream's start
    cdef bint _after_cr
    # the event
    cdef char* _data  # its data lines joined with LF (at most max_data bytes)
    cdef Py_ssize_t _data_len, _data_cap
    cdef bint _has_data, _oversized, _type_oversized
    cdef bytes _type  # None: message
    cdef bytes _id  # its id (its last id line without NUL), None if it has none

    def __init__(self, max_data, seen=None):
        if self._claimed:
            raise RuntimeError(INIT_TWICE)
        self._claimed = True
        check_settings(max_data, seen, RecentIds)
        self.max_data, self.seen, self._limit = max_data, seen, max_data + SLACK
        self.last_event_id = self.retry_ms = None
        self.too_large = self.replayed = self.named_dropped = 0
        self.named = []
        self._ready = True

    def __dealloc__(self):
        PyMem_RawFree(self._held)
        PyMem_RawFree(self._data)

    def __repr__(self):
        if not self._ready:
            return "<EventParser not initialised>"
        return f"<EventParser max_data={self.max_data} too_large={self.too_large} replayed={self.replayed}>"

    def __reduce__(self):
        raise TypeError(NO_PICKLE.format("EventParser"))

    cdef int _enter(self) except -1:
        """Refuse a parser that is not ready, or in use; no Python code runs between the check and the mark."""
        if not self._ready:
            raise RuntimeError(NOT_READY)
        if self._busy:
            raise RuntimeError(BUSY)
        self._busy = True
        return 0

    def feed(self, chunk):
        """The data of each ``message`` event ``chunk`` completes, in order (replays dropped)."""
        self._enter()
        try:
            return self._feed(chunk)
        finally:
            self._busy = False

    def close(self):
        """The stream ended: a partial line and event are discarded; the next feed starts a new stream."""
        self._enter()
        PyMem_RawFree(self._held)
        PyMem_RawFree(self._data)
        self._held, self._data = NULL, NULL
        self._held_len = self._held_cap = self._data_cap = 0
        self._skip, self._bom, self._after_cr = 0, 0, False
        self._new_event()
        self._busy = False
        return []

    cdef void _new_event(self) noexcept:
        self._data_len = 0
        self._has_data = self._oversized = self._type_oversized = False
        self._type = self._id = None

    cdef list _feed(self, object chunk):
        cdef const char* at = NULL
        cdef Py_ssize_t size = 0
        # at reads owner, a bytes object this call holds: no Python code can move or free it
        cdef object owner = bytes_owner(chunk, &at, &size)
        if owner is None:
            raise TypeError(f"feed takes bytes, bytearray or memoryview, not {type(chunk).__name__}")
        cdef list out = []
        cdef const char* end = at + size
        cdef const char* lf
        cdef const char* cr
        cdef const char* stop
        if self._bom < 3:
            while self._bom < 3 and at < end:
                if <unsigned char>at[0] != BOM[self._bom]:
                    self._more(<const char*>BOM, self._bom)  # what matched is text after all
                    self._bom = 3
                    break
                self._bom += 1
                at += 1
            if self._bom < 3:
                return out
        if self._after_cr and at < end:
            self._after_cr = False
            if at[0] == c'\n':
                at += 1
        if at == end:
            return out
        self._after_cr = end[-1] == c'\r'
        lf, cr = _find(at, end, c'\n'), _find(at, end, c'\r')
        if self._skip or self._held_len:  # the line that spans chunks
            stop = lf if lf < cr else cr
            self._more(at, stop - at)
            if stop == end:
                return out
            if self._skip:
                self._end_skip()
            else:
                self._field(self._held, self._held_len, out)
                self._held_len = 0
            at = stop + 1
            if stop[0] == c'\r' and at < end and at[0] == c'\n':
                at += 1
        while True:
            if lf < at:
                lf = _find(at, end, c'\n')
            if cr < at:
                cr = _find(at, end, c'\r')
            stop = lf if lf < cr else cr
            if stop == end:
                break
            self._field(at, stop - at, out)
            at = stop + 1
            if stop[0] == c'\r' and at < end and at[0] == c'\n':
                at += 1
        self._more(at, end - at)
        return out

    cdef int _reserve(self, char** buffer, Py_ssize_t* capacity, Py_ssize_t need, Py_ssize_t most) except -1:
        """Room for need bytes in buffer: it grows by doubling, past most (the callers' bound) only to need."""
        if need <= capacity[0]:
            return 0
        cdef Py_ssize_t size = max(need, min(max(2 * capacity[0], <Py_ssize_t>256), most))
        cdef char* grown = <char*>PyMem_RawRealloc(buffer[0], <size_t>size)
        if grown == NULL:
            raise MemoryError()
        buffer[0], capacity[0] = grown, size
        return 0

    cdef int _more(self, const char* at, Py_ssize_t size) except -1:
        """The next size bytes of a line that does not end in this chunk: held, or read as they pass."""
        if size <= 0:
            return 0
        if self._skip:
            self._skip_more(at, size)
        elif self._held_len + size > self._limit:
            self._begin_skip(at, size)
        else:
            self._reserve(&self._held, &self._held_cap, self._held_len + size, self._limit)
            memcpy(self._held + self._held_len, at, <size_t>size)
            self._held_len += size
        return 0

    cdef int _begin_skip(self, const char* at, Py_ssize_t size) except -1:
        """A line too long to keep (the held bytes, then size at at: more than _limit): what its head says it is."""
        cdef char head[8]
        cdef Py_ssize_t kept = min(self._held_len, <Py_ssize_t>8), start, name
        if kept:
            memcpy(head, self._held, <size_t>kept)
        memcpy(head + kept, at, <size_t>(8 - kept))  # the line is longer than 64 bytes
        cdef const char* colon = <const char*>memchr(head, c':', 6)
        self._skip = SKIP_OTHER
        if colon != NULL:
            name = colon - head
            start = name + 1 + (head[name + 1] == c' ')  # where the value starts in the line
            if name == 4 and memcmp(head, b"data", 4) == 0:
                self._has_data = self._oversized = True
                self._data_len = 0
            elif name == 5 and memcmp(head, b"event", 5) == 0:
                self._skip = SKIP_EVENT
            elif name == 5 and memcmp(head, b"retry", 5) == 0:
                self._skip, self._retry_ok, self._retry_value = SKIP_RETRY, True, 0
                if start < self._held_len:
                    self._skip_more(self._held + start, self._held_len - start)
                    start = 0
                else:
                    start -= self._held_len
                self._skip_more(at + start, size - start)
        self._held_len = 0
        return 0

    cdef void _skip_more(self, const char* at, Py_ssize_t size) noexcept:
        if self._skip == SKIP_RETRY and self._retry_ok and size > 0:
            if _all_digits(at, size):
                self._retry_value = _more_digits(self._retry_value, at, size)
            else:
                self._retry_ok = False

    cdef int _end_skip(self) except -1:
        if self._skip == SKIP_RETRY and self._retry_ok:
            self.retry_ms = min(self._retry_value, <long long>MAX_RETRY_MS)
        elif self._skip == SKIP_EVENT:
            self._type, self._type_oversized = None, True
        self._skip = 0
        return 0

    cdef int _field(self, const char* line, Py_ssize_t size, list out) except -1:
        """One whole line (in the chunk, or the held buffer) of size bytes."""
        if size == 0:
            if self._id is not None:  # the resumption point moves when the event is whole, with or without data
                self.last_event_id = self._id  # the old value's finalizer may run Python code: nothing is read after
            if self._has_data:
                self._deliver(out)
            self._new_event()
            return 0
        if line[0] == c':':
            return 0
        cdef const char* colon = <const char*>memchr(line, c':', <size_t>size)
        cdef Py_ssize_t name = (colon - line) if colon != NULL else size
        cdef const char* value = line + name + (colon != NULL)
        cdef Py_ssize_t length = line + size - value, total
        if length and value[0] == c' ':
            value += 1
            length -= 1
        if name == 4 and memcmp(line, b"data", 4) == 0:
            if not self._oversized:
                total = self._data_len + length + self._has_data
                if total > self.max_data:
                    self._oversized, self._data_len = True, 0
                else:
                    self._reserve(&self._data, &self._data_cap, total, self.max_data)
                    if self._has_data:
                        self._data[self._data_len] = c'\n'
                        self._data_len += 1
                    if length:
                        memcpy(self._data + self._data_len, value, <size_t>length)
                    self._data_len += length
            self._has_data = True
        elif name == 2 and memcmp(line, b"id", 2) == 0:
            if size <= self._limit and (not length or memchr(value, 0, <size_t>length) == NULL):
                self._id = PyBytes_FromStringAndSize(value, length)
        elif name == 5 and memcmp(line, b"event", 5) == 0:
            if size > self._limit:
                self._type, self._type_oversized = None, True
            else:
                self._type_oversized = False
                if not length or (length == 7 and memcmp(value, b"message", 7) == 0):
                    self._type = None
                else:
                    self._type = PyBytes_FromStringAndSize(value, length)
        elif name == 5 and memcmp(line, b"retry", 5) == 0 and length and _all_digits(value, length):
            self.retry_ms = min(_more_digits(0, value, length), <long long>MAX_RETRY_MS)
        return 0

    cdef int _deliver(self, list out) except -1:
        """The event in hand has data: relay it, keep it as named, or count why not."""
        if self._id and self.seen is not None and not self.seen._add(_key(self._id)):
            self.replayed += 1
        elif self._type_oversized or self._type is not None:
            if (self._oversized or self._type_oversized or self._data_len > NAMED_DATA_MOST
                    or len(self.named) >= NAMED_MOST):
                self.named_dropped += 1
            else:
                self.named.append((self._type, PyBytes_FromStringAndSize(self._data, self._data_len)))
        elif self._oversized:
            self.too_large += 1
        else:
            PyList_Append(out, PyBytes_FromStringAndSize(self._data, self._data_len))
        return 0
