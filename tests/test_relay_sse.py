"""relay.eventstream.EventParser (server-sent events as bytes) and RelaySession.receive_messages (whole messages)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diverge_codec.relay.session import RelaySession
from diverge_codec.relay.eventstream import Event, EventParser

STREAM = (b"\xef\xbb\xbf: a comment\r\nretry: 1500\r\nid: 1\r\ndata: {\"a\":1}\r\n\r\n"
          b"event: other\nid: 2\ndata:x\ndata:  y\n\n"
          b"id: 3\n\n"  # no data: not dispatched, but the resumption point moves
          b"data: \xff\xfe\rdata\r\r"
          b"data: never dispatched")
EXPECTED = [Event(b'{"a":1}', b"message", b"1"), Event(b"x\n y", b"other", b"2"), Event(b"\xff\xfe\n", b"message", b"3")]


def _parse(chunks: list[bytes], max_data: int = 1 << 20) -> tuple[list[Event], EventParser]:
    parser = EventParser(max_data)
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    return events + parser.close(), parser


def test_the_standard_s_rules_on_bytes():
    events, parser = _parse([STREAM])
    assert events == EXPECTED
    assert (parser.last_event_id, parser.retry_ms, parser.too_large) == (b"3", 1500, 0)


@given(st.lists(st.integers(0, len(STREAM)), max_size=8))
def test_any_chunking_gives_the_same_events(cuts):
    bounds = [0, *sorted(cuts), len(STREAM)]
    events, parser = _parse([STREAM[a:b] for a, b in zip(bounds, bounds[1:])])
    assert events == EXPECTED and parser.last_event_id == b"3"


def test_a_cr_at_a_chunk_s_end_waits_for_its_lf():
    assert _parse([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])[0] == [Event(b"a\nb")]


@pytest.mark.parametrize("chunks", [[b"data: " + b"x" * 20 + b"\n\n"], [b"data: " + b"x" * 200, b"\n\n"], [b"data: x" * 50, b"\n\n"],
                                    [b"data: 0123456789\ndata: 0123456789\n\n"]])
def test_an_event_over_the_limit_is_counted_not_kept(chunks):
    events, parser = _parse([*chunks, b"data: ok\n\n"], max_data=16)
    assert events == [Event(b"ok")] and parser.too_large == 1


def test_max_data_must_be_positive():
    with pytest.raises(ValueError, match="^max_data must be at least 1$"):
        EventParser(0)


LINES = [b'{"method":"notifications/message","params":{"level":"info","data":1},"jsonrpc":"2.0"}',
         b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}',
         b" \t", b'{"method":"notifications/progress","params":{"progress":"\xff"}}', b"x" * 200,
         b'{"method":"m"}']


def test_messages_are_read_as_lines_are(mn):
    """The same messages as stdio lines and as HTTP messages: the same payloads, replies and report."""
    as_lines, as_messages = (RelaySession(max_line=100, frame=mn.splice_notification) for _ in range(2))
    as_lines.start(), as_messages.start()
    replies = as_lines.receive(b"\n".join(LINES) + b"\n")
    assert as_messages.receive_messages(LINES) == replies != b""
    assert as_lines.outbox.take(10) == as_messages.outbox.take(10)
    assert as_lines.finish_report().as_dict() == as_messages.finish_report().as_dict()
    assert as_messages.report.dropped == {"backpressure": 0, "invalid": 1, "too_large": 1}


def test_messages_skipped_by_the_transport_are_counted_too_large():
    session = RelaySession()
    assert session.receive_messages([], too_large=2) == b""
    assert session.report.seen == 2 and session.report.dropped["too_large"] == 2
