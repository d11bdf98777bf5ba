"""ChunkFramer's memo of a line's opening bytes (the compiled core: the relay's scan resumes a line that
opens as a recorded one at its params object): whatever came before, each line frames exactly as it
does alone, in a fresh framer and in the pure core. Lines that share their opening bytes up to the
checkpoint, then differ at every position after it, or before it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import framer_reference  # noqa: E402  (beside the fuzzers, which use it too)

BIG = 1 << 20
CUTS_PAST = b"".join(b',"jsonrpc":%d,"k%d":%d' % (n, n, n) for n in range(9))
"""Envelope runs after the checkpoint, more than the scan's DC_MAX_CUTS: the parser splices the line."""

OPENINGS = [  # each opens a line up to and including its top-level params object's "{" (the checkpoint)
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{',
    b'{"method":"notifications/progress","params":{',
    b'{"method":"m","jsonrpc":"2.0","params":{',  # an envelope run open at the checkpoint: cut after it
    b'{"jsonrpc":"2.0","id":7,"method":"notifications/message","params":{',  # an id: no notification
    b'{ "jsonrpc" : "2.0" , "method" : "m" ,\t"params" : {',
    b'  {"jsonrpc":"2.0","method":"m","params":{',  # whitespace before the message
    b'{"jsonrpc":"2.0","meth\\u006fd":"n\\u00e9","p\\u0061rams":{',  # escaped keys and method
    b'{"jsonrpc":"2.0","method":"a","jsonrpc":1,"method":"b","params":{',  # duplicates, a cut before
    b'{"jsonrpc":"2.0","method":"m","params":1,"params":{',  # a params that is no object, then one
    b'{"jsonrpc":"2.0","method":"m","params":{"x":1},"params":{',  # two params objects
    b'{"jsonrpc":"2.0","method":"' + b"m" * 80 + b'","params":{',  # past the memo's 96 bytes
    b'{"params":{',  # before the envelope's 17 bytes
]
ENDINGS = [  # what follows the checkpoint
    b'"level":"info","data":"a"}}', b'}}', b'"_meta":{}}}', b'"_meta":5}}', b'"progress":1,"total":2},"jsonrpc":"2.0"}',
    b'"a":[1,{"b":"\\n"}]},"id":3}', b'"a":1}' + CUTS_PAST + b"}", b'"a":1},"method":"z"}', b'"a":1}}x', b'"a":',
]
BASES = [opening + ending for opening in OPENINGS for ending in ENDINGS[:3]] + [OPENINGS[0] + e for e in ENDINGS]
MARKS = [b" ", b'"', b"}", b"{", b",", b"x", b"1", b"\\", b"\x00", b"\xc3"]


def _reference(lines):
    """Each line alone, the pure core's splice: (records, how many, the other lines, refused, too large)."""
    return framer_reference.one_by_one(load("mcp_notifications", "py").splice_notification, lines, BIG, BIG + 1)


def _variants(line):
    """The line with a byte changed, taken out, or a space put before it, at every position; cut at every one."""
    for at in range(len(line)):
        for mark in MARKS:
            if line[at:at + 1] != mark:
                yield line[:at] + mark + line[at + 1:]
        yield line[:at] + line[at + 1:]
        yield line[:at] + b" " + line[at:]
        yield line[:at]


def _sequences(base):
    """Lines that record the memo (a line that opens as the one before it), then resume it or not."""
    for variant in _variants(base):
        yield [base, base, variant, base, variant, variant, base]


@pytest.mark.parametrize("base", BASES, ids=range(len(BASES)))
def test_lines_sharing_a_prefix_frame_as_each_alone(base):
    c = load("mcp_notifications", "c")
    lines = [line for sequence in _sequences(base) for line in sequence]
    expected = _reference(lines)
    assert framer_reference.framed(c.ChunkFramer(BIG, BIG + 1), [b"".join(line + b"\n" for line in lines)]) == expected
    # a chunk a line: the memo recorded in one call is resumed in the next
    assert framer_reference.framed(c.ChunkFramer(BIG, BIG + 1), [line + b"\n" for line in lines]) == expected
    fresh = [framer_reference.framed(c.ChunkFramer(BIG, BIG + 1), [line + b"\n"]) for line in lines[:40]]
    assert [item[:3] for item in fresh] == [_reference([line])[:3] for line in lines[:40]]


def test_the_memo_is_the_framers_own():
    """Two framers by turns, each its own stream: neither resumes from the other's memo."""
    c = load("mcp_notifications", "c")
    one, two = c.ChunkFramer(BIG, BIG + 1), c.ChunkFramer(BIG, BIG + 1)
    first = OPENINGS[0] + ENDINGS[0]
    other = OPENINGS[0][:-2] + b'[1]}'  # the same bytes but for the checkpoint's "{"
    for framer, line in [(one, first), (one, first), (two, other), (two, other), (one, first), (two, other)]:
        assert framer.feed(line + b"\n")[:2] == _reference([line])[:2]


_opening = st.sampled_from(OPENINGS)
_ending = st.sampled_from(ENDINGS)
_noise = st.binary(max_size=6)


@given(st.lists(st.tuples(_opening, _noise, st.integers(0, 120), _ending), min_size=1, max_size=10), st.data())
def test_any_lines_in_any_chunks_frame_as_each_alone(mn, parts, data):
    lines = []
    for opening, noise, at, ending in parts:
        line = opening + ending
        at = min(at, len(line))
        lines.append(line[:at] + noise + line[at:] if noise else line)
    text = b"".join(line + b"\n" for line in lines)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    assert framer_reference.framed(mn.ChunkFramer(BIG, BIG + 1), chunks) == _reference(text.split(b"\n"))  # noise may hold a newline
