# cython: language_level=3
"""The writing contract of ``_json.encode_problem``, walked in C by both compiled cores.

It only says yes or no; on no, the caller asks ``_json.encode_problem`` for the
phrase, so the words live once. The tests compare the two walks on every kind of
value. dict and list are iterated with strong references (a dict changed under the
walk raises RuntimeError, as Python's iteration does); a str is scanned in place.
"""

from cpython.float cimport PyFloat_AS_DOUBLE
from libc.math cimport isfinite

cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    int PyUnicode_KIND(object o)
    void* PyUnicode_DATA(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    Py_UCS4 PyUnicode_READ(int kind, void* data, Py_ssize_t index)
    long long PyLong_AsLongLongAndOverflow(object o, int* overflow) except? -1
    unsigned long long PyLong_AsUnsignedLongLong(object o) except? -1


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


cdef inline bint int_fits(object value) except -1:
    """Whether an exact int is in [-2**63, 2**64), as orjson writes."""
    cdef int overflow = 0
    PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow == 0:
        return True
    if overflow < 0:
        return False
    try:
        PyLong_AsUnsignedLongLong(value)
    except OverflowError:
        return False
    return True


cdef inline bint encodable(object value, int depth) except -1:
    """Whether _json.encode_problem finds nothing in value; the caller asks it for the phrase when not."""
    cdef type kind = type(value)
    if kind is str:
        return not has_surrogate(<str>value)
    if kind is int:
        return int_fits(value)
    if kind is float:
        return isfinite(PyFloat_AS_DOUBLE(value))
    if value is None or kind is bool:
        return True
    if kind is dict:
        if depth > MAX_DEPTH:
            return False
        for key, item in (<dict>value).items():
            if type(key) is not str or has_surrogate(<str>key) or not encodable(item, depth + 1):
                return False
        return True
    if kind is list:
        if depth > MAX_DEPTH:
            return False
        for item in <list>value:
            if not encodable(item, depth + 1):
                return False
        return True
    return False
