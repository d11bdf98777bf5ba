"""ChunkFramer, the relay's hot loop, with both cores: lines split across chunks, each notification a
record, the rest handed back; the same as framing the lines one by one, and the same in both cores."""

from __future__ import annotations

import gc
import pickle
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load, require_gc_hooks, require_gc_inside_compiled_calls
from diverge_codec import _json, stream

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "fuzz"))
import framer_reference  # noqa: E402  (beside the fuzzers, which use it too)

PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}'
LOG_LAST = b'{"method":"notifications/message","params":{"level":"info","data":"a"},"jsonrpc":"2.0"}'
BIG = 1 << 20
SCATTERED = b"{" + b"".join(b'"jsonrpc":"2.0","k%d":%d,' % (n, n) for n in range(9)) + b'"method":"m"}'
"""More envelope members apart than the compiled scan records: the parser splices it (Python code runs)."""

LINES = [  # every kind of line a server writes, and the ones it should not
    PROGRESS, LOG_LAST, PROGRESS + b"\r", b" " + LOG_LAST + b" \t",
    b'{"method":"m","params":{"a":1e5}}', b'{"method":"m","params":{"a":1e400}}', SCATTERED,
    b'{"method":"m","params":{"s":"\\u00e9"}}', b'{"method":"m","params":{"d":' + b"[" * 40 + b"]" * 40 + b"}}",
    b'{"jsonrpc":"2.0","id":1,"result":{}}', b'{"jsonrpc":"2.0","id":2,"method":"ping"}', b"[1]", b"7",
    b"", b" ", b"\r", b" \t\r",  # blank: dropped
    b"\x0b", b"{bad", b'{"method":1}', b'{"method":"m","params":[]}', b"\xff", b"not json",  # refused
    b'{"method":"' + b"x" * 300 + b'"}',  # over a small max_line
    b'{"method":"m","params":', b"{}}", b"[1,", b"2]", b"{", b'"method":"m"}', b"  ", b"true",  # JSON across lines
]
_line = st.sampled_from(LINES)
_limits = st.tuples(st.sampled_from([1, 8, 40, 100, 400, BIG]), st.sampled_from([1, 20, 60, 120, BIG + 1]))


def _framer(mn, limits=(BIG, BIG + 1)):
    return mn.ChunkFramer(*limits)


def one_by_one(mn, lines, max_line, record_limit):
    """What the framer must give: each line alone (``fuzz/framer_reference.py``)."""
    return framer_reference.one_by_one(mn.splice_notification, lines, max_line, record_limit)


def run(framer, pieces):
    records, others, count, total, largest = b"", [], 0, 0, 0
    for call in [*(lambda piece=piece: framer.feed(piece) for piece in pieces), framer.close]:
        got = call()
        assert type(got[0]) is bytes and all(type(line) is bytes for line in got[4])
        records += got[0]
        count += got[1]
        total += got[2]
        largest = max(largest, got[3])
        others += got[4]
    return records, count, total, largest, others


@given(st.lists(_line, max_size=12), st.booleans(), _limits, st.data())
def test_any_chunking_frames_as_the_lines_one_by_one(mn, lines, last_newline, limits, data):
    text = b"\n".join(lines) + (b"\n" if last_newline else b"")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=6)))
    framer = _framer(mn, limits)
    records, count, total, largest, others = run(framer, [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])])
    expected = one_by_one(mn, lines, *limits)
    assert (records, count, others, framer.invalid, framer.too_large) == expected
    payloads = [bytes(p) for p in stream.split_records(records)]
    assert total == sum(map(len, payloads)) and largest == max(map(len, payloads), default=0)


@given(st.lists(_line, min_size=1, max_size=6), _limits)
def test_every_offset_of_a_chunk_boundary_gives_the_same_records(lines, limits):
    c, py = load("mcp_notifications", "c"), load("mcp_notifications", "py")
    text = b"\n".join(lines) + b"\n"
    for cut in range(len(text) + 1):
        framers = [impl.ChunkFramer(*limits) for impl in (c, py)]
        got = [run(framer, [text[:cut], text[cut:]]) + (framer.invalid, framer.too_large) for framer in framers]
        assert got[0] == got[1]
        assert got[0][0] == one_by_one(py, lines, *limits)[0]


@given(st.lists(st.one_of(_line, st.binary(max_size=40)), max_size=10), _limits)
def test_the_cores_agree_on_any_bytes_and_on_messages(chunks, limits):
    c, py = (load("mcp_notifications", impl).ChunkFramer(*limits) for impl in ("c", "py"))
    for chunk in chunks:
        assert c.feed(chunk) == py.feed(chunk)
        assert (c.invalid, c.too_large, c.pending) == (py.invalid, py.too_large, py.pending)
    assert c.close() == py.close()
    assert c.feed_messages(chunks) == py.feed_messages(chunks)
    assert (c.invalid, c.too_large, c.pending) == (py.invalid, py.too_large, py.pending)


def test_a_record_is_the_length_then_the_spliced_payload(mn):
    framer = _framer(mn)
    got = framer.feed(PROGRESS + b"\n" + LOG_LAST + b"\r\n[1]\n\n" + b'{"jsonrpc":"2.0","id":0')
    first = b'\x00{"method":"notifications/progress","params":{"progressToken":1,"progress":2}}'
    second = b'\x00{"method":"notifications/message","params":{"level":"info","data":"a"}}'
    assert got == (len(first).to_bytes(4, "big") + first + len(second).to_bytes(4, "big") + second,
                   2, len(first) + len(second), len(first), [b"[1]"])
    assert framer.pending == 23 and framer.feed(b',"result":{}}\n') == (b"", 0, 0, 0, [b'{"jsonrpc":"2.0","id":0,"result":{}}'])
    assert framer.pending == 0 and framer.close() == (b"", 0, 0, 0, [])


def test_lines_over_the_limit_are_skipped_to_their_newline_never_held(mn):
    framer = mn.ChunkFramer(8, 9)
    assert framer.feed(b"123456789\n7\n") == (b"", 0, 0, 0, [b"7"]) and framer.too_large == 1
    assert framer.feed(b"1234") == framer.feed(b"5678") == (b"", 0, 0, 0, []) and framer.pending == 8
    assert framer.feed(b"9") == (b"", 0, 0, 0, []) and framer.pending == 0 and framer.too_large == 2
    assert framer.feed(b"0" * 100) == (b"", 0, 0, 0, []) and framer.feed(b"0\n12345678\n") == (b"", 0, 0, 0, [b"12345678"])
    assert framer.too_large == 2 and framer.feed(b"12") == (b"", 0, 0, 0, [])
    assert framer.feed(b"3456789") == (b"", 0, 0, 0, []) and framer.close() == (b"", 0, 0, 0, []) and framer.too_large == 3
    assert framer.feed(b"tail") == (b"", 0, 0, 0, []) and framer.close() == (b"", 0, 0, 0, []) and framer.invalid == 1


def test_a_payload_over_the_record_limit_is_counted_too_large(mn):
    payload = b'\x00{"method":"notifications/progress","params":{"progressToken":1,"progress":2}}'
    framer = mn.ChunkFramer(len(PROGRESS), len(payload) - 1)
    assert framer.feed(PROGRESS + b"\n") == (b"", 0, 0, 0, []) and framer.too_large == 1
    framer = mn.ChunkFramer(len(PROGRESS), len(payload))
    assert framer.feed(PROGRESS + b"\n")[:2] == (len(payload).to_bytes(4, "big") + payload, 1)


def test_messages_are_lines_whose_newlines_are_whitespace(mn):
    framer = _framer(mn)
    pretty = _json.dumps({"jsonrpc": "2.0", "method": "m", "params": {}}).replace(b",", b",\n  ")
    records, count, _, _, others = framer.feed_messages([pretty, bytearray(b"[1]"), memoryview(b" \n "), b"\x0b"])
    assert count == 1 and records[4:] == b'\x00{"method":"m",\n  "params":{}}' and others == [b"[1]"]
    assert framer.invalid == 1 and framer.feed_messages([b"x" * (BIG + 1)]) == (b"", 0, 0, 0, []) and framer.too_large == 1


def test_a_line_is_read_alone_though_the_next_would_complete_it(mn):
    # The compiled scan reads each line where it lies in the chunk, a newline after it: it must not
    # read on into the next line (which would make the two one document) nor cost more than its line.
    parts = [b'{"method":"m","params":', b"{}}", b"[1,", b"2]", b" ", b"[" * 10, b"]" * 10]
    framer = _framer(mn)
    assert framer.feed(b"\n".join(parts) + b"\n") == (b"", 0, 0, 0, []) and framer.invalid == 6  # the blank one dropped
    chain = b"[1,\n" * 20000 + b"1]\n"  # one document across 20,001 lines: each line refused on its own
    assert framer.feed(chain) == (b"", 0, 0, 0, []) and framer.invalid == 6 + 20001


CUT_ANYWHERE = [  # the envelope first and last; every kind of token; strings past 32 and 64 bytes (the block reads)
    PROGRESS, LOG_LAST,
    b'{"jsonrpc":"2.0","method":"m","params":{"s":"' + b"\xc3\xa9" * 20 + b'\\u00e9\\ud83d\\ude00' + b"y" * 70
    + b'","n":-12.5e+3,"t":true,"f":false,"z":null,"a":[1,2.0,"x",{}],"k\\n":"' + b"\\\"" * 40 + b'"}}',
]


@pytest.mark.parametrize("whole", CUT_ANYWHERE, ids=["envelope first", "envelope last", "every token"])
def test_a_line_cut_anywhere_is_read_only_up_to_its_newline(mn, whole):
    # A short line is scanned where it lies in the chunk, its newline after it: each prefix of a message
    # and each rest, alone or with whitespace where the newline would be whitespace, reads as the parser
    # reads that line alone (the pure core's), with each long-string reader the compiled core has.
    lines = []
    for cut in range(len(whole) + 1):
        lines += [whole[:cut], whole[cut:], whole[:cut] + b" \r", b"\t" + whole[cut:]]
    text = b"\n".join(lines) + b"\n"
    expected = one_by_one(load("mcp_notifications", "py"), lines, BIG, BIG + 1)
    choose = getattr(mn, "_long_strings_reader", None)
    before = choose() if choose else None
    try:
        for reader in (("avx512", "avx2", "sse2") if choose else (None,)):
            if choose:
                choose(reader)
            framer = _framer(mn)
            records, count, _, _, others = run(framer, [text])
            assert (records, count, others, framer.invalid, framer.too_large) == expected
            assert count == 4  # the whole message, alone and with whitespace, at cut 0 and at its end
    finally:
        if choose:
            choose(before)


def test_bytearray_and_memoryview_chunks_are_read_as_copies(mn):
    chunk = bytearray(PROGRESS + b"\n[2]\n")
    assert _framer(mn).feed(chunk) == _framer(mn).feed(memoryview(chunk)) == _framer(mn).feed(bytes(chunk))


def test_refusals_are_worded_alike(mn):
    with pytest.raises(TypeError, match="^ChunkFramer.feed takes bytes, bytearray or memoryview, not str$"):
        _framer(mn).feed("{}\n")
    with pytest.raises(TypeError, match="^ChunkFramer.feed_messages takes bytes, bytearray or memoryview, not int$"):
        _framer(mn).feed_messages([b"[1]", 5])
    for limits, message in (((0, 1), f"max_line must be from 1 to {sys.maxsize}"),
                            ((1 << 64, 1), f"max_line must be from 1 to {sys.maxsize}"),
                            ((1, 0), "record_limit must be from 1 to 4294967295: what a record's 4-byte length can say"),
                            ((1, 1 << 32), "record_limit must be from 1 to 4294967295: what a record's 4-byte length can say")):
        with pytest.raises(ValueError, match=f"^{message}$"):
            mn.ChunkFramer(*limits)
    with pytest.raises(TypeError):
        mn.ChunkFramer(1.5, 2)
    framer = _framer(mn)
    with pytest.raises(TypeError, match="^ChunkFramer cannot be pickled or copied: it holds a partial line; make a new framer$"):
        pickle.dumps(framer)
    with pytest.raises(RuntimeError, match=r"^ChunkFramer.__init__ runs once: make a new framer instead of re-initialising one$"):
        framer.__init__(5, 6)
    unready = mn.ChunkFramer.__new__(mn.ChunkFramer)
    assert repr(unready) == "<ChunkFramer not initialised>"
    with pytest.raises(RuntimeError, match="^ChunkFramer is not initialised: its __init__ did not run to the end$"):
        unready.feed(b"")
    framer.feed(b'{"secret-value":1')
    assert repr(framer) == "<ChunkFramer invalid=0 too_large=0 ignored=0 pending=17>"  # sizes, never the bytes


def test_a_gc_callback_feeding_the_same_framer_is_refused_and_changes_nothing(mn):
    require_gc_hooks()
    impl = "c" if mn.__name__.endswith("_c") else "py"
    require_gc_inside_compiled_calls(impl)
    framer = _framer(mn)
    lines = [SCATTERED, PROGRESS, b"{bad", b"[1]"] * 50
    text = b"\n".join(lines) + b"\n"
    seen: list[str] = []

    def callback(phase, info):
        if phase == "start":
            for call in (lambda: framer.feed(b"[9]\n"), framer.close, lambda: framer.feed_messages([b"[9]"])):
                try:
                    call()
                except RuntimeError as error:
                    seen.append(str(error))

    old = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1)
    try:
        got = framer.feed(text)
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(callback)
    assert seen and set(seen) == {load("mcp_notifications", "py").FRAMER_BUSY}
    reference = one_by_one(mn, lines, BIG, BIG + 1)
    assert (got[0], got[1], got[4], framer.invalid) == reference[:4]
