"""tools-begin frames: exact bytes for every variant, every refusal pinned, on both cores."""

from __future__ import annotations

import pickle

import pytest

from conftest import assert_message, needs_tracemalloc

from diverge_codec import _json
from diverge_codec import EncodeError, Mode, ProviderError, tools_begin
from diverge_codec.errors import DecodeError

# ---- exact bytes -------------------------------------------------------------


def test_begun_with_secrets_exact_bytes(tb):
    frame = tb.Begun({"api_key": "fixed", "session": Mode.ROTATING})
    assert tb.encode(frame) == b'\x00{"secrets":{"api_key":"fixed","session":"rotating"}}'


def test_begun_empty_writes_empty_object(tb):
    assert tb.encode(tb.Begun()) == b"\x00{}"
    assert tb.encode(tb.Begun({})) == b"\x00{}"


def test_error_exact_bytes_keeps_details_in_order(tb):
    frame = tb.Error(ProviderError("refused", zeta=1, alpha=[True, None]))
    assert tb.encode(frame) == b'\x01{"message":"refused","zeta":1,"alpha":[true,null]}'


def test_active_is_one_byte(tb):
    assert tb.encode(tb.ACTIVE) == b"\x02"
    assert tb.encode(tb.Active()) == b"\x02"


def test_inactive_exact_bytes(tb):
    frame = tb.Inactive({"session": {"token": "t", "n": 3}, "other": 1.5})
    assert tb.encode(frame) == b'\x03{"session":{"token":"t","n":3},"other":1.5}'
    assert tb.encode(tb.Inactive({})) == b"\x03{}"


def test_encode_into_appends(tb):
    out = bytearray(b"head")
    tb.encode_into(tb.Begun({"a": "fixed"}), out)
    tb.encode_into(tb.ACTIVE, out)
    tb.encode_into(tb.Inactive({}), out)
    assert out == b'head\x00{"secrets":{"a":"fixed"}}\x02\x03{}'


def test_encode_into_refuses_bytes(tb):
    with pytest.raises(TypeError, match="bytearray"):
        tb.encode_into(tb.ACTIVE, b"")


def test_frame_inactive_does_not_read_the_json(tb):
    assert tb.frame_inactive(b'{"a":1}') == b'\x03{"a":1}'
    assert tb.frame_inactive(bytearray(b"not json")) == b"\x03not json"
    assert tb.frame_inactive(memoryview(b"xx{}")[2:]) == b"\x03{}"
    with pytest.raises(TypeError, match="frame_inactive takes bytes-like JSON"):
        tb.frame_inactive('{"a":1}')


# ---- decode ------------------------------------------------------------------


def test_decode_begun_keeps_declared_order_and_ignores_dependencies(tb):
    frame = tb.decode(b'\x00{"dependencies":["x"],"secrets":{"z":"rotating","a":"fixed"}}')
    assert type(frame) is tb.Begun
    assert list(frame.secrets) == ["z", "a"]
    assert frame.secrets == {"z": Mode.ROTATING, "a": Mode.FIXED}
    assert all(type(mode) is Mode for mode in frame.secrets.values())
    assert tb.encode(frame) == b'\x00{"secrets":{"z":"rotating","a":"fixed"}}'


def test_decode_begun_without_secrets_is_empty(tb):
    assert tb.decode(b"\x00{}") == tb.Begun()
    assert tb.decode(b'\x00{"dependencies":[]}').secrets == {}


def test_decode_active_returns_the_shared_frame_and_ignores_trailing_bytes(tb):
    assert tb.decode(b"\x02") is tools_begin.ACTIVE
    assert tb.decode(b"\x02anything") is tools_begin.ACTIVE
    assert tb.decode(bytearray(b"\x02")) is tools_begin.ACTIVE


def test_decode_inactive_values_any_json(tb):
    frame = tb.decode(b'\x03{"a":[1,{"b":null}],"c":"s","d":false}')
    assert type(frame) is tb.Inactive
    assert frame.values == {"a": [1, {"b": None}], "c": "s", "d": False}


def test_decode_error(tb):
    frame = tb.decode(b'\x01{"message":"already begun","kind":"again"}')
    assert type(frame) is tb.Error
    assert frame.error == ProviderError("already begun", kind="again")
    assert frame.error.details == {"kind": "again"}


@pytest.mark.parametrize("payload", [bytes, bytearray, memoryview])
def test_decode_accepts_bytes_like(tb, payload):
    assert tb.decode(payload(b'\x03{"k":1}')) == tb.Inactive({"k": 1})


def test_decode_noncontiguous_memoryview(tb):
    view = memoryview(b'\x03x{x"xkx"x:x1x}')[::2]
    assert tb.decode(view) == tb.Inactive({"k": 1})


def test_decode_does_not_follow_later_changes_to_a_bytearray(tb):
    data = bytearray(b'\x03{"k":[1,2]}')
    frame = tb.decode(data)
    data[:] = b'\x03{"k":[9,9]}'
    assert frame.values == {"k": [1, 2]}


@pytest.mark.parametrize("payload", ["\x02", 2, None, [2]])
def test_decode_refuses_non_bytes(tb, payload):
    with pytest.raises(TypeError, match=r"^tools begin payload must be bytes, bytearray or memoryview, not \w+$"):
        tb.decode(payload)


# ---- refusals ----------------------------------------------------------------


def parser_says(body: bytes) -> str:
    """The JSON backend's own phrase and position for a body it refuses, as a refusal quotes it.

    Its wording is the backend's, and changes between orjson versions (3.13 added ", expected
    a JSON value" after "unexpected character"); ours is the prefix around it, the position
    (of the body, not the payload), the class and args, which the rows pin exactly.
    """
    try:
        _json.loads(body)
    except _json.DecodeFailure as error:
        return _json.failure_reason(error)
    raise AssertionError("the body parsed")


REFUSALS = [
    (b"", "EmptyFrameError", "tools begin response frame is empty"),
    (b"\x07", "UnknownTagError", "unknown tools begin response frame tag 7"),
    (b"\xff{}", "UnknownTagError", "unknown tools begin response frame tag 255"),
    (b"\x04", "UnknownTagError", "unknown tools begin response frame tag 4"),
    (b"\x00", "BegunParseError", "tools begin registration did not parse: " + parser_says(b"")),
    (b"\x00[]", "BegunParseError", "tools begin registration did not parse: expected a JSON object"),
    (b'\x00{"secrets":null}', "BegunParseError", "tools begin registration did not parse: secrets must be an object"),
    (b'\x00{"secrets":[]}', "BegunParseError", "tools begin registration did not parse: secrets must be an object"),
    (b'\x00{"secrets":{"a":"fixed","b":"Fixed"}}', "BegunParseError", 'tools begin registration did not parse: the mode of secret 1 must be "fixed" or "rotating"'),
    (b'\x00{"secrets":{"a":null}}', "BegunParseError", 'tools begin registration did not parse: the mode of secret 0 must be "fixed" or "rotating"'),
    (b'\x00{"secrets":{"a":["fixed"]}}', "BegunParseError", 'tools begin registration did not parse: the mode of secret 0 must be "fixed" or "rotating"'),
    (b"\x00{} x", "BegunParseError", "tools begin registration did not parse: " + parser_says(b"{} x")),
    (b"\x01", "ErrorParseError", "tools begin error did not parse: " + parser_says(b"")),
    (b'\x01"boom"', "ErrorParseError", "tools begin error did not parse: expected a JSON object"),
    (b"\x01{}", "ErrorParseError", "tools begin error did not parse: message must be a string"),
    (b'\x01{"message":7}', "ErrorParseError", "tools begin error did not parse: message must be a string"),
    (b"\x03", "InactiveParseError", "tools begin inactive secrets did not parse: " + parser_says(b"")),
    (b"\x03[]", "InactiveParseError", "tools begin inactive secrets did not parse: expected a JSON object"),
    (b"\x03null", "InactiveParseError", "tools begin inactive secrets did not parse: expected a JSON object"),
    (b'\x03{"a":NaN}', "InactiveParseError", "tools begin inactive secrets did not parse: " + parser_says(b'{"a":NaN}')),
    (b'\x03{"a":1e999}', "InactiveParseError", "tools begin inactive secrets did not parse: " + parser_says(b'{"a":1e999}')),
    (b'\x03{"a":"\xff"}', "InactiveParseError", "tools begin inactive secrets did not parse: " + parser_says(b'{"a":"\xff"}')),
]


@pytest.mark.parametrize(("payload", "kind", "message"), REFUSALS)
def test_refusal(tb, payload, kind, message):
    with pytest.raises(getattr(tb, kind)) as caught:
        tb.decode(payload)
    error = caught.value
    assert type(error) is getattr(tools_begin, kind)
    assert_message(error, message)
    assert error.args == (str(error),)
    assert isinstance(error, tools_begin.FrameError)
    assert isinstance(error, DecodeError) and isinstance(error, ValueError)
    assert error.__cause__ is None and error.__context__ is None


def test_unknown_tag_carries_the_tag(tb):
    with pytest.raises(tools_begin.UnknownTagError) as caught:
        tb.decode(b"\x09{}")
    assert caught.value.tag == 9


def test_parse_error_carries_the_reason(tb):
    with pytest.raises(tools_begin.ErrorParseError) as caught:
        tb.decode(b"\x01{}")
    assert caught.value.reason == "message must be a string"


def test_errors_pickle(tb):
    for payload, _, message in REFUSALS:
        with pytest.raises(tools_begin.FrameError) as caught:
            tb.decode(payload)
        again = pickle.loads(pickle.dumps(caught.value))
        assert type(again) is type(caught.value) and str(again) == str(caught.value)
        assert_message(again, message)


# ---- frames as values --------------------------------------------------------


def test_frames_are_immutable(tb):
    frame = tb.Begun({"a": "fixed"})
    with pytest.raises(AttributeError):
        frame.secrets = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        frame.other = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        tb.ACTIVE.x = 1


def test_frames_equal_by_content_and_variant(tb):
    assert tb.Inactive({"a": 1}) == tb.Inactive({"a": 1})
    assert tb.Inactive({"a": 1}) != tb.Inactive({"a": 2})
    assert tb.Begun() != tb.Inactive({})
    assert tb.Error(ProviderError("x")) == tb.Error(ProviderError("x"))
    assert tb.Active() is tb.ACTIVE and hash(tb.ACTIVE) == hash(tb.Active())


def test_frames_holding_dicts_are_unhashable(tb):
    with pytest.raises(TypeError):
        hash(tb.Begun())


def test_match_by_keyword_and_position(tb):
    def kind(frame):
        match frame:
            case tb.Begun(secrets=secrets):
                return ("begun", list(secrets))
            case tb.Error(error):
                return ("error", error.message)
            case tools_begin.Active():
                return ("active",)
            case tb.Inactive(values):
                return ("inactive", sorted(values))
        return None

    assert kind(tb.decode(b'\x00{"secrets":{"a":"fixed"}}')) == ("begun", ["a"])
    assert kind(tb.decode(b'\x01{"message":"m"}')) == ("error", "m")
    assert kind(tb.decode(b"\x02")) == ("active",)
    assert kind(tb.decode(b'\x03{"b":1}')) == ("inactive", ["b"])


def test_tags(tb):
    assert [tb.Begun().tag, tb.Error(ProviderError("x")).tag, tb.ACTIVE.tag, tb.Inactive({}).tag] == [0, 1, 2, 3]
    assert tb.Tag is tools_begin.Tag and tools_begin.Tag.INACTIVE == 3


def test_frames_pickle(tb):
    for frame in (tb.Begun({"a": "rotating"}), tb.Error(ProviderError("m", k=1)), tb.ACTIVE, tb.Inactive({"a": [1]})):
        assert pickle.loads(pickle.dumps(frame)) == frame
    assert pickle.loads(pickle.dumps(tb.ACTIVE)) is tb.ACTIVE


def test_repr_shows_names_never_values(tb):
    assert repr(tb.Inactive({"session": "SECRET-VALUE"})) == "Inactive(names=['session'])"
    assert repr(tb.Begun({"a": "fixed"})) == "Begun(secrets={'a': 'fixed'})"
    assert repr(tb.ACTIVE) == "Active()"
    assert repr(tb.Error(ProviderError("SECRET-VALUE", k="SECRET-VALUE"))) == (
        "Error(error=ProviderError(message=<12 chars>, details=<1 members>))"
    )


def test_constructors_validate(tb):
    with pytest.raises(ValueError, match='the mode of secret 0 must be "fixed" or "rotating"'):
        tb.Begun({"a": "Fixed"})
    with pytest.raises(ValueError, match="secrets must be an object"):
        tb.Begun(["a"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ProviderError"):
        tb.Error("message")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="mapping"):
        tb.Inactive([("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="str names"):
        tb.Inactive({1: 2})  # type: ignore[dict-item]


def test_constructor_copies_its_input(tb):
    values = {"a": 1}
    frame = tb.Inactive(values)
    values["b"] = 2
    assert frame.values == {"a": 1}


def test_encode_refuses_unencodable_values(tb):
    with pytest.raises(EncodeError) as caught:
        tb.encode(tb.Inactive({"a": {1, 2}}))
    assert str(caught.value).startswith("tools begin Inactive could not be encoded: ")
    if _json.BACKEND == "orjson":
        assert str(caught.value) == "tools begin Inactive could not be encoded: Type is not JSON serializable: set"
    assert caught.value.__context__ is None


def test_encode_refuses_non_frames(tb):
    with pytest.raises(TypeError, match="not a tools begin response frame: dict"):
        tb.encode({})



@needs_tracemalloc
def test_decoding_active_allocates_nothing(tb):
    import tracemalloc

    payload = b"\x02"
    tb.decode(payload)
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(1000):
            tb.decode(payload)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = [stat for stat in after.compare_to(before, "filename") if stat.size_diff > 0 and "tracemalloc" not in str(stat)]
    assert sum(stat.size_diff for stat in grown) < 512, grown[:3]
