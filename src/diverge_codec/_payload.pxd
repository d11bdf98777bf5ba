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
from cpython.exc cimport PyErr_Clear, PyErr_ExceptionMatches
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from libc.string cimport memcpy


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
# a second copy's worth of memory (the crossover, measured: docs/internals.md).
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


cdef extern from *:
    """
    /* The shared body: an empty bytearray (ob_bytes NULL) lent out as a read-only window. */
    static inline void dc_point_body(PyObject *body, const char *data, Py_ssize_t size) {
        ((PyByteArrayObject *)body)->ob_start = (char *)data;
        Py_SET_SIZE(body, size);
    }
    static inline void dc_idle_body(PyObject *body) {
        ((PyByteArrayObject *)body)->ob_start = ((PyByteArrayObject *)body)->ob_bytes;
        Py_SET_SIZE(body, 0);
    }

    /* The parser, and its own C function where it is a one-argument builtin (orjson.loads
     * is): the call then skips the generic call's checks. Set once, held for good. */
    typedef PyObject *(*dc_one_arg)(PyObject *, PyObject *);
    static PyObject *dc_parser = NULL;
    static dc_one_arg dc_parser_function = NULL;
    static PyObject *dc_parser_self = NULL;

    static inline void dc_set_parser(PyObject *loads) {
        Py_INCREF(loads);
        dc_parser = loads;
        if (PyCFunction_CheckExact(loads) && (PyCFunction_GET_FLAGS(loads) & ~METH_COEXIST) == METH_O) {
            dc_parser_self = PyCFunction_GET_SELF(loads);
            Py_XINCREF(dc_parser_self);
            dc_parser_function = (dc_one_arg)PyCFunction_GET_FUNCTION(loads);
        }
    }

    /* The parser's result for the size bytes at data, read through the shared body, which is
     * left idle: a new reference, or NULL with the exception set. */
    static inline PyObject *dc_parse_shared(PyObject *body, const char *data, Py_ssize_t size) {
        PyObject *result;
        dc_point_body(body, data, size);
        result = dc_parser_function ? dc_parser_function(dc_parser_self, body) : PyObject_CallOneArg(dc_parser, body);
        dc_idle_body(body);
        return result;
    }

    /* For Cython: a new reference taken as an object (o is not NULL); NULL, to propagate the exception set. */
    static inline PyObject *dc_own(PyObject *o) { return o; }
    static inline PyObject *dc_raise(void) { return NULL; }
    """
    void set_parser "dc_set_parser"(object loads)
    PyObject* parse_shared "dc_parse_shared"(object body, const char* data, Py_ssize_t size)
    object owned "dc_own"(PyObject* reference)
    object reraise "dc_raise"()


cdef inline object new_shared_body(object loads, bint parser_reads_at_once):
    """An empty bytearray that parse_body lends out as a window onto each body in turn, for loads
    to read (the module's one parser from then on); None where that is unsafe.

    Reusing one object costs no allocation, where a copy or a fresh view costs one or
    two; a bytearray rather than a memoryview because orjson reads one in two calls, a
    memoryview in five (a contiguity check among them). It is safe only
    where no other call can repoint it between the moment it is pointed and the moment
    the parser has read where it points: orjson reads the pointer and length first
    thing, in C, holding the GIL, never writes through them, and keeps neither the
    object nor a reference to it (its JSONDecodeError copies the document into a str).
    A finalizer that the GC runs mid-parse may decode, repoint the window and leave it
    idle: the outer parse has read its pointer already (a test pins this). A parser
    written in Python may switch threads mid-read, and a free-threaded build has no
    GIL; both get None, and parse_body copies.

    Idle, it is a plain empty bytearray (size 0, ob_start at its own NULL ob_bytes), so
    freeing it at exit frees nothing of a payload's. No Python code can reach it: it is
    in no namespace, and a bytearray is never tracked by the GC (``gc.get_objects``).
    The extra reference keeps it alive for good.
    """
    if not (GIL_BUILD and parser_reads_at_once):
        return None
    set_parser(loads)
    cdef object body = bytearray()
    Py_INCREF(body)
    return body


cdef inline object parse_body(object loads, object shared_body, object owner, const char* data, Py_ssize_t size):
    """loads() of the JSON after the tag byte of the size bytes at data (in owner), through shared_body where there is one.

    With a shared body, loads must be the parser given to new_shared_body.
    """
    if shared_body is None:
        return loads(body_of(owner, data, size))
    cdef PyObject* result = parse_shared(shared_body, data + 1, size - 1)
    if result == NULL:
        return reraise()
    return owned(result)


cdef inline PyObject* parsed_or_null(object shared_body, const char* data, Py_ssize_t size, object failure) except? NULL:
    """The parser's result (a new reference) for the JSON after the tag byte, read through the
    shared body with no exception handling on the way; NULL, nothing set, where the parser
    refused it with failure (the caller parses again to word the refusal). Any other exception
    (a signal's, MemoryError) goes up as it is."""
    cdef PyObject* result = parse_shared(shared_body, data + 1, size - 1)
    if result == NULL and PyErr_ExceptionMatches(failure):
        PyErr_Clear()
    return result


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


cdef inline object bytes_owner(object payload, const char** data, Py_ssize_t* size):
    """payload_owner with its hot case, bytes, in a few lines the C compiler inlines into each caller."""
    if PyBytes_CheckExact(payload):
        data[0] = PyBytes_AS_STRING(payload)
        size[0] = PyBytes_GET_SIZE(payload)
        return payload
    return payload_owner(payload, data, size)


cdef inline bytes tagged(unsigned char tag, const char* data, Py_ssize_t size):
    """A new bytes object: the tag byte, then a copy of size bytes at data. One allocation."""
    cdef bytes out = PyBytes_FromStringAndSize(NULL, size + 1)
    cdef char* into = PyBytes_AS_STRING(out)
    into[0] = <char>tag
    if size:
        memcpy(into + 1, data, size)
    return out
