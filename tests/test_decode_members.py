"""The compiled decode finds method and params in one pass over a small body: every way a key can be spelled, on both cores.

Bodies of at most four members are read in one pass (keys by pointer, else by their
characters); larger ones by lookup. Both must agree with the pure twin: the same frame,
or the same error class and message.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import IMPLEMENTATIONS, load

from diverge_codec import _json, errors


def outcome(mn, payload):
    try:
        frame = mn.decode(payload)
    except Exception as error:  # noqa: BLE001 - compared as class and message
        return type(error), str(error)
    return type(frame).__name__, frame.method, dict(frame.notification)


def both(payload):
    results = [outcome(load("mcp_notifications", implementation), payload) for implementation in IMPLEMENTATIONS]
    assert results[0] == results[-1]
    return results[0]


@pytest.mark.parametrize(("body", "expected"), [
    (b'{"\\u006dethod":"x"}', ("Notification", "x", {"method": "x"})),
    (b'{"method":"x","p\\u0061rams":{"_meta":1}}', (errors.McpNotificationsNotificationParseError, None)),
    (b'{"method":"x","params":{"_m\\u0065ta":[]}}', (errors.McpNotificationsNotificationParseError, None)),
    (b'{"method":1,"method":"x"}', ("Notification", "x", {"method": "x"})),
    (b'{"method":"x","method":1}', (errors.McpNotificationsNotificationParseError, errors.METHOD_NOT_A_STRING)),
    (b'{"params":null,"method":"x"}', ("Notification", "x", {"params": None, "method": "x"})),
    (b'{"params":[],"method":"x"}', (errors.McpNotificationsNotificationParseError, errors.PARAMS_INVALID)),
    (b'{"a":1,"b":2,"c":3,"method":"x","params":{"_meta":2}}', (errors.McpNotificationsNotificationParseError, errors.META_INVALID)),
    (b'{"a":1,"b":2,"c":3,"d":4,"method":"x"}', ("Notification", "x", {"a": 1, "b": 2, "c": 3, "d": 4, "method": "x"})),
    (b'{"a":1,"b":2,"c":3,"d":4}', (errors.McpNotificationsNotificationParseError, errors.METHOD_NOT_A_STRING)),
    (b'{"methods":"x","param":{}}', (errors.McpNotificationsNotificationParseError, errors.METHOD_NOT_A_STRING)),
    (b'{"m\\u00e9thod":"x","method":"y"}', ("Notification", "y", {"m\u00e9thod": "x", "method": "y"})),
    (b'{}', (errors.McpNotificationsNotificationParseError, errors.METHOD_NOT_A_STRING)),
])
def test_every_spelling_of_the_members(body, expected):
    got = both(b"\x00" + body)
    if type(expected[0]) is str:
        assert got == expected
    else:
        assert got[0] is expected[0]
        if expected[1] is not None:
            assert got[1] == f"mcp notifications response frame did not parse: {expected[1]}"


keys = st.sampled_from(["method", "params", "_meta", "jsonrpc", "methods", "paramz", "x", "\u00e9", ""])
members = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3) | st.dictionaries(keys, st.none() | st.integers(0, 2) | st.dictionaries(keys, st.none(), max_size=2), max_size=3) | st.lists(st.none(), max_size=2)


@given(body=st.dictionaries(keys, members, max_size=7))
def test_both_cores_read_a_body_alike(body):
    both(b"\x00" + _json.dumps(body))
