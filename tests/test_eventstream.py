"""The event-stream parser (``relay.eventstream``): every WHATWG rule on bytes, pinned on both cores, and its bounds."""

from __future__ import annotations

import gc
import pickle
import sys
import time
import tracemalloc
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import IMPLEMENTATIONS, load, needs_tracemalloc, require_gc_hooks, require_gc_inside_compiled_calls

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))
import eventstream_reference  # noqa: E402


@pytest.fixture
def check() -> ModuleType:
    """fuzz/eventstream_check.py: both cores held to each other and the reference (skips without the compiled core)."""
    load("eventstream", "c")
    import eventstream_check

    return eventstream_check


@pytest.fixture(params=IMPLEMENTATIONS)
def es(request: pytest.FixtureRequest) -> ModuleType:
    """The event-stream parser of one implementation."""
    return load("eventstream", request.param)


STREAM = (b"\xef\xbb\xbf: a comment\r\nretry: 1500\r\nid: 1\r\ndata: {\"a\":1}\r\n\r\n"
          b"event: other\nid: 2\ndata:x\ndata:  y\n\n"
          b"id: 3\n\n"  # no data: not dispatched, but the resumption point moves
          b"data: \xff\xfe\rdata\r\r"
          b"data: never dispatched")
MESSAGES = [b'{"a":1}', b"\xff\xfe\n"]


def parse(es: ModuleType, chunks: list[bytes], max_data: int = 1 << 20, seen: object = None) -> tuple[list[bytes], object]:
    parser = es.EventParser(max_data, seen)
    out = [data for chunk in chunks for data in parser.feed(chunk)]
    return out + parser.close(), parser


def each(es: ModuleType, chunks: list[bytes], max_data: int = 1 << 20) -> list[list[bytes]]:
    """What each feed returns, then what close returns."""
    parser = es.EventParser(max_data)
    return [parser.feed(chunk) for chunk in chunks] + [parser.close()]


def test_the_standard_s_rules_on_bytes(es):
    out, parser = parse(es, [STREAM])
    assert out == MESSAGES and parser.named == [(b"other", b"x\n y")]
    assert (parser.last_event_id, parser.retry_ms, parser.too_large, parser.replayed, parser.named_dropped) == (b"3", 1500, 0, 0, 0)


@pytest.mark.parametrize("cut", range(len(STREAM) + 1))
def test_every_cut_in_two_gives_the_same_events(es, cut):
    out, parser = parse(es, [STREAM[:cut], STREAM[cut:]])
    assert out == MESSAGES and parser.named == [(b"other", b"x\n y")] and parser.last_event_id == b"3"


def test_a_byte_at_a_time_gives_the_same_events(es):
    out, parser = parse(es, [STREAM[i:i + 1] for i in range(len(STREAM))])
    assert out == MESSAGES and (parser.last_event_id, parser.retry_ms) == (b"3", 1500)


@given(st.lists(st.integers(0, len(STREAM)), max_size=8))
def test_any_chunking_gives_the_same_events(cuts):
    for es in map(load_core, IMPLEMENTATIONS):
        bounds = [0, *sorted(cuts), len(STREAM)]
        out, parser = parse(es, [STREAM[a:b] for a, b in zip(bounds, bounds[1:])])
        assert out == MESSAGES and parser.last_event_id == b"3"


def load_core(implementation: str) -> ModuleType:
    return load("eventstream", implementation)


# --- line ends -------------------------------------------------------------------------


def test_a_lone_cr_ends_its_line_at_once(es):
    assert each(es, [b"data: x\r\r"]) == [[b"x"], []]
    assert each(es, [b"data: x\r", b"\r"]) == [[], [b"x"], []]


def test_a_cr_at_a_chunk_s_end_may_be_half_a_crlf(es):
    assert each(es, [b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]) == [[], [], [b"a\nb"], [], []]
    assert each(es, [b"data: a\r", b"", b"\n", b"\n"]) == [[], [], [], [b"a"], []]  # an empty chunk changes nothing


def test_lf_crlf_and_cr_mix(es):
    assert each(es, [b"data: a\ndata: b\r\ndata: c\rdata: d\n\r\n"]) == [[b"a\nb\nc\nd"], []]


def test_the_last_line_without_its_end_is_discarded(es):
    out, parser = parse(es, [b"id: 8\ndata: x\n\nid: 9\ndata: y\n", b"id: 10"])
    assert out == [b"x"] and parser.last_event_id == b"8"  # event 9 never ended: a resumed stream sends it again


# --- fields ------------------------------------------------------------------------------


@pytest.mark.parametrize(("stream", "expected"), [
    (b"data\n\n", [b""]),  # no colon: an empty value
    (b"data:\n\n", [b""]),
    (b"data:  y\n\n", [b" y"]),  # one space removed, only one
    (b"data:y\ndata\ndata: z\n\n", [b"y\n\nz"]),
    (b": data: x\n\n", []),  # a comment
    (b"Data: x\n\nDATA: y\n\n", []),  # names are exact
    (b"dat: x\ndatax: y\n\n", []),
    (b"\n\n\n", []),  # no data, nothing dispatched
    (b"data: a:b:c\n\n", [b"a:b:c"]),
    (b"data: \x00\xff\n\n", [b"\x00\xff"]),
])
def test_fields(es, stream, expected):
    assert parse(es, [stream])[0] == expected


def test_an_id_sets_the_last_event_id_even_without_data(es):
    parser = es.EventParser(100)
    assert parser.last_event_id is None
    assert parser.feed(b"id: prime\ndata\n\n") == [b""]
    assert parser.feed(b"id: 7\n\n") == [] and parser.last_event_id == b"7"
    assert parser.feed(b"id\n\n") == [] and parser.last_event_id == b""


def test_an_id_moves_the_resumption_point_when_its_event_ends(es):
    parser = es.EventParser(100)
    assert parser.feed(b"id: 1\ndata: a\n\nid: 2\ndata: b\n") == [b"a"] and parser.last_event_id == b"1"
    assert parser.feed(b"\n") == [b"b"] and parser.last_event_id == b"2"
    assert parser.feed(b"id: 3\ndata: c\n") == [] and parser.close() == [] and parser.last_event_id == b"2"
    assert parser.feed(b"data: d\n\n") == [b"d"] and parser.last_event_id == b"2"  # the broken event's id is gone


def test_an_id_holding_nul_does_not_change_the_last_event_id(es):
    parser = es.EventParser(100)
    assert parser.feed(b"id: 1\n\nid: a\x00b\ndata: x\n\nid: \x00\n\n") == [b"x"]
    assert parser.last_event_id == b"1"


def test_event_sets_the_type(es):
    out, parser = parse(es, [b"event: message\ndata: a\n\nevent:\ndata: b\n\nevent: endpoint\ndata: /m?s=1\n\n"
                             b"event: x\n\ndata: c\n\n"])  # the type does not outlive its event
    assert out == [b"a", b"b", b"c"] and parser.named == [(b"endpoint", b"/m?s=1")]


def test_named_events_are_bounded(es):
    parser = es.EventParser(1 << 20)
    for index in range(es.NAMED_LIMIT + 2):
        parser.feed(b"event: e\ndata: %d\n\n" % index)
    assert parser.named == [(b"e", b"%d" % index) for index in range(es.NAMED_LIMIT)] and parser.named_dropped == 2
    parser.named.clear()
    parser.feed(b"event: e\ndata: " + b"x" * es.NAMED_DATA_LIMIT + b"\n\nevent: e\ndata: " + b"x" * (es.NAMED_DATA_LIMIT + 1) + b"\n\n")
    assert parser.named == [(b"e", b"x" * es.NAMED_DATA_LIMIT)] and parser.named_dropped == 3 and parser.too_large == 0


@pytest.mark.parametrize(("value", "expected"), [
    (b"1500", 1500), (b"0", 0), (b"600000", 600000), (b"600001", 600000), (b"9" * 5000, 600000),
    (b"0" * 5000 + b"5", 5), (b"0" * 5000, 0), (b"12a", None), (b"", None), (b"-1", None), (b" 1", None),
    (b"1.5", None), (b"\xd9\xa1", None),  # a non-ASCII digit
])
def test_retry_takes_ascii_digits_of_any_length(es, value, expected):
    parser = es.EventParser(1 << 20)
    parser.feed(b"retry: " + value + b"\n")
    assert parser.retry_ms == expected


def test_retry_of_5000_digits_a_byte_at_a_time(es):
    line = b"retry: " + b"7" * 5000 + b"\n"
    parser = es.EventParser(16)  # the line is far over max_data: read digit by digit, never held
    for index in range(len(line)):
        parser.feed(line[index:index + 1])
    assert parser.retry_ms == es.MAX_RETRY_MS
    parser.feed(b"retry: " + b"0" * 5000 + b"42\n")
    assert parser.retry_ms == 42
    parser.feed(b"retry: " + b"1" * 5000 + b"x\n")
    assert parser.retry_ms == 42


# --- the byte order mark -------------------------------------------------------------------


@pytest.mark.parametrize("chunks", [[b"\xef\xbb\xbfdata: x\n\n"], [b"\xef", b"\xbb", b"\xbf", b"data: x\n\n"],
                                    [b"\xef\xbb", b"\xbfdata: x\n\n"], [b"", b"\xef", b"", b"\xbb\xbfdata: x\n\n"]])
def test_a_leading_bom_is_skipped_even_split(es, chunks):
    assert parse(es, chunks)[0] == [b"x"]


@pytest.mark.parametrize("chunks", [[b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n"], [b"\xef\xbb", b"data: x\n\n"],
                                    [b"\xef", b"\xbb", b"\n\ndata: x\n\n"]])
def test_only_one_whole_bom_at_the_start_is_skipped(es, chunks):
    assert parse(es, chunks)[0] == ([b"x"] if chunks[-1].endswith(b"\n\ndata: x\n\n") else [])


def test_after_close_a_new_stream_starts(es):
    parser = es.EventParser(100)
    assert parser.feed(b"\xef\xbb\xbfid: 4\n\nretry: 10\nid: 5\ndata: half") == []
    assert parser.close() == []
    assert parser.feed(b"\xef\xbb\xbfdata: y\n\n") == [b"y"]  # the partial event is gone; a BOM may start it
    assert (parser.last_event_id, parser.retry_ms) == (b"4", 10)  # what a resumed stream needs stays


# --- bounds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("chunks", [[b"data: " + b"x" * 20 + b"\n\n"], [b"data: " + b"x" * 200, b"\n\n"], [b"data: x" * 50, b"\n\n"],
                                    [b"data: 0123456789\ndata: 0123456789\n\n"], [b"data: " + b"x" * 17 + b"\n\n"]])
def test_an_event_over_the_limit_is_counted_not_kept(es, chunks):
    out, parser = parse(es, [*chunks, b"data: ok\n\n"], max_data=16)
    assert out == [b"ok"] and parser.too_large == 1


def test_an_event_at_the_limit_is_kept(es):
    assert parse(es, [b"data: 0123456\ndata: 01234567\n\n"], max_data=16)[0] == [b"0123456\n01234567"]


@pytest.mark.parametrize("cut", [1, 7, 100, 4096])
def test_a_line_too_long_to_keep_is_read_as_it_passes(es, cut):
    """Lines over max_data + LINE_SLACK: data makes its event too large, id is ignored, event makes it unkeepable."""
    stream = (b"id: 1\n\nid: " + b"i" * 200 + b"\ndata: a\n\n"  # the id is ignored: not a replay of 1
              + b"event: " + b"e" * 200 + b"\ndata: b\n\n"
              + b"data: " + b"d" * 200 + b"\n\n" + b": " + b"c" * 200 + b"\n" + b"x" * 300 + b"\ndata: ok\n\n")
    parser = es.EventParser(16, es.RecentIds())
    out = [data for at in range(0, len(stream), cut) for data in parser.feed(stream[at:at + cut])]
    assert out == [b"a", b"ok"]
    assert (parser.last_event_id, parser.too_large, parser.named_dropped, parser.replayed) == (b"1", 1, 1, 0)


@pytest.mark.parametrize(("max_data", "chunk"), [(1 << 20, 65536), (64 << 20, 65536), (1 << 20, 1 << 20)])
def test_a_16_mib_line_costs_linear_work(es, max_data, chunk):
    """The old parser re-joined the held line at each chunk: 11 s of CPU. Skipped or held, this is one pass."""
    line = b"data: " + b"x" * (16 << 20) + b"\n\n"
    parser = es.EventParser(max_data)
    started = time.process_time()
    out = [data for at in range(0, len(line), chunk) for data in parser.feed(line[at:at + chunk])]
    assert time.process_time() - started < 10  # linear: well under a second on both cores
    assert (len(out), parser.too_large) == ((1, 0) if max_data > 16 << 20 else (0, 1))


@needs_tracemalloc
@pytest.mark.parametrize("max_data", [1 << 10, 1 << 20])
def test_a_line_over_the_limit_is_never_held(es, max_data):
    """16 MiB of one data line, in 64 KiB chunks: the parser holds at most about max_data, never the line."""
    chunk = b"x" * 65536
    parser = es.EventParser(max_data)
    parser.feed(b"data: ")
    tracemalloc.start()
    try:
        for _ in range(256):
            parser.feed(chunk)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert parser.feed(b"\n\ndata: ok\n\n") == [b"ok"] and parser.too_large == 1
    assert peak < max_data * 1.25 + 4 * 65536  # the line as far as the limit (a bytearray's growth), and a chunk's work


def test_a_long_line_a_byte_at_a_time_is_linear(es):
    line = b"data: " + b"x" * (256 << 10) + b"\n\n"
    parser = es.EventParser(1 << 20)  # held, not skipped: each byte appended once
    started = time.process_time()
    out = [data for at in range(len(line)) for data in parser.feed(line[at:at + 1])]
    assert time.process_time() - started < 30 and out == [b"x" * (256 << 10)]  # ~0.4 s pure, 4 s under ASan


# --- replays ------------------------------------------------------------------------------------


def test_an_event_whose_id_was_seen_is_a_replay(es):
    seen = es.RecentIds()
    parser = es.EventParser(100, seen)
    assert parser.feed(b"id: 1\ndata: a\n\nid: 2\ndata: b\n\n") == [b"a", b"b"]
    resumed = es.EventParser(100, seen)  # the stream resumed: the server replays from 1
    assert resumed.feed(b"id: 1\ndata: a\n\nid: 2\nevent: e\ndata: b\n\nid: 3\ndata: c\n\ndata: no id\n\n") == [b"c", b"no id"]
    assert (resumed.replayed, resumed.named, len(seen)) == (2, [], 3)
    assert b"1" in seen and bytearray(b"3") in seen and b"4" not in seen


def test_an_empty_id_is_never_a_replay(es):
    parser = es.EventParser(100, es.RecentIds())
    assert parser.feed(b"id\ndata: a\n\nid:\ndata: a\n\n") == [b"a", b"a"] and len(parser.seen) == 0


def test_recent_ids_forget_the_oldest_first(es):
    seen = es.RecentIds(2)
    assert [seen.add(event_id) for event_id in (b"1", b"2", b"1", b"3")] == [True, True, False, True]
    assert (b"1" in seen, b"2" in seen, b"3" in seen, len(seen)) == (False, True, True, 2)
    seen.clear()
    assert len(seen) == 0 and b"2" not in seen and seen.add(b"2")


def test_recent_ids_stay_bounded_over_many(es):
    seen = es.RecentIds(1000)
    for index in range(50_000):
        seen.add(b"%d" % index)
    assert len(seen) == 1000
    assert all(b"%d" % index in seen for index in range(49_000, 50_000))
    assert not any(b"%d" % index in seen for index in range(0, 49_000, 7))


# --- refusals ------------------------------------------------------------------------------


@pytest.mark.parametrize("max_data", [0, -1, True, 1.0, "10", None, 1 << 40])
def test_max_data_must_be_an_int_in_range(es, max_data):
    with pytest.raises(ValueError, match=rf"^max_data must be an int from 1 to {es.MAX_DATA}$"):
        es.EventParser(max_data)


@pytest.mark.parametrize("capacity", [0, -1, True, 2.0, 1 << 25])
def test_capacity_must_be_an_int_in_range(es, capacity):
    with pytest.raises(ValueError, match=r"^capacity must be an int from 1 to 16777216$"):
        es.RecentIds(capacity)


def test_seen_must_be_the_core_s_recent_ids(es):
    other = load("eventstream", "py" if es.__name__.endswith("_c") else "c")
    with pytest.raises(TypeError, match="^seen must be a RecentIds or None, not RecentIds$"):
        es.EventParser(10, other.RecentIds())
    with pytest.raises(TypeError, match="^seen must be a RecentIds or None, not set$"):
        es.EventParser(10, set())


@pytest.mark.parametrize("chunk", ["data: x\n\n", 12, None, [b"x"]])
def test_feed_takes_bytes_like_only(es, chunk):
    with pytest.raises(TypeError, match=rf"^feed takes bytes, bytearray or memoryview, not {type(chunk).__name__}$"):
        es.EventParser(10).feed(chunk)


def test_an_event_id_must_be_bytes_like(es):
    with pytest.raises(TypeError, match="^RecentIds takes bytes, bytearray or memoryview, not str$"):
        es.RecentIds().add("1")
    with pytest.raises(TypeError, match="^RecentIds takes bytes, bytearray or memoryview, not int$"):
        1 in es.RecentIds()  # noqa: B015


def test_bytearray_and_memoryview_chunks_are_read_as_bytes(es):
    assert parse(es, [bytearray(b"data: a\n"), memoryview(b"xxdata: b\n\n")[2:]])[0] == [b"a\nb"]


def test_init_runs_once_and_parsers_do_not_pickle(es):
    parser = es.EventParser(10)
    with pytest.raises(RuntimeError, match="^EventParser.__init__ runs once"):
        parser.__init__(20)
    assert parser.max_data == 10
    with pytest.raises(TypeError, match="^EventParser cannot be pickled or copied: make a new one$"):
        pickle.dumps(parser)
    with pytest.raises(TypeError, match="^RecentIds cannot be pickled or copied: make a new one$"):
        pickle.dumps(es.RecentIds())


def test_an_uninitialised_parser_refuses(es):
    parser = es.EventParser.__new__(es.EventParser)
    assert repr(parser) == "<EventParser not initialised>"
    with pytest.raises(RuntimeError, match="^EventParser is not initialised"):
        parser.feed(b"data: x\n\n")


def test_a_feed_inside_a_feed_is_refused(es):
    """A GC callback that runs while feed allocates (a named event's tuple) cannot re-enter the parser."""
    require_gc_hooks()
    require_gc_inside_compiled_calls("c" if es.__name__.endswith("_c") else "py")
    parser = es.EventParser(100)
    errors: list[BaseException] = []

    def reenter(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and not errors:
            try:
                parser.feed(b"data: inner\n\n")
            except RuntimeError as error:
                errors.append(error)

    threshold = gc.get_threshold()
    hold = [(index, index) for index in range(5000)]  # the 2-tuple free list drained: the parser's are new GC objects
    gc.callbacks.append(reenter)
    gc.set_threshold(1)
    try:
        for _ in range(50):
            parser.feed(b"event: e\ndata: x\n\n" * 4)
            parser.named.clear()
            if errors:
                break
    finally:
        gc.callbacks.remove(reenter)
        gc.set_threshold(*threshold)
    assert len(hold) == 5000 and errors
    assert str(errors[0]).startswith("EventParser is in use: feed and close cannot run inside a feed or close")


# --- both cores and the reference agree -------------------------------------------------------------

LINES = st.one_of(
    st.just(b""), st.sampled_from([b":", b": keepalive", b"data", b"id", b"event: e", b"event: message", b"id: a\0b"]),
    st.tuples(st.sampled_from([b"data", b"id", b"event", b"retry", b"dat", b"x"]), st.sampled_from([b":", b": ", b""]),
              st.one_of(st.binary(max_size=40).map(lambda value: value.replace(b"\r", b"").replace(b"\n", b"")),
                        st.integers(0, 5000).map(lambda n: b"1" * n), st.integers(0, 300).map(lambda n: b"z" * n),
                        st.sampled_from([b"1", b"2", b"message", b"0" * 4400 + b"9"]))).map(b"".join),
)
STREAMS = st.tuples(st.sampled_from([b"", b"\xef\xbb\xbf", b"\xef\xbb"]),
                    st.lists(st.tuples(LINES, st.sampled_from([b"\n", b"\r", b"\r\n"])).map(b"".join), max_size=25),
                    st.binary(max_size=3)).map(lambda parts: parts[0] + b"".join(parts[1]) + parts[2])


@given(STREAMS, st.sampled_from([1, 8, 16, 64, 1 << 20]), st.sampled_from([None, 1, 2, 65536]),
       st.lists(st.integers(0, 10_000), max_size=12), st.sampled_from([bytes, bytearray, memoryview]))
def test_both_cores_agree_with_each_other_and_the_reference(check, stream, max_data, capacity, cuts, kind):
    bounds = [0, *sorted(cut % (len(stream) + 1) for cut in cuts), len(stream)]
    check.compare(stream, max_data, capacity, [kind(stream[a:b]) for a, b in zip(bounds, bounds[1:])])


@given(STREAMS.filter(lambda stream: len(stream) < 400), st.sampled_from([8, 1 << 20]))
def test_both_cores_agree_at_every_single_cut(check, stream, max_data):
    for cut in range(len(stream) + 1):
        check.compare(stream, max_data, 2, [stream[:cut], stream[cut:]])


def test_the_check_catches_a_disagreement(check, monkeypatch):
    from diverge_codec import _eventstream_py as pure

    monkeypatch.setattr(pure, "MAX_RETRY_MS", 1000)
    with pytest.raises(AssertionError, match="_eventstream_c and _eventstream_py differ"):
        check.compare(b"retry: 5000\n", 16, None, [b"retry: 5000\n"])


def test_the_reference_reads_the_standard_s_example():
    outcome = eventstream_reference.parse(STREAM, 1 << 20, None)
    assert outcome.messages == MESSAGES and outcome.named == [(b"other", b"x\n y")] and outcome.retry_ms == 1500


CORPUS = sorted((FUZZ / "corpus_eventstream").glob("*"))


def test_the_corpus_is_there():
    assert len(CORPUS) >= 20


@pytest.mark.parametrize("seed", CORPUS, ids=lambda path: path.name)
def test_every_corpus_seed_passes(check, seed):
    check.check(seed.read_bytes())
