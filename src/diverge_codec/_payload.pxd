# cython: language_level=3
"""Where a payload's bytes are, without copying them: shared by the compiled channel cores."""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_CheckExact, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcpy


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ


# Bodies this long go to the parser as a view into the payload rather than a copy. Below it a
# copy is the cheaper of the two (a view costs two allocations); above it the view wins, and
# for a large body it saves a second copy's worth of memory. Measured: the crossover is ~16 KB.
cdef enum:
    VIEW_FROM = 16384


cdef inline object body_of(const char* data, Py_ssize_t size):
    """The JSON after the tag byte, for the parser: a copy when small, a read-only view when large.

    The view is safe because nothing runs between making it and the parse that
    reads it, and nothing keeps it: the parser's own errors are dropped unseen.
    """
    if size - 1 < VIEW_FROM:
        return PyBytes_FromStringAndSize(data + 1, size - 1)
    return PyMemoryView_FromMemory(<char*>data + 1, size - 1, PyBUF_READ)


cdef inline object payload_owner(object payload, const char** data, Py_ssize_t* size):
    """The object that owns the bytes (payload itself, or a copy), with data/size set; None if not bytes-like.

    bytes and bytearray are read in place; any other buffer (a memoryview, contiguous
    or not, of any format) is copied in C order, as the pure twin's as_bytes does.
    """
    cdef object owner
    if PyBytes_CheckExact(payload):
        data[0] = PyBytes_AS_STRING(payload)
        size[0] = PyBytes_GET_SIZE(payload)
        return payload
    if PyByteArray_CheckExact(payload):
        data[0] = PyByteArray_AS_STRING(payload)
        size[0] = PyByteArray_GET_SIZE(payload)
        return payload
    if isinstance(payload, str):
        return None
    owner = None
    try:
        owner = memoryview(payload).tobytes()
    except TypeError:
        pass
    if owner is None:
        return None
    data[0] = PyBytes_AS_STRING(owner)
    size[0] = PyBytes_GET_SIZE(owner)
    return owner


cdef inline bytes tagged(unsigned char tag, const char* data, Py_ssize_t size):
    """A new bytes object: the tag byte, then a copy of size bytes at data. One allocation."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, size + 1)
    cdef char* into = PyBytes_AS_STRING(out)
    into[0] = <char>tag
    if size:
        memcpy(into + 1, data, size)
    return out
