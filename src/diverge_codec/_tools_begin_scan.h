/* The tools-begin registration, read straight from its bytes, and written straight to them;
 * Inactive's values read the same way (further down).
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

/* The names read last, by a hash of their bytes: a program declares the same names on every
 * connection, and handing out the same str costs a compare where a new one costs a decode, an
 * allocation and a hash (its hash is cached in the str). As orjson's key cache does, for ASCII
 * names up to 64 bytes. Not on a free-threaded build, where threads would race on it. A slot is
 * replaced after the new str is made (the allocation may run a GC callback that decodes too), and
 * what it held is released last: freeing a str runs no Python code. */
#define DT_CACHE_BITS 9
#define DT_CACHE_SLOTS (1 << DT_CACHE_BITS)
#define DT_CACHE_MAX 64
#ifndef Py_GIL_DISABLED
static PyObject *dt_cache[DT_CACHE_SLOTS];
#endif

/* The len (< 8) bytes at s as one word, reading s[0..len) only: on a little-endian machine exactly
 * those bytes in order, the rest zero; elsewhere a mix that still holds each byte whole in some
 * lane (enough for dt_ascii and a hash, not for equality). Two or three loads, where a byte loop
 * takes one a byte. */
static inline uint64_t dt_short_word(const unsigned char *s, size_t len) {
    uint32_t low, high;
    if (len >= 4) {
        memcpy(&low, s, 4);
        memcpy(&high, s + len - 4, 4);
        return (uint64_t)low | ((uint64_t)high << ((len - 4) * 8));
    }
    if (!len) return 0;
    return (uint64_t)s[0] | ((uint64_t)s[len >> 1] << ((len >> 1) * 8)) | ((uint64_t)s[len - 1] << ((len - 1) * 8));
}

static inline int dt_ascii(const unsigned char *s, size_t len) {
    size_t i = 0;
    uint64_t word, any = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&word, s + i, 8);
        any |= word;
    }
    return ((any | dt_short_word(s + i, len - i)) & DC_HIGH) == 0;
}

static inline int dt_same(const unsigned char *a, const unsigned char *b, size_t len) {
#if DC_FIRST_BYTE_KNOWN
    size_t i = 0;
    uint64_t x, y;
    for (; i + 8 <= len; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    return dt_short_word(a + i, len - i) == dt_short_word(b + i, len - i);
#else
    return memcmp(a, b, len) == 0;
#endif
}

/* A new reference to the str of len strict-UTF-8 bytes at s (no escape), or NULL with an exception.
 * The ASCII test, the hash and the compare read a word at a time. */
static PyObject *dt_name(const unsigned char *s, size_t len) {
#ifndef Py_GIL_DISABLED
    PyObject *name, *old;
    uint64_t word, any = 0, hash = len;
    size_t i, slot;
    if (len > DT_CACHE_MAX) return PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)len, NULL);
    for (i = 0;; i += 8) {
        if (i + 8 <= len) memcpy(&word, s + i, 8);
        else word = dt_short_word(s + i, len - i);
        any |= word;
        hash = (hash ^ word) * UINT64_C(0x9E3779B97F4A7C15);
        if (i + 8 >= len) break;
    }
    if (any & DC_HIGH) return PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)len, NULL);
    slot = (size_t)(hash >> (64 - DT_CACHE_BITS));
    name = dt_cache[slot];
    if (name && (size_t)PyUnicode_GET_LENGTH(name) == len && dt_same(PyUnicode_1BYTE_DATA(name), s, len)) {
        Py_INCREF(name);
        return name;
    }
    name = PyUnicode_New((Py_ssize_t)len, 127);
    if (!name) return NULL;
    memcpy(PyUnicode_1BYTE_DATA(name), s, len);
    old = dt_cache[slot];
    Py_INCREF(name);
    dt_cache[slot] = name;
    Py_XDECREF(old);
    return name;
#else
    return PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)len, NULL);
#endif
}

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
            next = dc_string(s, pos, size, &escaped, NULL);  /* Python runs between names: no window */
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
            name = dt_name(s + start, next - 1 - start);
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

/* ---- Inactive's values: {name: any JSON value, ...} ------------------------------------------
 *
 * The same bargain for tag 3: the reader builds the dict for the common form and says DT_UNSURE
 * for anything else, which orjson then reads, accepts, refuses and words as before. It reads
 * objects, arrays, strings without an escape (strict UTF-8, as above), true, false, null, and
 * integers of at most 18 digits without a leading zero (any of them fits an int64, so each is
 * orjson's int exactly); a fraction, an exponent, a longer integer, an escape, a duplicate name
 * or nesting deeper than DT_VALUES_DEPTH is the parser's. The same memory rules hold: the only
 * Python calls allocate and insert into containers that are ours. */

#define DT_VALUES_DEPTH 32
#define DT_INTEGER_DIGITS 18

static int dt_value(const unsigned char *s, size_t size, size_t *at, int depth, PyObject **out);

/* A new str of the len strict-UTF-8 bytes at s (no escape), or NULL with an exception. */
static inline PyObject *dt_text(const unsigned char *s, size_t len) {
    PyObject *text;
    if (!dt_ascii(s, len)) return PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)len, NULL);
    text = PyUnicode_New((Py_ssize_t)len, 127);
    if (text && len) memcpy(PyUnicode_1BYTE_DATA(text), s, len);
    return text;
}

static int dt_integer(const unsigned char *s, size_t *at, PyObject **out) {
    size_t pos = *at, first;
    long long value = 0;
    int negative = s[pos] == '-';
    pos += (size_t)negative;
    first = pos;
    if (s[pos] == '0') {
        pos++;
    } else {
        while (dc_digit(s[pos]) && pos - first < DT_INTEGER_DIGITS) value = value * 10 + (s[pos++] - '0');
        if (pos == first) return DT_UNSURE;  /* a '-' alone */
    }
    if (dc_digit(s[pos]) || s[pos] == '.' || s[pos] == 'e' || s[pos] == 'E') return DT_UNSURE;
    *out = PyLong_FromLongLong(negative ? -value : value);
    if (!*out) return DT_FAILED;
    *at = pos;
    return DT_BUILT;
}

/* The object ('{') or array ('[') that opens at s[*at]: DT_BUILT with the dict or list in *out and
 * *at past its close. */
static int dt_container(const unsigned char *s, size_t size, size_t *at, int depth, PyObject **out) {
    size_t pos, next = 0, start = 0;
    Py_ssize_t before;
    int object = s[*at] == '{', escaped = 0, status = DT_UNSURE, stored;
    unsigned char close = object ? '}' : ']';
    PyObject *container, *name, *value;
    if (depth > DT_VALUES_DEPTH) return DT_UNSURE;
    container = object ? PyDict_New() : PyList_New(0);
    if (!container) return DT_FAILED;
    pos = dt_skip(s, *at + 1);
    if (s[pos] != close) {
        for (;;) {
            if (object) {
                if (s[pos] != '"') goto give_up;
                next = dc_string(s, pos, size, &escaped, NULL);  /* Python may run between values: no window */
                if (!next || escaped) goto give_up;
                start = pos + 1;
                pos = dt_skip(s, next);
                if (s[pos] != ':') goto give_up;
                pos = dt_skip(s, pos + 1);
            }
            status = dt_value(s, size, &pos, depth, &value);
            if (status != DT_BUILT) goto give_up;
            status = DT_FAILED;
            if (object) {
                name = dt_name(s + start, next - 1 - start);
                if (!name) {
                    Py_DECREF(value);
                    goto give_up;
                }
                before = PyDict_GET_SIZE(container);
                stored = PyDict_SetItem(container, name, value);
                Py_DECREF(name);
            } else {
                before = -1;
                stored = PyList_Append(container, value);
            }
            Py_DECREF(value);
            if (stored < 0) goto give_up;
            status = DT_UNSURE;
            if (object && PyDict_GET_SIZE(container) != before + 1) goto give_up;  /* a duplicate: the parser's */
            pos = dt_skip(s, pos);
            if (s[pos] == ',') {
                pos = dt_skip(s, pos + 1);
                continue;
            }
            if (s[pos] == close) break;
            goto give_up;
        }
    }
    *at = pos + 1;
    *out = container;
    return DT_BUILT;
give_up:
    Py_DECREF(container);
    return status;
}

/* The value at s[*at] (no space before it): DT_BUILT with a new reference in *out and *at past it. */
static int dt_value(const unsigned char *s, size_t size, size_t *at, int depth, PyObject **out) {
    size_t pos = *at, next;
    int escaped = 0;
    PyObject *literal;
    switch (s[pos]) {
    case '"':
        next = dc_string(s, pos, size, &escaped, NULL);
        if (!next || escaped) return DT_UNSURE;
        *out = dt_text(s + pos + 1, next - pos - 2);
        if (!*out) return DT_FAILED;
        *at = next;
        return DT_BUILT;
    case '{':
    case '[':
        return dt_container(s, size, at, depth + 1, out);
    case 't':
        next = dc_literal(s, pos, "true", 4);
        literal = Py_True;
        break;
    case 'f':
        next = dc_literal(s, pos, "false", 5);
        literal = Py_False;
        break;
    case 'n':
        next = dc_literal(s, pos, "null", 4);
        literal = Py_None;
        break;
    default:
        return (s[pos] == '-' || dc_digit(s[pos])) ? dt_integer(s, at, out) : DT_UNSURE;
    }
    if (!next) return DT_UNSURE;
    Py_INCREF(literal);
    *out = literal;
    *at = next;
    return DT_BUILT;
}

/* Inactive's values for Cython: the dict (new) of a body that is one object, None where the
 * reader is not sure, NULL on failure. */
static PyObject *dt_values_or_none(const char *data, size_t size) {
    const unsigned char *s = (const unsigned char *)data;
    size_t pos = dt_skip(s, 0);
    PyObject *values = NULL;
    int status = s[pos] == '{' ? dt_container(s, size, &pos, 1, &values) : DT_UNSURE;
    if (status == DT_FAILED) return NULL;
    if (status == DT_BUILT && dt_skip(s, pos) == size) return values;
    Py_XDECREF(values);
    Py_RETURN_NONE;
}

#define DT_HEAD "{\"secrets\":{"
#define DT_HEAD_SIZE 12

/* The bytes a declaration's payload takes (the tag, {"secrets":{...}}), where every name is an
 * exact ASCII str and every mode a Mode; else -1 (the caller writes it the general way). No
 * Python code runs. Whether a name needs an escape is found while writing it. */
static Py_ssize_t dt_payload_size(PyObject *secrets, PyObject *fixed, PyObject *rotating) {
    Py_ssize_t position = 0, total = 1 + DT_HEAD_SIZE + 2;
    PyObject *name, *mode;
    while (PyDict_Next(secrets, &position, &name, &mode)) {
        if (!PyUnicode_CheckExact(name) || !PyUnicode_IS_ASCII(name)) return -1;
        if (mode == fixed) total += PyUnicode_GET_LENGTH(name) + 11;          /* "name":"fixed", */
        else if (mode == rotating) total += PyUnicode_GET_LENGTH(name) + 14;  /* "name":"rotating", */
        else return -1;
    }
    return total - (PyDict_GET_SIZE(secrets) ? 1 : 0);  /* no comma after the last */
}

/* Copy len ASCII bytes; 0 where one is a quote, a backslash or a control byte (orjson escapes them).
 * A name of 8 bytes or more ends with a read that overlaps the last whole one: no byte loop. With
 * SSE2, sixteen bytes are tested at once (8 to 15 as two overlapping halves of one register). */
static inline int dt_copy_plain(char *into, const unsigned char *text, Py_ssize_t len) {
    Py_ssize_t i = 0;
    uint64_t word;
#if DC_SSE2
    __m128i chunk;
    if (len >= 16) {
        for (; i + 16 <= len; i += 16) {
            chunk = _mm_loadu_si128((const __m128i *)(text + i));
            if (dc_special_chunk(chunk)) return 0;
            _mm_storeu_si128((__m128i *)(into + i), chunk);
        }
        if (i < len) {
            chunk = _mm_loadu_si128((const __m128i *)(text + len - 16));
            if (dc_special_chunk(chunk)) return 0;
            _mm_storeu_si128((__m128i *)(into + len - 16), chunk);
        }
        return 1;
    }
    if (len >= 8) {
        uint64_t tail;
        memcpy(&word, text, 8);
        memcpy(&tail, text + len - 8, 8);
        if (dc_special_chunk(_mm_set_epi64x((long long)tail, (long long)word))) return 0;
        memcpy(into, &word, 8);
        memcpy(into + len - 8, &tail, 8);
        return 1;
    }
#endif
    for (; i + 8 <= len; i += 8) {
        memcpy(&word, text + i, 8);
        if (dc_special(word)) return 0;
        memcpy(into + i, &word, 8);
    }
    if (i < len && len >= 8) {
        memcpy(&word, text + len - 8, 8);
        if (dc_special(word)) return 0;
        memcpy(into + len - 8, &word, 8);
        return 1;
    }
    for (; i < len; i++) {
        if (text[i] < 0x20 || text[i] == '"' || text[i] == '\\') return 0;
        into[i] = (char)text[i];
    }
    return 1;
}

/* Write the payload into into[0..capacity): the bytes written; -1 where a name needs an escape or
 * a name or mode is not the plain kind; -2 where it does not fit. Every write is checked against
 * capacity. No Python code runs. */
static Py_ssize_t dt_write_payload(PyObject *secrets, PyObject *fixed, PyObject *rotating, char *into, Py_ssize_t capacity) {
    Py_ssize_t position = 0, at = 1 + DT_HEAD_SIZE, length;
    PyObject *name, *mode;
    int first = 1;
    if (capacity < at + 2) return -2;
    into[0] = 0;
    memcpy(into + 1, DT_HEAD, DT_HEAD_SIZE);
    while (PyDict_Next(secrets, &position, &name, &mode)) {
        if (!PyUnicode_CheckExact(name) || !PyUnicode_IS_ASCII(name) || (mode != fixed && mode != rotating)) return -1;
        length = PyUnicode_GET_LENGTH(name);
        if (at + length + (mode == fixed ? 10 : 13) + !first + 2 > capacity) return -2;
        if (!first) into[at++] = ',';
        first = 0;
        into[at++] = '"';
        if (!dt_copy_plain(into + at, PyUnicode_1BYTE_DATA(name), length)) return -1;
        at += length;
        if (mode == fixed) {
            memcpy(into + at, "\":\"fixed\"", 9);
            at += 9;
        } else {
            memcpy(into + at, "\":\"rotating\"", 12);
            at += 12;
        }
    }
    into[at++] = '}';
    into[at++] = '}';
    return at;
}

#define DT_LOCAL 16384

/* A Begun's whole payload as a new bytes object; None where a name or mode is not the plain kind
 * (the caller writes it the general way); NULL with an exception on an allocation failure. One
 * pass into a local buffer, then one allocation of the exact size; a declaration too large for it
 * is measured first, and written again into the bytes object, checked against the measure (the
 * allocation may have run a GC callback that changed the dict). */
static PyObject *dt_begun_payload(PyObject *secrets, PyObject *fixed, PyObject *rotating) {
    char local[DT_LOCAL];
    Py_ssize_t size = dt_write_payload(secrets, fixed, rotating, local, DT_LOCAL);
    PyObject *out;
    if (size >= 0) return PyBytes_FromStringAndSize(local, size);
    if (size == -1) Py_RETURN_NONE;
    size = dt_payload_size(secrets, fixed, rotating);
    if (size < 0) Py_RETURN_NONE;
    out = PyBytes_FromStringAndSize(NULL, size);
    if (!out) return NULL;
    if (dt_write_payload(secrets, fixed, rotating, PyBytes_AS_STRING(out), size) != size) {
        Py_DECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

#endif
