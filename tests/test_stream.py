"""The stream envelope: exact bytes, limits, truncation, and any chunking, on both cores."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import IMPLEMENTATIONS, load
from diverge_codec.errors import RecordTooLargeError, StreamError, TruncatedStreamError


@pytest.fixture(params=IMPLEMENTATIONS)
def sm(request):
    return load("stream", request.param)


def test_record_exact_bytes(sm):
    assert sm.record(b"\x02") == b"\x00\x00\x00\x01\x02"
    assert sm.record(b"") == b"\x00\x00\x00\x00"
    out = bytearray()
    sm.write_record(out, b"ab")
    sm.write_records(out, [b"c", bytearray(b"")])
    assert out == b"\x00\x00\x00\x02ab\x00\x00\x00\x01c\x00\x00\x00\x00"
    file = io.BytesIO()
    sm.write_records(file, [b"xyz"])
    assert file.getvalue() == b"\x00\x00\x00\x03xyz"


def test_split_copies_short_records_and_views_long_ones(sm):
    stream = b"\x00\x00\x00\x02ab\x00\x00\x00\x00\x00\x00\x00\x01c"
    assert sm.split_records(stream) == [b"ab", b"", b"c"]
    assert all(type(r) is bytes for r in sm.split_records(stream))
    assert sm.split_records(bytearray(stream)) == [b"ab", b"", b"c"]
    assert sm.split_records(b"") == []
    long = b"".join(sm.record(bytes([n]) * size) for n, size in enumerate([2047, 2048, 1, 70000]))
    records = sm.split_records(long)
    assert [type(r) for r in records] == [bytes, memoryview, bytes, memoryview]
    assert records[1].obj is long and records[1].readonly and records[1] == b"\x01" * 2048
    assert records[3] == b"\x03" * 70000
    copied = sm.split_records(bytearray(long))  # views into the copy split_records made
    assert [type(r) for r in copied] == [bytes, memoryview, bytes, memoryview] and copied == records


def test_split_refusals(sm):
    with pytest.raises(TruncatedStreamError) as caught:
        sm.split_records(b"\x00\x00\x00\x05abc")
    assert caught.value.missing == 2 and str(caught.value) == "stream ended inside a record: 2 bytes missing"
    with pytest.raises(TruncatedStreamError) as caught:
        sm.split_records(b"\x00\x00\x00\x01a\x00\x00")
    assert str(caught.value) == "stream ended inside a length prefix: 2 bytes missing"
    with pytest.raises(RecordTooLargeError) as caught:
        sm.split_records(b"\xff\xff\xff\xff", max_record=1024)
    assert (caught.value.length, caught.value.limit) == (0xFFFFFFFF, 1024)
    assert str(caught.value) == "record of 4294967295 bytes is over the limit of 1024 bytes"
    assert isinstance(caught.value, StreamError) and isinstance(caught.value, ValueError)
    with pytest.raises(TypeError, match="split_records takes bytes"):
        sm.split_records("text")
    with pytest.raises(ValueError, match="max_record"):
        sm.split_records(b"", max_record=-1)


def test_default_limit_is_16_mib(sm):
    assert sm.DEFAULT_MAX_RECORD == 16 * 1024 * 1024
    with pytest.raises(RecordTooLargeError):
        sm.RecordReader().feed((16 * 1024 * 1024 + 1).to_bytes(4, "big"))


def test_reader_incremental(sm):
    reader = sm.RecordReader()
    assert reader.feed(b"\x00\x00") == []
    assert reader.pending == 2
    assert reader.feed(b"\x00\x03a") == []
    out = reader.feed(b"bc\x00\x00\x00\x01d\x00")
    assert out == [b"abc", b"d"] and all(type(r) is bytes for r in out)  # short: copies
    assert reader.feed(b"\x00\x00\x00") == [b""]
    long = sm.record(b"L" * 2048)
    chunk = long + long[:9]
    (out,) = reader.feed(chunk)
    assert type(out) is memoryview and out.obj is chunk and out == b"L" * 2048  # 2 KiB inside one bytes chunk: a view
    (out,) = reader.feed(long[9:] + b"\x00")
    assert type(out) is bytes and out == b"L" * 2048 and reader.records == 5  # spanned chunks: a copy
    with pytest.raises(TruncatedStreamError) as caught:
        reader.close()
    assert caught.value.missing == 3
    with pytest.raises(ValueError, match="feed after close"):
        reader.feed(b"")


def test_reader_refuses_a_large_length_before_its_bytes_arrive(sm):
    reader = sm.RecordReader(max_record=10)
    with pytest.raises(RecordTooLargeError):
        reader.feed(b"\x00\x00\x00\x0b")


def test_reader_copies_from_a_bytearray(sm):
    reader = sm.RecordReader()
    data = bytearray(b"\x00\x00\x00\x01z")
    (record,) = reader.feed(data)
    data[4] = ord("y")
    assert bytes(record) == b"z"
    reader.close()
    assert reader.records == 1


@given(payloads=st.lists(st.binary(max_size=20), max_size=8), cuts=st.lists(st.integers(0, 200), max_size=6))
def test_any_chunking_gives_the_same_payloads(sm, payloads, cuts):
    stream = b"".join(sm.record(p) for p in payloads)
    assert [bytes(r) for r in sm.split_records(stream)] == payloads
    reader = sm.RecordReader()
    got = []
    edges = sorted({0, len(stream), *[c % (len(stream) + 1) for c in cuts]})
    for start, end in zip(edges, edges[1:]):
        got += [bytes(r) for r in reader.feed(stream[start:end])]
    reader.close()
    assert got == payloads and reader.pending == 0


@given(stream=st.binary(max_size=40), limit=st.integers(0, 30))
def test_both_cores_agree_on_any_stream(stream, limit):
    def outcome(module):
        try:
            return [bytes(r) for r in module.split_records(stream, max_record=limit)]
        except StreamError as error:
            return type(error), str(error)

    assert outcome(load("stream", "c")) == outcome(load("stream", "py"))


_SPANNING_RECORD_PROBE = r"""
from diverge_codec import _stream_{core} as sm
size, chunk = {size}, {chunk}
stream = sm.record(b"x" * size)
pieces = [stream[at:at + chunk] for at in range(0, len(stream), chunk)]
del stream
def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) * 1024
with open("/proc/self/clear_refs", "w") as refs:
    refs.write("5")  # resets VmHWM: the peak from here on
before = peak()
reader = sm.RecordReader(max_record=size)
records = [record for piece in pieces for record in reader.feed(piece)]
assert len(records) == 1 and len(records[0]) == size
print((peak() - before) / size)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the peak from /proc/self/status")
def test_a_record_spanning_chunks_costs_about_two_sizes(sm):
    """The held bytes and the record handed out: the copy out is one copy, not a slice and then bytes()."""
    core = sm.__name__.rsplit("_", 1)[1]
    probe = _SPANNING_RECORD_PROBE.format(core=core, size=64 * 2**20, chunk=2**20)
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    sizes = float(done.stdout)
    assert 1.0 <= sizes <= 2.4, f"a 64 MiB record fed in 1 MiB chunks peaked at {sizes:.2f} sizes"
