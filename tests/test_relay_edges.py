"""Edges of the sans-IO relay that planted bugs survived (docs/mutation.md): an unreachable session's
Error frame is no notification, so losing it drops none; a session that ended reads nothing more;
an outbox of one byte."""

from __future__ import annotations

import pytest

from diverge_codec import relay
from diverge_codec.relay.outbox import Outbox
from diverge_codec.relay.session import RelaySession


def _unreachable() -> RelaySession:
    session = RelaySession()
    session.start()
    session.end_of_output()  # the server ended before answering initialize
    assert session.report.unreachable and len(session.outbox) == 1
    return session


def test_an_unreachable_session_s_lost_error_frame_is_no_backpressure_drop():
    session = _unreachable()
    assert session.outbox.take(1 << 20) == [relay.unreachable_frame()]
    session.lost(1)  # taken, never reached the channel
    report = session.finish_report()
    assert report.dropped["backpressure"] == 0 and (report.seen, report.relayed) == (0, 0)


def test_an_unreachable_session_s_abandoned_error_frame_is_no_backpressure_drop():
    session = _unreachable()
    session.abandon()
    assert session.finish_report().as_dict()["dropped"] == {"backpressure": 0, "invalid": 0, "too_large": 0}


def test_a_session_that_was_reached_counts_each_lost_payload():
    session = RelaySession()
    session.receive(b'{"jsonrpc":"2.0","method":"n/x"}\n' * 3)
    assert len(session.outbox.take(1 << 20)) == 3
    session.lost(2)
    session.sent(1)
    report = session.finish_report()
    assert (report.dropped["backpressure"], report.relayed, report.seen) == (2, 1, 3)


def test_a_session_that_ended_reads_nothing_more():
    session = RelaySession()
    session.receive(b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{}}}\n')
    session.end_of_output()
    line = b'{"jsonrpc":"2.0","method":"n/x"}\n'
    assert session.receive(line) == b"" and session.receive_messages([line.rstrip()]) == b""
    assert session.report.seen == 0 and len(session.outbox) == 0


def test_an_outbox_of_one_byte_holds_a_one_byte_payload_and_none_is_refused():
    outbox = Outbox(1)
    assert outbox.offer(b"\x02") and outbox.offer(b"\x02\x02") and not outbox.offer(b"\x02")
    assert (len(outbox), outbox.dropped) == (2, 1)  # the byte, then the one payload over the bound
    with pytest.raises(ValueError, match="^max_bytes must be at least 1$"):
        Outbox(0)


def test_an_outbox_s_default_bound_is_one_mib():
    assert Outbox().max_bytes == 1 << 20


def test_taking_fewer_than_a_block_leaves_the_rest_of_it_first_in_order():
    outbox = Outbox(1000)
    payloads = [b"\x00" + bytes([48 + n]) * n for n in range(5)]
    assert outbox.offer_all(payloads) == 5 and outbox.offer(b"\x02")  # one block of five, then one more
    assert outbox.take(2) == payloads[:2] and (len(outbox), outbox.queued_bytes) == (4, sum(map(len, payloads[2:])) + 1)
    assert outbox.take(2) == payloads[2:4]
    assert outbox.take() == [payloads[4], b"\x02"] and len(outbox) == 0 and outbox.queued_bytes == 0
