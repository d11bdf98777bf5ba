# cython: language_level=3
"""Where a payload's bytes are, without copying them: shared by the compiled channel cores."""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_CheckExact, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from libc.string cimport memcpy


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
