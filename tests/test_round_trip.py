"""Round trips: any frame a caller can build encodes, and decodes to an equal frame, on both cores."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from diverge_codec import ErrorData, ProviderError
from strategies import json_values, modes, names

plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
    max_leaves=12,
)


@given(secrets=st.dictionaries(names, modes, max_size=6))
def test_begun(tb, secrets):
    frame = tb.Begun(secrets)
    again = tb.decode(tb.encode(frame))
    assert again == frame and list(again.secrets) == list(secrets)


@given(values=st.dictionaries(names, plain_values, max_size=6))
def test_inactive(tb, values):
    frame = tb.Inactive(values)
    again = tb.decode(tb.encode(frame))
    assert again == frame and list(again.values) == list(values)


@given(message=st.text(), details=st.dictionaries(names.filter(lambda n: n != "message"), plain_values, max_size=3))
def test_error(tb, message, details):
    frame = tb.Error(ProviderError(message, **details))
    assert tb.decode(tb.encode(frame)) == frame
    out = bytearray()
    tb.encode_into(frame, out)
    assert bytes(out) == tb.encode(frame)


@given(
    method=st.text(),
    params=st.none() | st.dictionaries(names.filter(lambda n: n != "_meta"), plain_values, max_size=3),
    extra=st.dictionaries(st.sampled_from(["jsonrpc", "id", "x"]), plain_values, max_size=2),
)
def test_notification(mn, method, params, extra):
    notification = {**extra, "method": method}
    if params is not None:
        notification["params"] = params
    frame = mn.Notification(notification)
    assert mn.decode(mn.encode(frame)) == frame
    assert mn.decode(mn.frame_notification(mn.encode(frame)[1:])) == frame


@given(code=st.integers(-(2**31), 2**31 - 1), message=st.text(), data=plain_values)
def test_error_data(mn, code, message, data):
    frame = mn.Error(ErrorData(code, message, data))
    assert mn.decode(mn.encode(frame)) == frame
