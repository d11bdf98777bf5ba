"""Issue 35: a string goes on in the block reader after its first escape, and an escape left open
at a block's end is carried into the next block as a bit (simdjson's find_escaped), the blocks
64 bytes apart whatever they hold. Held to orjson (the scan's verdict) and to the pure core
(decode_lazy) on runs of backslashes of every length at every offset around the 16-, 32- and
64-byte blocks, and on text with an escape every 1 to 16 bytes with a fault planted at every
place; with each of the two readers."""
from __future__ import annotations

import pytest

from test_decode_lazy import check_one
from test_scanner import scanner_check  # fuzz/scanner_check.py, on the path test_scanner sets
from test_scanner_long_strings import _mcp_notifications_c, reader  # noqa: F401  (each test with each reader; skips as it does)

orjson = pytest.importorskip("orjson", reason="the reference the scan is held to")


def body(text: bytes) -> bytes:
    return b'{"method":"n/x","params":{"s":"' + text + b'"}}'


def valid(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def agrees(data: bytes) -> None:
    """The compiled scan refuses exactly what orjson refuses (cheap enough for every offset)."""
    assert (_mcp_notifications_c._scan_status(data) == scanner_check.SCAN_INVALID) != valid(data), data


# What may follow a run of backslashes: a byte it escapes (or, after an even run, a plain byte or the end).
AFTER = [b'"', b"n", b"u00e9", b"ud83d\\ude00", b"ud83d", b"x", b"\x01", b"\xc3\xa9", b"\xe9", b"/", b"\\"]


@pytest.mark.parametrize("after", AFTER, ids=repr)
def test_runs_of_backslashes_at_every_offset_after_an_early_escape(after):
    # The early escape sends the rest of the string to the block reader at the offset just after it, so
    # each run below lands at every place of a block, its last backslash at every block's end.
    for lead in (b"\\n", b"a\\t", b"abcdefghijklmnop\\\\"):
        for run in range(1, 10):
            for offset in range(0, 140):
                text = lead + b"a" * offset + b"\\" * run + after + b"c" * 70
                agrees(body(text))
                agrees(body(text.replace(b"c" * 70, b'c"' + b"d" * 69)))  # a quote further on: escaped or not


@pytest.mark.parametrize("escape", [b"\\n", b'\\"', b"\\\\", b"\\t", b"\\/", b"\\u00e9"], ids=repr)
def test_an_escape_every_1_to_16_bytes(escape):
    for every in range(1, 17):
        for lead in range(0, 66):
            text = b"a" * lead + (b"b" * (every - 1) + escape) * (400 // every)
            data = body(text)
            agrees(data)
            agrees(data[:-5])  # cut short: never ended
            check_one(b"\x00" + data)


@pytest.mark.parametrize("fault", [b"\\x", b"\x01", b"\xff", b"\\u12", b"\\ude00", b'"'], ids=repr)
def test_a_fault_at_every_place_of_escape_dense_text(fault):
    # Escapes every 3, 7 and 11 bytes; the fault (a bad escape, a control or invalid byte, a quote that ends
    # the string early) put at every place of the first 200 bytes past a first escape.
    for every in (3, 7, 11):
        text = b"\\t" + (b"b" * (every - 1) + b"\\\\") * (300 // every)
        for at in range(2, 202):  # after a backslash too: the fault's first byte escaped
            agrees(body(text[:at] + fault + text[at:]))


def test_a_run_across_the_blocks_of_a_long_document():
    # The carry in a long string of a large document, escapes of every run length at every block end.
    for run in range(1, 70):
        text = (b"\\n" + b"x" * 61 + b"\\" * run + b"q") * 20 + b"z" * 100
        data = body(text)
        agrees(data)
        check_one(b"\x00" + data)
