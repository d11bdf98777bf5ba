"""tools-begin compiled end to end: the Begun reader and writer in C, held to orjson and to the pure core.

The reader (``_tools_begin_scan.h``) builds a declaration only for the common form and
hands anything else to orjson + ``declaration_from_json``; every outcome of decode must
be the reference's (``fuzz/tools_begin_check.py``: orjson's reading and the model's rules,
the same declaration in order or the same error word for word), on both cores. The writer
must give orjson's bytes exactly, or hand the declaration on.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import ALLOW_NO_EXTENSION, load, require_gc_hooks
from diverge_codec import EncodeError, Mode, ProviderError, _json
from diverge_codec.errors import ToolsBeginBegunParseError, ToolsBeginErrorParseError, ToolsBeginInactiveParseError
from strategies import dump, json_values, modes, mutated, names

orjson = pytest.importorskip("orjson", reason="the reference is orjson's reading")
if ALLOW_NO_EXTENSION:
    pytest.importorskip("diverge_codec._tools_begin_c", reason="the reader is the compiled core's")
FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))
import tools_begin_check  # noqa: E402
from tools_begin_seeds import SEEDS  # noqa: E402

compiled = load("tools_begin", "c")
pure = load("tools_begin", "py")


# ---- the reader: what it builds, and what it hands on --------------------------


@pytest.mark.parametrize("body, declared", [
    (b"{}", {}),
    (b" {\t}\r\n", {}),
    (b'{"secrets":{}}', {}),
    (b'{"secrets":{"A":"fixed","B":"rotating"}}', {"A": Mode.FIXED, "B": Mode.ROTATING}),
    (b'{ "secrets" : {\n "z" : "rotating" ,\t"a":"fixed" } } ', {"z": Mode.ROTATING, "a": Mode.FIXED}),
    (b'{"secrets":{"":"fixed"}}', {"": Mode.FIXED}),
    (b'{"secrets":{"\xc3\xa9t\xc3\xa9":"fixed","\xf0\x9f\x98\x80":"rotating"}}', {"\u00e9t\u00e9": Mode.FIXED, "\U0001f600": Mode.ROTATING}),
    (b'{"secrets":{"a b/c\x7f":"fixed"}}', {"a b/c\x7f": Mode.FIXED}),
])
def test_the_reader_builds_the_common_form(body, declared):
    read = compiled._read_declaration(body)
    assert read == declared and list(read) == list(declared)
    assert all(type(name) is str for name in read) and all(type(mode) is Mode for mode in read.values())
    for core in (compiled, pure):
        assert list(core.decode(b"\x00" + body).secrets.items()) == list(declared.items())


@pytest.mark.parametrize("body", [
    b'{"secrets":{"\\u0041":"fixed"}}',             # an escape in a name
    b'{"secrets":{"A":"\\u0066ixed"}}',             # ... in a mode
    b'{"\\u0073ecrets":{"A":"fixed"}}',             # ... in the member's name
    b'{"secrets":{"A":"fixed","A":"rotating"}}',    # a duplicate: the parser's order rules
    b'{"secrets":{"A":"fixed"},"secrets":{}}',      # a second registration
    b'{"secrets":{"A":"fixed"},"dependencies":[]}',  # another member
    b'{"dependencies":[],"secrets":{"A":"fixed"}}',
    b'{"secrets":{"A":"Fixed"}}', b'{"secrets":{"A":1}}', b'{"secrets":null}', b'{"secrets":[]}',
    b'{"secrets":{"\xff":"fixed"}}', b'{"secrets":{"\xed\xa0\x80":"fixed"}}', b'{"secrets":{"\x01":"fixed"}}',
    b'{"secrets":{"A":"fixed"}} x', b'{"secrets":{"A":"fixed"}}\x00', b'{"secrets":{"A":"fixed",}}',
    b'{"secrets":{"A":"fixed"}', b'{"secrets":{"A":"fixed"}}\x0c', b"\xef\xbb\xbf{}", b"", b"[]", b"null",
])
def test_the_reader_hands_on_what_it_is_not_sure_of(body):
    assert compiled._read_declaration(body) is None
    tools_begin_check.check(body)


@pytest.mark.parametrize("tag, body, message", [
    (0, b'{"secrets":{"A":"fixed","B":"Fixed"}}', 'tools begin registration did not parse: the mode of secret 1 must be "fixed" or "rotating"'),
    (0, b'{"secrets":null}', "tools begin registration did not parse: secrets must be an object"),
    (0, b"[]", "tools begin registration did not parse: expected a JSON object"),
    (0, b'{"secrets":{"\xff":"fixed"}}', None),  # orjson's own words, as the reference has them
    (3, b"[1]", "tools begin inactive secrets did not parse: expected a JSON object"),
    (3, b'{"a":01}', None), (3, b'{"a":"\xff"}', None), (3, b'{"a":1,}', None),
])
def test_a_refusal_is_worded_as_before(tag, body, message):
    reference, refusal = {0: (tools_begin_check.reference, ToolsBeginBegunParseError),
                          3: (tools_begin_check.reference_inactive, ToolsBeginInactiveParseError)}[tag]
    expected = reference(body)
    assert expected[0] == "refused" and (message is None or expected[1] == message)
    for core in (compiled, pure):
        with pytest.raises(refusal) as caught:
            core.decode(bytes([tag]) + body)
        assert str(caught.value) == expected[1]


def test_a_duplicate_keeps_the_first_place_and_the_last_mode():
    for core in (compiled, pure):
        frame = core.decode(b'\x00{"secrets":{"A":"fixed","B":"fixed","A":"rotating"}}')
        assert list(frame.secrets.items()) == [("A", Mode.ROTATING), ("B", Mode.FIXED)]


@pytest.mark.parametrize("seed", SEEDS, ids=range(len(SEEDS)))
def test_every_seed_agrees_with_orjson(seed):
    tools_begin_check.check(seed)


common_bodies = st.dictionaries(names, modes, max_size=8).map(lambda declared: orjson.dumps({"secrets": declared}))
spaced_bodies = st.lists(st.tuples(names, modes, st.sampled_from(["", " ", "\n", "\t ", "\r\n"])), max_size=6).map(
    lambda members: ("{%s\"secrets\":{" % members[0][2] if members else '{"secrets":{').encode()
    + b",".join(space.encode() + orjson.dumps(name) + b":" + space.encode() + orjson.dumps(mode) for name, mode, space in members)
    + b"}}")
any_registration = st.dictionaries(st.sampled_from(["secrets", "other"]), st.dictionaries(names, modes | json_values, max_size=4) | json_values,
                                   max_size=2).map(dump)
bodies = st.one_of(common_bodies, spaced_bodies, any_registration, mutated(common_bodies), mutated(spaced_bodies), st.binary(max_size=60))


@given(bodies)
def test_the_reader_agrees_with_orjson(body):
    tools_begin_check.check(body)


@given(st.dictionaries(names.filter(lambda name: "\\" not in orjson.dumps(name).decode()), modes, max_size=8))
def test_the_reader_reads_every_plain_registration(declared):
    body = orjson.dumps({"secrets": declared})
    read = compiled._read_declaration(body)
    assert read is not None and list(read.items()) == [(name, Mode(mode)) for name, mode in declared.items()]


# ---- the writer ------------------------------------------------------------------


@given(st.dictionaries(names, modes, max_size=8))
def test_a_begun_is_written_as_orjson_writes_its_dict(declared):
    expected = b"\x00" + orjson.dumps({"secrets": declared} if declared else {})
    for core in (compiled, pure):
        frame = core.Begun(declared)
        assert core.encode(frame) == expected
        out = bytearray(b"x")
        core.encode_into(frame, out)
        assert out == b"x" + expected
        assert core.decode(expected) == frame


@pytest.mark.parametrize("name", ['a"b', "a\\b", "\x00", "\x1f", "\x7f", "\u00e9", "\U0001f600", "\u2028", ""])
def test_a_name_that_needs_escaping_is_written_as_orjson_writes_it(name):
    expected = b"\x00" + orjson.dumps({"secrets": {"A": "fixed", name: "rotating"}})
    assert compiled.encode(compiled.Begun({"A": "fixed", name: "rotating"})) == expected
    assert pure.encode(pure.Begun({"A": "fixed", name: "rotating"})) == expected


@pytest.mark.parametrize("length", range(1, 41))
def test_a_byte_to_escape_is_found_wherever_it_sits_in_a_name(length):
    """The writer tests 8 to 15 bytes as two overlapping halves and 16 or more in blocks with an
    overlapping last one: each position, at each length, for each kind of byte that needs escaping."""
    for at in range(length):
        for odd in ('"', "\\", "\x00", "\x1f", "\x7f", "~"):
            name = "n" * at + odd + "m" * (length - at - 1)
            declared = {"A": "fixed", name: "rotating", "Z" * length: "fixed"}
            expected = b"\x00" + orjson.dumps({"secrets": declared})
            assert compiled.encode(compiled.Begun(declared)) == expected == pure.encode(pure.Begun(declared))


def test_a_lone_surrogate_name_is_refused_alike():
    messages = []
    for core in (compiled, pure):
        with pytest.raises(EncodeError) as caught:
            core.encode(core.Begun({"\ud800": "fixed"}))
        messages.append(str(caught.value))
    assert messages[0] == messages[1] == "tools begin Begun could not be encoded: str is not valid UTF-8: surrogates not allowed"


def test_a_declaration_changed_by_a_gc_callback_is_written_whole():
    """A GC callback that grows a frame's own dict while encode allocates: the writer checks again, never overruns."""
    require_gc_hooks()
    frames = [compiled.Begun({f"N{i}": "fixed" for i in range(8)}) for _ in range(50)]

    def grow(phase, info):
        if phase == "start":
            for frame in frames:
                for held in gc.get_referents(frame):
                    if type(held) is dict and len(held) < 200:
                        held[f"grown-{len(held)}"] = Mode.ROTATING

    thresholds = gc.get_threshold()
    gc.callbacks.append(grow)
    gc.set_threshold(1, 1, 1)
    try:
        written = [compiled.encode(frame) for frame in frames for _ in range(3)]
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(grow)
    for payload in written:
        assert type(compiled.decode(payload)) is compiled.Begun  # whole JSON, whatever it saw


# ---- Error and Inactive, with no call into the model ------------------------------


@pytest.mark.parametrize("body, message", [
    (b"[]", "tools begin error did not parse: expected a JSON object"),
    (b'{"message":1}', "tools begin error did not parse: message must be a string"),
    (b'{"k":1}', "tools begin error did not parse: message must be a string"),
    (b"{", None),
])
def test_error_refusals_agree(body, message):
    got = []
    for core in (compiled, pure):
        with pytest.raises(ToolsBeginErrorParseError) as caught:
            core.decode(b"\x01" + body)
        got.append(str(caught.value))
    assert got[0] == got[1]
    if message is not None:
        assert got[0] == message


def test_an_error_keeps_its_details_in_order_without_message():
    body = b'{"z":1,"message":"no","a":[true],"m":null}'
    for core in (compiled, pure):
        frame = core.decode(b"\x01" + body)
        assert type(frame.error) is ProviderError
        assert frame.error.message == "no" and list(frame.error.details.items()) == [("z", 1), ("a", [True]), ("m", None)]
        assert core.encode(frame) == b'\x01{"message":"no","z":1,"a":[true],"m":null}'
        with pytest.raises(AttributeError):
            frame.error.message = "changed"


def test_inactive_refusal_agrees():
    for core in (compiled, pure):
        with pytest.raises(ToolsBeginInactiveParseError, match="expected a JSON object"):
            core.decode(b"\x03[1]")


@given(st.dictionaries(names, json_values, max_size=4), st.text(max_size=8))
def test_error_and_inactive_round_trip_alike(details, message):
    details.pop("message", None)
    assume(_json.encode_problem(details) is None and _json.encode_problem(message) is None)
    for body, tag in ((_json.dumps({"message": message, **details}), 1), (_json.dumps(details), 3)):
        payload = bytes([tag]) + body
        for kind in (bytes, bytearray, memoryview):
            assert compiled.encode(compiled.decode(kind(payload))) == pure.encode(pure.decode(payload)) == payload


# ---- the values reader: Inactive built straight from its bytes ---------------------


@pytest.mark.parametrize("body, values", [
    (b"{}", {}),
    (b' {\t"a" : 1 ,\r\n"b":[ ] }\n', {"a": 1, "b": []}),
    (b'{"session":{"token":"t","expires":1767225600},"cursor":42}', {"session": {"token": "t", "expires": 1767225600}, "cursor": 42}),
    (b'{"a":[0,-0,7,-42,true,false,null,"",[[]],{"b":{}}]}', {"a": [0, 0, 7, -42, True, False, None, "", [[]], {"b": {}}]}),
    (b'{"max":999999999999999999,"min":-999999999999999999}', {"max": 10**18 - 1, "min": -(10**18) + 1}),
    (b'{"\xc3\xa9":"\xf0\x9f\x98\x80\x7f","":"a b/c"}', {"\u00e9": "\U0001f600\x7f", "": "a b/c"}),
    (b'{"a":"' + b"v" * 300 + b'"}', {"a": "v" * 300}),
    (b'{"a":' + b"[" * 31 + b"]" * 31 + b"}", {"a": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}),
])
def test_the_values_reader_builds_the_common_form(body, values):
    read = compiled._read_values(body)
    assert tools_begin_check.typed(read) == tools_begin_check.typed(values)
    for core in (compiled, pure):
        assert tools_begin_check.typed(dict(core.decode(b"\x03" + body).values)) == tools_begin_check.typed(values)
    tools_begin_check.check_inactive(body)


@pytest.mark.parametrize("body", [
    b'{"a":1.5}', b'{"a":1e3}', b'{"a":-0.0}',                      # a float: the parser's digits
    b'{"a":1234567890123456789}', b'{"a":18446744073709551616}',      # past 18 digits
    b'{"a":01}', b'{"a":-}', b'{"a":+1}', b'{"a":tru}', b'{"a":truex}', b'{"a":[1,]}', b'{"a":[1 2]}',
    b'{"a":"\\n"}', b'{"\\u0061":1}',                              # an escape
    b'{"a":"\xed\xa0\x80"}', b'{"a":"\x01"}', b'{"\xff":1}',          # not strict UTF-8, a control byte
    b'{"a":1,"a":2}', b'{"a":{"b":1,"b":1}}',                         # a duplicate
    b'{"a":' + b"[" * 32 + b"]" * 32 + b"}",                          # deeper than the reader goes
    b"[]", b'"a"', b"null", b"", b'{"a":1} x', b'{"a":1}\x00', b'{"a":1}\x0c', b"\xef\xbb\xbf{}",
])
def test_the_values_reader_hands_on_what_it_is_not_sure_of(body):
    assert compiled._read_values(body) is None
    tools_begin_check.check_inactive(body)


plain_names = names.filter(lambda name: "\\" not in orjson.dumps(name).decode())
plain_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**18) + 1, 10**18 - 1) | plain_names,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(plain_names, inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(plain_names, plain_values, max_size=6))
def test_the_values_reader_reads_every_plain_inactive(values):
    read = compiled._read_values(orjson.dumps(values))
    assert read is not None and tools_begin_check.typed(read) == tools_begin_check.typed(values)


@given(st.one_of(st.dictionaries(names, json_values, max_size=4).map(dump), mutated(st.dictionaries(names, json_values, max_size=4).map(dump)),
                 st.binary(max_size=60)))
def test_the_values_reader_agrees_with_orjson(body):
    tools_begin_check.check_inactive(body)


def test_values_changed_and_decoded_from_a_gc_callback_are_read_safely():
    """A GC callback while the reader allocates: it decodes other Inactive payloads (the name cache
    thrashed under the outer read) and empties or grows every dict it finds that the reader may be
    building. Each decode still returns an Inactive whose values are a dict; none crashes."""
    require_gc_hooks()
    payload = b"\x03" + orjson.dumps({f"victim{i}": {"inner": [i, {"deep": "x" * 20}], "n": i} for i in range(12)})
    others = [b"\x03" + orjson.dumps({f"other{i}-{j}": [j] for j in range(40)}) for i in range(4)]
    seen = []

    def meddle(phase, info):
        if phase != "start" or len(seen) > 400:
            return
        seen.append(compiled.decode(others[len(seen) % len(others)]))
        for found in gc.get_objects(0):
            if type(found) is dict and ("victim0" in found or "inner" in found):
                if len(seen) % 2:
                    found.clear()
                else:
                    found["grown"] = [len(seen)]

    thresholds = gc.get_threshold()
    gc.callbacks.append(meddle)
    gc.set_threshold(1, 1, 1)
    try:
        decoded = [compiled.decode(payload) for _ in range(60)]
    finally:
        gc.set_threshold(*thresholds)
        gc.callbacks.remove(meddle)
    assert seen and all(type(frame) is compiled.Inactive and type(dict(frame.values)) is dict for frame in decoded + seen)
    assert compiled.decode(payload).values == orjson.loads(payload[1:])  # and the cache still hands out the right names
    for other in others:
        assert compiled.decode(other).values == orjson.loads(other[1:])


# ---- encode_into -------------------------------------------------------------------


@pytest.mark.parametrize("frame", [
    lambda core: core.Begun({"a": "fixed"}), lambda core: core.Begun({'"': "rotating"}), lambda core: core.Begun(),
    lambda core: core.ACTIVE, lambda core: core.Inactive({"k": [1, 2.5, None]}), lambda core: core.Error(ProviderError("m", d=1)),
])
def test_encode_into_appends_exactly_encode(frame):
    for core in (compiled, pure):
        made = frame(core)
        out = bytearray(b"\xff" * 3)
        assert core.encode_into(made, out) is None
        assert out == b"\xff" * 3 + core.encode(made)


@pytest.mark.parametrize("buffer", [b"", memoryview(bytearray(4)), [], None, type("Sub", (bytearray,), {})()])
def test_encode_into_refuses_what_is_no_bytearray(buffer):
    for core in (compiled, pure):
        with pytest.raises(TypeError, match=f"^encode_into appends to a bytearray, not {type(buffer).__name__}$"):
            core.encode_into(core.ACTIVE, buffer)


@pytest.mark.parametrize("frame, error", [
    (lambda core: core.Inactive({"k": {1, 2}}), EncodeError), (lambda core: core.Begun({"\udc00": "fixed"}), EncodeError),
    (lambda core: core.Begun.__new__(core.Begun), EncodeError), (lambda core: "not a frame", TypeError),
])
def test_encode_into_leaves_the_buffer_as_it_was_on_failure(frame, error):
    messages = []
    for core in (compiled, pure):
        out = bytearray(b"kept")
        with pytest.raises(error) as caught:
            core.encode_into(frame(core), out)
        assert out == b"kept"
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
