"""The backend differential, without atheris: ``fuzz_backends.py`` drives it, ``tests/test_backends.py`` replays the corpus.

One input, two contracts:

- reading: orjson and the stdlib path accept and refuse the same documents, and read
  the same value (types included);
- writing: the input's JSON, with leaves swapped for kinds JSON cannot carry as the
  input's bytes choose, is written or refused alike by orjson and the stdlib path, and
  by the compiled and the pure core (the C walk against ``_json.encode_problem``).

``check(data)`` raises AssertionError where two disagree; any other exception is a bug.
"""

from __future__ import annotations

import enum
import sys
from typing import Any

import orjson

from diverge_codec import _json, _tools_begin_c, _tools_begin_py
from diverge_codec.errors import EncodeError


sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))  # the helpers below recurse once a level, to 1024


class _Text(str):
    pass


class _Colour(enum.Enum):
    RED = "red"


ODD = (float("nan"), float("inf"), float("-inf"), 2**64, -(2**63) - 1, "\ud800", _Text("t"), (1,), _Colour.RED,
       b"x", {1: 2}, {_Text("k"): 1}, 1.5, 0, None, "plain")


def _read(loads: Any, data: bytes) -> Any:
    try:
        value = loads(data)
    except ValueError:
        return ("refused",)
    return ("value", _typed(value))


def _typed(value: Any) -> Any:
    """A value with its types spelled out, so 1 and 1.0 and True differ."""
    if type(value) is dict:
        return {key: _typed(item) for key, item in value.items()}
    if type(value) is list:
        return [_typed(item) for item in value]
    return (type(value).__name__, value)


def _swap(value: Any, choices: bytes, at: list[int]) -> Any:
    """The value with leaves replaced by ODD kinds, each choice byte picking one (or keeping the leaf)."""
    if type(value) is dict:
        return {key: _swap(item, choices, at) for key, item in value.items()}
    if type(value) is list:
        return [_swap(item, choices, at) for item in value]
    if not choices:
        return value
    pick = choices[at[0] % len(choices)]
    at[0] += 1
    return ODD[pick % len(ODD)] if pick < 128 else value


def _write(dumps: Any, value: Any) -> Any:
    try:
        written = dumps(value)
    except TypeError as error:
        return ("refused", str(error))
    return ("written", _typed(orjson.loads(written)))


def _encode(core: Any, value: Any) -> Any:
    try:
        return ("written", core.decode(core.encode(core.Inactive({"v": value}))) == core.Inactive({"v": value}))
    except EncodeError as error:
        return ("refused", str(error))


def check(data: bytes) -> None:
    if _read(orjson.loads, data) != _read(_json.stdlib_loads, data):
        raise AssertionError("orjson and the stdlib path read this document differently")
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = [data.decode("latin-1")]
    value = _swap(value, data[-8:], [0])
    if _write(_json._orjson_dumps, value) != _write(_json.stdlib_dumps, value):
        raise AssertionError("orjson and the stdlib path write this value differently")
    if _encode(_tools_begin_c, value) != _encode(_tools_begin_py, value):
        raise AssertionError("the compiled and the pure core write this value differently")
