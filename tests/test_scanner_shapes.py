"""The scanner and the splice on every shape they branch on, held to orjson; the strategy pinned to make each shape.

A strategy that never makes a shape lets a bug in that shape's branch pass every run: one that
never put a `_meta` in a sibling of params let a compiled scanner that forgot to leave params
pass 1,378 tests. So each shape the code branches on is named (``strategies.SHAPES``) and a test
finds each in the strategy's output; the lines below pin the ones bugs were planted in.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings

from conftest import load
from diverge_codec import _json, errors
from strategies import SHAPES, envelope_messages, shapes
from test_scanner import scanner_check  # fuzz/scanner_check.py, on the path test_scanner sets

PINNED = [
    # (line, the payload both cores splice it to, its shape)
    (b'{"method":"m","params":{},"x":{"_meta":1}}', b'\x00{"method":"m","params":{},"x":{"_meta":1}}',
     "a refused _meta in a sibling after params"),
    (b'{"method":"m","params":{"a":{}},"x":[{"_meta":"s"}],"jsonrpc":"2.0"}',
     b'\x00{"method":"m","params":{"a":{}},"x":[{"_meta":"s"}]}', "a refused _meta in a sibling after params"),
    (b'{"params":{"_meta":1},"method":"m","params":{}}', b'\x00{"params":{"_meta":1},"method":"m","params":{}}',
     "an earlier params' refused _meta, the last params fine"),
    (b'{"method":"m" ,"jsonrpc":"2.0"}', b'\x00{"method":"m"}', "space before the comma of an envelope last"),
    (b'{"method":"m"\n,\t"jsonrpc":"2.0"}', b'\x00{"method":"m"}', "space before the comma of an envelope last"),
    (b'{"method":"m","_meta":1,"params":{"p":{"_meta":2}}}', b'\x00{"method":"m","_meta":1,"params":{"p":{"_meta":2}}}',
     "_meta deeper in params"),
    (b'{"method":"m","params":{"params":{"_meta":1}}}', b'\x00{"method":"m","params":{"params":{"_meta":1}}}',
     "params below the top level"),
    (b'{"jsonrpc":"2.0","method":"m","jsonrpc":"2.0","params":{}}', b'\x00{"method":"m","params":{}}', "jsonrpc repeated"),
]


@pytest.mark.parametrize("line, payload, shape", PINNED)
def test_a_pinned_shape_is_spliced_and_read_byte_for_byte(mn, line, payload, shape):
    assert shape in shapes(line)
    assert mn.splice_notification(line) == payload
    assert _read(mn, payload) == [("ok", *_members(scanner_check.reference(line)[1]))] * 2
    scanner_check.check(line)


def _members(notification: dict) -> tuple:
    return notification["method"], json.dumps(notification.get("params", "absent"))


def _read(module, payload: bytes) -> list[tuple]:
    """decode's and decode_lazy's reading of a payload: method and params, or the refusal."""
    outcomes = []
    for call in (module.decode, module.decode_lazy):
        try:
            frame = call(payload)
        except module.NotificationParseError as error:
            outcomes.append(("refused", str(error)))
            continue
        notification = frame.notification if call is module.decode else frame.materialize().notification
        params = frame.params_json if call is module.decode_lazy else None
        if params is not None:
            assert _json.loads(params) == notification["params"]  # the package's JSON: an integer past 64 bits is a float
        outcomes.append(("ok", *_members(notification)))
    return outcomes


@pytest.mark.parametrize("line, reason", [
    (b'{"method":"m","params":{},"params":{"_meta":1}}', errors.META_INVALID),
    (b'{"method":"m","x":{},"params":{"_meta":[]}}', errors.META_INVALID),
    (b'{"method":"m","params":{"_meta":{},"_meta":"x"}}', errors.META_INVALID),
    (b'{"method":"m","params":{"_meta":1},"params":[]}', errors.PARAMS_INVALID),
])
def test_the_last_params_and_its_last_meta_decide(mn, line, reason):
    for call in (mn.splice_notification, lambda line: mn.decode_lazy(b"\x00" + line), lambda line: mn.decode(b"\x00" + line)):
        with pytest.raises(mn.NotificationParseError, match=re.escape(f"did not parse: {reason}") + "$"):
            call(line)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_strategy_makes_every_shape(shape):
    find(envelope_messages(), lambda line: shape in shapes(line),
         settings=settings(max_examples=3000, database=None, phases=[Phase.generate], derandomize=True,
                           suppress_health_check=list(HealthCheck)))


@given(envelope_messages())
def test_every_envelope_shape_is_spliced_as_orjson_reads_it(line):
    scanner_check.check(line)


@given(envelope_messages())
def test_every_envelope_shape_is_decoded_alike_by_both_cores_lazily_and_not(line):
    payload = b"\x00" + line.strip(b" \t\r\n")
    outcomes = _read(load("mcp_notifications", "c"), payload) + _read(load("mcp_notifications", "py"), payload)
    assert outcomes == [outcomes[0]] * 4
