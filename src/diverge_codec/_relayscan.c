/* The relay's scan of a short message, in a translation unit of its own (issue 44).
 *
 * Compiled into _mcp_notifications_c beside the Cython-generated source (setup.py). With
 * DIVERGE_CODEC_RELAY_SCAN defined, _jsonscan.h's dc_scan takes the relay's shortcuts (the
 * envelope {"jsonrpc":"2.0", taken in two compares, whitespace tried last, a line read where it
 * lies, the memo); the module's own source and _lazyscan.c (dc_scan_any: decode_lazy, and
 * documents of 512 bytes or more) include the header without it, so their code is not moved by
 * whatever these shortcuts do to gcc's choices. The same bytes are accepted, refused and cut
 * either way (tests/test_scanner*.py, tests/test_chunk_framer*.py and the fuzz target
 * fuzz/fuzz_scanner.py hold both builds to orjson and to the pure core).
 */
/* The header's helpers for decode's builder (dc_unescape) are not used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#define DIVERGE_CODEC_RELAY_SCAN 1
#include "_jsonscan.h"

/* dc_scan_notification's short path: a message under DC_WINDOW_FROM bytes, data[size] == 0. */
int dc_relay_scan(const char *data, size_t size, dc_splice *out) {
    return dc_scan(data, size, out, NULL, 0, 0, NULL, 0, 0);
}

/* ChunkFramer._feed's: a line under DC_WINDOW_FROM bytes read where it lies in the chunk,
 * data[size] its newline (or a NUL), no newline before it. Every word-wise and block-wise read
 * of the scan stays below size; the byte-wise ones stop at the newline as at a NUL (a newline is
 * no whitespace here, and ends every token): nothing past data[size] is read.
 * memo is the framer's: a line opening with its prefix resumes the scan at its checkpoint; one
 * opening as previous (the line before it in the same chunk, or NULL) up to memo->method_end (that
 * line's method's end, within it) is scanned afresh and records the memo; any other line is
 * scanned afresh by the build with no memo. Each is the same scan, so the same result. */
int dc_relay_scan_line(const char *data, size_t size, dc_splice *out, dc_memo *memo, const char *previous) {
    size_t method_end = memo->method_end;
    if (memo->len && size >= memo->len && memcmp(data, memo->prefix, memo->len) == 0)
        return dc_scan(data, size, out, NULL, 0, 1, memo, 1, 0);
    if (previous && method_end && size >= method_end && memcmp(data, previous, method_end) == 0)
        return dc_scan(data, size, out, NULL, 0, 1, memo, 0, 1);
    return dc_scan(data, size, out, NULL, 0, 1, NULL, 0, 0);
}
