# cython: language_level=3
"""Where a payload's bytes are, shared by the compiled channel cores.

Every pointer these hand out points into a bytes object the caller holds: bytes cannot
change, so the pointer stays valid whatever Python code runs while the caller reads it
(a GC callback or a finalizer during an allocation, a profile hook, another thread).
A bytearray is copied first: such code could resize it and free the memory under a
pointer into it.
"""

from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_CheckExact, PyByteArray_GET_SIZE
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.memoryview cimport PyMemoryView_GET_BUFFER
from cpython.ref cimport Py_INCREF
from libc.string cimport memcpy


cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char* mem, Py_ssize_t size, int flags)
    int PyBUF_READ
    void PyObject_GC_UnTrack(object op)


cdef extern from *:
    """
    #ifdef Py_GIL_DISABLED
    #define DIVERGE_CODEC_GIL_BUILD 0
    #else
    #define DIVERGE_CODEC_GIL_BUILD 1
    #endif
    """
    const bint GIL_BUILD "DIVERGE_CODEC_GIL_BUILD"


# Bodies this long go to a parser without a shared view as a view into the payload rather than a
# copy: below it a copy is cheaper (a fresh view costs two allocations), above it the view saves
# a second copy's worth of memory. Measured: the crossover is ~16 KB.
cdef enum:
    VIEW_FROM = 16384


cdef inline object body_of(object owner, const char* data, Py_ssize_t size):
    """The JSON after the tag byte, for a parser without a shared view: a copy when small, a read-only view when large.

    The view is one of the owner, so it keeps the owner alive however long a parser (or
    anyone who finds it) holds it. A free-threaded build copies always: orjson reads only
    bytes and str there.
    """
    if size - 1 < VIEW_FROM or not GIL_BUILD:
        return PyBytes_FromStringAndSize(data + 1, size - 1)
    return memoryview(owner)[1:]


cdef inline object new_shared_view(bint parser_reads_at_once):
    """A read-only memoryview that parse_body points at each body in turn; None where that is unsafe.

    Reusing one view costs no allocation, where a copy or a fresh view costs one or
    two. It is safe only where no other call can repoint it between the moment it is
    pointed and the moment the parser has read where it points: orjson reads the
    view's pointer and length first thing, in C, holding the GIL, and keeps neither
    the view nor a reference to it (its JSONDecodeError copies the document into a
    str). A finalizer that the GC runs mid-parse may decode, repoint the view and
    leave it idle: the outer parse has read its pointer already (a test pins this).
    A parser written in Python may switch threads mid-read, and a free-threaded
    build has no GIL; both get None, and parse_body copies.

    The view is untracked by the GC, so no Python code can find it (``gc.get_objects``)
    while it points at a payload and keep a view of it past the payload's life; the
    extra reference keeps it from ever being freed, which an untracked view must not be.
    """
    if not (GIL_BUILD and parser_reads_at_once):
        return None
    cdef object view = PyMemoryView_FromMemory(<char*>b"", 0, PyBUF_READ)
    PyObject_GC_UnTrack(view)
    Py_INCREF(view)
    return view


cdef inline object parse_body(object loads, object shared_view, object owner, const char* data, Py_ssize_t size):
    """loads() of the JSON after the tag byte of the size bytes at data (in owner), through shared_view where there is one."""
    if shared_view is None:
        return loads(body_of(owner, data, size))
    cdef Py_buffer* buffer = PyMemoryView_GET_BUFFER(shared_view)
    buffer.buf = <void*>(data + 1)
    buffer.len = size - 1
    buffer.shape[0] = size - 1
    try:
        return loads(shared_view)
    finally:  # idle, it points at nothing that may be freed
        buffer.buf = <void*><char*>b""
        buffer.len = 0
        buffer.shape[0] = 0


cdef inline object payload_owner(object payload, const char** data, Py_ssize_t* size):
    """The bytes object that holds the payload (payload itself, or a copy), with data/size set; None if not bytes-like.

    bytes are read in place; a bytearray is copied (nothing that can run Python code
    comes between reading its pointer and the copy: a bytes allocation runs no GC);
    any other buffer (a memoryview, contiguous or not, of any format) is copied in C
    order, as the pure twin's as_bytes does.
    """
    cdef object owner
    if PyBytes_CheckExact(payload):
        data[0] = PyBytes_AS_STRING(payload)
        size[0] = PyBytes_GET_SIZE(payload)
        return payload
    if PyByteArray_CheckExact(payload):
        owner = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(payload), PyByteArray_GET_SIZE(payload))
        data[0] = PyBytes_AS_STRING(owner)
        size[0] = PyBytes_GET_SIZE(owner)
        return owner
    if isinstance(payload, str):
        return None
    owner = None
    try:
        owner = memoryview(payload).tobytes()
    except (TypeError, ValueError, BufferError):  # not a buffer, a released view, a failed export
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
