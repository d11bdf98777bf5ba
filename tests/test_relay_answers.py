"""The lines that are no notification: the framer hands back the server's requests and the answers its
``awaiting`` holds and counts the rest ``ignored``; ``request_head`` reads a request's id and method.
The compiled core does both from its scan, without a parse; the pure core parses (``framer_wanted``,
``request_head``), which is the reference: every line, the same lines back, the same counts, the same
values. The relay's session then does exactly what it did when it parsed every line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load
from diverge_codec.relay import session as relay_session
from diverge_codec.relay.session import RelaySession

AWAITING = {0, 1, 2, -1, 9223372036854775807, 18446744073709551615, -9223372036854775808}

KEYS = [b'"id"', b'"method"', b'"result"', b'"error"', b'"jsonrpc"', b'"params"', b'"\\u0069d"', b'"m\\u0065thod"',
        b'"ID"', b'"id "']
VALUES = [b"0", b"-0", b"1", b"2", b"7", b"-1", b"-2", b"1.0", b"1e0", b"0E0", b"true", b"false", b"null", b'"1"', b'"ping"',
          b'"p\\u0069ng"', b"{}", b'{"id":1}', b'{"isError":true}', b"[1]", b"[]", b'"2.0"', b"18446744073709551615",
          b"18446744073709551616", b"-9223372036854775808", b"-9223372036854775809", b"12345678901234567890123",
          b'"\\ud800"', b'"\xff"']
SPACE = st.sampled_from([b"", b"", b" ", b"\t", b"\r", b" \n "])
_member = st.tuples(SPACE, st.sampled_from(KEYS), SPACE, st.sampled_from(VALUES), SPACE).map(
    lambda parts: parts[0] + parts[1] + parts[2] + b":" + parts[3] + parts[4])
_object = st.lists(_member, max_size=5).map(lambda members: b"{" + b",".join(members) + b"}")
_other = st.sampled_from([b"[1]", b"7", b'"text"', b"null", b"not json", b'{"id":1', b"{}", b"", b"  ", b'{"id":1}x',
                          b'[{"id":1}]', b'{"method":"ping"}', b'{"method":1}'])
LINES = _object | _other | st.binary(max_size=24).filter(lambda line: b"\n" not in line)


def _framers(awaiting):
    return [load("mcp_notifications", core).ChunkFramer(1 << 16, 1 << 16, awaiting=awaiting) for core in ("c", "py")]


def _state(framer):
    return framer.invalid, framer.too_large, framer.ignored


@given(st.lists(LINES, max_size=12))
def test_the_compiled_framer_hands_back_what_the_parse_would(lines):
    compiled, pure = _framers(AWAITING)
    data = b"\n".join(lines) + b"\n"
    assert compiled.feed(data) == pure.feed(data)
    assert _state(compiled) == _state(pure)
    compiled, pure = _framers(AWAITING)
    assert compiled.feed_messages(lines) == pure.feed_messages(lines)
    assert _state(compiled) == _state(pure)


@given(LINES)
def test_the_compiled_request_head_reads_what_the_parse_does(line):
    compiled, pure = (load("mcp_notifications", core).request_head(line) for core in ("c", "py"))
    assert compiled == pure
    if compiled is not None:  # 1, 1.0 and True are equal: the types must be too
        assert [type(value) for value in compiled] == [type(value) for value in pure]


@pytest.mark.parametrize("line", [
    b'{"jsonrpc":"2.0","id":1,"result":{}}', b'{"result":{},"jsonrpc":"2.0","id":2}', b'{"id":-0,"error":{}}',
    b'{"id":7,"id":1}', b'{"\\u0069d":2}', b'{"id":18446744073709551615}', b'{"id":-9223372036854775808}',
    b'{"id":4,"method":"ping"}', b'{"method":null,"id":null}', b'{"m\\u0065thod":"x","id":"a"}', b'{"id":1,"method":1}',
])
def test_requests_and_awaited_answers_come_back(mn, line):
    framer = mn.ChunkFramer(100, 100, awaiting=AWAITING)
    assert framer.feed(line + b"\n") == (b"", 0, 0, 0, [line])
    assert _state(framer) == (0, 0, 0)


@pytest.mark.parametrize("line", [
    b'{"id":3,"result":{}}', b'{"id":1,"id":7}', b'{"id":1.0}', b'{"id":1e0}', b'{"id":true}', b'{"id":"1"}',
    b'{"id":null}', b'{"id":{"id":1}}', b'{"result":{"id":1},"id":5}', b'{"id":18446744073709551616}',
    b'{"id":-9223372036854775809}', b'{"id":-2}', b"[1]", b"7", b'"text"', b"null", b'[{"id":1}]',
])
def test_other_lines_are_counted_ignored_unreturned(mn, line):
    framer = mn.ChunkFramer(100, 100, awaiting=AWAITING)
    assert framer.feed(b" \n" + line + b"\n") == (b"", 0, 0, 0, [])
    assert _state(framer) == (0, 0, 1)  # the blank line is not counted


def test_without_awaiting_every_line_that_is_no_notification_comes_back(mn):
    framer = mn.ChunkFramer(100, 100)
    assert framer.awaiting is None
    assert framer.feed(b'{"id":3}\n[1]\n{"id":1}\n')[4] == [b'{"id":3}', b"[1]", b'{"id":1}']
    assert framer.ignored == 0


def test_awaiting_is_read_at_each_line(mn):
    """The container the caller keeps changing: what it holds when the line is read is what counts."""
    awaiting: dict[int, str] = {}
    framer = mn.ChunkFramer(100, 100, awaiting=awaiting)
    assert framer.awaiting is awaiting
    assert framer.feed(b'{"id":1}\n')[4] == []
    awaiting[1] = "tools/call"
    assert framer.feed(b'{"id":1}\n')[4] == [b'{"id":1}']
    assert framer.ignored == 1


@pytest.mark.parametrize("awaiting", [1, object(), iter([1])])
def test_awaiting_must_be_a_container(mn, awaiting):
    with pytest.raises(TypeError, match=r"^awaiting must be a container of request ids \(a dict or set\) or None, not "):
        mn.ChunkFramer(10, 10, awaiting=awaiting)


def test_a_key_s_comparison_may_run_python_code_and_raise(mn):
    """``in`` may call a key's ``__eq__``: the framer stays usable, a call inside it is refused."""
    framer = None

    class Key:
        def __hash__(self):
            return hash(5)

        def __eq__(self, other):
            with pytest.raises(RuntimeError, match="^ChunkFramer is in use"):
                framer.feed(b"{}\n")
            raise LookupError("from __eq__")

    framer = mn.ChunkFramer(100, 100, awaiting={Key()})
    with pytest.raises(LookupError, match="^from __eq__$"):
        framer.feed(b'{"id":5}\n')
    assert framer.feed(b'{"id":5,"method":"ping"}\n')[4] == [b'{"id":5,"method":"ping"}']


def test_request_head_pins(mn):
    head = mn.request_head
    assert head(b'{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}') == ("a", "ping")
    assert head(b'{"method":"x","params":{"id":1},"id":-0,"method":"p\\u0069ng"}') == (0, "ping")
    assert head(b'{"method":null,"id":1.5}') == (1.5, None)
    assert head(b'{"id":1,"result":{}}') is head(b'{"method":"ping"}') is head(b"[1]") is head(b"{") is None


MESSAGES = [  # answers, requests and noise a server may write; ids 0 to 2 are the ones a session awaits
    b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}', b'{"jsonrpc":"2.0","id":1,"result":{}}',
    b'{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"no"}}', b'{"id":-0,"result":{}}', b'{"id":2.0,"result":{}}',
    b'{"id":true,"result":{}}', b'{"id":"1","result":{}}', b'{"id":7,"result":{"id":1}}', b'{"id":1,"id":9}',
    b'{"id":9,"id":1}', b'{"\\u0069d":1,"result":{}}', b'{"id":1 ,"result":{"isError":true}}', b"[1]", b"7",
    b'{"id":4,"method":"ping"}', b'{"jsonrpc":"2.0","id":"x","method":"roots/list","params":{}}',
    b'{"method":"ping"}', b'{"m\\u0065thod":"ping","id":5}', b'{"id":8,"result":"\\u00e9"}', b"not json",
    b'{"id":1,"result":', b'{"result":{},"jsonrpc":"2.0","id":12}', b"{}", b'{"method":"p\\u0069ng","id":[1]}',
]


def _run(core, lines, reading=True):
    """A session with two calls pending after the handshake, fed the lines one read each, on one core's
    framer and request_head."""
    module = load("mcp_notifications", core)
    patch = pytest.MonkeyPatch()
    patch.setattr(relay_session, "request_head", module.request_head)
    patch.setattr(relay_session, "_framer", lambda frame, max_line, limit, awaiting:
                  module.ChunkFramer(max_line, limit, awaiting=awaiting))
    try:
        session = RelaySession([("a", {}), ("b", {})], clock=lambda: 0.0)
        session.server_reading = reading
        written = [session.start()]
        written += [session.receive(line + b"\n") for line in lines]
        session.end_of_output()
    finally:
        patch.undo()
    return written, session.finish_report().as_dict(), dict(session.pending), session.phase


@given(st.lists(st.sampled_from(MESSAGES) | LINES, max_size=8), st.booleans())
def test_the_session_does_the_same_on_both_cores(lines, reading):
    assert _run("c", lines, reading) == _run("py", lines, reading)


def test_the_session_answers_requests_and_counts_the_rest():
    written, report, pending, phase = _run("c", MESSAGES)
    assert written[1].startswith(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    assert written[2:] == (
        [b""] * 13 + [b'{"jsonrpc":"2.0","id":4,"result":{}}\n',
                      b'{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"Method not found"}}\n',
                      b"", b'{"jsonrpc":"2.0","id":5,"result":{}}\n'] + [b""] * 5
        + [b'{"jsonrpc":"2.0","id":[1],"result":{}}\n'])
    assert report["calls"] == {"sent": 2, "answered": 2, "failed": 1, "timed_out": 0}
    assert (report["requests_answered"], report["ignored"], report["dropped"]["invalid"]) == (4, 13, 3)
    assert pending == {} and phase is relay_session.Phase.READY


@pytest.mark.parametrize("kind", [bytearray, memoryview])
def test_request_head_reads_any_bytes_like_line_as_it_reads_its_bytes(mn, kind):
    """bytes are what the relay passes (the compiled scan's); any other kind goes to the parse (both cores'
    parsing twin): each line is read alike both ways."""
    for line, head in [(b'{"id":3,"method":"ping"}', (3, "ping")), (b'{"id":3}', None),
                       (b'{"method":"a","id":[1],"method":"b", "x":{"id":2}}', ([1], "b")), (b'{"method":"n"}', None)]:
        assert mn.request_head(line) == head
        assert mn.request_head(kind(line)) == head


@pytest.mark.parametrize("line", ['{"id":3,"method":"ping"}', None, 3])
def test_request_head_refuses_what_is_not_bytes_like(mn, line):
    with pytest.raises(TypeError, match=rf"^request_head takes bytes, bytearray or memoryview, not {type(line).__name__}$"):
        mn.request_head(line)
