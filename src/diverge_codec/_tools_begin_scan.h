/* The tools-begin registration, read straight from its bytes, and written straight to them.
 *
 * Begun's body is {"secrets": {name: "fixed" | "rotating", ...}}, or {} (no secrets). The
 * reader builds the ordered declaration (a dict of name to Mode) for the common form, whose
 * names are strict UTF-8 without an escape (dc_string checks them, as the relay's scan does),
 * and says DT_UNSURE for anything else: an escape, a duplicate name, another member, another
 * mode or value, trailing bytes. The caller then hands the body to orjson and the model's
 * checks, which accept, refuse and word exactly as before. What the reader accepts is a
 * subset of the JSON orjson reads (JSON whitespace, strings without escapes in strict UTF-8
 * with no control byte, two fixed literals), and it builds what orjson + declaration_from_json
 * build from it, so it changes no acceptance and no error.
 *
 * It relies on data[size] == 0 (a bytes object's guarantee), as _jsonscan.h does: every
 * byte-wise read stops at a byte that ends a token, and a NUL ends them all.
 *
 * Memory: data must be held in a bytes object (immutable) for the call. The only Python
 * calls are the allocation of a name and the dict insert of exact str keys; neither runs
 * Python code but a GC callback or a finalizer, which cannot move bytes, and the dict is
 * ours (a callback that finds it through gc.get_objects and changes it changes only what
 * this call returns: no pointer into it is kept across a call).
 */
#ifndef DIVERGE_CODEC_TOOLS_BEGIN_SCAN_H
#define DIVERGE_CODEC_TOOLS_BEGIN_SCAN_H

#include <Python.h>
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"  /* the relay's entry points, not used here */
#endif
#include "_jsonscan.h"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

enum { DT_BUILT = 0, DT_UNSURE = 1, DT_FAILED = -1 };

static inline size_t dt_skip(const unsigned char *s, size_t pos) {
    while (dc_space(s[pos])) pos++;
    return pos;
}

/* Read a Begun body (data[size] == 0). DT_BUILT with a new dict in *out; DT_UNSURE (the parser
 * decides); DT_FAILED with a Python exception set (only an allocation failure). */
static int dt_declaration(const char *data, size_t size, PyObject *fixed, PyObject *rotating, PyObject **out) {
    const unsigned char *s = (const unsigned char *)data;
    size_t pos, next, start;
    Py_ssize_t before;
    int escaped = 0, stored;
    PyObject *declared, *name, *mode;

    *out = NULL;
    pos = dt_skip(s, 0);
    if (s[pos] != '{') return DT_UNSURE;
    pos = dt_skip(s, pos + 1);
    if (s[pos] == '}') {  /* {}: no secrets */
        if (dt_skip(s, pos + 1) != size) return DT_UNSURE;
        *out = PyDict_New();
        return *out ? DT_BUILT : DT_FAILED;
    }
    if (!dc_literal(s, pos, "\"secrets\"", 9)) return DT_UNSURE;
    pos = dt_skip(s, pos + 9);
    if (s[pos] != ':') return DT_UNSURE;
    pos = dt_skip(s, pos + 1);
    if (s[pos] != '{') return DT_UNSURE;
    pos = dt_skip(s, pos + 1);
    declared = PyDict_New();
    if (!declared) return DT_FAILED;
    if (s[pos] != '}') {
        for (;;) {
            if (s[pos] != '"') goto unsure;
            next = dc_string(s, pos, size, &escaped);
            if (!next || escaped) goto unsure;
            start = pos + 1;
            pos = dt_skip(s, next);
            if (s[pos] != ':') goto unsure;
            pos = dt_skip(s, pos + 1);
            if (dc_literal(s, pos, "\"fixed\"", 7)) {
                mode = fixed;
                pos += 7;
            } else if (dc_literal(s, pos, "\"rotating\"", 10)) {
                mode = rotating;
                pos += 10;
            } else {
                goto unsure;
            }
            name = PyUnicode_DecodeUTF8((const char *)s + start, (Py_ssize_t)(next - 1 - start), NULL);
            if (!name) goto failed;
            before = PyDict_GET_SIZE(declared);
            stored = PyDict_SetItem(declared, name, mode);
            Py_DECREF(name);
            if (stored < 0) goto failed;
            if (PyDict_GET_SIZE(declared) != before + 1) goto unsure;  /* a duplicate: the parser's order rules */
            pos = dt_skip(s, pos);
            if (s[pos] == ',') {
                pos = dt_skip(s, pos + 1);
                continue;
            }
            if (s[pos] == '}') break;
            goto unsure;
        }
    }
    pos = dt_skip(s, pos + 1);  /* past the declaration's '}' */
    if (s[pos] != '}') goto unsure;
    if (dt_skip(s, pos + 1) != size) goto unsure;
    *out = declared;
    return DT_BUILT;
unsure:
    Py_DECREF(declared);
    return DT_UNSURE;
failed:
    Py_DECREF(declared);
    return DT_FAILED;
}

/* dt_declaration for Cython: the dict (new), None where the reader is not sure, NULL on failure. */
static PyObject *dt_declaration_or_none(const char *data, size_t size, PyObject *fixed, PyObject *rotating) {
    PyObject *out;
    int status = dt_declaration(data, size, fixed, rotating, &out);
    if (status == DT_BUILT) return out;
    if (status == DT_FAILED) return NULL;
    Py_RETURN_NONE;
}

/* A name orjson writes as its bytes alone: exact str, ASCII, no quote, backslash or control byte. */
static inline Py_ssize_t dt_plain_name(PyObject *name) {
    const unsigned char *text;
    Py_ssize_t i, length;
    if (!PyUnicode_CheckExact(name) || !PyUnicode_IS_ASCII(name)) return -1;
    text = PyUnicode_1BYTE_DATA(name);
    length = PyUnicode_GET_LENGTH(name);
    for (i = 0; i < length; i++) {
        if (text[i] < 0x20 || text[i] == '"' || text[i] == '\\') return -1;
    }
    return length;
}

#define DT_HEAD "{\"secrets\":{"
#define DT_HEAD_SIZE 12

/* The bytes a declaration's payload takes (the tag, {"secrets":{...}}), or -1 where a name or
 * mode is not the plain kind (the caller writes it the general way). No Python code runs. */
static Py_ssize_t dt_payload_size(PyObject *secrets, PyObject *fixed, PyObject *rotating) {
    Py_ssize_t position = 0, total = 1 + DT_HEAD_SIZE + 2, length;
    PyObject *name, *mode;
    while (PyDict_Next(secrets, &position, &name, &mode)) {
        length = dt_plain_name(name);
        if (length < 0) return -1;
        if (mode == fixed) total += length + 11;           /* "name":"fixed", */
        else if (mode == rotating) total += length + 14;   /* "name":"rotating", */
        else return -1;
    }
    return total - (PyDict_GET_SIZE(secrets) ? 1 : 0);      /* no comma after the last */
}

/* Write the payload into into[0..capacity): the bytes written, or -1 where the dict is not what
 * dt_payload_size measured (changed since: the caller writes it the general way). No Python code runs. */
static Py_ssize_t dt_write_payload(PyObject *secrets, PyObject *fixed, PyObject *rotating, char *into, Py_ssize_t capacity) {
    Py_ssize_t position = 0, at = 1 + DT_HEAD_SIZE, length, need;
    PyObject *name, *mode;
    int first = 1;
    if (capacity < at + 2) return -1;
    into[0] = 0;
    memcpy(into + 1, DT_HEAD, DT_HEAD_SIZE);
    while (PyDict_Next(secrets, &position, &name, &mode)) {
        length = dt_plain_name(name);
        if (length < 0 || (mode != fixed && mode != rotating)) return -1;
        need = length + (mode == fixed ? 10 : 13) + !first + 2;
        if (at + need > capacity) return -1;
        if (!first) into[at++] = ',';
        first = 0;
        into[at++] = '"';
        memcpy(into + at, PyUnicode_1BYTE_DATA(name), (size_t)length);
        at += length;
        if (mode == fixed) {
            memcpy(into + at, "\":\"fixed\"", 9);
            at += 9;
        } else {
            memcpy(into + at, "\":\"rotating\"", 12);
            at += 12;
        }
    }
    if (at + 2 != capacity) return -1;
    into[at++] = '}';
    into[at++] = '}';
    return at;
}

#endif
