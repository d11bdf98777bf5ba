"""The session's shortcut past the parse: a line that is no request and answers nothing pending is
ignored unparsed. The compiled core's ``_answer_ids`` finds what the reference below finds in any
bytes (the pure core has no shortcut: it parses), and the session does exactly what the parse would
have made it do (replies, report, pending requests)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import re

from conftest import load
from diverge_codec import relay_session
from diverge_codec.relay_session import RelaySession

_ID = re.compile(rb'"id":([0-9]{1,18})')
_SPACED = re.compile(rb'"id"[ \t\n\r]|"id":[ \t\n\r-]')


def reference_ids(line: bytes) -> list[int] | None:
    """None if the line holds "method" or \\u (only \\u spells a key's letters), or an "id" with JSON whitespace
    or a minus after it or its colon; else the integers (18 digits at most) right after each "id":."""
    if b'"method"' in line or b"\\u" in line or _SPACED.search(line):
        return None
    return list(map(int, _ID.findall(line)))

PIECES = [b'"id"', b'"method"', b'"meth', b'od"', b"\\", b"\\u0069", b":", b" ", b"\t", b"\r", b"\n", b"-", b"0",
          b"7", b"12", b"9" * 20, b"1.5", b"{", b"}", b"[", b"]", b",", b'"', b"x", b"null", b'"2.0"', b"\x00"]
_bytes = st.lists(st.sampled_from(PIECES), max_size=16).map(b"".join) | st.binary(max_size=30)


@given(_bytes)
def test_the_compiled_core_finds_the_reference_s_ids_in_any_bytes(line):
    assert load("mcp_notifications", "c")._answer_ids(line) == reference_ids(line)


@pytest.mark.parametrize(("line", "ids"), [
    (b'{"jsonrpc":"2.0","id":3,"result":{}}', [3]),
    (b'{"id":0,"result":{"id":12,"x":"id"}}', [0, 12]),
    (b'{"id" :1}', None),
    (b'{"id":\t1}', None),
    (b'{"id":-0}', None),
    (b'{"id":"7","result":1}', []),
    (b'{"result":{},"id":12345678901234567890}', [123456789012345678]),
    (b'{"id":1,"method":"ping"}', None),
    (b'{"id":1,"result":"\\n"}', [1]),
    (b'{"id":1,"result":"\\\\u"}', None),
    (b'{"\\u0069d":1}', None),
    (b"", []),
])
def test_the_ids_are_the_integers_after_each_id_key(line, ids):
    assert reference_ids(line) == load("mcp_notifications", "c")._answer_ids(line) == ids


MESSAGES = [  # answers, requests and noise a server may write; ids 0 to 2 are the ones a session awaits
    b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}', b'{"jsonrpc":"2.0","id":1,"result":{}}',
    b'{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"no"}}', b'{"id":-0,"result":{}}', b'{"id":2.0,"result":{}}',
    b'{"id":true,"result":{}}', b'{"id":"1","result":{}}', b'{"id":7,"result":{"id":1}}', b'{"id":1,"id":9}',
    b'{"id":9,"id":1}', b'{"\\u0069d":1,"result":{}}', b'{"id":1 ,"result":{"isError":true}}', b"[1]", b"7",
    b'{"id":4,"method":"ping"}', b'{"jsonrpc":"2.0","id":"x","method":"roots/list","params":{}}',
    b'{"method":"ping"}', b'{"m\\u0065thod":"ping","id":5}', b'{"id":8,"result":"\\u00e9"}', b"not json",
    b'{"id":1,"result":', b'{"result":{},"jsonrpc":"2.0","id":12}', b"{}",
]


def _run(lines):
    """A session with two calls pending after the handshake, fed the lines as its framer hands them over."""
    session = RelaySession([("a", {}), ("b", {})], clock=lambda: 0.0)
    session.start()
    replies = [session._framed((b"", 0, 0, 0, [line])) for line in lines]
    return replies, session.report.as_dict(), dict(session.pending), session.phase


@given(st.lists(st.sampled_from(MESSAGES) | _bytes, max_size=8))
@pytest.mark.parametrize("core", ["c", "reference"])
def test_the_shortcut_changes_nothing_the_session_does(monkeypatch, core, lines):
    with monkeypatch.context() as patch:
        patch.setattr(relay_session, "_answer_ids", lambda line: None)  # every line parsed (the pure core)
        expected = _run(lines)
    answer_ids = reference_ids if core == "reference" else load("mcp_notifications", "c")._answer_ids
    with monkeypatch.context() as patch:
        patch.setattr(relay_session, "_answer_ids", answer_ids)
        assert _run(lines) == expected
