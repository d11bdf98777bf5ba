"""The compiled scan's long strings (past their first 32 bytes, read out of line 64 bytes a
step) held to orjson and to the pure core: every special byte at every offset of strings that
end at every distance from a 16- and 64-byte block and from the document's end; with each of
the three readers (AVX-512 and AVX2 where the CPU has them, and SSE2)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ALLOW_NO_EXTENSION
from test_decode_lazy import check_one
from test_scanner import scanner_check  # fuzz/scanner_check.py, on the path test_scanner sets

if ALLOW_NO_EXTENSION:
    pytest.importorskip("diverge_codec._mcp_notifications_c", reason="the compiled core's long-string readers")
from diverge_codec import _mcp_notifications_c  # noqa: E402


@pytest.fixture(autouse=True, params=["avx512", "avx2", "sse2"])
def reader(request):
    """Each test once with each reader; the one chosen before put back after."""
    before = _mcp_notifications_c._long_strings_reader()
    if _mcp_notifications_c._long_strings_reader(request.param) != request.param:
        _mcp_notifications_c._long_strings_reader(before)
        pytest.skip(f"no {request.param} reader here (not x86-64, or the CPU lacks it)")
    yield request.param
    _mcp_notifications_c._long_strings_reader(before)

# What a string reader looks at: an end, escapes good and bad, control and invalid bytes, UTF-8.
SPECIALS = [
    b'"', b"\\n", b'\\"', b"\\\\", b"\\u00e9", b"\\ud83d\\ude00", b"\\ud83d", b"\\ude00", b"\\x", b"\\u12",
    b"\x00", b"\x01", b"\x1f", b"\x7f", b"\xff", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xe2\x82",
    b"\xed\xa0\x80", b"\xc0\x80",
]


def body(text: bytes, tail: bytes = b"") -> bytes:
    return b'{"method":"n/x","params":{"s":"' + text + b'"' + tail + b"}}"


@pytest.mark.parametrize("special", SPECIALS, ids=repr)
def test_a_special_byte_at_every_offset_of_strings_up_to_80(special):
    for length in range(81):
        for offset in range(length + 1):
            text = b"a" * offset + special + b"b" * (length - offset)
            for data in (body(text), body(text, b',"t":"' + b"c" * 70 + b'"')):  # at the end, and 70 bytes before it
                scanner_check._check(data)
                check_one(b"\x00" + data)


@pytest.mark.parametrize("special", SPECIALS, ids=repr)
def test_a_special_byte_at_every_offset_around_the_blocks_of_a_long_string(special):
    for offset in range(0, 300):
        text = b"a" * offset + special + b"b" * 150
        scanner_check._check(body(text))
        check_one(b"\x00" + body(text))


@pytest.mark.parametrize("escape", [b"\\n", b"\\u00e9", b"\\ud83d\\ude00", b"\xc3\xa9", b"\xf0\x9f\x98\x80"], ids=repr)
def test_runs_of_escapes_and_characters_across_the_blocks(escape):
    for lead in range(20):
        for count in (1, 7, 40, 90):
            text = b"a" * lead + escape * count + b"z" * lead
            data = body(text)
            scanner_check._check(data)
            check_one(b"\x00" + data)
            scanner_check._check(data[:-4])  # cut short: unterminated


@pytest.mark.parametrize("after", [b'"', b"n", b"u00e9", b"x", b"\x01", b"\xc3\xa9", b"/", b"b"], ids=repr)
def test_runs_of_backslashes_of_every_length_at_every_offset_around_the_blocks(after):
    # The escaped bytes of a block are the odd places of each run: a run that ends a block leaves its last
    # backslash to the next when it is odd. Each string ends in a quote 40 bytes on, or is cut short.
    for run in range(1, 10):
        for offset in range(0, 200):
            text = b"a" * offset + b"\\" * run + after + b"c" * 40
            data = body(text)
            scanner_check._check(data)
            check_one(b"\x00" + data)
            scanner_check._check(body(text.replace(b"c" * 40, b'c"' + b"d" * 39)))  # a quote inside: escaped or not


def test_every_byte_after_a_backslash_in_a_long_string_is_held_to_orjson():
    """Only " \\ / b f n r t u may follow a backslash: the long readers tell the letters by their nibbles
    (a table each), so every byte is tried at offsets in and around the 64-byte blocks of a long string."""
    for byte in range(256):
        for offset in (0, 17, 31, 32, 35, 40, 63, 64, 95, 130):
            text = b"a" * offset + b"\\" + bytes([byte]) + b"b" * 150
            scanner_check._check(body(text))


def test_a_reader_is_chosen_by_name_and_capped_by_what_there_is(reader):
    best = _mcp_notifications_c._long_strings_reader("best")
    order = ["sse2", "avx2", "avx512"]
    for name in order:
        assert _mcp_notifications_c._long_strings_reader(name) == order[min(order.index(name), order.index(best))]
    with pytest.raises(ValueError):
        _mcp_notifications_c._long_strings_reader("avx1024")
    _mcp_notifications_c._long_strings_reader(reader)


def test_the_environment_caps_the_first_choice(reader):
    best = _mcp_notifications_c._long_strings_reader("best")
    _mcp_notifications_c._long_strings_reader(reader)
    script = "from diverge_codec import _mcp_notifications_c as m; print(m._long_strings_reader())"
    for asked, expected in (("sse2", "sse2"), ("avx2", "avx2" if best != "sse2" else "sse2"), ("avx512", best), ("", best)):
        run = subprocess.run([sys.executable, "-c", script], env={**os.environ, "DIVERGE_CODEC_SIMD": asked},
                             capture_output=True, text=True, check=True)
        assert run.stdout.strip() == expected, asked


@pytest.mark.parametrize("character", ["é", "→", "😀"])
def test_a_character_that_runs_past_a_block_after_an_escape_open_at_the_last_blocks_end(character):
    # a block's non-ASCII characters are checked from their lead bytes, and one that runs past the
    # block moves the next block's start: no escape is open there, whatever the last block carried
    for lead in range(32, 100):
        for gap in range(66):
            text = b"a" * lead + b"\\n" + b"b" * gap + character.encode() + b"c" * 80
            scanner_check._check(body(text))
            check_one(b"\x00" + body(text))
