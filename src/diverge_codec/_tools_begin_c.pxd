# cython: language_level=3
"""The compiled tools-begin frames' fields, for the compiled checker (``_sequence_c.pyx``) to read without a call."""

cimport cython


@cython.final
cdef class Begun:
    cdef dict _secrets


@cython.final
cdef class Error:
    cdef object _error


@cython.final
cdef class Inactive:
    cdef dict _values
