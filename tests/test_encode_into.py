"""mcp-notifications encode in one copy: encode_into appends exactly encode's bytes, or leaves the buffer as it was.

The compiled core writes the common body itself (``_jsonwrite.h``) and leaves the rest to
the backend; the differential tests hold its bytes to the backend's and to the pure twin's,
and every refusal to the same class and message on both cores, the buffer untouched.
"""

from __future__ import annotations

import gc
import sys

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from conftest import IMPLEMENTATIONS, load, require_gc_hooks
from strategies import error_datas, json_values, names, notifications

from diverge_codec import ErrorData, _json, errors
from diverge_codec.errors import EncodeError

# Text the writer must escape or encode: every ASCII control, quote and backslash, and the
# three wider kinds of str (Latin-1, BMP, astral), lone surrogates included (refused).
texts = st.text(st.characters(max_codepoint=0x7F), max_size=40) | st.text(max_size=40) | st.text(
    st.characters(blacklist_categories=()), max_size=10)
ints = st.integers(-(2**63), 2**64 - 1) | st.integers(-(2**70), 2**70) | st.sampled_from([-(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 0, -1])
values = st.recursive(
    st.none() | st.booleans() | ints | texts | st.floats(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=16,
)


def outcome(call):
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - compared as class and message
        return type(error), str(error)


def both():
    return [load("mcp_notifications", implementation) for implementation in IMPLEMENTATIONS]


def with_params(mn, value):
    """A notification whose params hold value, set after construction as a caller may."""
    frame = mn.Notification({"method": "m", "params": {}})
    frame.notification["params"]["v"] = value
    return frame


@given(value=values)
def test_the_compiled_writer_writes_the_backends_bytes(value):
    """Same bytes as the backend, or the same refusal, on both cores and through both calls."""
    expected = outcome(lambda: b'\x00{"method":"m","params":{"v":' + _json.dumps(value) + b"}}")
    if type(expected) is tuple:
        expected = (EncodeError, f"mcp notifications Notification could not be encoded: {expected[1]}")
    for mn in both():
        frame = with_params(mn, value)
        assert outcome(lambda: mn.encode(frame)) == expected
        out = bytearray(b"kept")
        got = outcome(lambda: mn.encode_into(frame, out))
        if type(expected) is tuple:
            assert got == expected
            assert out == b"kept"
        else:
            assert got is None
            assert out == b"kept" + expected


@pytest.mark.parametrize("value", [
    "".join(map(chr, range(128))) * 20,  # every escape, past the writer's first buffer
    "x" * 70000, "\\" * 3000, "é" * 5000, "\u2028\uffff" * 3000, "\U0001F600" * 3000,
    list(range(-5000, 5000)), {str(i): [i, None, True, False, {}] for i in range(3000)},
    [[[[[]]]]] * 1000, 2**64 - 1, -(2**63),
])
def test_large_and_escaped_bodies_match_the_backend(value):
    expected = b'\x00{"method":"m","params":{"v":' + _json.dumps(value) + b"}}"
    for mn in both():
        frame = with_params(mn, value)
        assert mn.encode(frame) == expected
        out = bytearray(b"\x01")
        mn.encode_into(frame, out)
        assert out == b"\x01" + expected


def nested(depth):
    value = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [252, 253, 254])
def test_the_depth_limit_is_the_backends(depth):
    """The body is level 1, params level 2: params' value nested depth - 2 levels is depth levels in all."""
    value = nested(depth - 2)
    results = [outcome(lambda mn=mn: mn.encode(with_params(mn, value))) for mn in both()]
    assert results[0] == results[-1]
    if depth <= 254:
        assert results[0] == b'\x00{"method":"m","params":{"v":' + _json.dumps(value) + b"}}"


def test_past_the_depth_limit_both_refuse_alike():
    value = nested(254)  # 256 levels with the body and params
    results = [outcome(lambda mn=mn: mn.encode(with_params(mn, value))) for mn in both()]
    assert results[0] == results[-1] == (
        EncodeError, "mcp notifications Notification could not be encoded: " + _json.TOO_DEEP)


@given(notification=notifications)
def test_round_trip_through_encode_into(notification):
    for mn in both():
        frame = outcome(lambda mn=mn: mn.Notification(notification))
        if type(frame) is tuple:
            continue
        out = bytearray(b"\x00{}")
        if type(outcome(lambda mn=mn: mn.encode_into(frame, out))) is tuple:
            assert out == b"\x00{}"
            continue
        assert out == b"\x00{}" + mn.encode(frame)
        assert mn.decode(bytes(out[3:])) == frame


@given(data=error_datas)
def test_error_round_trip_through_encode_into(data):
    for mn in both():
        frame = mn.decode(b"\x01" + _json.dumps(data)) if outcome(lambda mn=mn: mn.decode(b"\x01" + _json.dumps(data))) \
            .__class__ is not tuple else None
        if frame is None:
            continue
        out = bytearray()
        mn.encode_into(frame, out)
        assert bytes(out) == mn.encode(frame)
        assert mn.decode(bytes(out)) == frame


@given(method=names, params=st.dictionaries(names, json_values, max_size=4))
@example(method="", params={"_meta": []})  # refused when built, on both cores alike
def test_both_cores_write_the_same_bytes(method, params):
    frames = [outcome(lambda mn=mn: mn.Notification({"method": method, "params": params})) for mn in both()]
    if any(isinstance(frame, tuple) for frame in frames):  # refused when built (a bad _meta): alike
        assert frames[0] == frames[-1] and all(isinstance(frame, tuple) for frame in frames)
        return
    written = []
    for mn, frame in zip(both(), frames):
        out = bytearray()
        result = outcome(lambda mn=mn, frame=frame: mn.encode_into(frame, out))
        written.append((result, bytes(out), outcome(lambda mn=mn, frame=frame: mn.encode(frame))))
    assert written[0] == written[-1]


NOT_A_BYTEARRAY = "encode_into appends to a bytearray, not {}"


class Subclass(bytearray):
    pass


@pytest.mark.parametrize(("out", "kind"), [
    (b"", "bytes"), ([], "list"), (memoryview(bytearray()), "memoryview"), (Subclass(), "Subclass"), (None, "NoneType"),
])
def test_a_non_bytearray_is_refused(mn, out, kind):
    with pytest.raises(TypeError) as caught:
        mn.encode_into(mn.Notification({"method": "a"}), out)
    assert str(caught.value) == NOT_A_BYTEARRAY.format(kind)


def refusals(mn):
    """(frame, error class, message) for each way encode_into fails."""
    bad_params = mn.Notification({"method": "m", "params": {}})
    bad_params.notification["params"]["_meta"] = 1
    prefix = "mcp notifications Notification could not be encoded: "
    return [
        (1, TypeError, "not an mcp notifications response frame: int"),
        (mn.Notification.__new__(mn.Notification), EncodeError, prefix + "it was never initialised"),
        (mn.Error.__new__(mn.Error), EncodeError, "mcp notifications Error could not be encoded: it was never initialised"),
        (bad_params, EncodeError, prefix + errors.META_INVALID),
        (with_params(mn, float("nan")), EncodeError, prefix + _json.NOT_FINITE),
        (with_params(mn, 2**64), EncodeError, prefix + _json.INT_RANGE),
        (with_params(mn, "\ud800"), EncodeError, prefix + _json.SURROGATE),
        (with_params(mn, {1: 2}), EncodeError, prefix + _json.KEY_NOT_STR.format(kind="int")),
        (with_params(mn, {1, 2}), EncodeError, prefix + _json.NOT_A_JSON_TYPE.format(kind="set")),
        (with_params(mn, ["x", 1.5, {"a": True}]), None, None),  # accepted: the backend's path
    ]


@pytest.mark.parametrize("index", range(10))
def test_every_refusal_leaves_the_buffer_as_it_was(index):
    seen = []
    for mn in both():
        frame, kind, message = refusals(mn)[index]
        out = bytearray(b"\x00before")
        result = outcome(lambda: mn.encode_into(frame, out))
        if kind is None:
            assert result is None
            assert out == b"\x00before" + mn.encode(frame)
        else:
            assert result == (kind, message)
            assert out == b"\x00before"
        seen.append(result)
    assert seen[0] == seen[-1]


@pytest.mark.parametrize("frame_of", [
    lambda mn: mn.Notification({"method": "m"}), lambda mn: with_params(mn, 0.5), lambda mn: mn.Error(ErrorData(1, "m")),
])
@pytest.mark.parametrize("room", [False, True])
def test_a_buffer_with_a_view_is_refused_and_kept(mn, frame_of, room):
    """Refused with room for the payload too, where the compiled core would set the size itself."""
    out = bytearray(b"abc")
    if room:
        out = bytearray(b"abc" * 100)
        del out[200:]  # a bytearray keeps its block down to half of it
        assert out.__alloc__() - len(out) > len(mn.encode(frame_of(mn))) + 1
    kept = bytes(out)
    view = memoryview(out)
    with pytest.raises(BufferError) as caught:
        mn.encode_into(frame_of(mn), out)
    assert str(caught.value) == "Existing exports of data: object cannot be re-sized"
    view.release()
    assert out == kept


@pytest.mark.parametrize("frame_of", [
    lambda mn: mn.Notification({"method": "m", "params": {"k": ["v" * 300] * 8}}),  # the compiled writer's
    lambda mn: with_params(mn, [0.5] * 50),  # the backend's
    lambda mn: mn.Error(ErrorData(1, "m", {"d": list(range(50))})),  # to_json allocates first
])
@pytest.mark.parametrize("action", ["grow", "clear"])
def test_a_bytearray_resized_from_a_gc_callback_mid_encode_into(mn, frame_of, action):
    """The payload lands after whatever the callback left: the size is read after the last allocation."""
    require_gc_hooks()
    frame = frame_of(mn)
    payload = mn.encode(frame)
    out = bytearray(b"start")
    armed = [True]

    def callback(phase, info):
        if armed[0] and phase == "start":
            if action == "grow":
                out.extend(b"." * 100)
            else:
                del out[:]

    old = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(callback)
    gc.set_threshold(1)
    try:
        for _ in range(20):
            mn.encode_into(frame, out)
    finally:
        armed[0] = False
        gc.set_threshold(*old)
        gc.callbacks.remove(callback)
    assert out.endswith(payload)
    rest = bytes(out)
    for _ in range(20):
        assert rest.endswith(payload) or not rest
        rest = rest[:-len(payload)] if rest.endswith(payload) else rest
        rest = rest.rstrip(b".")
    assert rest in (b"", b"start")


def test_encode_into_appends_exactly_encode(mn):
    out = bytearray()
    frames = [mn.Notification({"method": "a", "params": {"x": [1, "é", None]}}), mn.Error(ErrorData(-1, "m", [True])),
              with_params(mn, 1.25)]
    for frame in frames:
        mn.encode_into(frame, out)
    assert bytes(out) == b"".join(mn.encode(frame) for frame in frames)


def test_the_buffer_is_named_as_tools_begin_names_it(mn):
    out = bytearray()
    mn.encode_into(mn.Notification({"method": "a"}), buffer=out)
    assert out == b'\x00{"method":"a"}'


# The writer reads plain ASCII str a word at a time, the last word reaching back over the bytes
# before it (into the str's header where the str is shorter than a word): every length around
# the word sizes, as keys and as values, and an escape at every place in it.
PLAIN = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMN"


@pytest.mark.parametrize("length", range(0, 41))
def test_plain_strs_of_every_length_as_keys_and_values(length):
    text = PLAIN[:length]
    for params in ({text: text}, {"k": text, text: 1, "z": [text]}, {"_meta": {text: text}, text: None}):
        expected = b'\x00{"method":' + _json.dumps(text) + b',"params":' + _json.dumps(params) + b"}"
        for mn in both():
            frame = mn.Notification({"method": text, "params": params})
            assert mn.encode(frame) == expected
            out = bytearray(b"x")
            mn.encode_into(frame, out)
            assert out == b"x" + expected


@pytest.mark.parametrize("length", [1, 2, 7, 8, 9, 15, 16, 17, 24, 33])
@pytest.mark.parametrize("needs_escape", ['"', "\\", "\n", "\x00", "\x1f", "\x7f", "é"])
def test_an_escape_at_every_place(length, needs_escape):
    for place in range(length):
        text = PLAIN[:place] + needs_escape + PLAIN[place + 1:length]
        params = {text: text, "v": [text]}
        expected = b'\x00{"method":"m","params":' + _json.dumps(params) + b"}"
        for mn in both():
            frame = mn.Notification({"method": "m", "params": params})
            assert mn.encode(frame) == expected


@pytest.mark.parametrize("exponent", range(0, 20))
def test_ints_at_every_digit_count(exponent):
    values = [10**exponent - 1, 10**exponent, 10**exponent + 1]
    values += [-value for value in values if value <= 2**63] + [2**64 - 1, -(2**63), 2**63, 99, 100, 101]
    expected = b'\x00{"method":"m","params":{"v":' + _json.dumps(values) + b"}}"
    for mn in both():
        assert mn.encode(with_params(mn, values)) == expected


@pytest.mark.parametrize("shape", ["empty", "room", "front cut", "after clear"])
def test_appending_to_bytearrays_of_every_shape(mn, shape):
    """A bytearray with room or none, whose bytes start past its block, or that was emptied: one payload each."""
    out = bytearray()
    if shape == "room":
        out = bytearray(b"r" * 4000)
        del out[1000:]
    elif shape == "front cut":
        out = bytearray(b"f" * 300)
        del out[:299]
    elif shape == "after clear":
        out = bytearray(b"c" * 300)
        out.clear()
    before = bytes(out)
    frames = [mn.Notification({"method": "m", "params": {"k": "v" * size}}) for size in (0, 1, 7, 100, 5000)]
    for frame in frames:
        mn.encode_into(frame, out)
    assert bytes(out) == before + b"".join(mn.encode(frame) for frame in frames)
    out.extend(b"!")  # the bytearray works as one after
    assert out.endswith(b"}!")


# The compiled writer keeps the keys it wrote (by address, a reference held): a key found there
# must write what it wrote the first time, start the params/_meta checks only where they apply,
# and let go of the keys it puts out.
@given(keys=st.lists(texts, min_size=1, max_size=6), value=values)
def test_keys_written_again_from_the_cache_match_the_backend(keys, value):
    params = {key: value for key in keys}
    expected = outcome(lambda: b'\x00{"method":"m","params":' + _json.dumps(params) + b"}")
    for mn in both():
        frame = with_params(mn, None)
        frame.notification["params"].clear()
        frame.notification["params"].update(params)
        for _ in range(3):  # the first writes the keys the long way, the others from the cache
            got = outcome(lambda: mn.encode(frame))
            assert got == expected or (type(expected) is tuple and got[0] is EncodeError)


@pytest.mark.parametrize("body", [
    {"method": "m", "params": {"params": 1, "x": {"params": 2, "_meta": 3}}},  # params below the body: a member
    {"method": "m", "_meta": 1, "params": None},  # _meta beside params: a member
    {"method": "m", "params": {"_meta": {"_meta": 4, "params": [5]}}},
])
def test_params_and_meta_keys_start_their_checks_only_where_they_apply(body):
    expected = b"\x00" + _json.dumps(body)
    for mn in both():
        frame = mn.Notification(body)
        for _ in range(3):
            assert mn.encode(frame) == expected
            out = bytearray(b"z")
            mn.encode_into(frame, out)
            assert out == b"z" + expected


def test_a_cached_meta_key_still_refuses_a_meta_that_is_no_object():
    for mn in both():
        frame = mn.Notification({"method": "m", "params": {"_meta": {}}})
        assert mn.encode(frame) == b'\x00{"method":"m","params":{"_meta":{}}}'  # _meta now in the cache
        frame.notification["params"]["_meta"] = 1
        for _ in range(2):
            with pytest.raises(EncodeError) as caught:
                mn.encode(frame)
            assert str(caught.value) == "mcp notifications Notification could not be encoded: " + errors.META_INVALID


def test_the_key_cache_lets_go_of_the_keys_it_puts_out():
    mn = load("mcp_notifications", "c")
    key = "".join(["a-key-seen-once", "-" * 3])  # a new str, no other reference but ours
    before = sys.getrefcount(key)
    mn.encode(mn.Notification({"method": "m", "params": {key: 1}}))
    assert sys.getrefcount(key) <= before + 1  # held by the cache at most
    for start in range(0, 20000, 1000):  # every set taken over many times
        mn.encode(mn.Notification({"method": "m", "params": {f"k{index}": index for index in range(start, start + 1000)}}))
    assert sys.getrefcount(key) == before


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 100, 1000])
def test_plain_strs_past_the_vector_sizes_and_an_escape_in_the_last_chunk(size):
    """The SSE2 path goes 16 bytes at a time and stores its last 16 over some stored already."""
    for text in (PLAIN[:16] * 64)[:size], (PLAIN[:16] * 64)[:size - 1] + '"' if size else "":
        params = {"v": text, "w": [text]}
        expected = b'\x00{"method":"m","params":' + _json.dumps(params) + b"}"
        for mn in both():
            frame = mn.Notification({"method": "m", "params": params})
            assert mn.encode(frame) == expected
            out = bytearray(b"x" * size)
            mn.encode_into(frame, out)
            assert out == b"x" * size + expected
