"""The relay session's report where the channel loses what it was given: an unreachable session's
Error frame is no notification, so losing it or abandoning it drops no notification."""

from __future__ import annotations

from diverge_codec import relay
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
