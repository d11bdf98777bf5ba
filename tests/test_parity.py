"""The compiled and pure cores agree on every input: the same frame and bytes, or the same error class and message."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from strategies import notifications_payloads, tools_begin_payloads

EDGE_CASES = [
    b"", b"\x00", b"\x02", b"\x02\x00", b"\x04", b"\xff",
    b"\x00{}", b"\x00 {} ", b"\x00\t{}\r\n", b"\x00\xef\xbb\xbf{}", b'\x00{"secrets":{}}',
    b'\x03{"a":NaN}', b'\x03{"a":Infinity}', b'\x03{"a":-Infinity}', b'\x03{"a":1e309}', b'\x03{"a":-1e400}',
    b'\x03{"a":18446744073709551615}', b'\x03{"a":18446744073709551616}', b'\x03{"a":-9223372036854775809}',
    b'\x03{"a":123456789012345678901234567890123456789}',
    b'\x03{"a":1,"a":2}', b'\x03{"a":"\\ud800"}', b'\x03{"a":"\\udc00"}', b'\x03{"a":"\\ud83d\\ude00"}',
    b'\x03{"a":"\xed\xa0\x80"}', b'\x03{"a":"\xc3"}', b'\x03{"a":"\x01"}', b'\x03{"\x7f":1}',
    b"\x03" + b'{"a":' + b"[" * 1023 + b"]" * 1023 + b"}", b"\x03" + b'{"a":' + b"[" * 1024 + b"]" * 1024 + b"}",
    b"\x03" + b"[" * 2000, b'\x03{"a":"' + b"x" * 100_000 + b'"}', b"\x03{}", b"\x03[]", b'\x03{"a":[]}',
    b'\x01{"message":"m","message":"n"}', b'\x01{"message":"m"}x',
]
NOTIFICATION_EDGE_CASES = [
    b"\x00", b"\x00{}", b'\x00{"method":"a","params":{"_meta":{}}}', b'\x00{"method":"a","params":{"_meta":[]}}',
    b'\x00{"method":"a","method":1}', b'\x00{"method":1,"method":"a"}', b"\x01", b"\x02",
    b'\x01{"code":-0,"message":"m"}', b'\x01{"code":1e2,"message":"m"}', b'\x01{"code":2147483648,"message":"m"}',
]


def outcome(module, payload):
    try:
        frame = module.decode(payload)
    except Exception as error:  # noqa: BLE001 - the class is the point
        return ("error", type(error), str(error), getattr(error, "tag", None))
    try:
        encoded = module.encode(frame)
    except Exception as error:  # noqa: BLE001 - orjson writes 254 levels, though it reads 1024
        encoded = (type(error), str(error))
    return ("frame", type(frame).__name__, frame.tag, encoded, repr(frame))


def agree(pair, payload):
    compiled, pure = pair
    assert outcome(compiled, payload) == outcome(pure, payload)
    if type(payload) is bytes:
        assert outcome(compiled, bytearray(payload)) == outcome(compiled, payload)
        assert outcome(pure, memoryview(payload)) == outcome(pure, payload)


def test_tools_begin_edge_cases_agree(both_tb):
    for payload in EDGE_CASES:
        agree(both_tb, payload)
        agree(both_tb, b"\x00" + payload[1:])
        agree(both_tb, b"\x01" + payload[1:])


def test_notifications_edge_cases_agree(both_mn):
    for payload in EDGE_CASES + NOTIFICATION_EDGE_CASES:
        agree(both_mn, payload)
        agree(both_mn, b"\x00" + payload[1:])
        agree(both_mn, b"\x01" + payload[1:])


@settings(max_examples=400)
@given(payload=tools_begin_payloads)
def test_tools_begin_agree_on_any_payload(both_tb, payload):
    agree(both_tb, payload)


@settings(max_examples=400)
@given(payload=notifications_payloads)
def test_notifications_agree_on_any_payload(both_mn, payload):
    agree(both_mn, payload)


@given(raws=st.lists(st.binary(max_size=30), max_size=5))
def test_relay_framing_agrees(both_mn, raws):
    compiled, pure = both_mn
    assert compiled.frame_notifications(raws) == pure.frame_notifications(raws)
    assert [compiled.frame_notification(raw) for raw in raws] == [b"\x00" + raw for raw in raws]


@given(payloads=st.lists(notifications_payloads, max_size=5))
def test_decode_many_agrees(both_mn, payloads):
    def run(module):
        try:
            return [outcome(module, payload) for payload in payloads], module.decode_many(payloads) and None
        except Exception as error:  # noqa: BLE001
            return type(error), str(error), error.index

    compiled, pure = both_mn
    assert run(compiled) == run(pure)
