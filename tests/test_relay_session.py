"""The relay's session, sans-IO: lines, the handshake, calls, answers, drops and the Error frame."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diverge_codec import _json, relay, stream
from diverge_codec.errors import McpNotificationsNotificationParseError
from diverge_codec.relay.session import (
    ANSWER_BYTES_A_READ, DEFAULT_MAX_LINE, PROTOCOL_VERSION, SUPPORTED_VERSIONS, Phase, RelaySession,
)
from diverge_codec.sequence import McpNotificationsChecker, State, check


def _line(obj) -> bytes:
    return _json.dumps(obj) + b"\n"


def _answer(request_id=0, version=PROTOCOL_VERSION) -> bytes:
    return _line({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": version, "capabilities": {}}})


def _log(data, *, first=True) -> bytes:
    body = {"method": "notifications/message", "params": {"level": "info", "data": data}}
    return _line({"jsonrpc": "2.0", **body} if first else {**body, "jsonrpc": "2.0"})


def _sent(session: RelaySession) -> list[bytes]:
    return session.outbox.take(1 << 20)


def test_a_line_at_the_limit_makes_a_record_at_the_stream_s_default_limit():
    assert DEFAULT_MAX_LINE + 1 == stream.DEFAULT_MAX_RECORD == 16 << 20


def test_the_handshake_offers_the_latest_revision_then_sends_initialized_and_the_calls():
    session = RelaySession([("echo", {"x": 1}), ("add", {})])
    start = _json.loads(session.start())
    assert start == {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "diverge-codec-relay", "version": "1"}}}
    reply = session.receive(_answer(version="2025-06-18"))
    assert [_json.loads(line) for line in reply.splitlines()] == [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "echo", "arguments": {"x": 1}, "_meta": {"progressToken": "call-1"}}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "add", "arguments": {}, "_meta": {"progressToken": "call-2"}}},
    ]
    assert session.phase is Phase.READY and session.report.protocol_version == "2025-06-18"
    assert session.report.calls_sent == 2 and session.shutdown_reason is None


@pytest.mark.parametrize("answer", [
    _answer(version="1999-01-01"),
    _line({"jsonrpc": "2.0", "id": 0, "error": {"code": -32602, "message": "Unsupported protocol version"}}),
    _line({"jsonrpc": "2.0", "id": 0, "result": {}}),
])
def test_a_handshake_the_relay_cannot_speak_ends_the_session_as_unreachable(answer):
    session = RelaySession([("echo", {})])
    assert session.receive(answer) == b""
    assert session.phase is Phase.FAILED and session.shutdown_reason == "handshake failed"
    session.end_of_output()
    assert _sent(session) == [relay.unreachable_frame()] and session.report.unreachable
    assert session.report.calls_sent == 0


def test_notifications_before_the_answer_are_relayed_and_then_no_error_is_sent():
    session = RelaySession()
    session.receive(_log("early", first=False))
    session.receive(_answer(version="1999-01-01"))
    session.end_of_output()
    assert _sent(session) == [relay.relay_frame(_log("early"))]
    assert not session.report.unreachable and session.report.seen == 1


def test_output_that_ends_before_anything_gives_the_one_error_and_its_sequence_is_valid(mn):
    session = RelaySession()
    session.receive(b'[1]\n{"jsonrpc":"2.0","id":99,"result":{}}\n')
    session.end_of_output()
    payloads = _sent(session)
    assert payloads == [relay.unreachable_frame()] and session.report.ignored == 2
    assert check(McpNotificationsChecker(mn), payloads) is State.ENDED_WITH_ERROR
    session.sent(1)
    assert session.finish_report().relayed == 0


def test_output_that_ends_after_the_answer_gives_the_finish_alone():
    session = RelaySession()
    session.receive(_answer())
    session.end_of_output()
    assert _sent(session) == [] and not session.report.unreachable


def test_calls_are_counted_answered_and_until_answered_asks_for_shutdown():
    session = RelaySession([("a", {}), ("b", {})], until_answered=True)
    session.receive(_answer())
    session.receive(_line({"jsonrpc": "2.0", "id": 2, "error": {"code": -1, "message": "no"}}))
    assert session.shutdown_reason is None
    session.receive(_line({"jsonrpc": "2.0", "id": 2, "result": {}}))  # answered twice: the second is ignored
    session.receive(_line({"jsonrpc": "2.0", "id": 1, "result": {}}))
    report = session.report
    assert (report.calls_sent, report.calls_answered, report.calls_failed, report.ignored) == (2, 2, 1, 1)
    assert session.shutdown_reason == "until-answered"


def test_until_answered_without_calls_ends_after_the_handshake():
    session = RelaySession(until_answered=True)
    session.receive(_answer())
    assert session.shutdown_reason == "until-answered"


def test_a_ping_is_answered_and_other_requests_are_refused():
    session = RelaySession()
    reply = session.receive(_line({"jsonrpc": "2.0", "id": "p", "method": "ping"})
                            + _line({"jsonrpc": "2.0", "id": 7, "method": "roots/list"}))
    assert [_json.loads(line) for line in reply.splitlines()] == [
        {"jsonrpc": "2.0", "id": "p", "result": {}},
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found"}},
    ]
    assert session.report.requests_answered == 2 and session.report.seen == 0


def test_every_notification_is_relayed_in_order_whatever_the_member_order():
    session = RelaySession()
    chunk = _log(1) + _log(2, first=False) + _answer() + _log(3)
    session.receive(chunk[:17])
    session.receive(chunk[17:])
    bodies = [_json.loads(p[1:])["params"]["data"] for p in _sent(session)]
    assert bodies == [1, 2, 3] and session.report.seen == 3


def _refusing_frame(line: bytes) -> bytes | None:
    if b"refuse" in line:
        raise McpNotificationsNotificationParseError("lone surrogate")
    return relay.relay_frame(line)


def test_a_notification_the_channel_refuses_is_counted_invalid_and_the_relay_goes_on():
    session = RelaySession(frame=_refusing_frame)
    session.receive(_log("refuse") + _log("kept"))
    assert [_json.loads(p[1:])["params"]["data"] for p in _sent(session)] == ["kept"]
    assert session.report.dropped == {"backpressure": 0, "invalid": 1, "too_large": 0}
    assert session.report.seen == 2


def test_too_large_lines_and_payloads_are_counted():
    session = RelaySession(max_line=100, frame=lambda line: b"\x00" + line * 2 if b"grow" in line else relay.relay_frame(line))
    session.receive(_log("x" * 120) + _log("grow") + _log("ok"))
    session.end_of_output()
    assert len(_sent(session)) == 1
    report = session.finish_report()
    assert report.dropped == {"backpressure": 0, "invalid": 0, "too_large": 2} and report.seen == 3


def test_backpressure_drops_are_counted_and_abandon_counts_what_was_queued():
    session = RelaySession(outbox_bytes=100)  # each payload is ~70 bytes: one fits, the next does not
    session.receive(b"".join(_log(i) for i in range(10)))
    assert (len(session.outbox), session.outbox.dropped) == (1, 9)
    session.abandon()
    report = session.finish_report()
    assert (report.seen, report.relayed) == (10, 0)
    assert report.as_dict()["dropped"] == {"backpressure": 10, "invalid": 0, "too_large": 0}


def test_the_report_as_a_dict_says_nothing_from_a_payload():
    session = RelaySession([("secret-tool", {"token": "s3cr3t"})])
    session.receive(_log("s3cr3t-in-a-log") + _answer())
    text = str(session.finish_report().as_dict())
    assert "s3cr3t" not in text and "secret-tool" not in text


def test_requests_go_before_the_calls_and_only_calls_carry_a_progress_token():
    session = RelaySession([("echo", {})], requests=[("logging/setLevel", {"level": "debug"})], until_answered=True)
    reply = [_json.loads(line) for line in session.receive(_answer()).splitlines()]
    assert reply[1:] == [
        {"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "echo", "arguments": {}, "_meta": {"progressToken": "call-2"}}},
    ]
    session.receive(_line({"jsonrpc": "2.0", "id": 1, "result": {}}))
    assert session.shutdown_reason is None and session.report.calls_answered == 1
    session.receive(_line({"jsonrpc": "2.0", "id": 2, "result": {}}))
    assert session.shutdown_reason == "until-answered" and session.report.calls_sent == 2


def test_a_line_limit_past_what_a_record_can_frame_is_refused():
    with pytest.raises(ValueError, match="^max_line must be at most 4294967294: with its tag, a payload is what a "
                                         "record's length can say$"):
        RelaySession(max_line=(1 << 32) - 1)
    assert RelaySession(max_line=(1 << 32) - 2).record_limit == (1 << 32) - 1


_MESSAGES = st.sampled_from([
    ("notification", _log("a")), ("notification", _log("b", first=False)),
    ("notification", _line({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": 1, "progress": 0.5}})),
    ("answer", _answer()), ("answer", _answer(version="1999-01-01")),
    ("other", _line({"jsonrpc": "2.0", "id": 5, "result": {}})), ("other", b"[1]\n"), ("other", b"\n"),
    ("request", _line({"jsonrpc": "2.0", "id": 9, "method": "ping"})),
    ("too large", _log("x" * 300)),
    ("refused", b"\x0b\n"), ("refused", b" \x0c \n"), ("other", b" \t\r\n"),
])


@given(st.lists(_MESSAGES, max_size=30), st.integers(1, 64), st.integers(10, 400))
def test_any_session_sends_a_valid_channel_and_accounts_for_every_notification(mn, messages, chunk, outbox_bytes):
    session = RelaySession(max_line=200, outbox_bytes=outbox_bytes)
    stream_bytes = b"".join(message for _, message in messages)
    payloads: list[bytes] = []
    for at in range(0, len(stream_bytes), chunk):
        session.receive(stream_bytes[at:at + chunk])
        if at % (chunk * 3) == 0:  # the channel takes what is queued now and then
            taken = session.outbox.take(1 << 20)
            session.sent(len(taken))
            payloads += taken
    session.end_of_output()
    taken = session.outbox.take(1 << 20)
    session.sent(len(taken))
    payloads += taken
    report = session.finish_report()
    notifications = [kind for kind, _ in messages].count("notification")
    large = [kind for kind, _ in messages].count("too large")
    refused = [kind for kind, _ in messages].count("refused")
    assert report.seen == notifications + large + refused == report.relayed + sum(report.dropped.values())
    assert report.dropped["too_large"] == large and report.dropped["invalid"] == refused
    checker = McpNotificationsChecker(mn)
    state = check(checker, payloads)
    answered = next((message for kind, message in messages if kind == "answer"), None) == _answer()  # the first counts
    if report.relayed == 0 and not answered:
        assert state is State.ENDED_WITH_ERROR and report.unreachable
    else:
        assert state in (State.FINISHED, State.UNREADABLE) and not report.unreachable


class Clock:
    """A clock the test moves: the session's time, injected."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _ready(session: RelaySession) -> bytes:
    session.start()
    return session.receive(_answer())


def test_an_unanswered_call_is_cancelled_counted_failed_and_ends_until_answered():
    clock = Clock()
    session = RelaySession([("slow", {})], until_answered=True, request_timeout=5, clock=clock)
    session.start()
    assert session.next_deadline() == 105.0  # initialize's
    clock.now = 104.9
    session.receive(_answer())  # the call is sent now: its deadline is 109.9
    clock.now = 105.0
    assert session.expire() == b"" and session.report.calls_failed == 0 and session.next_deadline() == 109.9
    clock.now = 109.9
    assert _json.loads(session.expire()) == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                            "params": {"requestId": 1, "reason": "no answer within 5 s"}}
    report = session.report
    assert (report.calls_sent, report.calls_answered, report.calls_failed, report.calls_timed_out) == (1, 0, 1, 1)
    assert session.shutdown_reason == "until-answered" and session.next_deadline() is None
    session.receive(_line({"jsonrpc": "2.0", "id": 1, "result": {}}))  # too late: nobody waits for it
    assert (report.calls_answered, report.ignored) == (0, 1)
    assert report.as_dict()["calls"] == {"sent": 1, "answered": 0, "failed": 1, "timed_out": 1}


def test_an_unanswered_initialize_fails_the_handshake_and_is_never_cancelled():
    clock = Clock()
    session = RelaySession(request_timeout=2, clock=clock)
    session.start()
    clock.now = 102.0
    assert session.expire() == b""  # MCP: initialize MUST NOT be cancelled
    assert session.phase is Phase.FAILED and session.shutdown_reason == "initialize timed out"
    assert session.receive(_answer()) == b"" and session.phase is Phase.FAILED  # a late answer starts nothing


def test_no_timeout_means_no_deadline():
    session = RelaySession([("slow", {})], request_timeout=None, clock=Clock())
    _ready(session)
    assert session.next_deadline() is None and session.expire() == b"" and session.pending.keys() == {1}


@pytest.mark.parametrize("timeout", [0, -1.0, float("nan")])
def test_a_timeout_that_is_not_positive_is_refused(timeout):
    with pytest.raises(ValueError, match="^request_timeout must be more than 0, or None$"):
        RelaySession(request_timeout=timeout)


def test_a_tool_result_with_is_error_counts_as_a_failed_call_and_only_a_tool_call_s():
    session = RelaySession([("missing", {}), ("fine", {})], requests=[("logging/setLevel", {"level": "debug"})])
    _ready(session)
    session.receive(_line({"jsonrpc": "2.0", "id": 1, "result": {"isError": True}}))  # not a tool call: no tool result
    session.receive(_line({"jsonrpc": "2.0", "id": 2, "result": {"content": [], "isError": True}}))
    session.receive(_line({"jsonrpc": "2.0", "id": 3, "result": {"content": [], "isError": "yes"}}))  # not true
    report = session.report
    assert (report.calls_sent, report.calls_answered, report.calls_failed) == (3, 3, 1)


def test_requests_made_while_the_server_does_not_read_are_counted_not_answered():
    session = RelaySession()
    _ready(session)
    ping = _line({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    session.server_reading = False
    assert session.receive(ping * 3) == b""
    session.server_reading = True
    assert session.receive(ping) == _line({"jsonrpc": "2.0", "id": "p", "result": {}})
    assert (session.report.requests_answered, session.report.requests_unanswered) == (1, 3)


@pytest.mark.parametrize("size, answered", [
    (39, 6722),  # "p": the bound crossed inside the last answer
    (64, 4096),  # the answers end exactly at the bound: none after it
    (63, 4162),  # one byte short of it after 4,161 answers: one more is answered
])
def test_the_answers_to_one_read_stop_at_their_bound_and_the_requests_past_it_are_counted(size, answered):
    """A read of a whole pipe of pings (the CLI reads up to 1 MiB) hands the server no more than
    ANSWER_BYTES_A_READ (256 KiB) of answers, the one that crosses it included; the next read starts afresh."""
    assert ANSWER_BYTES_A_READ == 256 * 1024
    session = RelaySession()
    _ready(session)
    request_id = "p" * (size - 38)
    ping = _line({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    answer = _line({"jsonrpc": "2.0", "id": request_id, "result": {}})
    assert len(answer) == size
    assert session.receive(ping * (answered + 100)) == answer * answered
    assert (session.report.requests_answered, session.report.requests_unanswered) == (answered, 100)
    assert session.receive(ping * 2) == answer * 2
    assert (session.report.requests_answered, session.report.requests_unanswered) == (answered + 2, 100)


def test_only_a_revision_the_relay_speaks_can_be_offered():
    with pytest.raises(ValueError, match="^protocol_version must be one the relay speaks: 2025-11-25, 2025-06-18, "
                                         "2025-03-26, 2024-11-05$"):
        RelaySession(protocol_version="2024-10-07")
    for version in SUPPORTED_VERSIONS:  # and what it offers, it accepts back
        session = RelaySession(protocol_version=version)
        session.start()
        session.receive(_answer(version=version))
        assert session.phase is Phase.READY


def test_a_line_of_exactly_max_line_bytes_is_relayed_and_one_more_is_too_large():
    body = b'{"method":"notifications/message","params":{"data":"%s"}}'
    at_limit = body % (b"x" * (100 - len(body % b"")))
    assert len(at_limit) == 100
    session = RelaySession(max_line=100)
    session.receive(at_limit + b"\n" + at_limit[:-2] + b'x"}}\n')
    session.end_of_output()
    assert _sent(session) == [b"\x00" + at_limit]  # a record of max_line + 1 bytes: the record limit
    assert session.finish_report().dropped["too_large"] == 1 and session.report.seen == 2


def test_only_json_whitespace_makes_a_line_blank():
    session = RelaySession()
    session.receive(b" \t\r\n\n\x0b\n\x0c \n \t\n")  # \x0b and \x0c are no JSON whitespace: lines, refused ones
    assert (session.report.seen, session.report.dropped["invalid"], session.report.ignored) == (2, 2, 0)


@given(st.lists(_MESSAGES, max_size=30))
def test_a_chunk_of_lines_is_read_as_the_same_lines_one_by_one(mn, messages):
    """Refused lines taken out of a chunk's one framing pass: the same queue and report as line by line."""
    whole, single = (RelaySession(max_line=200, outbox_bytes=1 << 20, frame=mn.splice_notification) for _ in range(2))
    replies = whole.receive(b"".join(message for _, message in messages))
    assert replies == b"".join(single.receive(message) for _, message in messages)
    assert whole.outbox.take(1 << 20) == single.outbox.take(1 << 20)
    assert whole.finish_report().as_dict() == single.finish_report().as_dict()


def test_on_answer_hears_each_request_s_label_and_answer_and_a_timeout_as_none():
    clock = [0.0]
    heard: list[tuple[str, object]] = []
    session = RelaySession([("echo", {"x": 1}), ("slow", {})], requests=[("tools/list", {})],
                           request_timeout=5.0, clock=lambda: clock[0])
    session.on_answer = lambda label, message: heard.append((label, message))
    session.start()
    session.receive(_answer())
    error = {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "Unknown tool"}}
    session.receive(_line({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}) + _line(error))
    clock[0] = 6.0
    session.expire()
    assert heard == [("tools/list", {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
                     ("tools/call echo", error), ("tools/call slow", None)]
    assert session.report.calls_failed == 2 and session.report.calls_timed_out == 1


def test_restart_gives_up_calls_in_flight_and_initializes_again_then_sends_only_the_requests():
    heard: list[tuple[str, object]] = []
    session = RelaySession([("echo", {}), ("slow", {})], requests=[("logging/setLevel", {"level": "debug"})],
                           until_answered=True)
    session.on_answer = lambda label, message: heard.append((label, message))
    session.start()
    session.receive(_answer())
    session.receive(_line({"jsonrpc": "2.0", "id": 2, "result": {"content": []}}) + _log("before"))
    again = _json.loads(session.restart())
    assert again["method"] == "initialize" and again["id"] == 4 and session.phase is Phase.INITIALIZING
    lost = "lost with its session: the server restarted or forgot it"  # not a timeout: told so
    assert heard == [("tools/call echo", {"jsonrpc": "2.0", "id": 2, "result": {"content": []}}),
                     ("logging/setLevel", {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": lost}}),
                     ("tools/call slow", {"jsonrpc": "2.0", "id": 3, "error": {"code": -32000, "message": lost}})]
    assert session.report.calls_failed == 2 and session.shutdown_reason is None
    session.receive(_answer(request_id=0))  # the old session's answer to initialize: no longer awaited
    assert session.phase is Phase.INITIALIZING and session.report.ignored == 1
    reply = session.receive(_answer(request_id=4))
    assert [_json.loads(line) for line in reply.splitlines()] == [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 5, "method": "logging/setLevel", "params": {"level": "debug"}}]
    assert session.report.calls_sent == 4 and session.shutdown_reason is None
    session.receive(_line({"jsonrpc": "2.0", "id": 5, "result": {}}) + _log("after"))
    assert session.shutdown_reason == "until-answered"
    assert session.report.calls_answered == 2 and session.report.relayed == 0 and session.report.seen == 2
    assert [_json.loads(payload[1:])["params"]["data"] for payload in _sent(session)] == ["before", "after"]


def test_restart_after_the_end_does_nothing():
    session = RelaySession()
    session.end_of_output()
    assert session.restart() == b"" and session.phase is Phase.INITIALIZING
