/* The relay's compiled scanner: is a JSON-RPC message a notification the mcp-notifications
 * channel accepts, and which bytes hold its top-level "jsonrpc" members?
 *
 * One pass over the bytes, building nothing: it accepts exactly what orjson.loads accepts
 * (orjson reads with its fork of yyjson 0.9, non-standard JSON off, after a strict UTF-8
 * check of the whole input): RFC 8259 JSON; strict UTF-8; escapes with surrogate pairs
 * only (a lone surrogate escape is refused); no control character in a string; nesting of at most
 * 1024 arrays and objects; a number refused only where it rounds to infinity as a double
 * (integers too wide for 64 bits are read as doubles). Duplicate keys are read as orjson
 * reads them: the last one wins. The differential fuzz target (fuzz/fuzz_scanner.py) and
 * tests/test_scanner.py hold it to orjson.
 *
 * It runs in C from start to end, holding the GIL and calling no Python API, so no Python
 * code runs while it reads the caller's buffer. It relies on data[size] == 0, as a bytes
 * object guarantees (the relay's ChunkFramer writes a NUL after a line it copies into its
 * buffer; its line build, in _relayscan.c, reads a short line where it lies in the chunk, its
 * newline at data[size] taken as no whitespace): every byte-wise read stops at the first byte that
 * ends a token, and a NUL ends them all, so no read goes past data[size]; word-wise and block-wise reads (a window
 * reads its 64-byte blocks only where start + 256 <= size) stay below size. (Bounding the
 * whitespace loops by size instead, to scan lines where they lie, cost token-dense documents
 * up to a fifth: items 64 KB 830,507 -> 1,007,763 instructions.)
 */
#ifndef DIVERGE_CODEC_JSONSCAN_H
#define DIVERGE_CODEC_JSONSCAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#define DC_SSE2 1
#else
#define DC_SSE2 0
#endif
/* AVX2 and AVX-512 twins of the long-string reader, chosen at run time, where GCC or clang build
 * for x86-64 (DIVERGE_CODEC_NO_AVX2 leaves both out, DIVERGE_CODEC_NO_AVX512 the second). The
 * environment's DIVERGE_CODEC_SIMD (sse2, avx2 or avx512), read at the first long string, caps
 * the choice, so that one machine measures and tests every path. */
#if DC_SSE2 && defined(__x86_64__) && !defined(DIVERGE_CODEC_NO_AVX2)
#define DC_AVX2 1
#else
#define DC_AVX2 0
#endif
#if DC_AVX2 && !defined(DIVERGE_CODEC_NO_AVX512)
#define DC_AVX512 1
#else
#define DC_AVX512 0
#endif

enum {
    DC_NOTIFICATION = 0,     /* a notification: splice it */
    DC_NOT_NOTIFICATION = 1, /* valid JSON, but an object with an id, or no object; or blank */
    DC_INVALID = 2,          /* not what orjson reads */
    DC_METHOD = 3,           /* method absent or not a string */
    DC_PARAMS = 4,           /* params neither absent, null nor an object */
    DC_META = 5,             /* params._meta neither absent, null nor an object */
    DC_UNSURE = 6            /* valid, but more envelope runs than the splice records: let the parser do it */
};

#if defined(__GNUC__)
#define DC_ALWAYS_INLINE inline __attribute__((always_inline))
#define DC_NOINLINE __attribute__((noinline))
#define DC_HIDDEN __attribute__((visibility("hidden")))
#else
#define DC_ALWAYS_INLINE inline
#define DC_NOINLINE
#define DC_HIDDEN
#endif
#define DC_MAX_CUTS 8
#define DC_MAX_DEPTH 1024
#define DC_NONE ((size_t)-1)

typedef struct {
    size_t start, end;           /* the document, outer whitespace left out */
    size_t ncuts, removed;       /* byte ranges to leave out, in order, and their total size */
    size_t id_start, id_end;     /* the last top-level id's value; both 0 where there is none */
    size_t method_start, method_end;  /* the last top-level method's value, the same way */
    size_t cuts[DC_MAX_CUTS][2];
} dc_splice;

/* Where decode_lazy finds a notification's fields: the last top-level method and params
 * values (orjson keeps the last of duplicates), as byte offsets; DC_NONE where absent. */
#define DC_MAX_MEMBERS 6
typedef struct {
    size_t key, key_end, value, end;  /* the key's quotes (key_end after the closing one); the value's bytes */
    int key_escaped, value_escaped;  /* a backslash in the key; in a string value (or its key) */
} dc_member_span;

typedef struct {
    size_t method_start, method_end;  /* the string, quotes included */
    size_t params_start, params_end;
    int method_escaped;               /* a backslash in the method (or its key): the parser reads it */
    size_t nmembers;                  /* the top-level members, in order: decode builds the mapping */
    dc_member_span members[DC_MAX_MEMBERS];  /* the first DC_MAX_MEMBERS of them */
} dc_fields;

/* The least decimal that rounds to infinity as a double, 2**1024 - 2**970 (ties go to even: up). */
static const char DC_INFINITY_FROM[] = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792";

enum { DC_ABSENT = 0, DC_STRING, DC_OBJECT, DC_NULL, DC_OTHER };
enum { DC_ROLE_OTHER = 0, DC_ROLE_ENVELOPE, DC_ROLE_METHOD, DC_ROLE_PARAMS, DC_ROLE_ID, DC_ROLE_META };

static inline int dc_space(unsigned char c) {
    return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r');
}

static inline int dc_digit(unsigned char c) {
    return c >= '0' && c <= '9';
}

/* The length of the UTF-8 character at s[pos] (lead byte >= 0x80), or 0 where it is not strict
 * UTF-8 (an overlong form, a surrogate, past U+10FFFF, cut short): the Unicode standard's table
 * 3-7, as Rust's and orjson's check. Outside strings no byte >= 0x80 is read as JSON at all. */
static inline size_t dc_utf8_char(const unsigned char *s, size_t pos, size_t end) {
    unsigned char c = s[pos], c1;
    if (c < 0xC2) return 0;
    if (c < 0xE0) return (pos + 1 < end && (s[pos + 1] & 0xC0) == 0x80) ? 2 : 0;
    if (c < 0xF0) {
        if (pos + 2 >= end) return 0;
        c1 = s[pos + 1];
        if (c == 0xE0 ? (c1 < 0xA0 || c1 > 0xBF) : c == 0xED ? (c1 < 0x80 || c1 > 0x9F) : (c1 & 0xC0) != 0x80) return 0;
        return (s[pos + 2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c < 0xF5) {
        if (pos + 3 >= end) return 0;
        c1 = s[pos + 1];
        if (c == 0xF0 ? (c1 < 0x90 || c1 > 0xBF) : c == 0xF4 ? (c1 < 0x80 || c1 > 0x8F) : (c1 & 0xC0) != 0x80) return 0;
        return ((s[pos + 2] & 0xC0) == 0x80 && (s[pos + 3] & 0xC0) == 0x80) ? 4 : 0;
    }
    return 0;
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DC_FIRST_BYTE_KNOWN 1
#define DC_FIRST_FLAGGED(mask) (__builtin_ctzll(mask) >> 3)
#else
#define DC_FIRST_BYTE_KNOWN 0
#endif
#define DC_ONES UINT64_C(0x0101010101010101)
#define DC_HIGH UINT64_C(0x8080808080808080)

/* Which of eight string bytes need a look (a quote, a backslash, a control byte, a byte >=
 * 0x80), a high bit each: none flagged means none there, and the lowest flag is exact (a
 * borrow only runs upward from a flagged byte). */
static inline uint64_t dc_special(uint64_t w) {
    uint64_t quote = w ^ (DC_ONES * '"'), slash = w ^ (DC_ONES * '\\');
    return (((quote - DC_ONES) & ~quote) | ((slash - DC_ONES) & ~slash) | ((w - DC_ONES * 0x20) & ~w) | w) & DC_HIGH;
}

static inline int dc_hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Four hex digits at s, read one by one (a NUL stops them): their value, or -1. */
static inline int dc_hex4(const unsigned char *s) {
    int value = 0, digit, i;
    for (i = 0; i < 4; i++) {
        digit = dc_hex(s[i]);
        if (digit < 0) return -1;
        value = value * 16 + digit;
    }
    return value;
}

/* A key's decoded text, as far as telling the five names apart needs: 8 units, and any unit
 * that is no printable ASCII stored as 0xFF, which no name holds. */
typedef struct {
    unsigned char text[8];
    size_t len;
} dc_key;

static inline void dc_key_add(dc_key *key, unsigned int unit) {
    if (key->len < sizeof(key->text)) key->text[key->len] = (unit >= 0x20 && unit < 0x7F) ? (unsigned char)unit : 0xFF;
    key->len++;
}

#if DC_SSE2
/* Which of the sixteen bytes in chunk need a string reader's look: a quote, a backslash, or a
 * byte below 0x20 as a signed byte (a control byte, or one >= 0x80), the same bytes dc_special
 * flags. (The Begun writer tests names it already knows are ASCII with it too.) */
static DC_ALWAYS_INLINE unsigned int dc_special_chunk(__m128i chunk) {
    return (unsigned int)_mm_movemask_epi8(_mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('"')), _mm_cmpeq_epi8(chunk, _mm_set1_epi8('\\'))),
        _mm_cmplt_epi8(chunk, _mm_set1_epi8(0x20))));
}

/* The same for the sixteen bytes at at. */
static DC_ALWAYS_INLINE unsigned int dc_special16(const unsigned char *at) {
    return dc_special_chunk(_mm_loadu_si128((const __m128i *)at));
}

/* The same for sixty-four bytes: bit i for at[i]. */
static DC_ALWAYS_INLINE uint64_t dc_special64(const unsigned char *at) {
    return (uint64_t)dc_special16(at) | ((uint64_t)dc_special16(at + 16) << 16)
        | ((uint64_t)dc_special16(at + 32) << 32) | ((uint64_t)dc_special16(at + 48) << 48);
}
#endif

/* What the strings of a long array have read ahead, for the next one: the flagged bytes of three
 * 64-byte blocks from start. The next string's end is then a shift and a count on bits already
 * there, not a load and a compare after the last string's end: in a long list of strings that
 * chain, not the work, sets the pace. The window only slides forward, one block per step at
 * most, with no branch on whether it slides: as a branch it mispredicted too often to pay.
 * Only an array's strings after its first use it: for a document's other strings (keys, and
 * values spread among other values) keeping it up costs more than it saves. The figures:
 * docs/internals.md. */
typedef struct {
    size_t start;       /* a multiple of 64; DC_WINDOW_EMPTY before the first read */
    uint64_t bits[3];   /* blocks start, start + 64, start + 128 */
} dc_window;

#define DC_WINDOW_EMPTY ((size_t)-1 - 1023)  /* pos - start >= 128 for any pos: the first use reads */
#define DC_WINDOW_FROM 512  /* the least document size with a window: the scan of a shorter one has no test for it */

/* The string byte at s[pos] that is neither its closing quote nor a control byte: the position
 * after it (and an escape's), or 0 where it is invalid. */
static DC_ALWAYS_INLINE size_t dc_string_other(const unsigned char *s, size_t pos, size_t end, int *escaped) {
    int unit, low;
    size_t step;
    unsigned char c = s[pos];
    if (c >= 0x80) {
        step = dc_utf8_char(s, pos, end);
        return step ? pos + step : 0;
    }
    if (c != '\\') return pos + 1;
    *escaped = 1;
    switch (s[pos + 1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        return pos + 2;
    case 'u':
        unit = dc_hex4(s + pos + 2);
        if (unit < 0) return 0;
        pos += 6;
        if (unit >= 0xD800 && unit <= 0xDBFF) {  /* a high surrogate: a low one must follow */
            if (s[pos] != '\\' || s[pos + 1] != 'u') return 0;
            low = dc_hex4(s + pos + 2);
            if (low < 0xDC00 || low > 0xDFFF) return 0;
            pos += 6;
        } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
            return 0;
        }
        return pos;
    default:
        return 0;
    }
}

#if DC_SSE2
/* Whether c may follow a backslash with nothing more to read: / b f n r t (the quote and the
 * backslash are told by their own masks). */
static DC_ALWAYS_INLINE int dc_short_escape(unsigned char c) {
    const uint32_t letters = (1u << ('b' - 0x60)) | (1u << ('f' - 0x60)) | (1u << ('n' - 0x60)) | (1u << ('r' - 0x60)) | (1u << ('t' - 0x60));
    return (unsigned int)(c - 0x60) < 32 ? (int)((letters >> (c - 0x60)) & 1) : c == '/';
}

/* A block read without the string's end: the next block starts 64 bytes on (*open says whether
 * an escape is open at its first byte). No position is this value. */
#define DC_GO_ON ((size_t)1 << (sizeof(size_t) * 8 - 1))

/* A block of 64 bytes from s[base] with a flagged byte (bits: quotes, backslashes, control and
 * non-ASCII bytes; slashes: backslashes; lows: control and non-ASCII bytes; highs: non-ASCII bytes); *open (0 or 1):
 * whether the last block's last backslash escapes s[base]. The position after the string's closing
 * quote, 0 if the string is invalid, DC_GO_ON (the next block at base + 64, *open set for it), or
 * DC_GO_ON | the next block's start, no escape open there (after a walk). A block of quotes and
 * backslashes only is read as simdjson reads one (find_escaped, its carry in *open): the escaped
 * bytes are the odd places of each run of backslashes, the first quote not among them ends the
 * string, and only escaped letters are looked at one by one. The next block's start does not
 * depend on this one's bits, so its loads need not wait for them: text with an escape every few
 * bytes is read at the pace of the loads. Non-ASCII text is checked from each character's lead
 * byte, and a character that runs past the block moves the next block's start past it. A block with
 * a control byte, or a \u escape, goes from one flagged byte to the next (dc_block_walk), from the
 * open escape's backslash where there is one. */
static DC_NOINLINE size_t dc_block_walk(const unsigned char *s, size_t base, size_t end, uint64_t bits, int *escaped);

static DC_ALWAYS_INLINE size_t dc_block_walk_open(const unsigned char *s, size_t base, size_t end, uint64_t bits,
                                                  uint64_t *open, int *escaped) {
    if (!*open) return dc_block_walk(s, base, end, bits, escaped);
    *open = 0;  /* from the backslash (bit 0 of the shifted bits): the block's last byte is read again next */
    return dc_block_walk(s, base - 1, end, (bits << 1) | 1, escaped);
}

/* The UTF-8 characters whose lead bytes are flagged in highs (bit i for s[base + i], none a
 * continuation of a character before them): 0 where one is no strict UTF-8, else the offset from
 * base after the last one where it runs past the block (above 64), or 64. */
static DC_ALWAYS_INLINE size_t dc_block_utf8(const unsigned char *s, size_t base, size_t end, uint64_t highs) {
    size_t at, step;
    do {
        at = (size_t)__builtin_ctzll(highs);
        step = dc_utf8_char(s, base + at, end);
        if (!step) return 0;
        at += step;
        if (at >= 64) return at;
        highs &= ~UINT64_C(0) << at;  /* past the character's continuation bytes */
    } while (highs);
    return 64;
}

static DC_ALWAYS_INLINE size_t dc_block(const unsigned char *s, size_t base, size_t end, uint64_t bits, uint64_t slashes,
                                        uint64_t lows, uint64_t highs, uint64_t strange, int flagged, uint64_t *open,
                                        int *escaped) {
    const uint64_t even = UINT64_C(0x5555555555555555);
    uint64_t quotes, follows, escapes, ends, below, letters, runs, escapers;
    size_t after;
    unsigned char c;
    int carry;
    if (lows & ~highs) return dc_block_walk_open(s, base, end, bits, open, escaped);  /* a control byte */
    quotes = bits & ~slashes & ~highs;
    escapers = slashes & ~*open;  /* a backslash the last block's escapes is no escaper */
    follows = (escapers << 1) | *open;
    /* simdjson's find_escaped: the carry out says the block's last backslash escapes the next byte */
    carry = __builtin_add_overflow(escapers & ~even & ~follows, escapers, &runs);
    escapes = (even ^ (runs << 1)) & follows;
    ends = quotes & ~escapes;
    below = (ends & (0 - ends)) - 1;  /* the bytes before the closing quote (all, without one) */
    letters = escapes & ~bits & below;  /* bits: the quotes, backslashes and non-ASCII bytes */
    if (escapes & highs & below) return dc_block_walk_open(s, base, end, bits, open, escaped);  /* the walk refuses it */
    if (flagged) {  /* strange: the caller flagged every byte that is no short escape's letter */
        if (letters & strange) return dc_block_walk_open(s, base, end, bits, open, escaped);
    } else {
        for (; letters; letters &= letters - 1) {
            c = s[base + (size_t)__builtin_ctzll(letters)];
            if (!dc_short_escape(c)) return c == 'u' ? dc_block_walk_open(s, base, end, bits, open, escaped) : 0;
        }
    }
    if (slashes & below) *escaped = 1;
    if (highs & below) {  /* non-ASCII text: its characters checked from their lead bytes (issue 44) */
        after = dc_block_utf8(s, base, end, highs & below);
        if (!after) return 0;
        if (after > 64) {  /* no quote, and no escape open at the block's end: a character runs on */
            *open = 0;
            return DC_GO_ON | (base + after);
        }
    }
    if (ends) return base + (size_t)__builtin_ctzll(ends) + 1;
    *open = (uint64_t)carry;
    return DC_GO_ON;
}

/* After dc_block's answer read for the block at *pos: 1 and *pos moved to the next block's start
 * where the string goes on, 0 where read is the answer (the string's end, or 0: invalid). */
static DC_ALWAYS_INLINE int dc_block_next(size_t read, size_t *pos) {
    if (read == DC_GO_ON) {
        *pos += 64;
        return 1;
    }
    if (!(read & DC_GO_ON)) return 0;
    *pos = read & ~DC_GO_ON;
    return 1;
}

static DC_NOINLINE size_t dc_block_walk(const unsigned char *s, size_t base, size_t end, uint64_t bits, int *escaped) {
    size_t pos;
    unsigned char c;
    do {  /* s[base + ctz(bits)] needs a look; bits holds the block's flags from pos on */
        pos = base + (size_t)__builtin_ctzll(bits);
        c = s[pos];
        if (c == '"') return pos + 1;
        if (c < 0x20) return 0;
        pos = dc_string_other(s, pos, end, escaped);
        if (!pos) return 0;
        if (pos - base >= 64) break;
        bits &= ~UINT64_C(0) << (pos - base);
    } while (bits);
    return DC_GO_ON | (pos - base < 64 ? base + 64 : pos);
}

/* The first byte from s[pos] that a string reader looks at (dc_special16), sixteen bytes a read
 * while sixteen are left; where fewer are, pos itself (the caller reads on one by one). */
static DC_ALWAYS_INLINE size_t dc_skip_plain(const unsigned char *s, size_t pos, size_t end) {
    unsigned int mask;
    while (pos + 16 <= end) {
        mask = dc_special16(s + pos);
        if (mask) return pos + (size_t)__builtin_ctz(mask);
        pos += 16;
    }
    return pos;
}

/* The string's last bytes, fewer than 64 from s[pos]: 16 at a time, then one by one. */
static size_t dc_string_tail(const unsigned char *s, size_t pos, size_t end, int *escaped) {
    unsigned char c;
    for (;;) {
        pos = dc_skip_plain(s, pos, end);
        c = s[pos];
        if (c == '"') return pos + 1;
        if (c < 0x20) return 0;  /* a control character, or the NUL past the end */
        pos = dc_string_other(s, pos, end, escaped);
        if (!pos) return 0;
    }
}

/* The rest of a string with no special byte in its first 32, from s[pos]: as dc_string, out of
 * line so the short strings of token-dense documents keep their loop; 64 bytes a step, four
 * 16-byte reads each. */
static DC_NOINLINE size_t dc_string_long_sse2(const unsigned char *s, size_t pos, size_t end, int *escaped) {
    size_t read;
    uint64_t open = 0, lows, highs, bits, slashes;
    __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), low = _mm_set1_epi8(0x20);
    __asm__("" : "+x"(quote), "+x"(slash), "+x"(low));  /* as in dc_string_long_avx2 */
    while (pos + 64 <= end) {
        const unsigned char *at = s + pos;
        __m128i a = _mm_loadu_si128((const __m128i *)at), b = _mm_loadu_si128((const __m128i *)(at + 16));
        __m128i c2 = _mm_loadu_si128((const __m128i *)(at + 32)), d = _mm_loadu_si128((const __m128i *)(at + 48));
        __m128i ba = _mm_cmpeq_epi8(a, slash), bb = _mm_cmpeq_epi8(b, slash), bc = _mm_cmpeq_epi8(c2, slash), bd = _mm_cmpeq_epi8(d, slash);
        __m128i la = _mm_cmplt_epi8(a, low), lb = _mm_cmplt_epi8(b, low), lc = _mm_cmplt_epi8(c2, low), ld = _mm_cmplt_epi8(d, low);
        __m128i fa = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(a, quote), ba), la), fb = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, quote), bb), lb);
        __m128i fc = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(c2, quote), bc), lc), fd = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(d, quote), bd), ld);
        if (!(_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(fa, fb), _mm_or_si128(fc, fd))) | open)) {
            pos += 64;
            continue;
        }
        bits = (uint64_t)(unsigned int)_mm_movemask_epi8(fa) | ((uint64_t)(unsigned int)_mm_movemask_epi8(fb) << 16)
            | ((uint64_t)(unsigned int)_mm_movemask_epi8(fc) << 32) | ((uint64_t)(unsigned int)_mm_movemask_epi8(fd) << 48);
        slashes = (uint64_t)(unsigned int)_mm_movemask_epi8(ba) | ((uint64_t)(unsigned int)_mm_movemask_epi8(bb) << 16)
            | ((uint64_t)(unsigned int)_mm_movemask_epi8(bc) << 32) | ((uint64_t)(unsigned int)_mm_movemask_epi8(bd) << 48);
        if (!_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(la, lb), _mm_or_si128(lc, ld)))) {  /* as in dc_string_long_avx2 */
            read = dc_block(s, pos, end, bits, slashes, 0, 0, 0, 0, &open, escaped);
        } else {
            lows = (uint64_t)(unsigned int)_mm_movemask_epi8(la) | ((uint64_t)(unsigned int)_mm_movemask_epi8(lb) << 16)
                | ((uint64_t)(unsigned int)_mm_movemask_epi8(lc) << 32) | ((uint64_t)(unsigned int)_mm_movemask_epi8(ld) << 48);
            highs = (uint64_t)(unsigned int)_mm_movemask_epi8(a) | ((uint64_t)(unsigned int)_mm_movemask_epi8(b) << 16)
                | ((uint64_t)(unsigned int)_mm_movemask_epi8(c2) << 32) | ((uint64_t)(unsigned int)_mm_movemask_epi8(d) << 48);
            read = dc_block(s, pos, end, bits, slashes, lows, highs, 0, 0, &open, escaped);
        }
        if (!dc_block_next(read, &pos)) return read;
    }
    return dc_string_tail(s, pos - (size_t)open, end, escaped);  /* an open escape: from its backslash */
}

#if DC_AVX2
#include <immintrin.h>
/* Which of the 32 bytes are none of a short escape's letters (/ b f n r t): each byte's two
 * nibbles looked up in a table of the letters' high and low nibbles, as simdjson classifies. */
__attribute__((target("avx2,bmi,bmi2"))) static DC_ALWAYS_INLINE unsigned int dc_strange32(__m256i chunk) {
    const __m256i low_nibbles = _mm256_setr_epi8(0, 0, 6, 0, 4, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 1,
                                                 0, 0, 6, 0, 4, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 1);
    const __m256i high_nibbles = _mm256_setr_epi8(0, 0, 1, 0, 0, 0, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0,
                                                  0, 0, 1, 0, 0, 0, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    __m256i kinds = _mm256_and_si256(_mm256_shuffle_epi8(low_nibbles, _mm256_and_si256(chunk, nibble)),
                                     _mm256_shuffle_epi8(high_nibbles, _mm256_and_si256(_mm256_srli_epi16(chunk, 4), nibble)));
    return (unsigned int)_mm256_movemask_epi8(_mm256_cmpeq_epi8(kinds, _mm256_setzero_si256()));
}

/* The same, 32 bytes a read, where the CPU has AVX2 (dc_string_long asks once): half the
 * compares and masks a block, which is most of a long escaped string's cost. */
__attribute__((target("avx2,bmi,bmi2"))) static DC_NOINLINE size_t dc_string_long_avx2(const unsigned char *s, size_t pos, size_t end, int *escaped) {
    size_t read;
    uint64_t open = 0, lows, highs, bits, slashes, strange;
    __m256i quote = _mm256_set1_epi8('"'), slash = _mm256_set1_epi8('\\'), low = _mm256_set1_epi8(0x20);
    /* Opaque to GCC from here: it would otherwise rebuild them after each flagged block, and test
     * the low bytes with two instructions instead of one. */
    __asm__("" : "+x"(quote), "+x"(slash), "+x"(low));
    while (pos + 64 <= end) {
        const unsigned char *at = s + pos;
        __m256i a = _mm256_loadu_si256((const __m256i *)at), b = _mm256_loadu_si256((const __m256i *)(at + 32));
        __m256i ba = _mm256_cmpeq_epi8(a, slash), bb = _mm256_cmpeq_epi8(b, slash);
        __m256i la = _mm256_cmpgt_epi8(low, a), lb = _mm256_cmpgt_epi8(low, b);
        __m256i fa = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(a, quote), ba), la);
        __m256i fb = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(b, quote), bb), lb);
        if (_mm256_testz_si256(_mm256_or_si256(fa, fb), _mm256_or_si256(fa, fb)) && !open) {
            pos += 64;
            continue;
        }
        bits = (uint64_t)(unsigned int)_mm256_movemask_epi8(fa) | ((uint64_t)(unsigned int)_mm256_movemask_epi8(fb) << 32);
        slashes = (uint64_t)(unsigned int)_mm256_movemask_epi8(ba) | ((uint64_t)(unsigned int)_mm256_movemask_epi8(bb) << 32);
        strange = (uint64_t)(unsigned int)dc_strange32(a) | ((uint64_t)(unsigned int)dc_strange32(b) << 32);
        if (_mm256_testz_si256(_mm256_or_si256(la, lb), _mm256_or_si256(la, lb))) {
            /* no control or non-ASCII byte: a build of dc_block with no test for them (issue 44:
             * the tests cost escaped ASCII text 3.7% more instructions than at 43bf8bf) */
            read = dc_block(s, pos, end, bits, slashes, 0, 0, strange, 1, &open, escaped);
        } else {
            lows = (uint64_t)(unsigned int)_mm256_movemask_epi8(la) | ((uint64_t)(unsigned int)_mm256_movemask_epi8(lb) << 32);
            highs = (uint64_t)(unsigned int)_mm256_movemask_epi8(a) | ((uint64_t)(unsigned int)_mm256_movemask_epi8(b) << 32);
            read = dc_block(s, pos, end, bits, slashes, lows, highs, strange, 1, &open, escaped);
        }
        if (!dc_block_next(read, &pos)) return read;
    }
    return dc_string_tail(s, pos - (size_t)open, end, escaped);
}

#if DC_AVX512
/* The same, one 64-byte read a block where the CPU has AVX-512 (F and BW): the compares give the
 * block's masks as they are, with no movemask and no shift to join them. */
__attribute__((target("avx512f,avx512bw,bmi,bmi2"))) static DC_NOINLINE size_t dc_string_long_avx512(const unsigned char *s, size_t pos, size_t end, int *escaped) {
    size_t read;
    uint64_t open = 0, slashes, bits, lows;
    const __m512i quote = _mm512_set1_epi8('"'), slash = _mm512_set1_epi8('\\'), low = _mm512_set1_epi8(0x20);
    const __m512i low_nibbles = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 6, 0, 4, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 1));
    const __m512i high_nibbles = _mm512_broadcast_i32x4(_mm_setr_epi8(0, 0, 1, 0, 0, 0, 2, 4, 0, 0, 0, 0, 0, 0, 0, 0));
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    while (pos + 64 <= end) {
        __m512i block = _mm512_loadu_si512((const void *)(s + pos)), kinds;
        slashes = _mm512_cmpeq_epi8_mask(block, slash);
        lows = _mm512_cmplt_epi8_mask(block, low);
        bits = _mm512_cmpeq_epi8_mask(block, quote) | slashes | lows;
        if (!(bits | open)) {
            pos += 64;
            continue;
        }
        /* the bytes that are none of a short escape's letters, as dc_strange32 finds them */
        kinds = _mm512_and_si512(_mm512_shuffle_epi8(low_nibbles, _mm512_and_si512(block, nibble)),
                                 _mm512_shuffle_epi8(high_nibbles, _mm512_and_si512(_mm512_srli_epi16(block, 4), nibble)));
        if (!lows) {  /* as in dc_string_long_avx2: no test for control or non-ASCII bytes */
            read = dc_block(s, pos, end, bits, slashes, 0, 0, _mm512_cmpeq_epi8_mask(kinds, _mm512_setzero_si512()), 1,
                            &open, escaped);
        } else {
            read = dc_block(s, pos, end, bits, slashes, lows, _mm512_movepi8_mask(block),
                            _mm512_cmpeq_epi8_mask(kinds, _mm512_setzero_si512()), 1, &open, escaped);
        }
        if (!dc_block_next(read, &pos)) return read;
    }
    return dc_string_tail(s, pos - (size_t)open, end, escaped);
}
#endif

enum { DC_READER_SSE2 = 0, DC_READER_AVX2 = 1, DC_READER_AVX512 = 2 };
/* Unknown (-1), then the long-string reader used; a race writes the same value. One for the
 * module: the relay's scan and the lazy reader's (_relayscan.c, _lazyscan.c, translation units of
 * their own) read the one the module's own code defines, so _long_strings_reader chooses for all. */
#if defined(DIVERGE_CODEC_RELAY_SCAN) || defined(DIVERGE_CODEC_LAZY_SCAN)
extern DC_HIDDEN int dc_reader;
#else
DC_HIDDEN int dc_reader = -1;
#endif
static inline int dc_long_strings_reader(int wanted);
#endif

static DC_NOINLINE size_t dc_string_long(const unsigned char *s, size_t pos, size_t end, int *escaped) {
#if DC_AVX2
    if (dc_reader < 0) dc_long_strings_reader(-1);
#if DC_AVX512
    if (dc_reader == DC_READER_AVX512) return dc_string_long_avx512(s, pos, end, escaped);
#endif
    if (dc_reader == DC_READER_AVX2) return dc_string_long_avx2(s, pos, end, escaped);
#endif
    return dc_string_long_sse2(s, pos, end, escaped);
}
#endif

/* The most capable long-string reader this build and this CPU (and its OS) offer: 0 SSE2, 1 AVX2,
 * 2 AVX-512. (No SSE2 at all reads 0 too: the plain reader.) */
static inline int dc_long_strings_best(void) {
    int best = 0;
#if DC_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2")) best = 1;
#if DC_AVX512
    if (best && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) best = 2;
#endif
#endif
    return best;
}

/* Which long-string reader is used: wanted -1 asks (the first time: the best there is, capped by
 * the environment's DIVERGE_CODEC_SIMD, sse2 / avx2 / avx512), 0, 1 or 2 chooses (capped by what
 * there is); the answer is the reader chosen. The tests run each. */
static inline int dc_long_strings_reader(int wanted) {
#if DC_AVX2
    int best = dc_long_strings_best();
    const char *asked;
    if (wanted < 0 && dc_reader >= 0) return dc_reader;
    if (wanted < 0) {
        asked = getenv("DIVERGE_CODEC_SIMD");
        wanted = !asked ? 2 : !strcmp(asked, "sse2") ? 0 : !strcmp(asked, "avx2") ? 1 : 2;
    }
    dc_reader = wanted < best ? wanted : best;
    return dc_reader;
#else
    (void)wanted;
    return 0;
#endif
}

/* The string whose opening quote is at s[pos]: the position after its closing quote, or 0.
 * *escaped says whether it holds a backslash. window is the document's (or NULL: none): past its
 * first sixteen bytes, the string is read through it; the bytes must not change while it is in use. */
static DC_ALWAYS_INLINE size_t dc_string(const unsigned char *s, size_t pos, size_t end, int *escaped, dc_window *window) {
    uint64_t word;
    unsigned char c;
    pos++;
#if DC_SSE2
    if (pos + 16 <= end) {  /* a short string ends in its first sixteen bytes */
        unsigned int head = dc_special16(s + pos);
        if (head) {
            pos += (size_t)__builtin_ctz(head);
            goto look;
        }
        pos += 16;
        if (!window && pos + 16 <= end) {  /* without a window, past 32 bytes a string is read out of line */
            head = dc_special16(s + pos);
            if (head) {
                pos += (size_t)__builtin_ctz(head);
                goto look;
            }
            pos += 16;
            if (pos + 64 <= end) return dc_string_long(s, pos, end, escaped);  /* else no block to read: no call */
        }
    }
#endif
    for (;;) {
#if DC_SSE2
        size_t offset = window ? pos - window->start : 0;
        if (window && (offset < 128 ? window->start + 256 <= end : (pos & ~(size_t)63) + 256 <= end)) {
            uint64_t ahead, first, second;
            int slides;
            if (offset >= 128) {  /* the first use, or one far past the last: read the blocks at pos */
                window->start = pos & ~(size_t)63;
                window->bits[0] = dc_special64(s + window->start);
                window->bits[1] = dc_special64(s + window->start + 64);
                window->bits[2] = dc_special64(s + window->start + 128);
                offset = pos - window->start;
            }
            /* The fourth block is read every time (its address is known before pos is), and
             * kept only where pos has left the first. */
            ahead = dc_special64(s + window->start + 192);
            slides = offset >= 64;
            window->start = slides ? window->start + 64 : window->start;
            first = slides ? window->bits[1] : window->bits[0];
            second = slides ? window->bits[2] : window->bits[1];
            window->bits[2] = slides ? ahead : window->bits[2];
            window->bits[0] = first;
            window->bits[1] = second;
            offset = slides ? offset - 64 : offset;
            word = (first >> offset) | ((second << 1) << (63 - offset));  /* the 64 bytes from pos */
            if (!word) {
                pos += 64;
                continue;
            }
            pos += (size_t)__builtin_ctzll(word);
        } else
        if (pos + 16 <= end) {  /* no window, or near the end: sixteen bytes at once */
            unsigned int mask = dc_special16(s + pos);
            if (!mask) {
                pos += 16;
                continue;
            }
            pos += (size_t)__builtin_ctz(mask);
        } else
#endif
        if (pos + 8 <= end) {
            memcpy(&word, s + pos, 8);
            word = dc_special(word);
            if (!word) {
                pos += 8;
                continue;
            }
#if DC_FIRST_BYTE_KNOWN
            pos += (size_t)DC_FIRST_FLAGGED(word);  /* the lowest flag marks a byte that needs the look */
#endif
        }
#if DC_SSE2
look:  /* s[pos] needs a look */
#endif
        c = s[pos];
        if (c == '"') return pos + 1;
        if (c < 0x20) return 0;  /* a control character, or the NUL past the end */
        pos = dc_string_other(s, pos, end, escaped);
        if (!pos) return 0;
#if DC_SSE2
        /* After an escape, the rest goes to the block reader, which reads runs of escapes from a
         * block's bits: text with an escape every few bytes never has the 32 clean bytes that send
         * a string there, and the 16-byte loop would start a fresh load after each one. */
        if (c == '\\' && !window && pos + 64 <= end) return dc_string_long(s, pos, end, escaped);
#endif
    }
}

/* For decode's builder: the UTF-8 of a string the scan accepted, whose text starts at s[pos], into
 * out, which has room for as many bytes as are left in the document (no escape's UTF-8 is longer
 * than the escape); its length, *close set to the closing quote's position. */
static size_t dc_unescape(const unsigned char *s, size_t pos, unsigned char *out, size_t *close) {
    size_t n = 0;
    unsigned int unit;
    unsigned char c;
    for (;;) {
        c = s[pos];
        if (c == '"') break;
        if (c != '\\') {
            out[n++] = c;
            pos++;
            continue;
        }
        c = s[pos + 1];
        pos += 2;
        switch (c) {
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u':
            unit = (unsigned int)dc_hex4(s + pos);
            pos += 4;
            if (unit >= 0xD800 && unit <= 0xDBFF) {  /* the scan checked that a low surrogate follows */
                unit = 0x10000 + ((unit - 0xD800) << 10) + ((unsigned int)dc_hex4(s + pos + 2) - 0xDC00);
                pos += 6;
            }
            if (unit < 0x80) {
                out[n++] = (unsigned char)unit;
            } else if (unit < 0x800) {
                out[n++] = (unsigned char)(0xC0 | unit >> 6);
                out[n++] = (unsigned char)(0x80 | (unit & 0x3F));
            } else if (unit < 0x10000) {
                out[n++] = (unsigned char)(0xE0 | unit >> 12);
                out[n++] = (unsigned char)(0x80 | ((unit >> 6) & 0x3F));
                out[n++] = (unsigned char)(0x80 | (unit & 0x3F));
            } else {
                out[n++] = (unsigned char)(0xF0 | unit >> 18);
                out[n++] = (unsigned char)(0x80 | ((unit >> 12) & 0x3F));
                out[n++] = (unsigned char)(0x80 | ((unit >> 6) & 0x3F));
                out[n++] = (unsigned char)(0x80 | (unit & 0x3F));
            }
            break;
        default: out[n++] = c;  /* a quote, a backslash or a slash */
        }
    }
    *close = pos;
    return n;
}

/* The decoded text of a valid string with escapes, its opening quote at s[pos], into key. */
static void dc_key_decode(const unsigned char *s, size_t pos, dc_key *key) {
    unsigned char c;
    key->len = 0;
    for (pos++; (c = s[pos]) != '"';) {
        if (c != '\\') {
            dc_key_add(key, c);
            pos++;
        } else if (s[pos + 1] == 'u') {
            dc_key_add(key, (unsigned int)dc_hex4(s + pos + 2));  /* a surrogate pair: two units >= 0x80 */
            pos += 6;
        } else {
            c = s[pos + 1];
            dc_key_add(key, (c == '"' || c == '\\' || c == '/') ? c : 0);
            pos += 2;
        }
    }
}

/* The number at s[pos]: the position after it, or 0 if orjson refuses it. */
static size_t dc_number(const unsigned char *s, size_t pos) {
    size_t int_start, int_end, frac_start = 0, frac_end = 0, first, i, t;
    long long exponent = 0, lead;
    int negative_exponent = 0;
    unsigned char digit;
    if (s[pos] == '-') pos++;
    int_start = pos;
    if (s[pos] == '0') {
        pos++;
    } else if (s[pos] >= '1' && s[pos] <= '9') {
        while (dc_digit(s[pos])) pos++;
    } else {
        return 0;
    }
    int_end = pos;
    if (s[pos] == '.') {
        frac_start = ++pos;
        if (!dc_digit(s[pos])) return 0;
        while (dc_digit(s[pos])) pos++;
        frac_end = pos;
    }
    if (s[pos] == 'e' || s[pos] == 'E') {
        pos++;
        if (s[pos] == '+' || s[pos] == '-') negative_exponent = s[pos++] == '-';
        if (!dc_digit(s[pos])) return 0;
        while (dc_digit(s[pos])) {
            if (exponent < 1000000000) exponent = exponent * 10 + (s[pos] - '0');
            pos++;
        }
        if (negative_exponent) exponent = -exponent;
    }
    if (exponent == 0 && int_end - int_start <= 308) return pos;  /* below 10**308 */
    /* The first significant digit, and the power of ten it stands for. */
    if (s[int_start] != '0') {
        first = int_start;
        lead = (long long)(int_end - int_start) - 1;
    } else {
        for (first = frac_start; first < frac_end && s[first] == '0'; first++) {}
        if (first >= frac_end) return pos;  /* zero, whatever the exponent */
        lead = -(long long)(first - frac_start) - 1;
    }
    lead += exponent;
    if (lead <= 307) return pos;
    if (lead >= 309) return 0;
    /* Between 10**308 and 10**309: compare the digits with the least that rounds to infinity. */
    i = first;
    for (t = 0; t < sizeof(DC_INFINITY_FROM) - 1; t++) {
        if (i == int_end && frac_start) i = frac_start;  /* over the point */
        digit = (i < int_end || (frac_start && i >= frac_start && i < frac_end)) ? s[i++] : '0';
        if (digit != (unsigned char)DC_INFINITY_FROM[t]) return digit < (unsigned char)DC_INFINITY_FROM[t] ? pos : 0;
    }
    return 0;  /* equal to it in every digit it has: at least it */
}

/* The numbers of an array that follow the value ending at s[pos], where a comma stands with a digit
 * or a minus after it: the position after the last number of the run (the scan reads what follows),
 * or 0 if orjson refuses one. A long series (metrics, samples) would otherwise pay a value's
 * dispatch and a separator's bookkeeping per number. With SSE2 the numbers are read from 64-byte
 * windows (below); near the document's end, a number from one 16-byte compare: its digits, a point,
 * more digits. An exponent, or digits that run past the sixteen, take the number again through
 * dc_number, which knows where infinity starts. */
#if DC_SSE2
/* The 64 bytes at at as a number run reads them: stops (every byte that is no digit, and the last,
 * whose class the window cannot finish) and minus signs, bit i for at[i]. */
static DC_ALWAYS_INLINE void dc_number_masks(const unsigned char *at, uint64_t *stops, uint64_t *minus) {
    uint64_t digits = 0, dashes = 0;
    int i;
    for (i = 0; i < 64; i += 16) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)(at + i));
        digits |= (uint64_t)(unsigned int)_mm_movemask_epi8(_mm_and_si128(
            _mm_cmpgt_epi8(chunk, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(chunk, _mm_set1_epi8('9' + 1)))) << i;
        dashes |= (uint64_t)(unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, _mm_set1_epi8('-'))) << i;
    }
    *stops = ~digits | ((uint64_t)1 << 63);
    *minus = dashes;
}
#endif

/* The number after the comma at s[pos]: the position after it, or 0 if orjson refuses it. With SSE2,
 * where 16 bytes follow, one compare finds its digits, a point and more digits; an exponent, or digits
 * that run past the sixteen, take it again through dc_number, which knows where infinity starts. */
static DC_ALWAYS_INLINE size_t dc_number_after(const unsigned char *s, size_t pos, size_t end) {
    size_t start = ++pos;
#if DC_SSE2
    unsigned int other, whole, fraction;
    pos += s[pos] == '-';
    if (pos + 16 <= end) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)(s + pos));
        other = ~(unsigned int)_mm_movemask_epi8(_mm_and_si128(
            _mm_cmpgt_epi8(chunk, _mm_set1_epi8('0' - 1)), _mm_cmplt_epi8(chunk, _mm_set1_epi8('9' + 1))));
        whole = (unsigned int)__builtin_ctz(other);  /* the integer's digits; bit 16 on stops it */
        if (!whole || (whole > 1 && s[pos] == '0')) return 0;  /* none, or a leading zero */
        if (s[pos + whole] == '.') {
            /* a fraction that starts past the sixteen: 16, so that dc_number reads the number */
            fraction = whole < 15 ? (unsigned int)__builtin_ctz(other >> (whole + 1)) : 16;
            if (!fraction) return 0;
            whole += 1 + fraction;
        }
        pos += whole;
        if (whole < 16 && s[pos] != 'e' && s[pos] != 'E') return pos;
    }
#else
    (void)end;
#endif
    return dc_number(s, start);
}

static DC_ALWAYS_INLINE size_t dc_number_run_one(const unsigned char *s, size_t pos, size_t end) {
#if DC_SSE2
    size_t base, i, j, digits;
    uint64_t stops, minus;
    /* The first number alone, as a run of one is read: where it is one (the value of a pair, [t, v],
     * a point of a metric series), setting up a window would cost more than it reads (issue 44: a
     * series of pairs read 1.28x slower with it). */
    pos = dc_number_after(s, pos, end);
    if (!pos) return 0;
    if (s[pos] != ',' || !(dc_digit(s[pos + 1]) || s[pos + 1] == '-')) return pos;
    /* Where 64 bytes follow the comma: the numbers in them read from one window's bits, a shift and a
     * count for the integer's digits and another for the fraction's. No number's start waits for a
     * load after the last one's end, only for those bits: a long series is read at the pace of the
     * counts (issue 35: numbers 64 KB 0.40x -> 0.24x orjson.loads in CPU time). A number that may run
     * past the window's 63rd byte starts a window of its own; one with an exponent, or one that fills
     * a window, goes to dc_number. */
    while (pos + 65 <= end) {  /* s[pos] a comma, a digit or a minus after it */
        base = pos + 1;
        dc_number_masks(s + base, &stops, &minus);
        for (i = 0;;) {  /* the number at s[base + i]; i <= 60 */
            j = i + (size_t)((minus >> i) & 1);
            digits = (size_t)__builtin_ctzll(stops >> j);
            if (!digits || (digits > 1 && s[base + j] == '0')) return 0;  /* none, or a leading zero */
            j += digits;
            if (j < 62 && s[base + j] == '.') {
                digits = (size_t)__builtin_ctzll(stops >> (j + 1));
                if (!digits) return 0;
                j += 1 + digits;
            }
            if (j >= 62 || s[base + j] == 'e' || s[base + j] == 'E') break;
            if (s[base + j] != ',' || !(dc_digit(s[base + j + 1]) || s[base + j + 1] == '-')) return base + j;
            i = j + 1;
            if (i > 60) break;
        }
        if (i) {
            pos = base + i - 1;  /* the comma before the number: a window from it */
            continue;
        }
        pos = dc_number(s, base);
        if (!pos) return 0;
        if (s[pos] != ',' || !(dc_digit(s[pos + 1]) || s[pos + 1] == '-')) return pos;
    }
#endif
    do {
        pos = dc_number_after(s, pos, end);
        if (!pos) return 0;
    } while (s[pos] == ',' && (dc_digit(s[pos + 1]) || s[pos + 1] == '-'));
    return pos;
}

/* dc_number, with the numbers a message holds read inline: an integer, a fraction, an exponent of up
 * to four digits where the value stays below 10**308 (k integer digits and an exponent e: below
 * 10**(k + e)); the same answer, without the call and the bookkeeping that a number near infinity
 * needs (issue 35: a fraction or an exponent went to dc_number every time). */
static DC_ALWAYS_INLINE size_t dc_number_quick(const unsigned char *s, size_t pos) {
    size_t at = pos + (s[pos] == '-'), whole, digits;
    int exponent = 0, negative;
    if (s[at] == '0') {
        at++;
    } else if (s[at] >= '1' && s[at] <= '9') {
        at++;
        while (dc_digit(s[at])) at++;
    } else {
        return 0;
    }
    whole = at - pos - (s[pos] == '-');
    if (whole > 300) return dc_number(s, pos);
    if (s[at] == '.') {
        if (!dc_digit(s[++at])) return 0;
        while (dc_digit(s[at])) at++;
    }
    if (s[at] != 'e' && s[at] != 'E') return at;
    negative = s[++at] == '-';
    at += s[at] == '-' || s[at] == '+';
    for (digits = 0; digits < 4 && dc_digit(s[at]); digits++) exponent = exponent * 10 + (s[at++] - '0');
    if (!digits) return 0;
    if (dc_digit(s[at]) || (!negative && whole + (size_t)exponent > 308)) return dc_number(s, pos);
    return at;
}

/* A run (dc_number_run_one), and where its array closes and a sibling array of numbers opens after it
 * (``],[`` and a number, in an array: ``pairs``), the sibling's numbers too, and so on: the position
 * after the last number read, inside the last sibling, whose closing bracket the scan meets as it
 * would have met the first array's. The siblings stand at the first array's depth, so the stack is
 * as the scan would have left it. A metric series' [t, v] pairs are read without returning to the
 * scan between them (issue 44: a 64 KB series 771,718 -> 443,972 instructions). */
static DC_NOINLINE size_t dc_number_run(const unsigned char *s, size_t pos, size_t end, int pairs) {
    for (;;) {
        pos = dc_number_run_one(s, pos, end);
        if (!pos || !pairs || s[pos] != ']' || s[pos + 1] != ',' || s[pos + 2] != '['
            || !(dc_digit(s[pos + 3]) || s[pos + 3] == '-')) return pos;
        pos = dc_number_quick(s, pos + 3);  /* the sibling's first number, as the scan reads a value */
        if (!pos || s[pos] != ',' || !(dc_digit(s[pos + 1]) || s[pos + 1] == '-')) return pos;
    }
}

/* A literal (true, false, null) at s[pos]: the position after it, or 0. */
static inline size_t dc_literal(const unsigned char *s, size_t pos, const char *word, size_t len) {
    size_t i;
    for (i = 0; i < len; i++) {
        if (s[pos + i] != (unsigned char)word[i]) return 0;
    }
    return pos + len;
}

static inline int dc_kind(unsigned char c) {
    return c == '"' ? DC_STRING : c == '{' ? DC_OBJECT : c == 'n' ? DC_NULL : DC_OTHER;
}

/* text (len bytes) is name (name_len, a constant from 2 to 8): two loads of 2 or 4 bytes from each
 * end, which may overlap. GCC calls memcmp for 5, 6 or 7 bytes: this is two compares. */
static DC_ALWAYS_INLINE int dc_name_is(const unsigned char *text, size_t len, const char *name, size_t name_len) {
    uint32_t a, b, c, d;
    uint16_t e, f, g, h;
    if (len != name_len) return 0;
    if (name_len >= 4) {
        memcpy(&a, text, 4), memcpy(&b, name, 4), memcpy(&c, text + name_len - 4, 4), memcpy(&d, name + name_len - 4, 4);
        return a == b && c == d;
    }
    memcpy(&e, text, 2), memcpy(&f, name, 2), memcpy(&g, text + name_len - 2, 2), memcpy(&h, name + name_len - 2, 2);
    return e == f && g == h;
}

/* Inlined into the scan: called for every member it looks at, by length first (most keys are none of these). */
static DC_ALWAYS_INLINE int dc_role_of(const unsigned char *text, size_t len, int in_params) {
    if (in_params) return dc_name_is(text, len, "_meta", 5) ? DC_ROLE_META : DC_ROLE_OTHER;
    switch (len) {
    case 2: return dc_name_is(text, len, "id", 2) ? DC_ROLE_ID : DC_ROLE_OTHER;
    case 6: return dc_name_is(text, len, "method", 6) ? DC_ROLE_METHOD
                 : dc_name_is(text, len, "params", 6) ? DC_ROLE_PARAMS : DC_ROLE_OTHER;
    case 7: return dc_name_is(text, len, "jsonrpc", 7) ? DC_ROLE_ENVELOPE : DC_ROLE_OTHER;
    default: return DC_ROLE_OTHER;
    }
}

static int dc_role(const dc_key *key, int in_params) {
    return key->len <= sizeof(key->text) ? dc_role_of(key->text, key->len, in_params) : DC_ROLE_OTHER;
}

/* The cuts that remove every top-level "jsonrpc" member, fed one member at a time. A run of
 * such members is removed from its first key to the next kept member's key; a run at the end,
 * from the end of the last kept value before it (its comma included); a run that is every
 * member, from its first key to its last value's end. Every other byte stays. */
typedef struct {
    size_t run_start, run_before, last_end;
    int run_open, overflow;
} dc_cutter;

/* The relay's memo of a line's opening bytes (issue 44): a server that floods sends the same
 * method again and again, so consecutive lines open alike, up to and including the top-level
 * params object's '{' (the checkpoint). The scan's state there is a function of those bytes alone
 * (no read before it looks past it: see dc_scan), so a line that opens with the same len bytes
 * resumes there. It is recorded only by a line that opens as the line before it up to that line's
 * method's end (method_end, which ChunkFramer keeps): lines that never repeat pay one memcmp, not
 * a record each. One in each ChunkFramer (one framer reads one stream, never two calls at once). */
#define DC_MEMO_PREFIX 96
/* A line's scalar values (strings and numbers, not keys): where each lies in it. */
#define DC_MEMO_TOKENS 48
#define DC_SHAPES 16    /* a power of two: the ring's positions wrap by a mask */
#define DC_WALKS 4      /* the shapes a line is walked against, at most (the method's bytes tell the rest apart) */
#define DC_MISSES 32    /* lines no shape held, in a row, before lines are scanned with none (a line walked in vain counts 4) */
#define DC_REST 32      /* those lines, at first; doubled each time, up to DC_REST << 5 */
typedef struct {
    unsigned short start, end;   /* a line under DC_WINDOW_FROM bytes: its offsets fit */
} dc_token;
/* A line the relay's scan read where it lies in its chunk, a notification whose values all fit in
 * tokens: a later line of the same chunk that differs from it only inside those values is the same
 * notification with other values (dc_relay_delta, _relayscan.c). */
typedef struct {
    const char *line;
    size_t size, ntokens;
    dc_splice out;
    dc_token tokens[DC_MEMO_TOKENS];
} dc_shape;
typedef struct {
    size_t len;                  /* the prefix's bytes, up to the checkpoint; 0 where there is none */
    size_t method_end;           /* the line before's method's end (ChunkFramer's); 0 for none */
    size_t member_start;         /* the scan's state at the checkpoint that later steps read, and out's */
    int has_id, method_kind;     /* (value_start and escaped are read only with fields, or set again) */
    dc_cutter cutter;
    dc_splice out;               /* out as it was at the checkpoint */
    unsigned char prefix[DC_MEMO_PREFIX];
    /* The last nshapes notifications of this chunk scanned in full (a server sends a few shapes by
     * turns: progress, log lines, list changes), a ring whose newest is at head: for each, its index
     * in shapes, its method's end and the 8 bytes before it (what tells shapes apart, most often);
     * spare is the shape the next scan records in. */
    unsigned long chunk;         /* ChunkFramer counts its chunks */
    unsigned long shapes_chunk;  /* the chunk the shapes lie in: another's are gone */
    size_t nshapes;
    /* A stream whose lines never repeat: the lines no shape held since one last did (misses, a line
     * walked in vain counting 4), and the lines left to scan with no shapes (rest), doubled (backoff)
     * at each DC_MISSES until a shape holds a line. */
    unsigned int misses, rest, backoff;
    unsigned int head, spare;
    unsigned char order[DC_SHAPES];
    unsigned short method_ends[DC_SHAPES];
    uint64_t methods[DC_SHAPES];
    dc_shape shapes[DC_SHAPES + 1];
    dc_token *tokens;            /* where the scan records the line's values (the one being read's) */
    size_t ntokens;              /* how many the scan read (above DC_MEMO_TOKENS: too many) */
} dc_memo;

static void dc_cut(dc_splice *out, dc_cutter *cutter, size_t start, size_t end) {
    if (out->ncuts == DC_MAX_CUTS) {
        cutter->overflow = 1;
        return;
    }
    out->cuts[out->ncuts][0] = start;
    out->cuts[out->ncuts][1] = end;
    out->ncuts++;
    out->removed += end - start;
}

static inline void dc_member(dc_splice *out, dc_cutter *cutter, size_t start, size_t end, int envelope) {
    if (envelope && !cutter->run_open) {
        cutter->run_open = 1;
        cutter->run_start = start;
        cutter->run_before = cutter->last_end;
    } else if (!envelope && cutter->run_open) {
        cutter->run_open = 0;
        dc_cut(out, cutter, cutter->run_start, start);
    }
    cutter->last_end = end;
}

#ifdef DIVERGE_CODEC_RELAY_SCAN
/* A splice's fields and its cuts so far (at most one or two before a params object opens, not all
 * DC_MAX_CUTS): the memo's copy of out, and back. */
static DC_ALWAYS_INLINE void dc_splice_copy(dc_splice *to, const dc_splice *from) {
    size_t index;
    to->start = from->start;
    to->end = from->end;
    to->ncuts = from->ncuts;
    to->removed = from->removed;
    to->id_start = from->id_start;
    to->id_end = from->id_end;
    to->method_start = from->method_start;
    to->method_end = from->method_end;
    for (index = 0; index < from->ncuts; index++) {
        to->cuts[index][0] = from->cuts[index][0];
        to->cuts[index][1] = from->cuts[index][1];
    }
}

/* Whitespace in a line the relay split at its newline: no newline is inside it, so the one after
 * it (or the NUL) ends every token and every run of whitespace as the NUL does, and the relay
 * scans the line where it lies in the server's chunk instead of copying it. */
static inline int dc_space_in_line(unsigned char c) {
    return c <= ' ' && (c == ' ' || c == '\t' || c == '\r');
}
/* dc_scan's whitespace: in the relay's build, in_line (a constant) says whether data[size] is the
 * line's newline (or a NUL) with no newline before it. resume and record (constants, each a build
 * of its own, so the plain one compiles as without a memo): the scan starts at memo's checkpoint,
 * or records it in memo. */
#define DC_SPACE(c) (in_line ? dc_space_in_line(c) : dc_space(c))
#define DC_LINE_PARAM , int in_line, dc_memo *memo, int resume, int record
#else
#define DC_SPACE(c) dc_space(c)
#define DC_LINE_PARAM
#endif

#ifdef DIVERGE_CODEC_RELAY_SCAN
/* Whether a message opens with {"jsonrpc":"2.0", (17 bytes), as mcp's, fastmcp's and the
 * TypeScript SDK's requests and notifications do: the relay's scan then takes those bytes as read,
 * two compares for what would be a member's key, value and bookkeeping. The scan from the next key
 * on is the same either way. */
static DC_ALWAYS_INLINE int dc_envelope_first(const unsigned char *at) {
    static const unsigned char envelope[16] = {'{', '"', 'j', 's', 'o', 'n', 'r', 'p', 'c', '"', ':', '"', '2', '.', '0', '"'};
    uint64_t a, b, x, y;
    memcpy(&a, at, 8);
    memcpy(&b, at + 8, 8);
    memcpy(&x, envelope, 8);
    memcpy(&y, envelope + 8, 8);
    return a == x && b == y && at[16] == ',';
}
#endif

/* Read one JSON document (data[size] must be 0): a DC_ status. Without fields, a JSON-RPC message,
 * and for DC_NOTIFICATION the splice in out (for DC_NOT_NOTIFICATION, its id and method); with fields, a channel notification (an id is just a
 * member, no cut is made), its fields' spans in fields. windowed (a constant): its arrays' strings
 * share a dc_window (size must be at least DC_WINDOW_FROM). Inlined into each entry point below. */
static DC_ALWAYS_INLINE int dc_scan(const char *data, size_t size, dc_splice *out, dc_fields *fields, int windowed DC_LINE_PARAM) {
    const unsigned char *s = (const unsigned char *)data;
    unsigned char stack[DC_MAX_DEPTH + 1];  /* the open containers: '{' or '[' */
    size_t depth = 0, pos = 0, next, member_start = 0, key_start;
    int role = DC_ROLE_OTHER, in_params = 0, root_kind, has_id = 0, escaped = 0;
    int method_kind = DC_ABSENT, params_kind = DC_ABSENT, meta_kind = DC_ABSENT, kind;
    dc_cutter cutter = {0, DC_NONE, DC_NONE, 0, 0};
    dc_key key;
    dc_window window = {DC_WINDOW_EMPTY, {0, 0, 0}};
    dc_window *reader = windowed ? &window : NULL;
    int top_role = DC_ROLE_OTHER;  /* the role of the top-level member being read (fields only) */
    int key_escaped = 0;  /* whether that member's key has a backslash (fields only) */
    size_t key_end = 0;   /* the byte after that key's closing quote (fields only) */
    size_t value_start = 0;
#ifdef DIVERGE_CODEC_RELAY_SCAN
    int memo_taken = 0;  /* the memo was resumed from, or recorded, in this scan: once a scan */
    size_t ntokens = 0;  /* the values read (in_line with a memo), each in values while they fit */
    dc_token *values = in_line && memo ? memo->tokens : NULL;
#endif

    stack[0] = 0;  /* no container: what the array test after the root value reads */
#ifdef DIVERGE_CODEC_RELAY_SCAN
    if (resume) {  /* the caller found the memo's prefix at the line's start (size >= memo->len) */
        /* the state at the checkpoint, as the scan of these bytes left it: the constants first
         * (a top-level params object just opened), then what the bytes before it decided */
        stack[1] = stack[2] = '{';
        depth = 2;
        in_params = 1;
        role = DC_ROLE_PARAMS;
        root_kind = params_kind = DC_OBJECT;
        member_start = memo->member_start;
        has_id = memo->has_id;
        method_kind = memo->method_kind;
        cutter = memo->cutter;
        dc_splice_copy(out, &memo->out);
        pos = memo->len;
        memo_taken = 1;
        while (DC_SPACE(s[pos])) pos++;  /* what the scan does after a '{', at depth 2 in an object */
        if (s[pos] == '}') {
            pos++;
            goto closed;
        }
        goto key;
    }
#endif
    if (!fields) {  /* with fields, out is not read; its cuts are read up to ncuts */
        out->start = out->end = out->ncuts = out->removed = 0;
        out->id_start = out->id_end = out->method_start = out->method_end = 0;
    }
    if (fields) {
        fields->method_start = fields->method_end = fields->params_start = fields->params_end = DC_NONE;
        fields->method_escaped = 0;
        fields->nmembers = 0;
    }
    while (DC_SPACE(s[pos])) pos++;
    if (pos >= size) return DC_NOT_NOTIFICATION;  /* a blank line is no message */
    out->start = pos;
    root_kind = dc_kind(s[pos]);
#ifdef DIVERGE_CODEC_RELAY_SCAN
    if (size - pos >= 17 && dc_envelope_first(s + pos)) {  /* as the value: and key: steps below read them */
        stack[++depth] = '{';
        dc_member(out, &cutter, pos + 1, pos + 16, 1);
        pos += 17;
        goto key;
    }
#endif

value:
    switch (s[pos]) {
    case '{':
    case '[':
        if (depth == DC_MAX_DEPTH) return DC_INVALID;
        stack[++depth] = s[pos];
        /* role is PARAMS here only right after the top-level params key: its value is this object */
#ifdef DIVERGE_CODEC_RELAY_SCAN
        if (role == DC_ROLE_PARAMS && depth == 2 && s[pos] == '{') {
            in_params = 1;
            /* The checkpoint, after the '{': no read so far looked past it (a string's or a
             * number's result ends at its last byte, the envelope's compare reads 17 bytes from
             * out->start), so the state is a function of s[0..pos] alone. */
            if (record && !memo_taken && pos + 1 <= DC_MEMO_PREFIX && out->start + 17 <= pos + 1) {
                memo_taken = 1;
                memo->len = pos + 1;
                memcpy(memo->prefix, s, pos + 1);
                memo->member_start = member_start;
                memo->has_id = has_id;
                memo->method_kind = method_kind;
                memo->cutter = cutter;
                dc_splice_copy(&memo->out, out);
            }
        }
        pos++;
#else
        if (role == DC_ROLE_PARAMS && depth == 2 && s[pos] == '{') in_params = 1;
        pos++;
#endif
        while (DC_SPACE(s[pos])) pos++;
        if (s[pos] == (stack[depth] == '{' ? '}' : ']')) {
            pos++;
            goto closed;
        }
        if (stack[depth] == '{') goto key;
        goto value;
    case '"':
        next = dc_string(s, pos, size, &escaped, NULL);
#ifdef DIVERGE_CODEC_RELAY_SCAN
        if (values) {  /* the line's values, for the lines after it (dc_relay_delta) */
            if (ntokens < DC_MEMO_TOKENS) {
                values[ntokens].start = (unsigned short)pos;
                values[ntokens].end = (unsigned short)next;
            }
            ntokens++;
        }
#endif
        break;
    case 't':
        next = dc_literal(s, pos, "true", 4);
        break;
    case 'f':
        next = dc_literal(s, pos, "false", 5);
        break;
    case 'n':
        next = dc_literal(s, pos, "null", 4);
        break;
    default:
        next = dc_number_quick(s, pos);
#ifdef DIVERGE_CODEC_RELAY_SCAN
        if (values) {
            if (ntokens < DC_MEMO_TOKENS) {
                values[ntokens].start = (unsigned short)pos;
                values[ntokens].end = (unsigned short)next;
            }
            ntokens++;
        }
#endif
        break;
    }
    if (!next) return DC_INVALID;
    pos = next;
    goto after;

key:
#ifdef DIVERGE_CODEC_RELAY_SCAN  /* whitespace before a key, and before its colon, skipped where the expected byte is not there */
    if (s[pos] != '"') {
        while (DC_SPACE(s[pos])) pos++;
        if (s[pos] != '"') return DC_INVALID;
    }
#else
    if (s[pos] != '"') return DC_INVALID;
#endif
    escaped = 0;
    next = dc_string(s, pos, size, &escaped, NULL);
    if (!next) return DC_INVALID;
    key_start = pos;
    pos = next;
#ifdef DIVERGE_CODEC_RELAY_SCAN
    if (s[pos] != ':') {
        while (DC_SPACE(s[pos])) pos++;
        if (s[pos] != ':') return DC_INVALID;
    }
#else
    while (DC_SPACE(s[pos])) pos++;
    if (s[pos] != ':') return DC_INVALID;
#endif
    pos++;
    while (DC_SPACE(s[pos])) pos++;
    if (depth == 1 || (depth == 2 && in_params)) {  /* a member the channel's rules look at */
        if (escaped) {
            dc_key_decode(s, key_start, &key);
            role = dc_role(&key, depth == 2);
        } else {
            role = dc_role_of(s + key_start + 1, next - key_start - 2, depth == 2);
        }
        kind = dc_kind(s[pos]);  /* the value's kind, from its first byte (the scan checks the rest) */
        if (depth == 1) {
            member_start = key_start;
            value_start = pos;
            if (fields) {
                top_role = role;
                key_escaped = escaped;
                key_end = next;
            }
            has_id |= role == DC_ROLE_ID;
            if (role == DC_ROLE_METHOD) method_kind = kind;
            if (role == DC_ROLE_PARAMS) {
                params_kind = kind;
                meta_kind = DC_ABSENT;  /* the last params wins, and its _meta with it */
            }
        } else if (role == DC_ROLE_META) {
            meta_kind = kind;
        }
    }
    goto value;

closed:  /* the container at depth ended at pos */
    depth--;
    if (depth == 1) in_params = 0;

after:  /* a value ended at pos */
    if (windowed && stack[depth] == '[' && s[pos] == ',') {
        /* the next string or numbers of an array, the bulk of a long list: with none of a member's
         * bookkeeping (an array has none), a string read through the window */
        if (s[pos + 1] == '"') {
            next = dc_string(s, pos + 1, size, &escaped, reader);
            if (!next) return DC_INVALID;
            pos = next;
            goto after;
        }
        if (dc_digit(s[pos + 1]) || s[pos + 1] == '-') {
            next = dc_number_run(s, pos, size, stack[depth - 1] == '[');
            if (!next) return DC_INVALID;
            pos = next;
            goto after;
        }
    }
    if (depth == 1 && stack[1] == '{') {
        if (!fields) {
            dc_member(out, &cutter, member_start, pos, role == DC_ROLE_ENVELOPE);
            if (role == DC_ROLE_ID) {  /* what a message that is no notification is read by (ChunkFramer) */
                out->id_start = value_start;
                out->id_end = pos;
            } else if (role == DC_ROLE_METHOD) {
                out->method_start = value_start;
                out->method_end = pos;
            }
        } else {
            if (fields->nmembers < DC_MAX_MEMBERS) {
                dc_member_span *member = &fields->members[fields->nmembers];
                member->key = member_start;
                member->key_end = key_end;
                member->value = value_start;
                member->end = pos;
                member->key_escaped = key_escaped;
                member->value_escaped = escaped;
            }
            fields->nmembers++;
            if (top_role == DC_ROLE_METHOD) {
                fields->method_start = value_start;
                fields->method_end = pos;
                fields->method_escaped = escaped;
            } else if (top_role == DC_ROLE_PARAMS) {
                fields->params_start = value_start;
                fields->params_end = pos;
            }
        }
    }
    if (depth == 0) {
        out->end = pos;
        while (DC_SPACE(s[pos])) pos++;
        if (pos != size) return DC_INVALID;
        goto done;
    }
#ifdef DIVERGE_CODEC_RELAY_SCAN
between:  /* after a value in a container: compact JSON's next byte is tried before whitespace is skipped */
    if (s[pos] == ',') {
        pos++;
        if (stack[depth] == '{') goto key;
        while (DC_SPACE(s[pos])) pos++;
        goto value;
    }
    if (s[pos] == (stack[depth] == '{' ? '}' : ']')) {
        pos++;
        goto closed;
    }
    if (DC_SPACE(s[pos])) {
        do pos++; while (DC_SPACE(s[pos]));
        goto between;
    }
#else
    while (DC_SPACE(s[pos])) pos++;
    if (s[pos] == ',') {
        pos++;
        while (DC_SPACE(s[pos])) pos++;
        if (stack[depth] == '{') goto key;
        goto value;
    }
    if (s[pos] == (stack[depth] == '{' ? '}' : ']')) {
        pos++;
        goto closed;
    }
#endif
    return DC_INVALID;

done:
#ifdef DIVERGE_CODEC_RELAY_SCAN
    if (values) memo->ntokens = ntokens;
#endif
    if (root_kind != DC_OBJECT || (has_id && !fields)) return DC_NOT_NOTIFICATION;
    if (method_kind != DC_STRING) return DC_METHOD;
    if (params_kind == DC_OBJECT) {
        if (meta_kind != DC_ABSENT && meta_kind != DC_NULL && meta_kind != DC_OBJECT) return DC_META;
    } else if (params_kind != DC_ABSENT && params_kind != DC_NULL) {
        return DC_PARAMS;
    }
    if (cutter.run_open) dc_cut(out, &cutter, cutter.run_before != DC_NONE ? cutter.run_before : cutter.run_start, cutter.last_end);
    return cutter.overflow ? DC_UNSURE : DC_NOTIFICATION;
}

#ifndef DIVERGE_CODEC_RELAY_SCAN  /* the module's own entry points; _relayscan.c has its own */
/* The scan, in two builds: a long document's arrays of strings share a window; a short one's
 * scan (most messages) has no test for it. One copy serves both entry points below and every
 * caller (splice_notification, ChunkFramer's long lines, decode_lazy): fields is a pointer tested a
 * few times a member, not a byte, so it is not built twice, nor inlined into each caller. Compiled in
 * a translation unit of its own (_lazyscan.c, which defines DIVERGE_CODEC_LAZY_SCAN), at -O2 where
 * the rest of the module is at -O3 (setup.py): the lazy reader's 64 KB bodies count 1-3% more
 * instructions at -O3 (issue 44). */
#ifdef DIVERGE_CODEC_LAZY_SCAN
DC_HIDDEN int dc_scan_any(const char *data, size_t size, dc_splice *out, dc_fields *fields) {
    if (size >= DC_WINDOW_FROM) return dc_scan(data, size, out, fields, 1);
    return dc_scan(data, size, out, fields, 0);
}
#else
DC_HIDDEN int dc_scan_any(const char *data, size_t size, dc_splice *out, dc_fields *fields);
#endif

/* The relay's build of a short message (no fields to test, the envelope taken in two compares,
 * whitespace tried last: issue 44), compiled in a translation unit of its own (_relayscan.c, which
 * defines DIVERGE_CODEC_RELAY_SCAN), so that its shortcuts cannot move dc_scan_any's code:
 * inside one function with it they saved the relay 200 instructions a notification but cost
 * decode_lazy's 64 KB bodies 1-10%. */
DC_HIDDEN int dc_relay_scan(const char *data, size_t size, dc_splice *out);
/* The same for a line of under DC_WINDOW_FROM bytes where it lies in the relay's chunk:
 * data[size] is its newline (or a NUL), and no newline comes before it. */
DC_HIDDEN int dc_relay_scan_line(const char *data, size_t size, dc_splice *out, dc_memo *memo, const char *previous,
                                 int entered);
/* (memo: the framer's; previous: the line before in the same chunk, or NULL; entered: dc_relay_walk_line
 * has just tried the shapes on this line, and none held it.) */
/* A line of the chunk read from a shape before its end is known: data[0..avail) the rest of the chunk,
 * data[avail] a NUL. 1 where a shape holds it, a notification: out its splice, *size the line's length
 * (data[*size] its newline, the first); else 0, and the caller finds the line's end and scans it
 * (entered = 1). */
DC_HIDDEN int dc_relay_walk_line(const char *data, size_t avail, dc_splice *out, dc_memo *memo, size_t *size);

/* Read one JSON-RPC message (data[size] must be 0): a DC_ status, and for
 * DC_NOTIFICATION the splice in out. */
static inline int dc_scan_notification(const char *data, size_t size, dc_splice *out) {
    if (size < DC_WINDOW_FROM) return dc_relay_scan(data, size, out);
    return dc_scan_any(data, size, out, NULL);
}

/* Read one notification body (data[size] must be 0) for decode_lazy: DC_NOTIFICATION with its
 * fields' spans, DC_METHOD, DC_PARAMS, DC_META, or DC_INVALID / DC_NOT_NOTIFICATION (not JSON
 * as orjson reads it, blank, or no object), which the parser words. */
static inline int dc_scan_fields(const char *data, size_t size, dc_fields *fields) {
    dc_splice unused;
    return dc_scan_any(data, size, &unused, fields);
}
#endif

#endif
