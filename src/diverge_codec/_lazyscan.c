/* The module's own scan (dc_scan_any: decode_lazy, and messages of 512 bytes or more), in a
 * translation unit of its own (issue 44).
 *
 * Compiled into _mcp_notifications_c beside the Cython-generated source and _relayscan.c
 * (setup.py), at -O2 where the rest of the module is at -O3: decode's one pass takes 4-6% less CPU
 * time at -O3, but this scan counts 1-3% more instructions there on the lazy reader's 64 KB bodies
 * (a deep tree 968,767 -> 996,628, records 473,841 -> 481,200). The code is _jsonscan.h's, the same
 * in every unit; only the compiler's level differs.
 */
/* The header's helpers for the other units (decode's builder, the relay's entry points) are not used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#define DIVERGE_CODEC_LAZY_SCAN 1
#include "_jsonscan.h"
