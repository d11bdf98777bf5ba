"""Hypothesis strategies for payloads: valid, near-valid and arbitrary, for both channels."""

from __future__ import annotations

from hypothesis import strategies as st

from diverge_codec import _json

names = st.text(max_size=12)
scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
    max_leaves=12,
)
modes = st.sampled_from(["fixed", "rotating"])


def dump(value) -> bytes:
    """The JSON backend where it can; the odd integer orjson will not write goes in as the stdlib writes it."""
    try:
        return _json.dumps(value)
    except TypeError:
        import json

        return json.dumps(value).encode()


registrations = st.fixed_dictionaries(
    {}, optional={"secrets": st.dictionaries(names, modes | json_values, max_size=4) | json_values, "dependencies": json_values}
)
provider_errors = st.fixed_dictionaries({}, optional={"message": st.text(max_size=10) | json_values, "k": json_values})
error_datas = st.fixed_dictionaries(
    {},
    optional={
        "code": st.integers(-(2**33), 2**33) | json_values,
        "message": st.text(max_size=10) | json_values,
        "data": json_values,
    },
)
notifications = st.fixed_dictionaries(
    {},
    optional={
        "method": st.sampled_from(["notifications/progress", "notifications/message", "x/custom"]) | json_values,
        "params": st.none() | st.dictionaries(names, json_values, max_size=3) | st.fixed_dictionaries({"_meta": json_values}) | json_values,
        "jsonrpc": st.just("2.0"),
    },
)


def tagged(tag: int, bodies: st.SearchStrategy) -> st.SearchStrategy[bytes]:
    return bodies.map(lambda body: bytes([tag]) + dump(body))


def mutated(payloads: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Near-valid: a valid payload with a byte changed, dropped or inserted."""

    @st.composite
    def mutate(draw):
        payload = bytearray(draw(payloads))
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(payload)))
            action = draw(st.sampled_from(["set", "drop", "insert"]))
            byte = draw(st.integers(0, 255))
            if action == "insert" or at == len(payload):
                payload.insert(at, byte)
            elif action == "drop":
                del payload[at]
            else:
                payload[at] = byte
        return bytes(payload)

    return mutate()


tools_begin_valid = st.one_of(
    tagged(0, registrations), tagged(1, provider_errors), st.just(b"\x02"),
    tagged(3, st.dictionaries(names, json_values, max_size=4) | json_values),
)
tools_begin_payloads = st.one_of(tools_begin_valid, mutated(tools_begin_valid), st.binary(max_size=40))

notifications_valid = st.one_of(tagged(0, notifications), tagged(1, error_datas))
notifications_payloads = st.one_of(notifications_valid, mutated(notifications_valid), st.binary(max_size=40))
