"""A frame is a value: nothing a caller does through the public API changes it behind the codec's back.

What frames hand out is a read-only view; nested containers stay the caller's, and
encode checks them again, so no path writes a payload decode refuses. Both cores,
the same class and message for every refusal.
"""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diverge_codec import ErrorData, Mode, ProviderError, _json
from diverge_codec.errors import EncodeError

from conftest import IMPLEMENTATIONS, load


def refusal(call) -> tuple[type, str]:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the class is the point
        return type(error), str(error)
    raise AssertionError("not refused")


def frames(tb, mn):
    """One frame of each kind with a nested container inside, and the view it hands out."""
    return [
        (tb.Begun({"k": "rotating"}), "secrets"),
        (tb.Inactive({"k": [1, {"a": 2}]}), "values"),
        (mn.Notification({"method": "m", "params": {"p": [1]}}), "notification"),
    ]


def test_what_frames_hand_out_is_read_only(tb, mn):
    for frame, name in frames(tb, mn):
        view = getattr(frame, name)
        with pytest.raises(TypeError, match="does not support item assignment"):
            view["k"] = 1
        with pytest.raises(AttributeError):
            view.clear()  # type: ignore[attr-defined]
        assert dict(view) == dict(getattr(frame, name))
    error = ProviderError("m", a=1)
    with pytest.raises(TypeError):
        error.details["a"] = 2  # type: ignore[index]
    assert error.to_json() == {"message": "m", "a": 1}


def test_views_compare_and_match_as_the_readme_shows(tb, mn):
    frame = tb.decode(b'\x03{"session":"v2"}')
    assert frame.values == {"session": "v2"} and frame == tb.Inactive({"session": "v2"})
    match frame:
        case tb.Inactive(values={"session": value}):
            assert value == "v2"
        case _:
            raise AssertionError("no match")
    match tb.decode(b'\x00{"secrets":{"a":"fixed"}}'):
        case tb.Begun(secrets=secrets):
            assert secrets == {"a": Mode.FIXED}
    note = mn.decode(b'\x00{"method":"m","params":{"x":1}}')
    match note:
        case mn.Notification({"method": method, "params": {"x": x}}):
            assert (method, x) == ("m", 1)
        case _:
            raise AssertionError("no match")
    assert mn.Notification(note.notification) == note  # a view is a mapping a constructor takes


def test_a_changed_nested_value_is_checked_again_on_encode(tb, mn):
    inactive = tb.decode(b'\x03{"k":[1]}')
    inactive.values["k"].append(float("nan"))
    assert refusal(lambda: tb.encode(inactive)) == (EncodeError, f"tools begin Inactive could not be encoded: {_json.NOT_FINITE}")
    note = mn.decode(b'\x00{"method":"m","params":{"_meta":{}}}')
    note.notification["params"]["_meta"] = 5
    assert refusal(lambda: mn.encode(note)) == (EncodeError, "mcp notifications Notification could not be encoded: params._meta must be an object")
    note = mn.decode(b'\x00{"method":"m","params":{"x":1}}')
    note.notification["params"]["deep"] = [[[[]]]]
    assert mn.decode(mn.encode(note)) == note  # still a notification: written, and read back equal


def test_frames_refuse_changes_alike_on_both_cores(both_tb, both_mn):
    results = []
    for tb, mn in zip(both_tb, both_mn):
        row = []
        for (frame, name), args in zip(
            frames(tb, mn) + [(tb.Error(ProviderError("m")), "error"), (mn.Error(ErrorData(1, "m")), "error")],
            [({"x": "fixed"},), ({"x": 1},), ({"method": "x"},), (ProviderError("x"),), (ErrorData(2, "x"),)],
        ):
            row.append(refusal(lambda: setattr(frame, name, None)))
            row.append(refusal(lambda: delattr(frame, name)))
            row.append(refusal(lambda: setattr(frame, "other", None)))
            before = repr(frame)
            row.append(refusal(lambda: frame.__init__(*args)))  # re-running __init__ is a change too
            assert repr(frame) == before
        results.append(row)
    assert results[0] == results[1]
    assert all(kind is AttributeError and message.endswith(" is immutable") for kind, message in results[0])


def test_model_values_refuse_a_second_init():
    error, data = ProviderError("m", a=1), ErrorData(1, "m")
    assert refusal(lambda: error.__init__("x")) == (AttributeError, "ProviderError is immutable")
    assert refusal(lambda: data.__init__(2, "x")) == (AttributeError, "ErrorData is immutable")
    assert (error.message, data.code) == ("m", 1)


def test_a_detail_named_message_is_refused():
    # On the wire it would replace the message: decode(encode(f)) != f. Refused instead.
    assert refusal(lambda: ProviderError("refused", message="x")) == (
        TypeError, "ProviderError got a detail named 'message', which is its message on the wire")
    for core in IMPLEMENTATIONS:
        tb = load("tools_begin", core)
        frame = tb.Error(ProviderError("refused", argument="region"))
        assert tb.decode(tb.encode(frame)) == frame


def test_subclass_arguments_are_stored_as_plain_values():
    class Sly(int):
        def __int__(self):
            return 99

    class Text(str):
        def __str__(self):
            return "other"

    data = ErrorData(Sly(5), Text("m"))
    assert (type(data.code), data.code, type(data.message), data.message) == (int, 5, str, "m")
    error = ProviderError(Text("m"))
    assert (type(error.message), error.message) == (str, "m")


@pytest.mark.parametrize("kind", ["Begun", "Inactive", "Error"])
def test_a_frame_made_with_new_is_refused_alike(both_tb, kind):
    got = []
    for tb in both_tb:
        cls = getattr(tb, kind)
        frame = cls.__new__(cls)
        name = {"Begun": "secrets", "Inactive": "values", "Error": "error"}[kind]
        got.append((refusal(lambda: tb.encode(frame)), refusal(lambda: tb.encode_into(frame, bytearray())),
                    refusal(lambda: getattr(frame, name)), repr(frame)))
    assert got[0] == got[1]
    assert got[0][0] == (EncodeError, f"tools begin {kind} could not be encoded: it was never initialised")
    assert got[0][2] == (AttributeError, f"'{kind}' object has no attribute '{name}'")
    assert got[0][3] == f"{kind}(<not initialised>)"


@pytest.mark.parametrize("kind", ["Notification", "Error"])
def test_a_notification_frame_made_with_new_is_refused_alike(both_mn, kind):
    got = []
    for mn in both_mn:
        cls = getattr(mn, kind)
        frame = cls.__new__(cls)
        got.append((refusal(lambda: mn.encode(frame)), repr(frame)))
    assert got[0] == got[1]
    assert got[0] == ((EncodeError, f"mcp notifications {kind} could not be encoded: it was never initialised"), f"{kind}(<not initialised>)")


def test_frames_pickle_and_copy_as_values(tb, mn):
    for frame, _ in frames(tb, mn) + [(tb.Error(ProviderError("m", a=[1])), None), (mn.Error(ErrorData(1, "m", {"d": 1})), None)]:
        for clone in (pickle.loads(pickle.dumps(frame)), copy.copy(frame), copy.deepcopy(frame)):
            assert clone == frame and type(clone) is type(frame)


# The property: whatever a caller builds through the public API, and whatever it then does
# to the containers inside, encode either refuses with EncodeError or writes a payload that
# decode reads back equal; never one decode refuses. Both cores give the same outcome.
odd = st.sampled_from([float("nan"), float("inf"), 2**64, "\ud800", (1, 2), Mode.FIXED, b"x", {1: 2}])
values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**65) | st.floats() | st.text(max_size=4) | odd,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)
names = st.text(max_size=4)


def build(tb, mn, choice, a, b, c):
    if choice == 0:
        return tb, tb.Inactive({a: b})
    if choice == 1:
        return tb, tb.Error(ProviderError(a, k=b))
    if choice == 2:
        return mn, mn.Notification({"method": a, "params": {"p": b, "_meta": c if isinstance(c, dict) else None}})
    if choice == 3:
        return mn, mn.Error(ErrorData(len(a), a, b))
    return tb, tb.Begun({a: "fixed" if isinstance(b, bool) else "rotating"})


def mutate(frame, value):
    """Change what a caller can reach inside the frame: the nested containers."""
    for inner in (getattr(frame, "values", None), getattr(frame, "notification", None)):
        if inner is None:
            continue
        for member in list(inner.values()):
            if isinstance(member, dict):
                member["mutated"] = value
                for nested in list(member.values()):
                    if isinstance(nested, list):
                        nested.append(value)
            elif isinstance(member, list):
                member.append(value)


@given(choice=st.integers(0, 4), a=names, b=values, c=values, later=values, change=st.booleans())
def test_every_frame_round_trips_or_is_refused(choice, a, b, c, later, change):
    outcomes = []
    for core in IMPLEMENTATIONS:
        tb, mn = load("tools_begin", core), load("mcp_notifications", core)
        codec, frame = build(tb, mn, choice, a, copy.deepcopy(b), copy.deepcopy(c))  # each core its own containers
        if change:
            mutate(frame, copy.deepcopy(later))
        try:
            payload = codec.encode(frame)
        except EncodeError as error:
            outcomes.append(("refused", str(error)))
            continue
        assert codec.decode(payload) == frame
        outcomes.append(("written", payload if _json.BACKEND == "orjson" else None))
    assert outcomes[0] == outcomes[1]
