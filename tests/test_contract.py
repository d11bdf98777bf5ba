"""One writing contract, whichever JSON backend and whichever core (``_json.encode_problem``).

Every kind of value a caller can put in a frame is pinned: written (and read back
equal), or refused with one EncodeError message. The same table runs in this process
(orjson) and in a child forced onto the stdlib backend, over both cores and every
place a frame carries a caller's value; the outcomes must be identical.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import decimal
import enum
import json
import os
import subprocess
import sys
import types
import uuid
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diverge_codec import ErrorData, Mode, ProviderError, _json
from diverge_codec.errors import EncodeError

import importlib.util

from conftest import ALLOW_NO_EXTENSION, IMPLEMENTATIONS, load


class Text(str):
    pass


class Number(int):
    pass


class Real(float):
    pass


class Object(dict):
    pass


class Array(list):
    pass


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    ONE = 1


class Name(str, enum.Enum):
    A = "a"


@dataclasses.dataclass
class Point:
    x: int = 1


Pair = collections.namedtuple("Pair", "a b")


def nested(levels: int) -> object:
    """A value that puts ``levels`` arrays inside an Inactive's values (itself one level)."""
    value: object = 0
    for _ in range(levels):
        value = [value]
    return value


NOT_FINITE, TOO_DEEP, INT_RANGE, SURROGATE = _json.NOT_FINITE, _json.TOO_DEEP, _json.INT_RANGE, _json.SURROGATE


def not_json(kind: str) -> str:
    return _json.NOT_A_JSON_TYPE.format(kind=kind)


def key(kind: str) -> str:
    return _json.KEY_NOT_STR.format(kind=kind)


ACCEPTED = {
    "null": None, "true": True, "zero": 0, "int64 min": -(2**63), "uint64 max": 2**64 - 1, "float": 1.5,
    "negative zero": -0.0, "largest double": 1.7976931348623157e308, "smallest double": 5e-324,
    "non-ascii": "é\U0001f600", "nul": "\x00", "empty array": [], "empty object": {},
    "253 levels inside (254 in all)": nested(253), "object": {"a": [1, {"b": None}]},
}
REFUSED = {
    "NaN": (float("nan"), NOT_FINITE), "Infinity": (float("inf"), NOT_FINITE), "-Infinity": (float("-inf"), NOT_FINITE),
    "overflowed product": (1e308 * 10, NOT_FINITE), "254 levels inside (255 in all)": (nested(254), TOO_DEEP),
    "2**64": (2**64, INT_RANGE), "-2**63 - 1": (-(2**63) - 1, INT_RANGE),
    "lone surrogate": ("\ud800", SURROGATE), "lone surrogate key": ({"\udc00": 1}, SURROGATE),
    "int key": ({1: 2}, key("int")), "None key": ({None: 1}, key("NoneType")), "str-subclass key": ({Text("a"): 1}, key("Text")),
    "str-Enum key": ({Mode.FIXED: 1}, key("Mode")),
    "str subclass": (Text("a"), not_json("Text")), "int subclass": (Number(1), not_json("Number")),
    "float subclass": (Real(1.5), not_json("Real")), "dict subclass": (Object(a=1), not_json("Object")),
    "OrderedDict": (collections.OrderedDict(a=1), not_json("OrderedDict")), "list subclass": (Array([1]), not_json("Array")),
    "tuple": ((1, 2), not_json("tuple")), "namedtuple": (Pair(1, 2), not_json("Pair")),
    "Enum": (Colour.RED, not_json("Colour")), "IntEnum": (Level.ONE, not_json("Level")), "str Enum (Mode)": (Mode.FIXED, not_json("Mode")),
    "mixin Enum": (Name.A, not_json("Name")), "dataclass": (Point(), not_json("Point")),
    "datetime": (datetime.datetime(2020, 1, 1), not_json("datetime")), "date": (datetime.date(2020, 1, 1), not_json("date")),
    "UUID": (uuid.UUID(int=1), not_json("UUID")), "Decimal": (decimal.Decimal("1.5"), not_json("Decimal")),
    "bytes": (b"a", not_json("bytes")), "bytearray": (bytearray(b"a"), not_json("bytearray")), "set": ({1}, not_json("set")),
    "mappingproxy": (types.MappingProxyType({"a": 1}), not_json("mappingproxy")), "object": (object(), not_json("object")),
    "first problem in document order (NaN)": ({"a": float("nan"), "b": 2**64}, NOT_FINITE),
    "first problem in document order (int)": ({"a": 2**64, "b": float("nan")}, INT_RANGE),
}
try:
    import orjson

    REFUSED["orjson.Fragment (orjson writes its bytes unread)"] = (orjson.Fragment(b"{"), not_json("Fragment"))
except ImportError:  # pragma: no cover - the child on the stdlib backend still has orjson installed
    pass

PLACES = ("Inactive values", "Notification member", "ProviderError detail", "ErrorData data")
"""Each one level inside its body, so the depth limit falls at the same value everywhere."""


def frame_with(place: str, value: object, core: str) -> tuple[object, object, str]:
    """A frame of ``core`` carrying ``value`` at ``place``, its codec, and the message prefix of its EncodeError."""
    tb, mn = load("tools_begin", core), load("mcp_notifications", core)
    if place == "Inactive values":
        return tb.Inactive({"k": value}), tb, "tools begin Inactive could not be encoded: "
    if place == "Notification member":
        return mn.Notification({"method": "m", "k": value}), mn, "mcp notifications Notification could not be encoded: "
    if place == "ProviderError detail":
        return tb.Error(ProviderError("m", k=value)), tb, "tools begin Error could not be encoded: "
    return mn.Error(ErrorData(1, "m", value)), mn, "mcp notifications Error could not be encoded: "


# The cores this install has: on a pure install (where the c cases skip) the tables run on py alone.
CORES = [core for core in IMPLEMENTATIONS
         if not (core == "c" and ALLOW_NO_EXTENSION and importlib.util.find_spec("diverge_codec._tools_begin_c") is None)]

def outcome(place: str, value: object, core: str) -> list[object]:
    frame, codec, prefix = frame_with(place, value, core)
    try:
        payload = codec.encode(frame)
    except EncodeError as error:
        assert str(error).startswith(prefix)
        return ["refused", str(error)[len(prefix):]]
    return ["written", codec.decode(payload) == frame]


def outcomes() -> dict[str, list[object]]:
    """Every kind at every place on every core, as JSON: what the child on the stdlib backend reports."""
    table = {name: value for name, value in ACCEPTED.items()} | {name: value for name, (value, _) in REFUSED.items()}
    return {f"{name} | {place} | {core}": outcome(place, value, core)
            for name, value in table.items() for place in PLACES for core in CORES}


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", list(ACCEPTED))
def test_json_values_are_written_and_read_back_equal(name, place):
    for core in CORES:
        assert outcome(place, ACCEPTED[name], core) == ["written", True], core


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("name", list(REFUSED))
def test_what_json_cannot_carry_is_one_encode_error(name, place):
    value, phrase = REFUSED[name]
    for core in IMPLEMENTATIONS:
        assert outcome(place, value, core) == ["refused", phrase], core


def test_the_stdlib_backend_gives_every_outcome_orjson_gives():
    if _json.BACKEND != "orjson":
        pytest.skip("this process already runs on the stdlib backend")
    tests = str(Path(__file__).parent)
    script = f"import sys, json; sys.path.insert(0, {tests!r}); import test_contract; print(json.dumps(test_contract.outcomes()))"
    env = {**os.environ, "DIVERGE_CODEC_STDLIB_JSON": "1"}
    child = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr[-2000:]
    got = json.loads(child.stdout)
    expected = outcomes()
    assert got.keys() == expected.keys()
    differ = {name: (got[name], expected[name]) for name in expected if got[name] != expected[name]}
    assert not differ


def test_exact_bytes_on_orjson():
    tb = load("tools_begin", "c")
    assert tb.encode(tb.Inactive({"a": -0.0, "b": 2**64 - 1, "c": "é"})) == '\x03{"a":-0.0,"b":18446744073709551615,"c":"é"}'.encode()
    assert tb.encode(tb.Begun({"k": Mode.ROTATING})) == b'\x00{"secrets":{"k":"rotating"}}'


def test_stdlib_dumps_and_dumps_refuse_alike():
    for value, phrase in REFUSED.values():
        with pytest.raises(_json.StdlibEncodeFailure) as stdlib:
            _json.stdlib_dumps([value])  # one level inside, as in a frame
        with pytest.raises(_json.EncodeFailure) as chosen:
            _json.dumps([value])
        assert str(stdlib.value) == str(chosen.value) == phrase


def test_top_level_names_are_plain_str():
    # A str-subclass name (a StrEnum's member, say) is the name's text: decode gives plain names back.
    for core in IMPLEMENTATIONS:
        tb = load("tools_begin", core)
        inactive = tb.Inactive({Text("a"): 1, Mode.FIXED: 2})
        assert [type(name) for name in inactive.values] == [str, str]
        assert list(inactive.values) == ["a", "fixed"]
        assert tb.decode(tb.encode(inactive)) == inactive
        begun = tb.Begun({Text("a"): "fixed"})
        assert [type(name) for name in begun.secrets] == [str]


odd_scalars = st.sampled_from([float("nan"), float("inf"), 2**64, -(2**63) - 1, "\ud800", Text("t"), Number(3), Real(0.5), (1,), Colour.RED, Mode.FIXED, b"x"])
anything = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**65), 2**65) | st.floats() | st.text(max_size=5) | odd_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3) | st.integers(0, 3) | st.just(Text("k")), inner, max_size=3),
    max_leaves=10,
)


@given(value=anything)
def test_the_compiled_walk_agrees_with_the_python_walk(value):
    got = [outcome("Inactive values", value, core) for core in IMPLEMENTATIONS]
    assert got[0] == got[1]
    assert (got[0][0] == "refused") == (_json.encode_problem({"k": value}) is not None)
