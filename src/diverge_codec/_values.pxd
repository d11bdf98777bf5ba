# cython: language_level=3
"""The writing contract of ``_json.encode_problem``, walked in C by both compiled cores.

It only says yes or no; on no, the caller asks ``_json.encode_problem`` for the
phrase, so the words live once. The tests compare the two walks on every kind of
value (tests/test_contract.py, and the backend fuzz target).
"""

cdef extern from *:
    """
    /* The walk, in C: pointer compares on exact types, no reference taken, nothing that can
       run Python code (no allocation, no comparison of objects) on the types it accepts, so
       no GC callback or finalizer can change a container under it. It stops at the first
       other type or value; only an int past 2**63 is converted, and a refusal there returns
       at once, reading nothing it borrowed after. */
    static int diverge_codec_has_surrogate(PyObject* text) {
        if (PyUnicode_IS_ASCII(text)) return 0;
        int kind = PyUnicode_KIND(text);
        if (kind == PyUnicode_1BYTE_KIND) return 0;
        const void* data = PyUnicode_DATA(text);
        Py_ssize_t length = PyUnicode_GET_LENGTH(text);
        for (Py_ssize_t i = 0; i < length; i++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (c >= 0xD800 && c <= 0xDFFF) return 1;
        }
        return 0;
    }

    static int diverge_codec_int_fits(PyObject* value) {
        int overflow = 0;
        (void)PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow == 0) return 1;
        if (overflow < 0) return 0;
        (void)PyLong_AsUnsignedLongLong(value);
        if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
        return 1;
    }

    static int diverge_codec_container_fits(PyObject* container, int depth, int full);

    static inline int diverge_codec_member_fits(PyObject* item, int depth, int full) {
        PyTypeObject* kind = Py_TYPE(item);
        if (kind == &PyUnicode_Type) return !full || !diverge_codec_has_surrogate(item);
        if (kind == &PyLong_Type) return !full || diverge_codec_int_fits(item);
        if (kind == &PyFloat_Type) return isfinite(PyFloat_AS_DOUBLE(item));
        if (item == Py_None || kind == &PyBool_Type) return 1;
        if (kind == &PyDict_Type || kind == &PyList_Type) return diverge_codec_container_fits(item, depth + 1, full);
        return 0;
    }

    static int diverge_codec_container_fits(PyObject* container, int depth, int full) {
        if (depth > 254) return 0;  /* _json.ENCODE_MAX_DEPTH, orjson's writing limit */
        if (Py_TYPE(container) == &PyDict_Type) {
            Py_ssize_t position = 0;
            PyObject *key, *item;
            while (PyDict_Next(container, &position, &key, &item)) {
                if (full && (Py_TYPE(key) != &PyUnicode_Type || diverge_codec_has_surrogate(key))) return 0;
                if (!diverge_codec_member_fits(item, depth, full)) return 0;
            }
            return 1;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(container); i++) {
            if (!diverge_codec_member_fits(PyList_GET_ITEM(container, i), depth, full)) return 0;
        }
        return 1;
    }

    /* The body of a frame, at depth 1: what _json.encode_problem finds nothing in (full), or
       the half _json.types_fit checks (not full: the backend refuses the rest itself). */
    static int diverge_codec_encodable(PyObject* value, int full) {
        return diverge_codec_member_fits(value, 0, full);
    }
    """
    bint encodable "diverge_codec_encodable"(object value, bint full) noexcept
