"""The sans-IO session in both eras (``relay.session``, ``relay.eras``): scripted bytes, a driven clock, no process."""

from __future__ import annotations

import pytest

from diverge_codec import _json
from diverge_codec.relay import eras
from diverge_codec.relay.session import DISCOVER_ID, Phase, RelaySession

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "diverge-codec-relay", "version": "1"}}
SUBSCRIBE = ("resources/subscribe", {"uri": "file:///a"})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def messages(data: bytes) -> list[dict]:
    return [_json.loads(line) for line in data.splitlines()]


def line(obj: dict) -> bytes:
    return _json.dumps({"jsonrpc": "2.0", **obj}) + b"\n"


def session(**options) -> tuple[RelaySession, Clock]:
    clock = Clock()
    options.setdefault("protocol", "auto")
    return RelaySession(clock=clock, **options), clock


DISCOVERED = line({"id": DISCOVER_ID, "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}})
ACK = line({"method": "notifications/subscriptions/acknowledged", "params": {
    "_meta": {"io.modelcontextprotocol/subscriptionId": 1}, "notifications": {"toolsListChanged": True}}})


def test_auto_probes_with_discover_carrying_the_revision_s_meta_and_no_log_level():
    relay, _ = session()
    assert messages(relay.start()) == [{"jsonrpc": "2.0", "id": DISCOVER_ID, "method": "server/discover", "params": {"_meta": META}}]
    assert relay.phase is Phase.DISCOVERING


def test_a_modern_server_gets_the_listen_stream_then_after_its_ack_the_requests_and_calls_with_meta():
    relay, _ = session(calls=[("echo", {"x": 1})], requests=[SUBSCRIBE, ("tools/list", {}), ("logging/setLevel", {"level": "info"})])
    relay.start()
    listen = messages(relay.receive(DISCOVERED))
    assert listen == [{"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {"_meta": META, "notifications": {
        "toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True, "resourceSubscriptions": ["file:///a"]}}}]
    assert relay.phase is Phase.LISTENING and relay.report.listen == "unacknowledged"
    sent = messages(relay.receive(ACK))
    logged = {**META, "io.modelcontextprotocol/logLevel": "info"}  # setLevel's level, folded in
    assert sent == [
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": logged}},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"x": 1},
                                                                          "_meta": {**logged, "progressToken": "call-3"}}},
    ]
    assert relay.report.listen == "acknowledged" and relay.report.calls_sent == 2 and relay.report.protocol_version == "2026-07-28"
    assert relay.outbox.accepted == 1  # the ack is relayed like any notification


def test_the_log_level_defaults_to_debug_and_server_log_level_overrides():
    for given, expected in ((None, "debug"), ("error", "error")):
        relay, _ = session(calls=[("echo", {})], server_log_level=given)
        relay.start()
        relay.receive(DISCOVERED)
        call = messages(relay.receive(ACK))[0]
        assert call["params"]["_meta"]["io.modelcontextprotocol/logLevel"] == expected


def test_until_answered_ends_when_the_calls_are_answered_while_the_listen_stream_stays_open():
    relay, _ = session(calls=[("echo", {})], until_answered=True)
    relay.start()
    relay.receive(DISCOVERED)
    relay.receive(ACK)
    assert relay.shutdown_reason is None
    relay.receive(line({"id": 2, "result": {"resultType": "complete", "content": []}}))
    assert relay.shutdown_reason == "until-answered" and 1 in relay.pending


def test_without_an_ack_the_calls_go_out_after_the_ack_timeout():
    relay, clock = session(calls=[("echo", {})])
    relay.start()
    relay.receive(DISCOVERED)
    assert relay.next_deadline() == clock.now + eras.LISTEN_ACK_TIMEOUT
    clock.now += eras.LISTEN_ACK_TIMEOUT
    assert [m["method"] for m in messages(relay.expire())] == ["tools/call"] and relay.report.listen == "unacknowledged"


@pytest.mark.parametrize("answer", [
    {"error": {"code": -32601, "message": "Method not found"}},
    {"error": {"code": -32602, "message": "Invalid params"}},
    {"error": {"code": -32000, "message": "Server not initialized"}},
    {"result": {}},
])
def test_any_answer_that_is_not_modern_falls_back_to_initialize_never_keyed_to_one_code(answer):
    relay, _ = session(calls=[("echo", {})])
    relay.start()
    sent = messages(relay.receive(line({"id": DISCOVER_ID, **answer})))
    assert [m["method"] for m in sent] == ["initialize"] and sent[0]["id"] == 0 and relay.phase is Phase.INITIALIZING
    assert relay.report.discover.startswith("legacy")
    handshake = messages(relay.receive(line({"id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}})))
    assert [m["method"] for m in handshake] == ["notifications/initialized", "tools/call"]
    assert handshake[1]["params"]["_meta"] == {"progressToken": "call-1"}  # the 2025 era's call, as before


def test_no_answer_within_the_probe_s_timeout_sends_initialize_and_a_late_discover_result_still_wins():
    relay, clock = session(calls=[("echo", {})])
    relay.start()
    assert relay.next_deadline() == clock.now + eras.DISCOVER_TIMEOUT
    clock.now += eras.DISCOVER_TIMEOUT
    assert [m["method"] for m in messages(relay.expire())] == ["initialize"]
    assert relay.report.discover == "legacy (no answer within 1 s)"
    assert [m["method"] for m in messages(relay.receive(DISCOVERED))] == ["subscriptions/listen"]
    assert relay.report.discover == "modern" and 0 not in relay.pending  # initialize's answer no longer awaited


def test_a_late_discover_error_after_the_fallback_changes_nothing():
    relay, clock = session()
    relay.start()
    clock.now += eras.DISCOVER_TIMEOUT
    relay.expire()
    assert relay.receive(line({"id": DISCOVER_ID, "error": {"code": -32601, "message": "no"}})) == b""
    assert relay.phase is Phase.INITIALIZING and relay.shutdown_reason is None


def test_a_server_that_shares_no_revision_fails_the_handshake_naming_what_it_offered():
    relay, _ = session()
    relay.start()
    refusal = line({"id": DISCOVER_ID, "error": {"code": -32022, "message": "Unsupported protocol version",
                                       "data": {"supported": ["2099-01-01"], "requested": "2026-07-28"}}})
    assert relay.receive(refusal) == b""
    assert relay.phase is Phase.FAILED and relay.shutdown_reason == "handshake failed"
    report = relay.finish_report().as_dict()
    assert report["server"]["versions_offered"] == ["2099-01-01"] and report["server"]["discover"] == "no shared revision"


def test_a_modern_refusal_naming_a_2025_revision_gets_the_handshake_offering_it():
    relay, _ = session()
    relay.start()
    sent = messages(relay.receive(line({"id": DISCOVER_ID, "error": {"code": -32022, "message": "x", "data": {"supported": ["2025-06-18"]}}})))
    assert sent[0]["method"] == "initialize" and sent[0]["params"]["protocolVersion"] == "2025-06-18"


def test_the_modern_revision_forced_fails_on_a_2025_server_instead_of_falling_back():
    relay, _ = session(protocol="2026-07-28")
    relay.start()
    assert relay.receive(line({"id": DISCOVER_ID, "error": {"code": -32601, "message": "Method not found"}})) == b""
    assert relay.phase is Phase.FAILED and relay.report.discover == "legacy (error -32601)"


def test_a_2025_revision_forced_is_the_handshake_offering_it_and_protocol_none_is_today_s_relay():
    for protocol in ("2025-06-18", None):
        relay, _ = session(protocol=protocol)
        start = messages(relay.start())[0]
        assert start["method"] == "initialize"
        assert start["params"]["protocolVersion"] == (protocol or "2025-11-25")
        assert relay.finish_report().as_dict()["server"] == {}


def test_input_required_ends_the_call_counted_failed():
    relay, _ = session(calls=[("ask", {})])
    relay.start()
    relay.receive(DISCOVERED)
    relay.receive(ACK)
    heard = []
    relay.on_answer = lambda label, answer: heard.append(label)
    relay.receive(line({"id": 2, "result": {"resultType": "input_required", "requestState": "s"}}))
    assert relay.report.input_required == 1 and relay.report.calls_failed == 1 and heard == ["tools/call ask"]


def test_the_listen_stream_ended_by_the_server_is_said_and_never_counted_a_call():
    relay, _ = session()
    relay.start()
    relay.receive(DISCOVERED)
    relay.receive(ACK)
    relay.receive(line({"id": 1, "result": {"resultType": "complete"}}))
    assert relay.report.listen == "ended by the server" and relay.report.calls_answered == 0


def test_the_2025_era_sends_set_level_first_only_when_a_level_is_given():
    answer = line({"id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {}}})
    given = RelaySession(server_log_level="warning")
    given.start()
    assert [m.get("params") for m in messages(given.receive(answer))][1] == {"level": "warning"}
    plain = RelaySession()
    plain.start()
    assert [m["method"] for m in messages(plain.receive(answer))] == ["notifications/initialized"]


@pytest.mark.parametrize("option", [{"protocol": "2099-01-01"}, {"server_log_level": "verbose"}])
def test_an_unknown_protocol_or_log_level_is_refused(option):
    with pytest.raises(ValueError):
        RelaySession(**option)


def test_the_era_decided_is_said_in_words_once():
    said: list[str] = []
    relay, clock = session()
    relay.on_era = said.append
    relay.start()
    clock.now += eras.DISCOVER_TIMEOUT
    relay.expire()
    relay.receive(DISCOVERED)
    assert said == ["the 2025 handshake, offering 2025-11-25 (server/discover: legacy (no answer within 1 s))",
                    "2026-07-28 (server/discover answered; the handshake sent after the wait is not awaited)"]


def test_the_person_hears_input_required_and_the_versions_a_server_offered():
    from diverge_codec.cli._watch import failure_line, unreachable_line

    asked = {"jsonrpc": "2.0", "id": 2, "result": {"resultType": "input_required", "requestState": "s"}}
    assert failure_line("tools/call ask", asked) == (
        "tools/call ask failed: the server asked for input (input_required); the relay has none to give")
    report = {"unreachable": True, "server": {"started": True, "shutdown": "handshake failed", "exit_status": 0,
                                              "versions_offered": ["2099-01-01", "\x1b[31m"]}}
    line = unreachable_line(report)
    assert line is not None and line.startswith("the server shares no MCP revision with the relay: it offered 2099-01-01, ")
    assert "\x1b" not in line and line.endswith("; the relay speaks 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05")


def test_after_the_fallback_a_refused_initialize_fails_at_once_unless_the_refusal_is_modern():
    for refusal, waits in (({"code": -32601, "message": "no"}, False),
                           ({"code": -32022, "message": "x", "data": {"supported": ["2026-07-28"]}}, True)):
        relay, clock = session()
        relay.start()
        clock.now += eras.DISCOVER_TIMEOUT
        relay.expire()
        relay.receive(line({"id": 0, "error": refusal}))
        assert (relay.shutdown_reason is None) is waits  # a modern refusal: the probe's late answer still decides
        if waits:
            assert relay.report.versions_offered == ["2026-07-28"]
            assert [m["method"] for m in messages(relay.receive(DISCOVERED))] == ["subscriptions/listen"]


def test_a_driver_of_the_2025_era_alone_still_offers_a_2025_revision_forced_and_never_probes():
    from diverge_codec.relay.channel import ChannelRelay, RelayOptions

    for protocol, offered in (("2025-06-18", "2025-06-18"), ("auto", "2025-11-25")):
        start = messages(ChannelRelay(None, RelayOptions(protocol=protocol)).session.start())[0]  # type: ignore[arg-type]
        assert start["method"] == "initialize" and start["params"]["protocolVersion"] == offered


def test_a_probe_the_transport_refused_falls_back_to_the_handshake_under_auto_alone():
    relay, _ = session()
    relay.start()
    sent = messages(relay.not_modern("HTTP 404"))
    assert [message["method"] for message in sent] == ["initialize"] and relay.report.discover == "HTTP 404"
    assert DISCOVER_ID not in relay.pending and relay.not_modern("HTTP 404") == b""  # once: the handshake decides
    forced, _ = session(protocol="2026-07-28")
    forced.start()
    assert forced.not_modern("HTTP 405") == b"" and forced.phase is Phase.FAILED and forced.shutdown_reason == "handshake failed"


def test_the_listen_stream_reopened_is_a_new_request_with_the_same_filter_and_the_calls_not_held_again():
    relay, _ = session(calls=[("echo", {})], requests=[SUBSCRIBE])
    relay.start()
    first = messages(relay.receive(DISCOVERED))[0]
    calls = messages(relay.receive(ACK))
    assert relay.phase is Phase.READY and [message["method"] for message in calls] == ["tools/call"]
    again = messages(relay.relisten())
    assert [message["method"] for message in again] == ["subscriptions/listen"] and again[0]["id"] != first["id"]
    assert again[0]["params"] == first["params"] and relay.listen_id == again[0]["id"] and first["id"] not in relay.pending
    assert relay.phase is Phase.READY and relay.report.listen == "acknowledged" and relay.report.listen_reopened == 1
    assert relay.report.as_dict()["server"]["listen_reopened"] == 1
    assert relay.next_deadline() == relay.pending[calls[0]["id"]][1]  # the call's own deadline: no acknowledgement awaited
