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
        return ("ok", loads(data))
    except (orjson.JSONDecodeError, _json.StdlibDecodeFailure):
        return ("refused", None)


BODIES = sorted({payload[1:] for payload in EDGE_CASES + NOTIFICATION_EDGE_CASES}) + [
    b"1e400", b"-1e400", b"1" * 400, b"-0", b"0.0", b"1E2", b"[1,]", b'{"a":1,}', b"'a'", b"01", b"1.",
    b".5", b"tru", b"nul", b'"\\x"', b'"\\u12"', b"[" * 1024 + b"]" * 1024, b"[" * 1025 + b"]" * 1025,
    b'["[[[[' + b"[" * 2000 + b'"]', b'{"a":"\\\\ud800"}', b"\xef\xbb\xbf1", b"\x00", b" ", b"\n1\n",
]


@pytest.mark.parametrize("body", BODIES)
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
