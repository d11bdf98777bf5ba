"""split_records and RecordReader: the two cores give the same records (type and bytes) or the same error, on any input.

A record shorter than 2 KiB is a bytes copy; one of 2 KiB or more is a view into the
stream (``split_records``) or into the ``bytes`` chunk it lies whole in (``feed``). The
streams mix lengths on both sides of that line, cut at any offsets, fed as bytes,
bytearray or memoryview, truncated, or broken by a length over the limit.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import IMPLEMENTATIONS, load

VIEW_FROM = 2048
SIZES = st.one_of(st.integers(0, 12), st.sampled_from([200, VIEW_FROM - 1, VIEW_FROM, VIEW_FROM + 5]))
KINDS = ["bytes", "bytearray", "memoryview"]


@pytest.fixture(params=IMPLEMENTATIONS)
def sm(request):
    return load("stream", request.param)


def _as(kind: str, data: bytes) -> object:
    return {"bytes": data, "bytearray": bytearray(data), "memoryview": memoryview(data)}[kind]


def _stream(sizes: list[int]) -> bytes:
    return b"".join(len(p).to_bytes(4, "big") + p for p in (bytes([n + 1]) * size for n, size in enumerate(sizes)))


def _shown(records: list) -> list[tuple[str, bytes]]:
    return [(type(r).__name__, bytes(r)) for r in records]


def _split(module, data: object, limit: int) -> object:
    try:
        return _shown(module.split_records(data, max_record=limit))
    except Exception as error:  # noqa: BLE001 - the class, message and fields are what is compared
        return type(error), str(error), vars(error)


def _read(module, pieces: list[object], limit: int) -> list[object]:
    """What each feed returned or raised, with the reader's counters; then close's outcome."""
    reader, seen = module.RecordReader(max_record=limit), []
    for piece in pieces:
        try:
            seen.append(_shown(reader.feed(piece)))
        except Exception as error:  # noqa: BLE001
            seen.append((type(error), str(error), vars(error)))
        seen.append((reader.pending, reader.records))
    try:
        reader.close()
        seen.append("closed")
    except Exception as error:  # noqa: BLE001
        seen.append((type(error), str(error), vars(error)))
    return seen


streams = st.builds(
    lambda sizes, cut, tail: _stream(sizes)[:None if cut is None else -cut] + tail,
    st.lists(SIZES, max_size=5),
    st.one_of(st.none(), st.integers(1, 6)),  # the stream ends inside a record
    st.sampled_from([b"", b"\x00\x00\x01\x00", b"\xff\xff\xff\xffxx", b"\x00\x00"]),  # over any limit here, or short
)


@given(stream=streams, limit=st.sampled_from([0, 12, VIEW_FROM, VIEW_FROM + 5, 0xFFFFFFFF]),
       kind=st.sampled_from(KINDS))
def test_split_records_both_cores(stream, limit, kind):
    outcome = _split(load("stream", "c"), _as(kind, stream), limit)
    assert outcome == _split(load("stream", "py"), _as(kind, stream), limit)
    if isinstance(outcome, list):  # types follow the length, whatever the input's type
        assert [name for name, _ in outcome] == ["memoryview" if len(p) >= VIEW_FROM else "bytes" for _, p in outcome]


@given(stream=streams, limit=st.sampled_from([12, VIEW_FROM, 0xFFFFFFFF]), cuts=st.lists(st.integers(0, 40000), max_size=5),
       kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=3))
def test_record_reader_both_cores(stream, limit, cuts, kinds):
    edges = sorted({0, len(stream), *[c % (len(stream) + 1) for c in cuts]})
    pieces = [stream[start:end] for start, end in zip(edges, edges[1:])] or [b""]

    def fed():
        return [_as(kinds[n % len(kinds)], piece) for n, piece in enumerate(pieces)]

    assert _read(load("stream", "c"), fed(), limit) == _read(load("stream", "py"), fed(), limit)


def test_reader_every_single_cut(sm):
    """The stream cut in two at every offset: the same records, copies where a record spans the cut or is short."""
    sizes = [0, 3, 200, VIEW_FROM, 1]
    stream = _stream(sizes)
    starts = [4 * (n + 1) + sum(sizes[:n]) for n in range(len(sizes))]  # where each payload starts
    for cut in range(len(stream) + 1):
        reader = sm.RecordReader()
        got = reader.feed(stream[:cut]) + reader.feed(stream[cut:])
        reader.close()
        assert [bytes(r) for r in got] == [bytes([n + 1]) * size for n, size in enumerate(sizes)]
        whole = [start - 4 >= cut or start + size <= cut for start, size in zip(starts, sizes)]
        assert [type(r) for r in got] == [memoryview if size >= VIEW_FROM and w else bytes for size, w in zip(sizes, whole)]
        assert reader.records == 5 and reader.pending == 0


def test_views_only_into_bytes(sm):
    stream = _stream([VIEW_FROM, 2])
    for kind in ("bytearray", "memoryview"):
        data = _as(kind, stream)
        assert [type(r) for r in sm.RecordReader().feed(data)] == [bytes, bytes]  # copies: the caller may reuse data
        records = sm.split_records(data)
        assert [type(r) for r in records] == [memoryview, bytes] and records[0].obj is not data  # a view of a copy
        assert records[0].obj == stream


def test_over_limit_drops_the_call_s_records_and_keeps_the_reader_s_state(sm):
    reader = sm.RecordReader(max_record=8)
    assert reader.feed(b"\x00\x00\x00\x02a") == []
    with pytest.raises(Exception) as caught:
        reader.feed(b"b\x00\x00\x00\x01c\x00\x00\x00\x09")
    assert type(caught.value).__name__ == "RecordTooLargeError"
    assert (reader.pending, reader.records) == (0, 0)
    assert reader.feed(b"\x00\x00") == []
    assert (reader.pending, reader.records) == (2, 0)
    with pytest.raises(Exception) as caught:
        reader.feed(b"\x00\x09")
    assert type(caught.value).__name__ == "RecordTooLargeError" and (reader.pending, reader.records) == (4, 0)


def test_a_gc_callback_while_views_are_made_changes_nothing(sm):
    """Views are GC-tracked: a collection, and the Python code of its callbacks, may run while they are made."""
    import gc

    from conftest import require_gc_hooks

    require_gc_hooks()
    stream = _stream([VIEW_FROM, 1, VIEW_FROM + 5, 2] * 3)
    seen = []

    def callback(phase, info):
        if phase == "start":
            seen.append(len(gc.get_objects()))

    threshold = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1, 1, 1)
    try:
        records = sm.split_records(stream)
        fed = sm.RecordReader().feed(stream)
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(callback)
    expected = [bytes([n + 1]) * size for n, size in enumerate([VIEW_FROM, 1, VIEW_FROM + 5, 2] * 3)]
    assert records == expected and fed == expected and seen
