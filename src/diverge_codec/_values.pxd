# cython: language_level=3
"""The writing contract of ``_json.encode_problem``, walked in C by both compiled cores.

It only says yes or no; on no, the caller asks ``_json.encode_problem`` for the
phrase, so the words live once. The tests compare the two walks on every kind of
value. dict and list are iterated with strong references (a dict changed under the
walk raises RuntimeError, as Python's iteration does); a str is scanned in place.
"""

from cpython.dict cimport PyDict_Next
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.object cimport PyObject
from libc.math cimport isfinite

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    long long PyLong_AsLongLongAndOverflow(object o, int* overflow) except? -1
    Py_ssize_t PyList_GET_SIZE(object o)
    PyObject* PyList_GET_ITEM(object o, Py_ssize_t i)


    unsigned long long PyLong_AsUnsignedLongLong(object o)  # checked with PyErr_Occurred
    PyObject* PyErr_Occurred()
    void PyErr_Clear()


cdef enum:
    MAX_DEPTH = 254  # _json.ENCODE_MAX_DEPTH, orjson's writing limit


cdef inline bint has_surrogate(str text):
    """Whether a str holds a surrogate code point (which UTF-8 cannot carry): none in a 1-byte str."""
    if PyUnicode_IS_ASCII(text):
        return False
    cdef int kind = PyUnicode_KIND(text)
    if kind == 1:
        return False
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t i
    cdef Py_UCS4 c
    for i in range(PyUnicode_GET_LENGTH(text)):
        c = PyUnicode_READ(kind, data, i)
        if 0xD800 <= c <= 0xDFFF:
            return True
    return False


cdef inline bint int_fits(object value):
    """Whether an exact int is in [-2**63, 2**64), as orjson writes.

    Only a refusal allocates (the OverflowError, cleared at once), and after a refusal
    the walk returns without reading anything it borrowed.
    """
    cdef int overflow = 0
    PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow == 0:
        return True
    if overflow < 0:
        return False
    PyLong_AsUnsignedLongLong(value)
    if PyErr_Occurred() is not NULL:
        PyErr_Clear()
        return False
    return True


cdef inline bint encodable(object value, int depth, bint full):
    """Whether _json.encode_problem finds nothing in value; the caller asks it for the phrase when not.

    Not ``full``: only _json.types_fit's half, for a backend that refuses the rest itself.

    Nothing in here allocates or calls Python code for the types it accepts (it stops at
    the first other), so no GC callback or finalizer can run mid-walk and change a
    container under it: the dict and list items it reads are borrowed safely.
    """
    cdef type kind = type(value)
    cdef Py_ssize_t position = 0, index
    cdef PyObject* key
    cdef PyObject* item
    if kind is str:
        return not full or not has_surrogate(<str>value)
    if kind is int:
        return not full or int_fits(value)
    if kind is float:
        return isfinite(PyFloat_AS_DOUBLE(value))
    if value is None or kind is bool:
        return True
    if depth > MAX_DEPTH:
        return False
    if kind is dict:
        while PyDict_Next(value, &position, &key, &item):
            if full and (type(<object>key) is not str or has_surrogate(<str>key)):
                return False
            if not encodable(<object>item, depth + 1, full):
                return False
        return True
    if kind is list:
        index = 0
        while index < PyList_GET_SIZE(value):
            if not encodable(<object>PyList_GET_ITEM(value, index), depth + 1, full):
                return False
            index += 1
        return True
    return False
