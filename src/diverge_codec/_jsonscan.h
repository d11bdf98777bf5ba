/* The relay's compiled scanner: is a JSON-RPC message a notification the mcp-notifications
 * channel accepts, and which bytes hold its top-level "jsonrpc" members?
 *
 * Validity is orjson's by construction: the document is read by the yyjson reader that
 * orjson vendors (vendor/yyjson.c, orjson's fork of yyjson 0.9.0, built with orjson's
 * defines: no non-standard JSON, a container depth limit of 1024), after a strict UTF-8
 * check of the whole input, which is what orjson does before it hands yyjson a str. The
 * scan runs in C from start to end, holding the GIL and calling no Python API, so no
 * Python code runs while it reads the caller's buffer.
 *
 * yyjson reads a copy of the input and leaves each string's bytes where they were, so a
 * key's offset in the copy is its offset in the input: the members are located from the
 * keys yyjson found (decoded, escapes and all), and only whitespace and one comma are
 * read around them.
 */
#ifndef DIVERGE_CODEC_JSONSCAN_H
#define DIVERGE_CODEC_JSONSCAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define YYJSON_DISABLE_NON_STANDARD 1
#define YYJSON_DISABLE_UTF8_VALIDATION 1
#define YYJSON_DISABLE_UTILS 1
#define YYJSON_DISABLE_WRITER 1
#define yyjson_api static /* compiled into this module only: no symbol is exported */
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#endif
#include "vendor/yyjson.c"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

enum {
    DC_NOTIFICATION = 0,     /* a notification: splice it */
    DC_NOT_NOTIFICATION = 1, /* valid JSON, but an object with an id, or no object; or blank */
    DC_INVALID = 2,          /* not what orjson reads */
    DC_METHOD = 3,           /* method absent or not a string */
    DC_PARAMS = 4,           /* params neither absent, null nor an object */
    DC_META = 5,             /* params._meta neither absent, null nor an object */
    DC_UNSURE = 6            /* valid, but beyond what the splice records: let the parser do it */
};

#define DC_MAX_CUTS 8
#define DC_STACK_POOL 16384

typedef struct {
    size_t start, end;           /* the document, outer whitespace left out */
    size_t ncuts, removed;       /* byte ranges to leave out, in order, and their total size */
    size_t cuts[DC_MAX_CUTS][2];
} dc_splice;

static inline int dc_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Strict UTF-8 (no overlong form, no surrogate, nothing past U+10FFFF), as Rust's and
 * orjson's check: the Unicode standard's table 3-7. */
static int dc_utf8_valid(const unsigned char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint64_t word;
        while (i + 8 <= n) {
            memcpy(&word, s + i, 8);
            if (word & UINT64_C(0x8080808080808080)) break;
            i += 8;
        }
        if (i >= n) break;
        unsigned char c = s[i], c1;
        if (c < 0x80) {
            i += 1;
        } else if (c < 0xC2) {
            return 0;
        } else if (c < 0xE0) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80) return 0;
            i += 2;
        } else if (c < 0xF0) {
            if (i + 2 >= n) return 0;
            c1 = s[i + 1];
            if (c == 0xE0 ? (c1 < 0xA0 || c1 > 0xBF) : c == 0xED ? (c1 < 0x80 || c1 > 0x9F) : (c1 & 0xC0) != 0x80)
                return 0;
            if ((s[i + 2] & 0xC0) != 0x80) return 0;
            i += 3;
        } else if (c < 0xF5) {
            if (i + 3 >= n) return 0;
            c1 = s[i + 1];
            if (c == 0xF0 ? (c1 < 0x90 || c1 > 0xBF) : c == 0xF4 ? (c1 < 0x80 || c1 > 0x8F) : (c1 & 0xC0) != 0x80)
                return 0;
            if ((s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80) return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

static inline int dc_key_is(yyjson_val *key, const char *name, size_t len) {
    return unsafe_yyjson_get_len(key) == len && memcmp(unsafe_yyjson_get_str(key), name, len) == 0;
}

/* The last value of the member named name in obj (duplicates: the last wins, as in orjson), or NULL. */
static yyjson_val *dc_last_member(yyjson_val *obj, const char *name, size_t len) {
    yyjson_obj_iter iter;
    yyjson_val *key, *found = NULL;
    yyjson_obj_iter_init(obj, &iter);
    while ((key = yyjson_obj_iter_next(&iter))) {
        if (dc_key_is(key, name, len)) found = key + 1;
    }
    return found;
}

/* Where the value before the separator ending at pos ends: back over whitespace, a comma,
 * whitespace. SIZE_MAX if the bytes are not that (they always are in a valid document). */
static size_t dc_end_before(const unsigned char *s, size_t floor, size_t pos, int comma) {
    while (pos > floor && dc_space(s[pos - 1])) pos--;
    if (comma) {
        if (pos <= floor || s[pos - 1] != ',') return SIZE_MAX;
        pos--;
        while (pos > floor && dc_space(s[pos - 1])) pos--;
    }
    return pos;
}

static int dc_add_cut(dc_splice *out, size_t start, size_t end) {
    if (out->ncuts == DC_MAX_CUTS || end < start) return 0;
    out->cuts[out->ncuts][0] = start;
    out->cuts[out->ncuts][1] = end;
    out->ncuts++;
    out->removed += end - start;
    return 1;
}

/* The cuts that remove every top-level "jsonrpc" member. A run of such members is removed
 * from its first key to the next kept member's key; a run at the end, from the end of the
 * last kept value before it (its comma included); a run that is every member, from its
 * first key to its last value's end. Every other byte stays. */
static int dc_find_cuts(yyjson_doc *doc, const unsigned char *s, dc_splice *out) {
    yyjson_obj_iter iter;
    yyjson_val *key;
    const char *pool = doc->str_pool;
    size_t index = 0, key_start, prev_start = 0, prev_end = SIZE_MAX, before_prev_end = SIZE_MAX;
    size_t run_start = 0, run_before = SIZE_MAX;
    int prev_envelope = 0, run_open = 0;
    yyjson_obj_iter_init(doc->root, &iter);
    for (;;) {
        key = yyjson_obj_iter_next(&iter);
        if (key) {
            key_start = (size_t)(unsafe_yyjson_get_str(key) - pool) - 1;
            if (key_start <= out->start || key_start >= out->end || s[key_start] != '"') return 0;
        }
        if (index > 0) {  /* the previous member ends before this key, or before the closing brace */
            prev_end = key ? dc_end_before(s, prev_start, key_start, 1) : dc_end_before(s, prev_start, out->end - 1, 0);
            if (prev_end == SIZE_MAX) return 0;
            if (prev_envelope && !run_open) {
                run_open = 1;
                run_start = prev_start;
                run_before = before_prev_end;
            } else if (!prev_envelope && run_open) {
                run_open = 0;
                if (!dc_add_cut(out, run_start, prev_start)) return 0;
            }
            before_prev_end = prev_end;
        }
        if (!key) break;
        prev_start = key_start;
        prev_envelope = dc_key_is(key, "jsonrpc", 7);
        index++;
    }
    if (run_open && !dc_add_cut(out, run_before != SIZE_MAX ? run_before : run_start, prev_end)) return 0;
    return 1;
}

static int dc_shape(yyjson_val *root) {
    yyjson_val *method, *params, *meta;
    if (dc_last_member(root, "id", 2)) return DC_NOT_NOTIFICATION;
    method = dc_last_member(root, "method", 6);
    if (!method || !yyjson_is_str(method)) return DC_METHOD;
    params = dc_last_member(root, "params", 6);
    if (!params || yyjson_is_null(params)) return DC_NOTIFICATION;
    if (!yyjson_is_obj(params)) return DC_PARAMS;
    meta = dc_last_member(params, "_meta", 5);
    if (!meta || yyjson_is_null(meta) || yyjson_is_obj(meta)) return DC_NOTIFICATION;
    return DC_META;
}

/* Read one JSON-RPC message: a DC_ status, and for DC_NOTIFICATION the splice in out. */
static int dc_scan_notification(const char *data, size_t size, dc_splice *out) {
    const unsigned char *s = (const unsigned char *)data;
    uint64_t stack_pool[DC_STACK_POOL / sizeof(uint64_t)];
    void *pool = stack_pool;
    size_t capacity = (((size / 2) * 24) + 256 + 4095) & ~(size_t)4095;  /* orjson's bound */
    yyjson_alc alc;
    yyjson_read_err err;
    yyjson_doc *doc;
    int status;

    memset(out, 0, sizeof(*out));
    while (out->start < size && dc_space(s[out->start])) out->start++;
    if (out->start == size) return DC_NOT_NOTIFICATION;  /* a blank line is no message */
    if (!dc_utf8_valid(s, size)) return DC_INVALID;
    if (capacity > DC_STACK_POOL) {
        pool = malloc(capacity);
        if (!pool) return DC_UNSURE;
    } else {
        capacity = DC_STACK_POOL;
    }
    yyjson_alc_pool_init(&alc, pool, capacity);
    doc = yyjson_read_opts((char *)data, size, &alc, &err);
    if (!doc) {
        status = DC_INVALID;
    } else if (!yyjson_is_obj(doc->root)) {
        status = DC_NOT_NOTIFICATION;
    } else {
        status = dc_shape(doc->root);
        if (status == DC_NOTIFICATION) {
            out->end = size;
            while (dc_space(s[out->end - 1])) out->end--;
            if (s[out->start] != '{' || s[out->end - 1] != '}' || !dc_find_cuts(doc, s, out)) status = DC_UNSURE;
        }
    }
    if (pool != stack_pool) free(pool);
    return status;
}

#endif
