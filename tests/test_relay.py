"""The relay's sans-IO parts, with both cores: the envelope splice, its parsing fallback, the outbox."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diverge_codec import _json, relay, stream
from diverge_codec.sequence import McpNotificationsChecker, State, check

PROGRESS = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}'


@pytest.mark.parametrize("message, body", [
    (PROGRESS + b"\n", b'{"method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}'),
    (b'{"jsonrpc":"2.0","method":"n/x","params":null}\r\n', b'{"method":"n/x","params":null}'),
    (b'{"jsonrpc":"2.0","method":"n/x","params":{"_meta":{"a":[1]}}}', b'{"method":"n/x","params":{"_meta":{"a":[1]}}}'),
    (b' {"method":"n/x","jsonrpc":"2.0"} ', b'{"method":"n/x"}'),
    (b'{"jsonrpc":"2.0","method":"n/x","params":{"data":{"id":7}}}', b'{"method":"n/x","params":{"data":{"id":7}}}'),
    (b'{"jsonrpc" : "2.0", "method" : "n/x"}', b'{"method" : "n/x"}'),
])
def test_a_notification_loses_its_envelope_and_nothing_else(mn, message, body):
    assert relay.relay_frame(message, mn) == b"\x00" + body
    assert relay.relay_frame(bytearray(message), mn) == b"\x00" + body
    assert relay.relay_frame(memoryview(message), mn) == b"\x00" + body
    assert relay.notification_json(message) == body


@pytest.mark.parametrize("message, payload", [
    (PROGRESS, b'\x00{"method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}'),
    (b'\t\r\n {"jsonrpc":"2.0","method":"n/x"} \n', b'\x00{"method":"n/x"}'),
    (b'{"jsonrpc":"2.0","method":"n/x","params":{"data":"\\"id\\""}}', b'\x00{"method":"n/x","params":{"data":"\\"id\\""}}'),
    (b'{"jsonrpc":"2.0","method":"n/x","params":{"data":{"id":7}}}', b'\x00{"method":"n/x","params":{"data":{"id":7}}}'),
    (b'{"jsonrpc":"2.0","method":"n/x","params":{"s":"\\u0065"}}', b'\x00{"method":"n/x","params":{"s":"\\u0065"}}'),
    (b'{"jsonrpc" : "2.0","method":"n/x"}', b'\x00{"method":"n/x"}'),
    (b'{"method":"n/x","jsonrpc":"2.0"}', b'\x00{"method":"n/x"}'),
])
def test_splice_removes_the_envelope_wherever_it_stands(mn, message, payload):
    assert mn.splice_notification(message) == payload


@pytest.mark.parametrize("message", [
    b'{"jsonrpc":"2.0","method":7}', b'{"jsonrpc":"2.0","method":"', b'{"jsonrpc":"2.0","method":"id"g"}',
    b'{"jsonrpc":"2.0","method":', b"not json",
])
def test_splice_refuses_what_the_channel_refuses(mn, message):
    with pytest.raises(mn.NotificationParseError):
        mn.splice_notification(message)


def test_splice_refuses_what_is_not_bytes_like(mn):
    with pytest.raises(TypeError, match="splice_notification takes bytes-like JSON .* not str"):
        mn.splice_notification('{"jsonrpc":"2.0","method":"n/x"}')


_FRAGMENTS = st.sampled_from([
    b'{"jsonrpc":"2.0","method":"', b'"id"', b'"i', b'd"', b"\\u006", b"\\u00", b"\\", b'"', b"n/x", b"}",
    b" ", b"\n", b"\t", b":", b",", b"{", b"1",
])


def _outcome(core, message):
    try:
        return core.splice_notification(message)
    except core.NotificationParseError as error:
        return str(error)


@given(st.lists(_FRAGMENTS, max_size=12).map(b"".join))
def test_both_cores_splice_alike(both_mn, message):
    compiled, pure = both_mn
    spliced = _outcome(pure, message)
    assert _outcome(compiled, message) == spliced
    try:
        original = _json.loads(message)
    except ValueError:
        assert isinstance(spliced, str) or (spliced is None and not message.strip())
        return
    if isinstance(spliced, bytes):  # a splice is what parsing and dropping the envelope would give
        assert "id" not in original
        original.pop("jsonrpc", None)
        assert _json.loads(spliced[1:]) == original


@pytest.mark.parametrize("message", [
    b'{"jsonrpc":"2.0","id":1,"result":{}}',
    b'{"jsonrpc":"2.0","id":2,"method":"ping"}',
    b'{"jsonrpc":"2.0","method":"ping","id":2}',
    b'{"jsonrpc":"2.0","method":"ping","\\u0069d":2}',
    b'{"jsonrpc":"2.0","method":"ping","i\\u0064":2}',
    b'[{"jsonrpc":"2.0","method":"n/x"}]',
    b"",
    b" \r\n",
])
def test_what_is_no_notification_is_not_relayed(message):
    assert relay.notification_json(message) is None
    assert relay.relay_frame(message) is None


def test_a_notification_deeper_than_orjson_writes_goes_as_sent():
    deep = b'{"method":"n/x","params":{"d":' + b"[" * 300 + b"]" * 300 + b"}}"
    assert relay.notification_json(deep) == deep


def test_the_relay_frame_is_frame_notification_of_the_body(mn):
    body = relay.notification_json(PROGRESS)
    assert mn.frame_notification(body) == relay.relay_frame(PROGRESS) == b"\x00" + body
    assert mn.decode(relay.relay_frame(PROGRESS)).notification == {
        "method": "notifications/progress", "params": {"progressToken": 1, "progress": 0.5}}


def test_the_unreachable_frame_is_one_error(mn):
    assert relay.unreachable_frame() == b"\x01{\"code\":-32000,\"message\":\"the container's MCP server cannot be reached\"}"
    checker = McpNotificationsChecker(mn)
    assert check(checker, [relay.unreachable_frame()]) is State.ENDED_WITH_ERROR and checker.finished


def test_the_outbox_drops_and_counts_what_does_not_fit():
    outbox = relay.Outbox(max_bytes=10)
    assert [outbox.offer(p) for p in (b"aaaa", b"bbbb", b"ccc", b"dd", b"e")] == [True, True, False, True, False]
    assert (len(outbox), outbox.queued_bytes, outbox.accepted, outbox.dropped) == (3, 10, 3, 2)
    assert outbox.take(2) == [b"aaaa", b"bbbb"]
    assert outbox.queued_bytes == 2 and outbox.offer(b"12345678")
    assert outbox.take() == [b"dd", b"12345678"] and outbox.queued_bytes == 0
    assert outbox.stats() == {"accepted": 4, "dropped": 2, "abandoned": 0, "high_water_bytes": 10, "max_bytes": 10}
    assert repr(outbox) == "Outbox(queued=0, queued_bytes=0, accepted=4, dropped=2)"
    with pytest.raises(ValueError, match="max_bytes must be at least 1"):
        relay.Outbox(0)


def test_the_outbox_admits_one_payload_larger_than_its_bound_beside_the_bound():
    outbox = relay.Outbox(max_bytes=10)
    big = b"x" * (2 << 20)
    assert outbox.offer(b"a") and outbox.offer(big) and outbox.offer(b"y" * 9)  # big is not counted against 10
    assert not outbox.offer(b"z") and not outbox.offer(big + b"!") and outbox.dropped == 2  # one oversized at a time
    assert outbox.queued_bytes == len(big) + 10 == outbox.high_water
    assert outbox.take(2) == [b"a", big] and outbox.queued_bytes == 9
    assert outbox.offer(big) and outbox.offer(b"z") and not outbox.offer(b"w")
    assert outbox.take() == [b"y" * 9, big, b"z"] and outbox.queued_bytes == 0
    assert (outbox.accepted, outbox.dropped) == (5, 3)


def test_abandon_empties_the_outbox_and_counts():
    outbox = relay.Outbox(max_bytes=10)
    outbox.offer(b"aa")
    outbox.offer(b"bb")
    assert outbox.abandon() == 2 and len(outbox) == 0 and outbox.queued_bytes == 0
    assert outbox.abandon() == 0 and outbox.stats()["abandoned"] == 2


@given(st.lists(st.integers(0, 30).map(lambda n: b"p" * n), max_size=12), st.integers(1, 40),
       st.lists(st.integers(0, 30).map(lambda n: b"q" * n), max_size=4))
def test_offer_all_is_offer_of_each_in_order(payloads, max_bytes, queued):
    one, each = relay.Outbox(max_bytes), relay.Outbox(max_bytes)
    for outbox in (one, each):
        for payload in queued:
            outbox.offer(payload)
    assert one.offer_all(payloads) == sum(each.offer(p) for p in payloads)
    assert one.stats() == each.stats() and one.queued_bytes == each.queued_bytes
    assert one.take(100) == each.take(100)


@given(st.lists(st.lists(st.integers(0, 30).map(lambda n: b"r" * n), max_size=8), max_size=5), st.integers(1, 60),
       st.lists(st.integers(1, 9), max_size=4))
def test_offer_records_is_offer_of_each_and_takes_split_blocks_anywhere(blocks, max_bytes, takes):
    """A chunk's records queued whole (ChunkFramer's output) are the payloads offered one by one,
    however they are taken: some at a time (a block split) or all as one write's records."""
    whole, each = relay.Outbox(max_bytes), relay.Outbox(max_bytes)
    for payloads in blocks:
        records = bytearray()
        stream.write_records(records, payloads)
        sizes = list(map(len, payloads))
        queued = whole.offer_records(bytes(records), len(payloads), sum(sizes), max(sizes, default=0))
        assert queued == sum(each.offer(p) for p in payloads)
        assert (whole.stats(), whole.queued_bytes, len(whole)) == (each.stats(), each.queued_bytes, len(each))
    for count in takes:
        assert whole.take(count) == each.take(count)
        assert (whole.queued_bytes, len(whole)) == (each.queued_bytes, len(each))
    records, count = whole.take_records()
    rest = each.take(1 << 20)
    assert count == len(rest) and [bytes(p) for p in stream.split_records(records)] == rest
    assert (whole.queued_bytes, len(whole), whole.take_records()) == (0, 0, (b"", 0))
