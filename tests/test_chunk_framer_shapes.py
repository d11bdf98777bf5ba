"""ChunkFramer's shapes (the compiled core: a line that differs from a notification scanned earlier in
its chunk only inside that line's string and number values is read from it, not scanned): whatever
came before, each line frames exactly as it does alone, in the pure core. Lines that change their
values for others of the same kind or not, valid or not, their keys, literals, whitespace and
structure; more shapes than the framer keeps, more changed values than a walk takes, more values
than a shape records; lines that never repeat, then repeat."""

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
SLOT = b"\x01"
"""Where a template takes a value."""

TEMPLATES = [  # notifications (and one request) whose values the lines change
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":\x01,"progress":\x01,"total":\x01,"message":\x01}}',
    b'{"method":"notifications/message","params":{"level":\x01,"logger":\x01,"data":{"a":[\x01,\x01,null,true,\x01],"b":\x01}}},"jsonrpc":\x01}',
    b'{"jsonrpc":\x01,"method":"notifications/message","jsonrpc":\x01,"params":{"level":\x01,"data":\x01},"jsonrpc":\x01}',
    b'{"params":{"x":\x01},"method":\x01,"jsonrpc":"2.0"}',  # the method after params: its place moves
    b'{"method":"m","params":{"a":\x01},"x":\x01,"jsonrpc":\x01}',  # a cut from a value's end to a value's end
    b'{ "jsonrpc" : "2.0" , "method" : "m" , "params" : { "a" : \x01 , "b" : [ \x01 , \x01 ] } }',
    b'{"jsonrpc":"2.0","method":"m","params":{"_meta":{"k":\x01},"v":\x01}}',
    b'{"jsonrpc":"2.0","method":"m","params":{"_meta":\x01,"v":\x01}}',  # _meta a value: no notification
    b'{"jsonrpc":"2.0","method":"m","params":\x01}',  # params a value: no notification
    b'{"jsonrpc":"2.0","id":\x01,"method":"m","params":{"v":\x01}}',  # a request
    b'{"jsonrpc":"2.0","method":"m","params":{' + b",".join(b'"k%d":\x01' % n for n in range(12)) + b"}}",
    b'{"jsonrpc":"2.0","method":"m","params":{"a":[' + b",".join([SLOT] * 60) + b"]}}",  # more values than a shape keeps
    b'{"jsonrpc":"2.0","method":"m","params":{"p":\x01' + b"".join(b',"jsonrpc":\x01,"k%d":\x01' % n for n in range(9)) + b"}}",
]
VALUES = [  # each valid or not, a string, a number, or something else
    b'""', b'"a"', b'"debug"', b'"a longer string, past sixteen bytes, past thirty-two bytes: 0123456789"',
    b'"\\n\\t\\"\\\\\\/"', b'"\\u00e9\\ud83d\\ude00"', "\"é ✓ 😀\"".encode(), b'"\\x"', b'"\\u12"', b'"\\ud83d"',
    b'"a\x01b"', b'"\xc3"', b'"\xff"', b'"a"b"', b'"a', b'"\\"', b'"' + b"x" * 70 + b'\\n"',
    b"0", b"-0", b"7", b"-12", b"1.5", b"0.25", b"1e5", b"-2.5E-3", b"123456789012345678901234567890", b"1e400",
    b"01", b"-", b"1.", b".5", b"1e", b"+1", b"--1", b"1.2.3", b"0x1", b"1 2",
    b"true", b"false", b"null", b"{}", b"[]", b'{"a":1}', b"[1]", b"", b" 1", b"1 ", b'"a" ', b",", b"}",
]
"""Values as they come, with what a walk must never take as one (a quote, a brace, a space, nothing)."""
GOOD = [value for value in VALUES if value in (
    b'""', b'"a"', b'"debug"', b'"\\n\\t\\"\\\\\\/"', b'"\\u00e9\\ud83d\\ude00"', "\"é ✓ 😀\"".encode(),
    b"0", b"-0", b"7", b"-12", b"1.5", b"0.25", b"1e5", b"-2.5E-3", b"123456789012345678901234567890")]


def _reference(lines):
    """Each line alone, the pure core's splice: (records, how many, the other lines, refused, too large)."""
    return framer_reference.one_by_one(load("mcp_notifications", "py").splice_notification, lines, BIG, BIG + 1)


def _fill(template, values):
    parts = template.split(SLOT)
    return parts[0] + b"".join(value + part for value, part in zip(values, parts[1:]))


def _slots(template):
    return template.count(SLOT)


def _check(lines, chunks=None):
    c = load("mcp_notifications", "c")
    text = b"".join(line + b"\n" for line in lines)
    expected = _reference(lines)
    assert framer_reference.framed(c.ChunkFramer(BIG, BIG + 1), [text] if chunks is None else chunks(text)) == expected


@pytest.mark.parametrize("template", TEMPLATES, ids=range(len(TEMPLATES)))
def test_each_value_changed_for_every_other_frames_as_each_line_alone(template):
    base = _fill(template, [GOOD[index % len(GOOD)] for index in range(_slots(template))])
    lines = [base]
    for slot in range(min(_slots(template), 14)):
        for value in VALUES:
            values = [GOOD[index % len(GOOD)] for index in range(_slots(template))]
            values[slot] = value
            lines += [_fill(template, values), base]  # the line read from base, then base again from itself
    _check(lines)


@pytest.mark.parametrize("template", TEMPLATES, ids=range(len(TEMPLATES)))
def test_every_value_changed_at_once_frames_as_each_line_alone(template):
    """Up to every value of the line replaced: more than a walk takes past eight."""
    slots = _slots(template)
    lines = [_fill(template, [GOOD[(index + shift) % len(GOOD)] for index in range(slots)]) for shift in range(len(GOOD))]
    _check(lines + lines[::-1])


def test_the_line_read_from_changes_in_every_byte_but_its_values():
    """Keys, literals, whitespace, structure: a byte changed at every place outside the values."""
    template = TEMPLATES[1]
    base = _fill(template, [GOOD[index % len(GOOD)] for index in range(_slots(template))])
    lines = [base]
    for at in range(len(base)):
        for mark in (b" ", b'"', b"}", b"]", b",", b":", b"x", b"1", b"\\", b"\x00"):
            if base[at:at + 1] != mark:
                lines += [base[:at] + mark + base[at + 1:], base]
        lines += [base[:at] + base[at + 1:], base, base[:at], base]
    _check(lines)


def test_more_shapes_than_the_framer_keeps_by_turns():
    """Twenty shapes of one method by turns (the framer keeps sixteen), each line's values its own."""
    shapes = [b'{"jsonrpc":"2.0","method":"m","params":{"k%d":\x01,"v":\x01}}' % n for n in range(20)]
    lines = [_fill(shapes[n % 20], [b'"%d"' % n, b"%d" % (n * 7)]) for n in range(400)]
    _check(lines)
    _check(lines, lambda text: [text[at:at + 997] for at in range(0, len(text), 997)])


def test_lines_that_never_repeat_then_repeat():
    """A stream whose lines all differ in a key rests from walks; the lines after it are read again."""
    unique = [b'{"jsonrpc":"2.0","method":"m","params":{"v":%d,"u%d":0}}' % (n, n) for n in range(3000)]
    again = [_fill(TEMPLATES[0], [b"%d" % n, b"%d" % n, b"9", b'"step %d"' % n]) for n in range(200)]
    lines = again[:50] + unique + again + unique[:20] + again
    _check(lines)


def test_a_shape_of_an_earlier_chunk_is_not_read():
    """The chunk a shape lies in is gone once the next is fed: lines one to a chunk, each read alone."""
    c = load("mcp_notifications", "c")
    base = _fill(TEMPLATES[0], [b"1", b"2", b"3", b'"x"'])
    other = _fill(TEMPLATES[0], [b"1", b"2", b"3", b'"y"'])
    framer = c.ChunkFramer(BIG, BIG + 1)
    for line in [base, other, base, other, b'{"jsonrpc":"2.0","method":"m"}', other]:
        assert framer.feed(line + b"\n")[:2] == _reference([line])[:2]


_value = st.sampled_from(VALUES) | st.sampled_from(GOOD) | st.binary(max_size=5) | st.integers().map(lambda n: b"%d" % n) \
    | st.text(max_size=8).map(lambda text: b'"' + text.encode("utf-8", "surrogatepass") + b'"')


@given(st.sampled_from(TEMPLATES), st.lists(st.tuples(st.integers(0, 3), st.lists(st.tuples(st.integers(0, 59), _value),
                                                                                   max_size=4)), min_size=1, max_size=12), st.data())
def test_any_values_in_any_chunks_frame_as_each_alone(template, steps, data):
    """Lines of one template, each from one of the last four with some values changed, in any chunks."""
    slots = _slots(template)
    lines = [[GOOD[index % len(GOOD)] for index in range(slots)]]
    for back, changes in steps:
        values = list(lines[max(0, len(lines) - 1 - back)])
        for slot, value in changes:
            values[slot % slots] = value
        lines.append(values)
    filled = [_fill(template, values) for values in lines]
    text = b"".join(line + b"\n" for line in filled)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=3)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    mn = load("mcp_notifications", "c")
    assert framer_reference.framed(mn.ChunkFramer(BIG, BIG + 1), chunks) == _reference(text.split(b"\n"))  # a value may hold a newline


def _check_limits(lines, max_line, record_limit, chunks=None):
    c = load("mcp_notifications", "c")
    text = b"".join(line + b"\n" for line in lines)
    expected = framer_reference.one_by_one(load("mcp_notifications", "py").splice_notification, lines, max_line,
                                           record_limit)
    framer = c.ChunkFramer(max_line, record_limit)
    assert framer_reference.framed(framer, [text] if chunks is None else chunks(text)) == expected
    return expected


def test_a_line_read_from_a_shape_is_held_to_max_line_and_the_record_limit():
    """A line read from a shape finds its own end (no newline is looked for first): one longer than
    max_line is too large all the same, and one whose record is over the limit too."""
    lines = [_fill(TEMPLATES[0], [b"1", b"%d" % n, b"9", b'"' + b"m" * (n % 40) + b'"']) for n in range(200)]
    lengths = sorted({len(line) for line in lines})
    middle = lengths[len(lengths) // 2]
    records, count, others, invalid, too_large = _check_limits(lines, middle, BIG + 1)
    assert 0 < count < len(lines) and too_large == len(lines) - count
    records, count, others, invalid, too_large = _check_limits(lines, BIG, middle - 10)
    assert 0 < count < len(lines) and too_large == len(lines) - count


def test_a_line_a_shape_holds_may_grow_past_the_scan_window():
    """A shape of under 512 bytes (the longest line scanned where it lies) whose value grows the next
    line past them: that line frames as it does alone."""
    short, long = b'"' + b"s" * 380 + b'"', b'"' + b"s" * 480 + b'"'
    lines = [_fill(TEMPLATES[0], [b"1", b"%d" % n, b"9", long if n % 3 == 1 else short]) for n in range(30)]
    assert len(lines[0]) < 512 < len(lines[1])
    records, count, others, invalid, too_large = _check_limits(lines, BIG, BIG + 1)
    assert count == len(lines) and not too_large


def test_a_chunk_that_ends_inside_a_line_a_shape_would_hold_keeps_it_whole():
    """The chunk ends at every byte of the second line: it is held, not read from the shape, and the next
    chunk completes it."""
    first, second = (_fill(TEMPLATES[0], [b"1", b"%d" % n, b"9", b'"x"']) for n in (5, 678))
    text = first + b"\n" + second + b"\n" + first + b"\n"
    for cut in range(len(first) + 1, len(first) + len(second) + 2):
        _check_limits([first, second, first], BIG, BIG + 1, lambda text, cut=cut: [text[:cut], text[cut:]])
    assert text.count(b"\n") == 3
