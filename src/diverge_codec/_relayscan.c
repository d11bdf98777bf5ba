/* The relay's scan of a short message, in a translation unit of its own (issue 44).
 *
 * Compiled into _mcp_notifications_c beside the Cython-generated source (setup.py). With
 * DIVERGE_CODEC_RELAY_SCAN defined, _jsonscan.h's dc_scan takes the relay's shortcuts (the
 * envelope {"jsonrpc":"2.0", taken in two compares, whitespace tried last, a line read where it
 * lies, the memo) and records a line's values; the shapes below read a line that differs from an
 * earlier one of its chunk only in its values from that one, without a scan. The module's own
 * source and _lazyscan.c (dc_scan_any: decode_lazy, and documents of 512 bytes or more) include
 * the header without it, so their code is not moved by whatever these shortcuts do to gcc's
 * choices. The same bytes are accepted, refused and cut either way (tests/test_scanner*.py,
 * tests/test_chunk_framer*.py and the fuzz target fuzz/fuzz_scanner.py hold both builds and the
 * shapes to orjson and to the pure core).
 */
/* The header's helpers for decode's builder (dc_unescape) are not used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#define DIVERGE_CODEC_RELAY_SCAN 1
#include "_jsonscan.h"

/* dc_scan_notification's short path: a message under DC_WINDOW_FROM bytes, data[size] == 0. */
int dc_relay_scan(const char *data, size_t size, dc_splice *out) {
    return dc_scan(data, size, out, NULL, 0, 0, NULL, 0, 0);
}

/* The offset of the first byte where a[0..n) and b[0..n) differ, or n. Reads only those bytes. */
static DC_ALWAYS_INLINE size_t dc_mismatch(const unsigned char *a, const unsigned char *b, size_t n) {
    size_t k = 0;
#if DC_SSE2
    unsigned int differ;
    __m128i low, high;
    while (k + 32 <= n) {  /* two compares, one test */
        low = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + k)), _mm_loadu_si128((const __m128i *)(b + k)));
        high = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + k + 16)), _mm_loadu_si128((const __m128i *)(b + k + 16)));
        if (_mm_movemask_epi8(_mm_and_si128(low, high)) != 0xFFFF) {
            differ = 0xFFFFu ^ (unsigned int)_mm_movemask_epi8(low);
            if (differ) return k + (size_t)__builtin_ctz(differ);
            return k + 16 + (size_t)__builtin_ctz(0xFFFFu ^ (unsigned int)_mm_movemask_epi8(high));
        }
        k += 32;
    }
    if (k + 16 <= n) {
        differ = 0xFFFFu ^ (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + k)),
                                                                           _mm_loadu_si128((const __m128i *)(b + k))));
        if (differ) return k + (size_t)__builtin_ctz(differ);
        k += 16;
    }
    if (k < n && n >= 16) {  /* the last 16 bytes, overlapping those found equal: the first difference is past k */
        differ = 0xFFFFu ^ (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(a + n - 16)),
                                                                           _mm_loadu_si128((const __m128i *)(b + n - 16))));
        return differ ? n - 16 + (size_t)__builtin_ctz(differ) : n;
    }
#endif
    while (k < n && a[k] == b[k]) k++;
    return k;
}

/* A position p of a line read again (dc_relay_delta), where the line read from it lies: moved by
 * the values replaced before it, shifts[i] from ends[i] on (ends ascending; no position is inside
 * a value). */
static DC_ALWAYS_INLINE size_t dc_shifted(size_t p, const size_t *ends, const ptrdiff_t *shifts, size_t nshifts) {
    size_t i;
    if (!nshifts || p < ends[0]) return p;
    if (p >= ends[nshifts - 1]) return (size_t)((ptrdiff_t)p + shifts[nshifts - 1]);
    for (i = 1; ends[i] <= p; i++) {}
    return (size_t)((ptrdiff_t)p + shifts[i - 1]);
}

#define DC_DELTA_VALUES 8  /* the values a line may replace */

/* The line at m read from shape, a notification scanned earlier in the same chunk: where m differs
 * from it only inside its scalar values, each replaced by a value of m of the same kind (a string by
 * a string, a number by a number, each read by the scan's own readers; keys, literals, whitespace
 * and structure byte for byte the same), m is that notification with other values: the scan of m
 * would take each step it took, in the same state, and decide as it did (a value's role, and what
 * the channel's rules check of it, come from its key and its first byte; a cut begins and ends
 * between members, never inside a value). out is then the shape's splice, each position past a
 * replaced value moved by the lengths it changed, and *msize m's length: 1. 0 where m must be
 * scanned. m's end is not known yet (its newline is not looked for before this): size is what the
 * chunk holds from m on (m[size] a NUL), and the shape is compared through its newline (l[lsize], in
 * the chunk as every shape's line is). No value holds a newline, and l holds none before lsize, so
 * where the two newlines meet is m's first. */
static DC_NOINLINE int dc_relay_delta(const unsigned char *m, size_t size, dc_splice *out, const dc_shape *shape,
                                      size_t *msize) {
    const unsigned char *l = (const unsigned char *)shape->line;
    const dc_token *token = shape->tokens, *last = shape->tokens + shape->ntokens;
    size_t lsize = shape->size + 1, i = 0, j = 0, k, n, end, nshifts = 0, index;
    size_t ends[DC_DELTA_VALUES];
    ptrdiff_t shift = 0, shifts[DC_DELTA_VALUES];
    int escaped = 0;
    for (;;) {
        n = lsize - i < size - j ? lsize - i : size - j;
        k = dc_mismatch(l + i, m + j, n);
        i += k;
        j += k;
        if (i == lsize) break;  /* the same to the end: both newlines */
        if (j == size) return 0;  /* the chunk ends inside m: its end is not here */
        /* the first difference, l[i] (or l's end) against m[j]: in a value of l, or at its end (a longer number) */
        while (token < last && token->end < i) token++;
        if (token == last || token->start > i || nshifts == DC_DELTA_VALUES) return 0;
        k = (size_t)((ptrdiff_t)token->start + shift);  /* where the value starts in m: the bytes before it are the same */
        if (l[token->start] == '"') {
            if (m[k] != '"') return 0;
            end = dc_string(m, k, size, &escaped, NULL);
        } else {
            if (!dc_digit(m[k]) && m[k] != '-') return 0;
            end = dc_number_quick(m, k);
        }
        if (!end || end > size) return 0;  /* the scan says what is wrong */
        i = token->end;
        j = end;
        shift = (ptrdiff_t)j - (ptrdiff_t)i;
        ends[nshifts] = i;
        shifts[nshifts++] = shift;
        token++;
    }
    out->start = shape->out.start;  /* before every value */
    out->end = shape->out.end + (size_t)shift;  /* after every value */
    out->ncuts = shape->out.ncuts;
    out->removed = 0;
    for (index = 0; index < out->ncuts; index++) {
        out->cuts[index][0] = dc_shifted(shape->out.cuts[index][0], ends, shifts, nshifts);
        out->cuts[index][1] = dc_shifted(shape->out.cuts[index][1], ends, shifts, nshifts);
        out->removed += out->cuts[index][1] - out->cuts[index][0];
    }
    out->id_start = out->id_end = 0;  /* a notification has no id */
    out->method_start = dc_shifted(shape->out.method_start, ends, shifts, nshifts);
    out->method_end = dc_shifted(shape->out.method_end, ends, shifts, nshifts);
    *msize = j - 1;
    return 1;
}

/* The 8 bytes before a method's end (end >= 8), what dc_relay_scan_line tells shapes apart by. */
static DC_ALWAYS_INLINE uint64_t dc_method_tail(const char *line, size_t end) {
    uint64_t tail;
    memcpy(&tail, line + end - 8, 8);
    return tail;
}

/* Two places of the ring exchange their shapes. */
static DC_ALWAYS_INLINE void dc_shapes_swap(dc_memo *memo, unsigned int a, unsigned int b) {
    unsigned char order = memo->order[a];
    unsigned short method_end = memo->method_ends[a];
    uint64_t method = memo->methods[a];
    memo->order[a] = memo->order[b];
    memo->method_ends[a] = memo->method_ends[b];
    memo->methods[a] = memo->methods[b];
    memo->order[b] = order;
    memo->method_ends[b] = method_end;
    memo->methods[b] = method;
}

/* The shapes as a line of a chunk begins: a new chunk empties them (the lines of the last are gone). */
static DC_ALWAYS_INLINE void dc_shapes_chunk(dc_memo *memo) {
    unsigned int index;
    if (memo->shapes_chunk != memo->chunk) {
        memo->shapes_chunk = memo->chunk;
        memo->nshapes = 0;
        if (!memo->spare && !memo->order[1]) {  /* zeroed: the first chunk */
            for (index = 0; index < DC_SHAPES; index++) memo->order[index] = (unsigned char)index;
            memo->spare = DC_SHAPES;
        }
    }
}

/* dc_shapes_chunk, then a stream of lines that never repeat rests from the shapes: 1 where the line may
 * be walked and become one. */
static DC_ALWAYS_INLINE int dc_shapes_enter(dc_memo *memo) {
    dc_shapes_chunk(memo);
    if (memo->rest) {  /* scanned as they come, no shapes kept */
        memo->rest--;
        return 0;  /* resting */
    }
    return 1;
}

/* The line at data (size: what the chunk holds from it on) walked against the shapes whose method it
 * shares (at most DC_WALKS, newest first): 1 where one holds it (out its splice, *msize its length),
 * else 0 with the misses counted. */
static DC_ALWAYS_INLINE int dc_shapes_walk(const char *data, size_t size, dc_splice *out, dc_memo *memo, size_t *msize) {
    size_t index, walks = 0;
    unsigned int at;
    for (index = 0; index < memo->nshapes && walks < DC_WALKS; index++) {
        at = (memo->head - (unsigned int)index) & (DC_SHAPES - 1);
        if (memo->method_ends[at] > size || dc_method_tail(data, memo->method_ends[at]) != memo->methods[at])
            continue;
        walks++;
        if (dc_relay_delta((const unsigned char *)data, size, out, &memo->shapes[memo->order[at]], msize)) {
            memo->misses = memo->backoff = 0;
            if (index) dc_shapes_swap(memo, at, memo->head);  /* walked first from now on */
            return 1;
        }
    }
    memo->misses += walks ? 4 : memo->nshapes ? 1 : 0;  /* a line no shape held: walked in vain, or only looked at */
    if (memo->misses >= DC_MISSES) {  /* lines that never repeat: the shapes cost more than they save */
        memo->misses = 0;
        memo->rest = DC_REST << memo->backoff;
        if (memo->backoff < 5) memo->backoff++;
    }
    return 0;
}

/* ChunkFramer._feed's, for a line after the chunk's first while there are shapes and no rest: read
 * from a shape before its newline is looked for. A line no shape holds is left to the caller, which
 * finds its end and scans it with entered = 1. (A line a shape holds may be longer than any the caller
 * scans where it lies: its values are read as the scan reads them, whatever their length.) The caller
 * walks only while memo->rest is 0, so the line is not one of a rest. */
int dc_relay_walk_line(const char *data, size_t avail, dc_splice *out, dc_memo *memo, size_t *size) {
    dc_shapes_chunk(memo);
    return dc_shapes_walk(data, avail, out, memo, size);
}

/* ChunkFramer._feed's: a line under DC_WINDOW_FROM bytes read where it lies in the chunk,
 * data[size] its newline (or a NUL), no newline before it. Every word-wise and block-wise read
 * of the scan stays below size; the byte-wise ones stop at the newline as at a NUL (a newline is
 * no whitespace here, and ends every token): nothing past data[size] is read.
 * memo is the framer's (memo->chunk counts its chunks); previous the line before it in the same
 * chunk, or NULL. A line opening with the memo's prefix resumes the scan at its checkpoint; one
 * opening as previous up to memo->method_end (that line's method's end, within it) is scanned afresh
 * and records the memo; any other line is scanned afresh by the build with no checkpoint. Each is
 * the same scan, so the same result. A notification scanned in full becomes a shape, the oldest
 * going. No shape is walked here: the framer has walked them (dc_relay_walk_line; entered = 1), or
 * there were none to walk (the chunk's first line, a rest from them; entered = 0, the line enters). */
int dc_relay_scan_line(const char *data, size_t size, dc_splice *out, dc_memo *memo, const char *previous,
                       int entered) {
    size_t method_end = memo->method_end, index;
    unsigned int at;
    dc_shape *reading;
    int status, resting, resume, record;
    resting = entered ? 0 : !dc_shapes_enter(memo);  /* (a line walked is no line of a rest) */
    reading = &memo->shapes[memo->spare];
    memo->tokens = resting ? NULL : reading->tokens;
    /* one build of the scan, inlined once: whether it resumes or records is read once a line (two
     * builds, one with no memo, count ~3% fewer instructions on lines that never repeat: 6 KB more
     * of the wheel) */
    resume = memo->len && size >= memo->len && memcmp(data, memo->prefix, memo->len) == 0;
    record = !resume && previous && method_end && size >= method_end && memcmp(data, previous, method_end) == 0;
    status = dc_scan(data, size, out, NULL, 0, 1, memo, resume, record);
    if (resting || status != DC_NOTIFICATION || memo->ntokens > DC_MEMO_TOKENS || out->method_end < 8 || !memo->chunk)
        return status;  /* (chunk 0: a caller that does not count its chunks keeps no shapes) */
    reading->line = data;  /* the newest shape, in the ring's next place (its oldest where it is full) */
    reading->size = size;
    reading->ntokens = memo->ntokens;
    dc_splice_copy(&reading->out, out);
    at = (memo->head + 1) & (DC_SHAPES - 1);
    index = memo->order[at];
    memo->order[at] = (unsigned char)memo->spare;
    memo->spare = (unsigned int)index;
    memo->method_ends[at] = (unsigned short)out->method_end;
    memo->methods[at] = dc_method_tail(data, out->method_end);
    memo->head = at;
    if (memo->nshapes < DC_SHAPES) memo->nshapes++;
    return DC_NOTIFICATION;
}
