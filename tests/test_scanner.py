"""The relay's splice (``splice_notification``, under ``relay.relay_frame``) in both cores, held to orjson.

Every outcome is pinned against the reference in ``fuzz/scanner_check.py``: ``orjson.loads``,
``jsonrpc`` popped, the channel's rules. A payload decodes to exactly that notification; a
refusal is ``decode``'s, word for word; anything else is None.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import ALLOW_NO_EXTENSION, require_gc_hooks
from diverge_codec import errors, relay
from strategies import json_values, names

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
CORPUS = sorted((FUZZ / "corpus_scanner").glob("*"))

pytest.importorskip("orjson", reason="the reference is orjson's reading")
if ALLOW_NO_EXTENSION:
    pytest.importorskip("diverge_codec._mcp_notifications_c", reason="the reference check compares the compiled core")
sys.path.insert(0, str(FUZZ))
import scanner_check  # noqa: E402

PREFIX = "mcp notifications response frame did not parse: "
KINDS = (bytes, bytearray, memoryview)


@pytest.mark.parametrize("message, payload", [
    # mcp 2.x: the envelope first; the TypeScript SDK and mcp 1.x: last.
    (b'{"jsonrpc":"2.0","method":"n/x","params":{"a":1}}\n', b'{"method":"n/x","params":{"a":1}}'),
    (b'{"method":"n/x","params":{"a":1},"jsonrpc":"2.0"}\n', b'{"method":"n/x","params":{"a":1}}'),
    (b'{ "a" : 1 ,\t"jsonrpc"\n:\r"2.0" , "method":"m" }', b'{ "a" : 1 ,\t"method":"m" }'),
    (b'{"method":"m" , "jsonrpc":"2.0" }', b'{"method":"m" }'),
    (b'{"jsonrpc":"2.0","jsonrpc":"1","method":"m"}', b'{"method":"m"}'),
    (b'{"method":"m","jsonrpc":"2.0","jsonrpc":"1"}', b'{"method":"m"}'),
    (b'{"jsonrpc":1,"method":"m","jsonrpc":2,"params":{}}', b'{"method":"m","params":{}}'),
    (b'{"\\u006asonrpc":"2.0","method":"m"}', b'{"method":"m"}'),
    (b'{"method":"m","params":{"jsonrpc":"2.0"}}', b'{"method":"m","params":{"jsonrpc":"2.0"}}'),
    (b'{"method":"m","params":{"data":{"id":7}}}', b'{"method":"m","params":{"data":{"id":7}}}'),
    (b'{"method":"a","method":"b"}', b'{"method":"a","method":"b"}'),
    (b'{"method":7,"method":"b"}', b'{"method":7,"method":"b"}'),
    (b'{"method":"m","params":{"_meta":1,"_meta":null}}', b'{"method":"m","params":{"_meta":1,"_meta":null}}'),
    (b'{"method":"m","params":{"d":"\\ud83d\\ude00","n":18446744073709551616}}',
     b'{"method":"m","params":{"d":"\\ud83d\\ude00","n":18446744073709551616}}'),
])
def test_a_notification_is_spliced_byte_for_byte(mn, message, payload):
    for kind in KINDS:
        assert relay.relay_frame(kind(message), mn) == b"\x00" + payload
    assert mn.decode(b"\x00" + payload).notification == scanner_check.reference(message)[1]


@pytest.mark.parametrize("message", [
    b'{"jsonrpc":"2.0","id":1,"result":{}}', b'{"method":"ping","id":2,"jsonrpc":"2.0"}',
    b'{"method":"ping","\\u0069d":2}', b'{"method":"ping","i\\u0064":null}', b'{"method":7,"id":1}',
    b'{"id":1,"id":2}', b"[]", b"7", b'"s"', b"null", b"", b" \r\n", b"\n",
])
def test_what_is_no_notification_is_none(mn, message):
    for kind in KINDS:
        assert mn.splice_notification(kind(message)) is None


@pytest.mark.parametrize("message, reason", [
    (b'{"jsonrpc":"2.0"}', errors.METHOD_NOT_A_STRING),
    (b'{"method":7,"jsonrpc":"2.0"}', errors.METHOD_NOT_A_STRING),
    (b'{"method":"a","method":7}', errors.METHOD_NOT_A_STRING),
    (b'{"method":"m","params":[]}', errors.PARAMS_INVALID),
    (b'{"method":"m","params":{"_meta":"x"},"jsonrpc":"2.0"}', errors.META_INVALID),
    (b'{"method":"m","params":{"_meta":{},"_meta":1}}', errors.META_INVALID),
])
def test_a_notification_of_the_wrong_shape_is_refused_in_decodes_words(mn, message, reason):
    for kind in KINDS:
        with pytest.raises(mn.NotificationParseError) as caught:
            mn.splice_notification(kind(message))
        assert str(caught.value) == PREFIX + reason


@pytest.mark.parametrize("message", [
    b'{"method":"notifications/message","params":{"data":"cut \\ud83d"},"jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","method":"m","params":{"d":"\\udc00"}}',
    b'{"method":"m","params":{"d":"\xed\xa0\x80"}}', b'{"method":"m","params":{"d":"\xff"}}',
    b'\xef\xbb\xbf{"method":"m"}', b'{"method":"m","params":{"n":1e400}}', b'{"method":"m","params":{"n":NaN}}',
    b'{"method":"m","params":{"n":-Infinity}}', b'{"method":"m","params":{"n":01}}',
    b'{"method":"m","params":{"d":' + b"[" * 1023 + b"]" * 1023 + b"}}",
    b'{"method":"m",}', b'{"method":"m"} x', b'{"method":"m"', b"not json", b'{"method":"m"}\x00',
    b'{"method":"m","params":{"d":"\x01"}}',
])
def test_what_orjson_refuses_is_refused_as_decode_refuses_it(mn, message):
    with pytest.raises(mn.NotificationParseError) as expected:
        mn.decode(b"\x00" + message)
    for kind in KINDS:
        with pytest.raises(mn.NotificationParseError) as caught:
            mn.splice_notification(kind(message))
        assert str(caught.value) == str(expected.value)
        assert caught.value.__cause__ is None and caught.value.__context__ is None


def test_the_deepest_notification_orjson_reads_is_spliced(mn):
    message = b'{"method":"m","params":{"d":' + b"[" * 1022 + b"]" * 1022 + b'},"jsonrpc":"2.0"}'
    assert mn.splice_notification(message) == b"\x00" + message[:-len(b',"jsonrpc":"2.0"}')] + b"}"


def test_a_refusal_quotes_no_value(mn):
    with pytest.raises(mn.NotificationParseError) as caught:
        mn.splice_notification(b'{"method":"m","params":{"token":"hunter2\\ud800"}}')
    assert "hunter2" not in str(caught.value) and "hunter2" not in repr(caught.value.args)


def test_a_large_notification_is_spliced(mn):
    message = b'{"method":"notifications/message","params":{"data":"' + b"x" * (3 << 20) + b'"},"jsonrpc":"2.0"}\n'
    assert mn.splice_notification(message) == b"\x00" + message[:-len(b',"jsonrpc":"2.0"}\n')] + b"}"


@pytest.mark.parametrize("runs", range(1, 13))
def test_every_envelope_run_is_cut_however_many(mn, runs):
    """Runs between kept members: the compiled scan cuts up to 8 itself and hands a line with more to the
    pure splice (its cut list is full); both give these bytes."""
    message = b"{" + b",".join(b'"jsonrpc":%d,"k%d":%d' % (i, i, i) for i in range(runs)) + b',"method":"m"}'
    expected = b"\x00{" + b",".join(b'"k%d":%d' % (i, i) for i in range(runs)) + b',"method":"m"}'
    assert mn.splice_notification(message) == expected
    assert mn.decode(expected).notification == scanner_check.reference(message)[1]


def test_the_scan_never_reads_a_bytearray_that_moves(mn):
    """A GC callback that grows and refills the bytearray on every collection changes nothing already read."""
    message = bytearray(b'{"method":"n/x","params":{"p":[1,2,3]},"jsonrpc":"2.0"}')
    expected = b'\x00{"method":"n/x","params":{"p":[1,2,3]}}'

    def churn(phase, info):
        if phase == "start":
            try:
                message.extend(b" " * 4096)
                del message[-4096:]
            except BufferError:  # a view of it is held: it cannot move at all
                pass

    require_gc_hooks()
    threshold = gc.get_threshold()
    gc.callbacks.append(churn)
    gc.set_threshold(1, 1, 1)
    try:
        for _ in range(200):
            assert mn.splice_notification(message) == expected
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(churn)


def test_the_splice_refuses_what_is_not_bytes_like(mn):
    with pytest.raises(TypeError, match="splice_notification takes bytes-like JSON .* not str"):
        mn.splice_notification('{"method":"n/x"}')


@pytest.mark.parametrize("seed", CORPUS, ids=lambda path: path.name)
def test_every_scanner_seed_passes(seed):
    scanner_check.check(seed.read_bytes())


def test_the_scanner_corpus_is_there():
    assert len(CORPUS) >= 60


def test_the_check_catches_a_scanner_that_differs(monkeypatch):
    import diverge_codec._mcp_notifications_c as compiled

    monkeypatch.setattr(compiled, "splice_notification", lambda data: None)
    with pytest.raises(AssertionError, match="differ"):
        scanner_check.check(b'{"method":"m","jsonrpc":"2.0"}')


_SPACES = st.sampled_from([b"", b"", b" ", b"\t", b"\n", b"\r\n  "])


def _key(name: str, escape: bool) -> bytes:
    if escape and name:
        return b'"\\u%04x' % ord(name[0]) + json.dumps(name[1:], ensure_ascii=False).encode()[1:]
    return json.dumps(name, ensure_ascii=False).encode()


@st.composite
def sdk_messages(draw):
    """A notification as any SDK might write it: the envelope anywhere, once or more, any JSON whitespace."""
    members = [("method", draw(st.text(max_size=30)))]
    if draw(st.booleans()):
        params = draw(st.none() | st.dictionaries(names, json_values, max_size=4))
        if params is not None and draw(st.booleans()):
            params["_meta"] = draw(st.none() | st.dictionaries(names, json_values, max_size=2))
        members.append(("params", params))
    members += [(name, value) for name, value in draw(st.lists(st.tuples(names, json_values), max_size=2))
                if name not in ("id", "method", "params")]
    for _ in range(draw(st.integers(0, 3))):
        members.insert(draw(st.integers(0, len(members))), ("jsonrpc", draw(st.sampled_from(["2.0", 2, None]))))
    space = lambda: draw(_SPACES)  # noqa: E731
    parts = [
        space() + _key(name, draw(st.booleans())) + space() + b":" + space()
        + json.dumps(value, ensure_ascii=draw(st.booleans())).encode() + space()
        for name, value in members
    ]
    return space() + b"{" + b",".join(parts) + b"}" + space()


@given(sdk_messages())
def test_every_sdk_shape_is_spliced_to_the_notification(message):
    scanner_check.check(message)
    assert scanner_check.reference(message)[0] in ("relay", "refused")


_FRAGMENTS = st.sampled_from([
    b'{"jsonrpc":"2.0"', b'"method":"n/x"', b'"params":', b'{"_meta":', b'"id"', b'"\\u0069d"', b"\\ud83d", b"\\ude00",
    b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b" ", b"\n", b"1e400", b"-0.5e-3", b"null", b"\xff", b"\xed\xa0\x80",
    b"\xf0\x9f\x98\x80", b'"jsonrpc"', b"true",
])


@given(st.lists(_FRAGMENTS, max_size=16).map(b"".join) | st.binary(max_size=64))
def test_any_line_is_held_to_orjson(message):
    scanner_check.check(message)


def test_the_stdlib_json_path_splices_and_refuses_alike():
    """Both cores with DIVERGE_CODEC_STDLIB_JSON=1, in a child: the same payloads, Nones and refusals."""
    script = (
        "import sys, json\n"
        "from diverge_codec import _json, _mcp_notifications_py as py\n"
        "mods = [py]\n"
        "try:\n"
        "    from diverge_codec import _mcp_notifications_c\n"
        "    mods.append(_mcp_notifications_c)\n"
        "except ImportError:\n"
        "    pass\n"
        "def outcome(mod, data):\n"
        "    try:\n"
        "        payload = mod.splice_notification(data)\n"
        "    except mod.NotificationParseError as error:\n"
        "        return ['refused', str(error) if 'must be' in str(error) else '']\n"
        "    return ['none'] if payload is None else ['payload', payload.hex()]\n"
        "print(json.dumps([_json.BACKEND, [[outcome(m, bytes.fromhex(d)) for m in mods] for d in json.load(sys.stdin)]]))\n"
    )
    lines = [seed.read_bytes() for seed in CORPUS]
    run = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps([line.hex() for line in lines]),
        env={**os.environ, "DIVERGE_CODEC_STDLIB_JSON": "1"}, capture_output=True, text=True, check=True,
    )
    backend, rows = json.loads(run.stdout)
    assert backend == "json"
    from diverge_codec import _mcp_notifications_py as pure

    for line, row in zip(lines, rows):
        try:
            payload = pure.splice_notification(line)
            expected = ["none"] if payload is None else ["payload", payload.hex()]
        except pure.NotificationParseError as error:
            expected = ["refused", str(error) if "must be" in str(error) else ""]
        assert row == [expected] * len(row), line[:60]


_ROLE_NAMES = ("id", "method", "params", "jsonrpc", "_meta")


def _one_byte_off(name: str) -> list[str]:
    """The name with each byte in turn changed (to a neighbour, and to a letter of another role name)."""
    return [name[:at] + other + name[at + 1:] for at in range(len(name)) for other in {chr(ord(name[at]) ^ 1), "m", "_"}
            if other != name[at]]


@pytest.mark.parametrize("name", [off for name in _ROLE_NAMES for off in _one_byte_off(name)]
                         + ["i", "ids", "metho", "methods", "param", "jsonrp", "jsonrpcs", "_met", "_metas"])
def test_a_key_one_byte_off_a_role_s_name_has_no_role(name):
    """The scan tells its role names apart by two loads from each end: every byte counts, and the length."""
    key = json.dumps(name).encode()
    outcomes = []
    for message in (b'{"method":"m",' + key + b':1}', b'{"method":"m","params":{' + key + b':7}}',
                    b'{' + key + b':"m","params":{"_meta":1},"jsonrpc":"2.0"}', b'{"method":"m",' + key + b':"2.0"}'):
        scanner_check.check(message)
        outcomes.append(scanner_check.reference(message)[0])
    # a plain member each time: kept (no id, no envelope), and no method where it stands for one
    assert outcomes == ["relay", "relay", "refused", "relay"]


@pytest.mark.parametrize("digits", [*range(1, 20), *range(295, 312)])
def test_integers_of_every_width_read_inline_or_not_are_held_to_orjson(digits):
    """Integers without a fraction or exponent are read inline up to 300 bytes, past that by the full reader."""
    for number in (b"9" * digits, b"-" + b"9" * digits, b"1" + b"0" * (digits - 1), b"0" * digits, b"-0" * (digits == 1),
                   b"9" * digits + b".5", b"9" * digits + b"e-400", b"9" * digits + b"E+1", b"9" * digits + b"."):
        for message in (b'{"method":"m","params":{"n":' + number + b'}}', b'{"method":"m","params":[' + number + b"]}",
                        b'{"method":"m","params":{"n":[' + number + b"," + number + b"]}}"):
            scanner_check.check(message)


ENVELOPE_FIRST = b'{"jsonrpc":"2.0",'
"""How mcp 2.x, fastmcp and the TypeScript SDK open a message: the relay's commonest first member."""


@pytest.mark.parametrize("message, payload", [
    (b'{"jsonrpc":"2.0","method":"m"}', b'{"method":"m"}'),
    (b' \t{"jsonrpc":"2.0","method":"m","params":{}}\r', b'{"method":"m","params":{}}'),
    (b'{"jsonrpc":"2.0", \n"method":"m"}', b'{"method":"m"}'),
    (b'{"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}', b'{"method":"m"}'),
    (b'{"jsonrpc":"2.0","method":"m","jsonrpc":"2.0"}', b'{"method":"m"}'),
    (b'{"jsonrpc":"2.0","a":1,"jsonrpc":"2.0","method":"m","b":{"jsonrpc":"2.0"}}',
     b'{"a":1,"method":"m","b":{"jsonrpc":"2.0"}}'),
    (b'{"jsonrpc":"2.0","params":{"jsonrpc":"2.0",'
     b'"_meta":null},"method":"m"}', b'{"params":{"jsonrpc":"2.0","_meta":null},"method":"m"}'),
])
def test_a_notification_opening_with_the_envelope_is_spliced_byte_for_byte(mn, message, payload):
    """The envelope first, alone or in a run, before or among other members: cut to the byte, by the framer too."""
    scanner_check.check(message)
    assert relay.relay_frame(message, mn) == b"\x00" + payload
    record = (len(payload) + 1).to_bytes(4, "big") + b"\x00" + payload
    line = message.replace(b"\n", b" ")  # one line for the framer, which reads the same scan
    assert mn.ChunkFramer(1 << 16, 1 << 16).feed(line + b"\n") == (record, 1, len(payload) + 1, len(payload) + 1, [])


@pytest.mark.parametrize("message", [
    ENVELOPE_FIRST, ENVELOPE_FIRST[:-1], ENVELOPE_FIRST + b"}", ENVELOPE_FIRST + b" ", ENVELOPE_FIRST + b",",
    ENVELOPE_FIRST + b'"method"', ENVELOPE_FIRST + b'"method":"m"', ENVELOPE_FIRST + b'"method":"m"}x',
    ENVELOPE_FIRST + b'"method":"m"}}', ENVELOPE_FIRST + b'"id":1,"result":{}}', ENVELOPE_FIRST + b'"method":"m","id":null}',
    ENVELOPE_FIRST + b'"method":1}', ENVELOPE_FIRST + b'"method":"m","params":[]}', ENVELOPE_FIRST + b'"method":"\xff"}',
    ENVELOPE_FIRST + b'"method":"', ENVELOPE_FIRST + b'"method":"m', ENVELOPE_FIRST + b'"method":""}',
    ENVELOPE_FIRST + b'"method":"m","method":7}', ENVELOPE_FIRST + b'"method" :"m"}', ENVELOPE_FIRST + b'"method":"m\n"}',
    ENVELOPE_FIRST + b'"method":"\\u006d","params":{"_meta":1}}', ENVELOPE_FIRST + b'"method":"m","params":{"_meta":1}}',
    ENVELOPE_FIRST + b'"method":"m","id":7}', ENVELOPE_FIRST + b'"methods":"m"}', ENVELOPE_FIRST + b'"method":"m"',
    b'{"jsonrpc":"2.0" ,"method":"m"}', b'{"jsonrpc":"2.1","method":"m"}', b'[{"jsonrpc":"2.0","method":"m"}]',
    b'{"jsonrpc":"2.0","method":"m"}' + b" " * 600, ENVELOPE_FIRST + b'"method":"m","params":{"a":"' + b"x" * 600 + b'"}}',
])
def test_what_follows_the_envelope_first_is_read_as_anywhere_else(message):
    """Refusals, answers, other JSON and the window's long documents after the envelope: each held to orjson."""
    scanner_check.check(message)


@given(st.lists(_FRAGMENTS, max_size=14).map(lambda parts: ENVELOPE_FIRST + b"".join(parts)))
def test_any_line_opening_with_the_envelope_is_held_to_orjson(message):
    scanner_check.check(message)


@pytest.mark.parametrize("request_line", [
    ENVELOPE_FIRST + b'"method":"ping","id":1}', ENVELOPE_FIRST + b'"id":"a","method":"roots/list"}',
    ENVELOPE_FIRST + b'"method":"sampling/createMessage","params":{},"id":null}',
])
def test_a_request_opening_with_the_envelope_comes_back_to_be_answered(mn, request_line):
    """The framer tells a request from an answer by the method the scan found, with the envelope first."""
    framer = mn.ChunkFramer(1 << 16, 1 << 16, awaiting={})
    answer = ENVELOPE_FIRST + b'"id":1,"result":{}}'
    assert framer.feed(request_line + b"\n" + answer + b"\n") == (b"", 0, 0, 0, [request_line])
    assert framer.ignored == 1
