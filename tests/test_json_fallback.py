"""The stdlib JSON path (for interpreters without orjson) accepts and refuses what orjson does."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

orjson = pytest.importorskip("orjson")
from hypothesis import given, settings
from hypothesis import strategies as st

from diverge_codec import _json
from strategies import dump, json_values, mutated
from test_parity import EDGE_CASES, NOTIFICATION_EDGE_CASES


def verdict(loads, data):
    try:
        value = loads(data)
    except (orjson.JSONDecodeError, _json.StdlibDecodeFailure):
        return ("refused", None)
    return ("ok", type(value), value if value == value else "nan")


BODIES = sorted({payload[1:] for payload in EDGE_CASES + NOTIFICATION_EDGE_CASES}) + [
    b"1e400", b"-1e400", b"1" * 400, b"-0", b"0.0", b"1E2", b"[1,]", b'{"a":1,}', b"'a'", b"01", b"1.",
    b".5", b"tru", b"nul", b'"\\x"', b'"\\u12"', b"[" * 1024 + b"]" * 1024, b"[" * 1025 + b"]" * 1025,
    b'["[[[[' + b"[" * 2000 + b'"]', b'{"a":"\\\\ud800"}', b"\xef\xbb\xbf1", b"\x00", b" ", b"\n1\n",
]
# Lone surrogate escapes, where a value walk cannot see them: in a member a later duplicate
# overwrites (the fuzzer's find), in an overwritten key, in an array inside one; and the
# spellings around them: a pair, a pair split by another escape, an escaped backslash.
SURROGATES = [
    b'{"a":"\\ud800","a":1}', b'{"a":{"b":"\\udfff"},"a":2}', b'{"a":["x","\\ud800"],"a":0}',
    b'{"\\ud800":1,"\\ud800":2}', b'"\\ud83d\\ude00"', b'"\\uD83D\\uDE00"', b'"\\ude00"', b'"\\ud800\\ud83d\\ude00"',
    b'"\\ud800\\n\\udc00"', b'"\\\\ud800"', b'"\\\\\\ud800"', b'"\\ud800x"', b'"\\udbff\\udfff"', b'"\\ud800\\u0041"',
]
# The other places the two parsers could part: numbers at and past a double's range, the
# 64-bit integer edges, exponents, -0, nesting at 1024/1025, BOMs, control characters,
# invalid UTF-8 inside strings, whitespace JSON does not allow.
NUMBERS_AND_TEXT = [
    b"-0", b"-0.0", b"1e-99999", b"1e99999", b"1E+2", b"123456789012345678901234567890", b"-9223372036854775809",
    b"-9223372036854775808", b"18446744073709551615", b"18446744073709551616", b"0." + b"0" * 400 + b"1",
    b"1" + b"0" * 400 + b".0", b"1.7976931348623157e308", b"1.7976931348623159e308", b"4.9e-324", b"2e-324",
    b"9007199254740993", b"1.0000000000000000000000000000001", b"0e0", b"-0e-0",
    b'{"a":' * 1024 + b"1" + b"}" * 1024, b'{"a":' * 1025 + b"1" + b"}" * 1025,
    b'"\x1f"', b'"\x7f"', b'"\t"', b"\x0c1", b"\xa0 1", b'"\xed\xa0\x80"', b'"\xc0\x80"', b'"\xf4\x90\x80\x80"',
    b"{}\xef\xbb\xbf", b"NaN", b"-NaN", b"-Infinity", b"+1", b"1_0", b"-01", b"1.", b'{"a":1}{}',
]


@pytest.mark.parametrize("body", BODIES + SURROGATES + NUMBERS_AND_TEXT)
def test_edge_cases_match_orjson(body):
    assert verdict(_json.stdlib_loads, body) == verdict(orjson.loads, body)


@settings(max_examples=300)
@given(body=st.one_of(json_values.map(dump), mutated(json_values.map(dump)), st.binary(max_size=30)))
def test_any_body_matches_orjson(body):
    assert verdict(_json.stdlib_loads, body) == verdict(orjson.loads, body)


@given(value=json_values)
def test_stdlib_writes_what_orjson_reads_back_equal(value):
    try:
        expected = orjson.loads(orjson.dumps(value))
    except TypeError:
        with pytest.raises(_json.StdlibEncodeFailure):
            _json.stdlib_dumps(value)
        return
    assert orjson.loads(_json.stdlib_dumps(value)) == expected


def test_stdlib_refuses_what_orjson_refuses_to_write():
    for value in ({1: 2}, 2**64, -(2**63) - 1, {"a": {1, 2}}, "\ud800"):
        with pytest.raises(_json.StdlibEncodeFailure):
            _json.stdlib_dumps(value)
    assert _json.stdlib_dumps({"a": [1, "é", None]}) == '{"a":[1,"é",null]}'.encode()


def test_the_surrogate_check_reads_escapes_left_to_right():
    assert _json._lone_surrogate('"\\ud800"') == 1
    assert _json._lone_surrogate('"\\\\ud800"') == -1  # an escaped backslash, then the letters
    assert _json._lone_surrogate('"\\ud83d\\ude00"') == -1
    assert _json._lone_surrogate('"x\\ude00"') == 2


def test_both_cores_on_the_stdlib_path_refuse_what_they_refuse_on_orjson():
    """Run the edge cases through both cores with DIVERGE_CODEC_STDLIB_JSON=1 in a child process."""
    script = (
        "import sys, json\n"
        "from diverge_codec import _json, _tools_begin_py, _mcp_notifications_py\n"
        "mods = [_tools_begin_py, _mcp_notifications_py]\n"
        "try:\n"
        "    from diverge_codec import _tools_begin_c, _mcp_notifications_c\n"
        "    mods += [_tools_begin_c, _mcp_notifications_c]\n"
        "except ImportError:\n"
        "    pass\n"
        "out = []\n"
        "for payload in json.loads(sys.stdin.read()):\n"
        "    data = bytes.fromhex(payload)\n"
        "    row = []\n"
        "    for mod in mods:\n"
        "        try:\n"
        "            row.append(type(mod.decode(data)).__name__)\n"
        "        except Exception as error:\n"
        "            row.append(type(error).__name__)\n"
        "    out.append(row)\n"
        "print(json.dumps([_json.BACKEND, out]))\n"
    )
    payloads = EDGE_CASES + NOTIFICATION_EDGE_CASES
    env = {**os.environ, "DIVERGE_CODEC_STDLIB_JSON": "1"}
    run = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps([p.hex() for p in payloads]),
        env=env, capture_output=True, text=True, check=True,
    )
    backend, rows = json.loads(run.stdout)
    assert backend == "json"
    from diverge_codec import _mcp_notifications_py, _tools_begin_py

    for payload, row in zip(payloads, rows):
        expected = []
        for mod in (_tools_begin_py, _mcp_notifications_py):
            try:
                expected.append(type(mod.decode(payload)).__name__)
            except Exception as error:  # noqa: BLE001
                expected.append(type(error).__name__)
        assert row == expected * (len(row) // 2), payload[:40]
