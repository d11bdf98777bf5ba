"""The sans-IO session's rules that mutation testing found unasserted (issue #45), each as the report says it."""

from __future__ import annotations

from test_relay_session_eras import session

from diverge_codec.relay import eras
from diverge_codec.relay.session import Phase


def test_the_modern_revision_forced_and_the_probe_unanswered_fails_the_handshake_sending_nothing_more():
    relay, clock = session(protocol="2026-07-28", calls=[("echo", {})])
    relay.start()
    clock.now += eras.DISCOVER_TIMEOUT
    assert relay.expire() == b""  # no initialize: the 2025 handshake is for auto alone
    assert relay.phase is Phase.FAILED and relay.shutdown_reason == "handshake failed"
    assert relay.finish_report().as_dict()["server"]["discover"] == "no answer within 1 s"
