"""RelaySession.receive_messages: whole messages, as the HTTP transports hand them on (the event parser: test_eventstream.py)."""

from __future__ import annotations

from diverge_codec.relay.session import RelaySession

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
