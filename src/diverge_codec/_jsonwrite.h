/* A JSON writer for the common case of a frame's body, so that a payload is written once:
 * the tag byte first, then the body, into one buffer that becomes the payload (encode), or
 * straight into the room of the caller's bytearray (encode_into).
 *
 * It writes exactly what orjson.dumps (and the stdlib fallback, _json._stdlib_write)
 * writes for the values it takes: exact dict with exact str keys, exact list, exact str
 * without surrogates, exact int in [-2**63, 2**64), bool and None, nested at most 254
 * levels. It takes nothing else: a float, a subclass, any other type or value, or no
 * memory, and it answers 0 with no exception set, and the caller writes the body the
 * old way (the backend, with the contract's checks and messages). The tests hold it to
 * orjson byte for byte.
 *
 * Memory safety: it reads borrowed references only while nothing can run Python code.
 * It compares exact types by pointer, converts ints with PyLong_As* (no allocation on
 * an exact int), and allocates only with PyMem_* or a bytearray's resize (no GC object,
 * so no collection, no callback, no finalizer; a failed resize's MemoryError may be one,
 * and the writer stops there); no hash, no comparison, no call. The only object it frees
 * is an exact str its key cache puts out. So no container can change under it. A
 * free-threaded build (another thread could change a container) takes nothing: it
 * answers 0. */

#ifndef DIVERGE_CODEC_JSONWRITE_H
#define DIVERGE_CODEC_JSONWRITE_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)  /* where the compiler would call it: a call a str costs */
#define DC_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define DC_ALWAYS_INLINE inline
#endif
#define DC_WRITE_LOCAL 1024
#define DC_WRITE_MAX_DEPTH 254  /* _json.ENCODE_MAX_DEPTH, orjson's writing limit */
#ifndef DC_APPEND_GROWTH  /* what encode_into grows a bytearray by, beyond what it needs: about as much again */
#define DC_APPEND_GROWTH(size) ((size) > 2 ? (size) - 2 : 0)
#endif

typedef struct {
    char *data;
    Py_ssize_t size;
    Py_ssize_t capacity;
    PyObject *array;  /* the bytearray written in place (dc_append), or NULL: local, then PyMem_* */
    char local[DC_WRITE_LOCAL];
} dc_writer;

static inline void dc_writer_init(dc_writer *w) {
    w->data = w->local;
    w->size = 0;
    w->capacity = DC_WRITE_LOCAL;
    w->array = NULL;
}

static int dc_array_grow(dc_writer *w, Py_ssize_t more);

static inline void dc_writer_free(dc_writer *w) {
    if (w->data != w->local) PyMem_Free(w->data);
    w->data = w->local;
    w->size = 0;
    w->capacity = DC_WRITE_LOCAL;
}

/* Room for more bytes after size; 0 where there is no memory (no exception left set). */
static int dc_writer_grow(dc_writer *w, Py_ssize_t more) {
    if (w->array != NULL) return dc_array_grow(w, more);
    if (more > PY_SSIZE_T_MAX / 2 - w->size) return 0;
    Py_ssize_t capacity = w->capacity * 2;
    if (capacity < w->size + more) capacity = w->size + more;
    char *data;
    if (w->data == w->local) {
        data = (char *)PyMem_Malloc((size_t)capacity);
        if (data != NULL) memcpy(data, w->local, (size_t)w->size);
    } else {
        data = (char *)PyMem_Realloc(w->data, (size_t)capacity);
    }
    if (data == NULL) {
        PyErr_Clear();  /* PyMem_* set no exception, but keep the promise whatever the allocator */
        return 0;
    }
    w->data = data;
    w->capacity = capacity;
    return 1;
}

static inline int dc_writer_reserve(dc_writer *w, Py_ssize_t more) {
    return w->capacity - w->size >= more || dc_writer_grow(w, more);
}

/* 0: written as is; otherwise the character after the backslash ('u': \u00XX). */
static const char dc_escapes[128] = {
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'b', 't', 'n', 'u', 'f', 'r', 'u', 'u',
    'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u', 'u',
    0, 0, '"', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '\\', 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* An ASCII character, escaped where JSON needs it; room for 6 bytes reserved. */
static inline char *dc_put_ascii(char *out, unsigned char c) {
    char escape = dc_escapes[c];
    if (!escape) {
        *out++ = (char)c;
        return out;
    }
    *out++ = '\\';
    *out++ = escape;
    if (escape == 'u') {
        static const char hex[] = "0123456789abcdef";
        *out++ = '0';
        *out++ = '0';
        *out++ = hex[c >> 4];
        *out++ = hex[c & 15];
    }
    return out;
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DC_WORDS 1
/* A bit set in the byte of each of 8 ASCII bytes that JSON escapes (below 0x20, '"', '\\'):
 * exact in the lowest such byte, which is all the caller reads, and none where no byte is one
 * (a subtraction borrows only from such a byte). ASCII only: a byte from 0xA0 would be one. */
static inline uint64_t dc_escapes_in(uint64_t x) {
    const uint64_t ones = 0x0101010101010101ULL;
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
    return ((x - ones * 0x20) | (quote - ones) | (backslash - ones)) & (ones * 0x80);
}

#if defined(__SSE2__) && !defined(DC_WRITE_NO_SSE2)  /* the tests build without it too */
#include <emmintrin.h>
#define DC_WRITE_SSE2 1

/* Whether any of 16 ASCII bytes is one JSON escapes (a signed compare: ASCII only). */
static inline __m128i dc_escapes_in16(__m128i x) {
    return _mm_or_si128(_mm_cmplt_epi8(x, _mm_set1_epi8(0x20)),
                        _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')), _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))));
}
#else
#define DC_WRITE_SSE2 0
#endif

/* A compact ASCII str of one byte or more, quoted, at out, 8 bytes at a time and each word
 * stored whole; the last word is the 8 bytes that end the string, those before its last
 * 1 to 8 shifted out (they reach back into the str's header where it is shorter than 8:
 * a compact str's bytes follow its header in one block). With SSE2, a str of 16 bytes or
 * more goes 16 at a time, its last 16 stored over some stored already. Room for length + 10
 * bytes at out. 0 where a byte needs an escape: what it stored is then to be overwritten. */
static DC_ALWAYS_INLINE int dc_put_plain(char *out, PyObject *text, Py_ssize_t length) {
    const unsigned char *data = PyUnicode_1BYTE_DATA(text);
    uint64_t word, found = 0;
    Py_ssize_t index = 0;
    *out++ = '"';
#if DC_WRITE_SSE2
    if (length >= 16) {
        __m128i chunk, seen = _mm_setzero_si128();
        for (; index + 16 < length; index += 16) {
            chunk = _mm_loadu_si128((const __m128i *)(data + index));
            _mm_storeu_si128((__m128i *)(out + index), chunk);
            seen = _mm_or_si128(seen, dc_escapes_in16(chunk));
        }
        chunk = _mm_loadu_si128((const __m128i *)(data + length - 16));
        _mm_storeu_si128((__m128i *)(out + length - 16), chunk);
        out[length] = '"';
        return _mm_movemask_epi8(_mm_or_si128(seen, dc_escapes_in16(chunk))) == 0;
    }
#endif
    for (; index + 8 < length; index += 8) {
        memcpy(&word, data + index, 8);
        memcpy(out + index, &word, 8);
        found |= dc_escapes_in(word);
    }
    int shift = 8 * (int)(index + 8 - length);
    memcpy(&word, data + length - 8, 8);
    word >>= shift;
    memcpy(out + index, &word, 8);
    found |= dc_escapes_in(word) & (~0ULL >> shift);
    out[length] = '"';
    return !found;
}
#define DC_IS_PLAIN(text, length) (PyUnicode_IS_COMPACT_ASCII(text) && (length) >= 1)
#else
#define DC_WORDS 0
#endif

static int dc_write_str(dc_writer *w, PyObject *text) {
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_IS_ASCII(text)) {
        const unsigned char *data = PyUnicode_1BYTE_DATA(text);
        if (!dc_writer_reserve(w, length + 2)) return 0;
        char *out = w->data + w->size;
        *out++ = '"';
        Py_ssize_t index = 0;
        for (;;) {
            int escape = 0;
#if DC_WORDS
            /* 8 bytes at a time, stored whole before they are checked: where one needs an
             * escape, out moves only past the bytes before it, which overwrites the rest. */
            while (index + 8 <= length) {
                uint64_t word;
                memcpy(&word, data + index, 8);
                memcpy(out, &word, 8);
                uint64_t found = dc_escapes_in(word);
                if (found) {
                    Py_ssize_t plain = __builtin_ctzll(found) >> 3;
                    out += plain;
                    index += plain;
                    escape = 1;
                    break;
                }
                out += 8;
                index += 8;
            }
#endif
            if (!escape) {
                while (index < length && !dc_escapes[data[index]]) *out++ = (char)data[index++];
                if (index == length) break;
            }
            /* an escape: room for it and for the rest, escaped or not */
            w->size = out - w->data;
            if (!dc_writer_reserve(w, 6 + (length - index - 1) + 1)) return 0;
            out = dc_put_ascii(w->data + w->size, data[index++]);
        }
        *out++ = '"';
        w->size = out - w->data;
        return 1;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (length > (PY_SSIZE_T_MAX - 2) / 6 || !dc_writer_reserve(w, length * 6 + 2)) return 0;
    char *out = w->data + w->size;
    *out++ = '"';
    for (Py_ssize_t index = 0; index < length; index++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, index);
        if (c < 0x80) {
            out = dc_put_ascii(out, (unsigned char)c);
        } else if (c < 0x800) {
            *out++ = (char)(0xC0 | (c >> 6));
            *out++ = (char)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF) return 0;  /* a lone surrogate: the backend refuses it */
            *out++ = (char)(0xE0 | (c >> 12));
            *out++ = (char)(0x80 | ((c >> 6) & 0x3F));
            *out++ = (char)(0x80 | (c & 0x3F));
        } else {
            *out++ = (char)(0xF0 | (c >> 18));
            *out++ = (char)(0x80 | ((c >> 12) & 0x3F));
            *out++ = (char)(0x80 | ((c >> 6) & 0x3F));
            *out++ = (char)(0x80 | (c & 0x3F));
        }
    }
    *out++ = '"';
    w->size = out - w->data;
    return 1;
}

static const char dc_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* How many decimal digits a magnitude has (1 for 0). */
static inline int dc_digits(unsigned long long magnitude) {
#if defined(__GNUC__)
    static const unsigned long long powers[20] = {
        1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
        1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
        100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
        1000000000000000000ULL, 10000000000000000000ULL};
    /* bits * log10(2), from 1233 / 4096: the digits less one, or one more than that; the odd
     * value has as many digits (a power of ten is even) and at least one bit */
    unsigned long long odd = magnitude | 1;
    int guess = ((64 - __builtin_clzll(odd)) * 1233) >> 12;
    return guess + (odd >= powers[guess]);
#else
    int count = 1;
    for (unsigned long long bound = 10; count < 20 && magnitude >= bound; bound *= 10) count++;
    return count;
#endif
}

static int dc_write_int(dc_writer *w, PyObject *value) {
    int overflow = 0;
    unsigned long long magnitude;
    int negative = 0;
    long long signed_value;
#if PY_VERSION_HEX >= 0x030C0000
    if (PyUnstable_Long_IsCompact((PyLongObject *)value)) {
        signed_value = (long long)PyUnstable_Long_CompactValue((PyLongObject *)value);
    } else {
        signed_value = PyLong_AsLongLongAndOverflow(value, &overflow);
    }
#else
    Py_ssize_t size = Py_SIZE(value);  /* one digit or none: the value is the digit, signed */
    if (size == 0) {
        signed_value = 0;
    } else if (size == 1 || size == -1) {
        signed_value = (long long)size * (long long)((PyLongObject *)value)->ob_digit[0];
    } else {
        signed_value = PyLong_AsLongLongAndOverflow(value, &overflow);
    }
#endif
    if (overflow == 0) {
        if (signed_value < 0) {
            negative = 1;
            magnitude = 0ULL - (unsigned long long)signed_value;
        } else {
            magnitude = (unsigned long long)signed_value;
        }
    } else if (overflow > 0) {
        magnitude = PyLong_AsUnsignedLongLong(value);
        if (magnitude == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;  /* past 2**64: the backend refuses it */
        }
    } else {
        return 0;
    }
    if (!dc_writer_reserve(w, 21)) return 0;
    int count = dc_digits(magnitude);
    char *out = w->data + w->size;
    if (negative) *out++ = '-';
    char *end = out + count;
    while (magnitude >= 100) {
        end -= 2;
        memcpy(end, dc_pairs + 2 * (magnitude % 100), 2);
        magnitude /= 100;
    }
    if (magnitude >= 10) {
        memcpy(end - 2, dc_pairs + 2 * magnitude, 2);
    } else {
        end[-1] = (char)('0' + magnitude);
    }
    w->size = out + count - w->data;
    return 1;
}

static inline int dc_write_raw(dc_writer *w, const char *text, Py_ssize_t size) {
    if (!dc_writer_reserve(w, size)) return 0;
    memcpy(w->data + w->size, text, (size_t)size);
    w->size += size;
    return 1;
}

static int dc_write_value(dc_writer *w, PyObject *value, int depth);

/* Whether a str (exact) is the ASCII name of size bytes. */
static inline int dc_str_is(PyObject *text, const char *name, Py_ssize_t size) {
    return PyUnicode_GET_LENGTH(text) == size && PyUnicode_IS_ASCII(text) &&
           memcmp(PyUnicode_1BYTE_DATA(text), name, (size_t)size) == 0;
}

/* The members' checks a notification's body must pass (its params may have changed since it was
 * made): DC_CHECK_BODY for the notification, whose params must be null or an object;
 * DC_CHECK_PARAMS for that object, whose _meta must be null or an object. A body that fails is
 * left to the caller (0), which words the refusal. */
enum { DC_CHECK_NONE, DC_CHECK_BODY, DC_CHECK_PARAMS };

/* A str of plain ASCII written; 0 where it is not one, or where there is no memory (the
 * caller writes it the long way, which answers the same). */
static DC_ALWAYS_INLINE int dc_write_plain(dc_writer *w, PyObject *text) {
#if DC_WORDS
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    if (DC_IS_PLAIN(text, length) && dc_writer_reserve(w, length + 10) &&
        dc_put_plain(w->data + w->size, text, length)) {
        w->size += length + 2;
        return 1;
    }
#else
    (void)w;
    (void)text;
#endif
    return 0;
}

/* A member's key and its colon, after a comma unless it is the first member, written the long way. */
static int dc_write_key_text(dc_writer *w, PyObject *key, int first) {
    if (!first && !dc_write_raw(w, ",", 1)) return 0;
    return dc_write_str(w, key) && dc_write_raw(w, ":", 1);
}

/* Keys written before, kept as JSON: a dict's keys are few and come back as the same objects
 * (orjson hands out one str per short key from its cache; a literal is one object), so a key is
 * found by its address, in one of the two entries of the set its address picks. Each entry holds
 * a reference to its str: while it is there, no other object has that address, and the str's
 * text cannot change. A new key takes its set's first entry, and the key there moves to the
 * second, putting out the key that was there: an exact str, whose freeing runs no Python code. */
#define DC_KEY_BITS 7  /* 128 sets of two */
#define DC_KEY_TEXT 24  /* the comma, the key's JSON and the colon at most; copied whole */
typedef struct {
    PyObject *key;
    Py_ssize_t size;
    int check;  /* the check a member of this key starts (DC_CHECK_BODY: "params", DC_CHECK_PARAMS: "_meta") */
    char text[DC_KEY_TEXT + 1];  /* one more: read from the second byte where there is no comma */
} dc_key_entry;
static dc_key_entry dc_keys[2 << DC_KEY_BITS];

/* The key written as dc_write_key_text writes it, kept in the first of its set's entries where its JSON fits. */
static int dc_write_new_key(dc_writer *w, PyObject *key, int first, dc_key_entry *set) {
    if (Py_TYPE(key) != &PyUnicode_Type) return 0;
    Py_ssize_t start = w->size;
    if (!dc_write_key_text(w, key, first)) return 0;
    int check = dc_str_is(key, "params", 6) ? DC_CHECK_BODY : dc_str_is(key, "_meta", 5) ? DC_CHECK_PARAMS : DC_CHECK_NONE;
    Py_ssize_t size = w->size - start + first;  /* with its comma */
    if (size <= DC_KEY_TEXT) {
        PyObject *old = set[1].key;
        set[1] = set[0];
        set[0].text[0] = ',';
        memcpy(set[0].text + 1, w->data + start + !first, (size_t)(size - 1));
        set[0].size = size;
        set[0].check = check;
        Py_INCREF(key);
        set[0].key = key;
        Py_XDECREF(old);
    }
    return 1 + check;
}

/* A member's key and its colon, after a comma unless it is the first member: 1 + the check its
 * member starts (DC_CHECK_NONE where it starts none); 0 where it is not written. */
static inline int dc_write_key(dc_writer *w, PyObject *key, int first) {
    dc_key_entry *entry = &dc_keys[2 * (((uint64_t)(uintptr_t)key * 0x9E3779B97F4A7C15ULL) >> (64 - DC_KEY_BITS))];
    if (entry->key != key && (++entry)->key != key) return dc_write_new_key(w, key, first, entry - 1);
    if (!dc_writer_reserve(w, DC_KEY_TEXT)) return 0;
    memcpy(w->data + w->size, entry->text + first, DC_KEY_TEXT);
    w->size += entry->size - first;
    return 1 + entry->check;
}

#if PY_VERSION_HEX < 0x030D0000  /* PyDict_Next's body, one call less; private, and out of the headers since 3.13 */
#define DC_DICT_NEXT(dict, position, key, item) _PyDict_Next(dict, position, key, item, NULL)
#else
#define DC_DICT_NEXT PyDict_Next
#endif

static int dc_write_dict(dc_writer *w, PyObject *dict, int depth, int check) {
    Py_ssize_t position = 0;
    PyObject *key, *item;
    if (!dc_write_raw(w, "{", 1)) return 0;
    /* as many members as it holds (nothing here can change it): no call to find the end */
    Py_ssize_t size = PyDict_GET_SIZE(dict);
    for (Py_ssize_t left = size; left > 0 && DC_DICT_NEXT(dict, &position, &key, &item); left--) {
        int starts = dc_write_key(w, key, left == size) - 1;
        if (starts < 0) return 0;
        if (starts == check && check != DC_CHECK_NONE && item != Py_None) {
            if (Py_TYPE(item) != &PyDict_Type) return 0;  /* params or _meta not an object: the caller words it */
            if (check == DC_CHECK_BODY) {
                if (depth + 1 > DC_WRITE_MAX_DEPTH || !dc_write_dict(w, item, depth + 1, DC_CHECK_PARAMS)) return 0;
                continue;
            }
        }
        /* a plain str or an int written from here: no dispatch for the members' commonest values */
        if (Py_TYPE(item) == &PyLong_Type) {
            if (!dc_write_int(w, item)) return 0;
        } else if (!(Py_TYPE(item) == &PyUnicode_Type && dc_write_plain(w, item)) && !dc_write_value(w, item, depth)) {
            return 0;
        }
    }
    return dc_write_raw(w, "}", 1);
}

static int dc_write_container(dc_writer *w, PyObject *container, int depth) {
    if (depth > DC_WRITE_MAX_DEPTH) return 0;
    if (Py_TYPE(container) == &PyDict_Type) return dc_write_dict(w, container, depth, DC_CHECK_NONE);
    if (!dc_write_raw(w, "[", 1)) return 0;
    for (Py_ssize_t index = 0; index < PyList_GET_SIZE(container); index++) {
        if (index && !dc_write_raw(w, ",", 1)) return 0;
        if (!dc_write_value(w, PyList_GET_ITEM(container, index), depth)) return 0;
    }
    return dc_write_raw(w, "]", 1);
}

/* value inside a container at depth (0: the body itself). */
static int dc_write_value(dc_writer *w, PyObject *value, int depth) {
    PyTypeObject *kind = Py_TYPE(value);
    if (kind == &PyUnicode_Type) return dc_write_str(w, value);  /* a member's str is written plain in dc_write_dict */
    if (kind == &PyLong_Type) return dc_write_int(w, value);
    if (kind == &PyDict_Type || kind == &PyList_Type) return dc_write_container(w, value, depth + 1);
    if (value == Py_None) return dc_write_raw(w, "null", 4);
    if (value == Py_True) return dc_write_raw(w, "true", 4);
    if (value == Py_False) return dc_write_raw(w, "false", 5);
    return 0;  /* a float, a subclass, anything else: the backend's, with the contract's checks */
}

/* The body's JSON after what w holds; 1 written, 0 left to the backend (w's size unspecified).
 * notification: the body is a notification's dict, and its params' shape is checked too. */
static int dc_write_json(dc_writer *w, PyObject *value, int notification) {
#ifdef Py_GIL_DISABLED
    (void)w;
    (void)value;
    (void)notification;
    return 0;
#else
    if (notification) {
        return Py_TYPE(value) == &PyDict_Type && dc_write_dict(w, value, 1, DC_CHECK_BODY);
    }
    return dc_write_value(w, value, 0);
#endif
}

/* A new bytes object of what w holds; w freed. NULL with an exception where there is no memory. */
static PyObject *dc_writer_bytes(dc_writer *w) {
    PyObject *out = PyBytes_FromStringAndSize(w->data, w->size);
    dc_writer_free(w);
    return out;
}

/* In place: w writes at the end of a bytearray, into the room its block has past its size (its
 * NUL's byte kept), and grows the block by about as much again where it needs more: a caller
 * appending payload after payload has its bytes copied once in a while, not every eighth of its
 * size, as bytearray's own growth would. The size is set once all is written; until then the
 * bytes and size are as they were (the NUL aside, written over by the first byte). Nothing from
 * the size read to the size set runs Python code: no object is allocated, only the block, and
 * after a failed resize (whose MemoryError is allocated) w stops writing. */
static inline void dc_array_room(dc_writer *w) {
    PyByteArrayObject *array = (PyByteArrayObject *)w->array;
    Py_ssize_t room = array->ob_alloc - (array->ob_start - array->ob_bytes) - 1;
    w->data = array->ob_start;  /* NULL for a bytearray that never had a block: room 0 */
    w->capacity = room > 0 ? room : 0;
}

static int dc_array_grow(dc_writer *w, Py_ssize_t more) {
    if (more > PY_SSIZE_T_MAX / 3 - w->size) return 0;
    Py_ssize_t need = w->size + more;
    /* What is written so far counts as the bytearray's while it moves: PyByteArray_Resize copies
     * only its size's bytes where its bytes start past its block. */
    Py_SET_SIZE(w->array, w->size);
    if (PyByteArray_Resize(w->array, need + DC_APPEND_GROWTH(need)) < 0) {
        PyErr_Clear();  /* no memory: the caller says so, with the bytearray as it was */
        return 0;
    }
    dc_array_room(w);
    return 1;
}

/* The tag byte appended in place, then the body's JSON (dc_write_json) where data is NULL, else
 * size bytes at data (not in the bytearray): 1 appended; 0 where the writer does not take the
 * body, the bytearray has exports or there is no memory (no exception set), and then the
 * bytearray is as it was, but its block, which may have grown. */
static int dc_append(PyObject *out, int tag, PyObject *body, int notification, const char *data, Py_ssize_t size) {
#ifdef Py_GIL_DISABLED
    if (data == NULL) return 0;  /* another thread could change the body's containers */
#endif
    PyByteArrayObject *array = (PyByteArrayObject *)out;
    Py_ssize_t before = Py_SIZE(out);
    dc_writer w;
    if (array->ob_exports > 0) return 0;
    w.array = out;
    w.size = before;
    dc_array_room(&w);
    if (dc_writer_reserve(&w, 1)) {
        w.data[w.size++] = (char)tag;
        if (data == NULL ? dc_write_json(&w, body, notification) : dc_write_raw(&w, data, size)) {
            Py_SET_SIZE(out, w.size);
            w.data[w.size] = '\0';
            return 1;
        }
    }
    /* cut back to its old size, where a GC callback run by a failed resize left it at least that long */
    if (Py_SIZE(out) >= before && array->ob_start != NULL) {
        Py_SET_SIZE(out, before);
        array->ob_start[before] = '\0';
    }
    return 0;
}

/* The tag byte and size bytes at data (not in the bytearray) appended as dc_append appends them;
 * -1 with the bytearray's own exception where it cannot be (exports, no memory), and then it is
 * as it was. */
static int dc_append_tagged(PyObject *out, int tag, const char *data, Py_ssize_t size) {
    if (dc_append(out, tag, NULL, 0, data, size)) return 0;
    Py_ssize_t before = PyByteArray_GET_SIZE(out);
    if (size >= PY_SSIZE_T_MAX - before) {
        PyErr_NoMemory();
        return -1;
    }
    if (PyByteArray_Resize(out, before + 1 + size) < 0) return -1;  /* its words for why not */
    char *into = PyByteArray_AS_STRING(out) + before;  /* memory came back: the exact size then */
    *into = (char)tag;
    memcpy(into + 1, data, (size_t)size);
    return 0;
}

#endif
