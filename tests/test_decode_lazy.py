"""decode_lazy: the method and the params' bytes as sent, accepting and refusing exactly what decode does."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from contextlib import contextmanager
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load, require_gc_hooks
from diverge_codec import _json, mcp_notifications
from strategies import json_values, names, notifications_payloads
from test_scanner import _FRAGMENTS, _SPACES, _key  # a key spelled plainly or with an escape, JSON whitespace
from test_scanner import scanner_check  # fuzz/scanner_check.py, on the path test_scanner sets

SCANNER_CORPUS = sorted((Path(__file__).resolve().parent.parent / "fuzz" / "corpus_scanner").glob("*"))


def _dumps(value):
    """Compact JSON bytes with the standard library, so the file runs where orjson is not installed."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


PREFIX = "mcp notifications response frame did not parse: "


def outcome(call, payload):
    try:
        return call(payload)
    except Exception as error:  # noqa: BLE001 - the class and message are what is compared
        return type(error), str(error)


@contextmanager
def deep_compare():
    """Room to compare the 1024-deep documents orjson reads."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def check(payload) -> None:
    """check_one on the payload, and on its body spaced out into the compiled scan's windowed read."""
    check_one(payload)
    data = bytes(payload)
    if data[:1] == b"\x00" and len(data) - 1 < scanner_check.WINDOW_FROM:  # as scanner_check.check spaces a body
        for body in scanner_check.windowed(data[1:]):
            check_one(b"\x00" + body)


def check_one(payload) -> None:
    """Both cores: decode_lazy agrees with decode on the verdict, and a lazy notification with its frame."""
    lazies = []
    for core in (load("mcp_notifications", "c"), load("mcp_notifications", "py")):
        lazy, frame = outcome(core.decode_lazy, payload), outcome(core.decode, payload)
        if type(frame) is tuple or type(frame) is core.Error:
            assert lazy == frame
            continue
        assert type(lazy) is core.LazyNotification
        with deep_compare():
            assert lazy.materialize() == frame
        assert lazy.method == frame.method
        params = lazy.params_json
        if "params" in frame.notification:
            with deep_compare():
                assert _json.loads(params) == frame.notification["params"]  # the backend's reading (-2**63 - 1 is a float)
            assert params in bytes(payload)
        else:
            assert params is None
        lazies.append((lazy.method, params))
    if len(lazies) == 2:
        assert lazies[0] == lazies[1]


@pytest.mark.parametrize("body, method, params_json", [
    (b'{"method":"n/x"}', "n/x", None),
    (b'{"method":"n/x","params":null}', "n/x", b"null"),
    (b'{"method":"n/x","params":{}}', "n/x", b"{}"),
    (b'{"method":"n/x","params":{"a":[1,{"b":"}"}]}}', "n/x", b'{"a":[1,{"b":"}"}]}'),
    (b' {\t"params" :\n{"a":1}\r, "method" : "m" } ', "m", b'{"a":1}'),
    (b'{"params":{"a":1},"method":"m","params":null}', "m", b"null"),  # the last wins, as orjson reads it
    (b'{"params":null,"method":"m","params":{"z":2}}', "m", b'{"z":2}'),
    (b'{"method":"a","method":"b"}', "b", None),
    (b'{"method":7,"method":"b"}', "b", None),
    (b'{"method":"m","id":7,"jsonrpc":"2.0"}', "m", None),  # an id is a member like any
    (b'{"\\u006dethod":"m","p\\u0061rams":{"k":"v"}}', "m", b'{"k":"v"}'),
    (b'{"method":"a\\u00e9\\ud83d\\ude00\\n","params":{}}', "a\u00e9\U0001f600\n", b"{}"),
    ('{"method":"\u00e9t\u00e9/\U0001f600"}'.encode(), "\u00e9t\u00e9/\U0001f600", None),
    (b'{"method":"m","params":{"_meta":null,"params":[1]}}', "m", b'{"_meta":null,"params":[1]}'),
    (b'{"method":"m","x":{"params":1,"method":2}}', "m", None),
    (b'{"method":"m","params":{"_meta":1,"_meta":{}}}', "m", b'{"_meta":1,"_meta":{}}'),
])
def test_a_notification_gives_its_method_and_params_as_sent(mn, body, method, params_json):
    lazy = mn.decode_lazy(b"\x00" + body)
    assert type(lazy) is mn.LazyNotification
    assert lazy.method == method
    assert lazy.params_json == params_json
    assert lazy.materialize() == mn.decode(b"\x00" + body)
    check(b"\x00" + body)


@pytest.mark.parametrize("payload, error, message", [
    (b"", "EmptyFrameError", "mcp notifications response frame is empty"),
    (b"\x02{}", "UnknownTagError", None),
    (b"\x00", "NotificationParseError", None),
    (b"\x00  ", "NotificationParseError", None),
    (b"\x00[]", "NotificationParseError", PREFIX + "expected a JSON object"),
    (b"\x00{}", "NotificationParseError", PREFIX + "method must be a string"),
    (b'\x00{"method":null}', "NotificationParseError", PREFIX + "method must be a string"),
    (b'\x00{"method":"m","method":1}', "NotificationParseError", PREFIX + "method must be a string"),
    (b'\x00{"method":"m","params":[]}', "NotificationParseError", PREFIX + "params must be an object or null"),
    (b'\x00{"method":"m","params":"x"}', "NotificationParseError", PREFIX + "params must be an object or null"),
    (b'\x00{"method":"m","params":{"_meta":1}}', "NotificationParseError", None),
    (b'\x00{"method":"m","params":{}', "NotificationParseError", None),
    (b'\x00{"method":"m\xff"}', "NotificationParseError", None),
    (b'\x00{"method":"\\ud800"}', "NotificationParseError", None),
    (b'\x00{"method":"m","params":{"n":1e400}}', "NotificationParseError", None),
    (b'\x00{"method":"m"} x', "NotificationParseError", None),
    (b"\x01{}", "ErrorParseError", None),
    (b"\x01[", "ErrorParseError", None),
])
def test_a_refusal_is_decodes_refusal(mn, payload, error, message):
    with pytest.raises(getattr(mn, error)) as lazy_refusal:
        mn.decode_lazy(payload)
    with pytest.raises(getattr(mn, error)) as refusal:
        mn.decode(payload)
    assert str(lazy_refusal.value) == str(refusal.value)
    assert lazy_refusal.value.args == refusal.value.args
    if message is not None:
        assert str(lazy_refusal.value) == message
    check(payload)


def test_an_error_frame_is_decodes_frame(mn):
    payload = b'\x01{"code":-32603,"message":"gone","data":{"k":1}}'
    assert mn.decode_lazy(payload) == mn.decode(payload)
    assert type(mn.decode_lazy(payload)) is mn.Error


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview, lambda data: memoryview(b"  " + data)[2:]])
def test_every_bytes_like_kind_reads_alike(mn, kind):
    payload = b'\x00{"method":"n/x","params":{"a":[1,2]}}'
    lazy = mn.decode_lazy(kind(payload))
    assert (lazy.method, lazy.params_json) == ("n/x", b'{"a":[1,2]}')
    assert lazy.materialize() == mn.decode(payload)
    assert lazy == mn.decode_lazy(payload)


def test_what_is_not_bytes_like_is_refused_as_decode_refuses_it(mn):
    for value in ('\x00{"method":"m"}', 7, None):
        lazy, frame = outcome(mn.decode_lazy, value), outcome(mn.decode, value)
        assert lazy == frame and lazy[0] is TypeError


def test_a_bytearray_resized_by_a_gc_callback_changes_nothing_read(mn):
    """The payload is read once: a callback that moves and refills the bytearray on every collection is not seen."""
    payload = bytearray(b'\x00{"method":"n/x","params":{"p":[1,2,3]}}')
    original = bytes(payload)

    def churn(phase, info):
        if phase == "start":
            try:
                payload.extend(b"x" * 4096)
                payload[:] = b"\x00" * 9 + payload[9:4000]  # moved and different
                payload[:] = original
            except BufferError:  # a view of it is held: it cannot move at all
                pass

    require_gc_hooks()
    threshold = gc.get_threshold()
    gc.callbacks.append(churn)
    gc.set_threshold(1, 1, 1)
    try:
        for _ in range(200):
            lazy = mn.decode_lazy(payload)
            assert (lazy.method, lazy.params_json) == ("n/x", b'{"p":[1,2,3]}')
            assert lazy.materialize().notification == {"method": "n/x", "params": {"p": [1, 2, 3]}}
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(churn)


def test_a_lazy_notification_is_immutable_and_made_by_decode_lazy_only(mn):
    lazy = mn.decode_lazy(b'\x00{"method":"m","params":{}}')
    for name in ("method", "params_json", "other"):
        with pytest.raises(AttributeError):
            setattr(lazy, name, "x")
    with pytest.raises(TypeError, match="LazyNotification is made by decode_lazy"):
        mn.LazyNotification("m", b"{}")
    with pytest.raises(TypeError):
        hash(lazy)


def test_its_repr_shows_no_value(mn):
    lazy = mn.decode_lazy(b'\x00{"method":"n/x","params":{"secret":"hunter2"}}')
    assert repr(lazy) == "LazyNotification(method='n/x', params_json=<20 bytes>)"
    assert repr(mn.decode_lazy(b'\x00{"method":"n/x"}')) == "LazyNotification(method='n/x', params_json=None)"


def test_it_pickles_to_an_equal_one(mn):
    lazy = mn.decode_lazy(b'\x00{"method":"m","params":null}')
    again = pickle.loads(pickle.dumps(lazy))
    assert again == lazy and again.params_json == b"null"
    assert lazy != mn.decode_lazy(b'\x00{"method":"m"}')
    assert lazy.__eq__(mn.decode(b'\x00{"method":"m"}')) is NotImplemented


def test_the_public_module_has_it():
    lazy = mcp_notifications.decode_lazy(b'\x00{"method":"m"}')
    assert type(lazy) is mcp_notifications.LazyNotification


def test_a_large_notification(mn):
    params = {"items": [{"k": i, "s": "x" * 50} for i in range(1000)]}
    payload = b"\x00" + _dumps({"method": "n/big", "params": params, "jsonrpc": "2.0"})
    lazy = mn.decode_lazy(payload)
    assert json.loads(lazy.params_json) == params
    check(payload)


@pytest.mark.parametrize("seed", SCANNER_CORPUS, ids=lambda path: path.name)
def test_every_scanner_seed_as_a_body(seed):
    check(b"\x00" + seed.read_bytes())


@given(notifications_payloads)
def test_any_payload(payload):
    check(payload)


@st.composite
def bodies(draw):
    """A notification body as a server might write it: members in any order, repeated, escaped, spaced."""
    values = st.text(max_size=12) | json_values | st.none() | st.dictionaries(
        st.sampled_from(["_meta", "a", "params"]) | names, st.none() | json_values, max_size=3)
    keys = st.sampled_from(["method", "params", "id", "jsonrpc", "_meta"]) | names
    members = draw(st.lists(st.tuples(keys, values), max_size=5))
    space = lambda: draw(_SPACES)  # noqa: E731
    parts = [
        space() + _key(name, draw(st.booleans())) + space() + b":" + space()
        + json.dumps(value, ensure_ascii=draw(st.booleans())).encode() + space()
        for name, value in members
    ]
    return space() + b"{" + b",".join(parts) + b"}" + space()


@given(bodies(), st.sampled_from([bytes, bytearray, memoryview]))
def test_any_body_of_any_shape(body, kind):
    check(kind(b"\x00" + body))


@given(st.lists(_FRAGMENTS, max_size=16).map(b"".join) | st.binary(max_size=64))
def test_any_bytes_as_a_body(body):
    check(b"\x00" + body)


_ODD = [b'\\"', b"\\\\", b"\\u00e9", b"\\ud83d\\ude00", b"\x01", b"\x1f", b"\x7f", b"\xc3\xa9", b"\xf0\x9f\x98\x80",
        b"\xff", b"\xc3", b"\xed\xa0\x80", b"\\x", b"\\ud83d"]


@pytest.mark.parametrize("odd", _ODD)
def test_a_byte_that_needs_a_look_is_seen_at_every_offset_of_a_long_string(odd):
    """The scanner reads strings 16 and 8 bytes at once: an odd byte anywhere in the block, and at the end, is seen."""
    import scanner_check

    for at in range(0, 40):
        text = b"a" * at + odd + b"b" * (40 - at)
        for body in (b'{"method":"' + text + b'","params":{"k":"' + text + b'"}}',
                     b'{"method":"m","params":{"' + text + b'":1}}', b'{"method":"m","p":"' + b"c" * at + b'"}'):
            check(b"\x00" + body)
            scanner_check.check(body)


@pytest.mark.parametrize("odd", _ODD)
def test_a_byte_that_needs_a_look_is_seen_through_the_window_at_every_alignment(odd):
    """A long document's arrays of strings are read through a window of 64-byte blocks: an odd
    byte before and after every block edge, in strings short and long (past three blocks),
    after a gap of other values, at every alignment of the document, is seen."""
    for lead in range(0, 64, 3):
        for at in (0, 1, 15, 16, 17, 62, 63, 64, 65, 127, 128, 129, 191, 192, 193, 250):
            text = b'"' + b"a" * at + odd + b"b" * (260 - at) + b'"'
            short = b'"' + b"c" * (at % 40) + odd + b'"'
            items = [b'"x"', b'"' + b"d" * 20 + b'"', text, short, text, b"1", b"[2]", b"{}", b'"' + b"e" * 100 + b'"', short]
            body = (b" " * lead + b'{"method":"m","params":{"lines":[' + b",".join(items + items[::-1]) + b"]}}"
                    + b" " * 300)
            assert len(body) >= scanner_check.WINDOW_FROM  # the windowed build reads it
            check_one(b"\x00" + body)
            scanner_check._check(body)


def test_a_method_read_again_is_the_same_text_whatever_came_before(mn):
    """The compiled core hands the last ASCII method again when it repeats: only when it is the same text."""
    methods = ["n/x", "n/x", "n/xy", "n/x", "", "n/y", "\u00e9", "\u00e9", "n/y", "N/Y", "n/y\u00e9", "n/y"]
    for method in methods:
        lazy = mn.decode_lazy(b"\x00" + _dumps({"method": method}))
        assert lazy.method == method and type(lazy.method) is str


# The pure twin reads the usual notification in two pieces (``_split``): plain members, the params
# object, plain members. What it accepts there must be what decode accepts, with the same params.

_PLAIN = st.sampled_from([b'"2.0"', b"7", b"-0.5e-3", b"true", b"null", b'"}"', b'"a\\"}"', b'"\\u00e9"', b'"x\\n"'])
_BROKEN_PLAIN = st.sampled_from([b"1e400", b'"\\ud83d"', b'"\xff"', b"[]", b"{}", b"01", b'"\\x"', b'"\t"'])
_PARAMS = st.sampled_from([b"{}", b'{"a":1}', b'{"_meta":null}', b'{"_meta":{}}', b'{"a":"}"}', b'{"a":[1,{"b":"}"}]}'])
_BROKEN_PARAMS = st.sampled_from([b'{"_meta":1}', b'{"a":1},"x":{', b"null", b"[]", b'{"a":1}}', b'{"a":"\\ud83d"}',
                                  b'{"a":1e400}', b'{"a":1', b"{}{}", b'{"\xff":1}', b'{"a":"\\ud83d"},"params":{}'])


@st.composite
def split_bodies(draw):
    """Bodies shaped as _split reads them, with a member before or after the params of any kind, or a piece broken."""
    keys = st.sampled_from(["method", "params", "jsonrpc", "id", "x"])
    space = lambda: draw(_SPACES)  # noqa: E731

    def members(count):
        return [space() + _key(draw(keys), draw(st.booleans())) + space() + b":" + space()
                + draw(_BROKEN_PLAIN if draw(st.integers(0, 7)) == 0 else _PLAIN) + space() for _ in range(count)]
    head = members(draw(st.integers(0, 3)))
    if draw(st.integers(0, 3)):
        head.insert(0, b'"method":"n/x"')
    tail = members(draw(st.integers(0, 2)))
    kind = draw(st.integers(0, 5))
    params = (draw(_BROKEN_PARAMS) if kind == 0 else draw(_PARAMS) if kind < 4
              else json.dumps(draw(json_values.filter(lambda v: type(v) is dict))).encode())
    body = space() + b"{" + b",".join(head + [space() + b'"params"' + space() + b":" + space() + params + space()] + tail) + b"}" + space()
    return body


@given(split_bodies())
def test_a_body_read_in_two_pieces_is_read_as_decode_reads_it(body):
    check(b"\x00" + body)


@pytest.mark.parametrize("levels", [1020, 1021, 1022, 1023])
def test_the_params_nested_to_the_limit_are_read_as_decode_reads_them(levels):
    """The root and the params object are two levels: 1022 more are read, 1023 are refused, by both pieces as by decode."""
    body = b'{"method":"m","params":{"a":' + b"[" * levels + b"]" * levels + b'},"jsonrpc":"2.0"}'
    check_one(b"\x00" + body)


@pytest.mark.parametrize("body", [
    b'{"jsonrpc":"2.0","method":"n/x","params":{"a":[1,2,{"b":"}"}]}}',
    b' {\n "method" : "n/x" , "params" : {"a":"\\"}"} ,"jsonrpc":"2.0", "id":7}\r\n',
    b'{"params":1,"method":"n/x","params":{"k":null}}',
])
def test_the_pure_twin_reads_the_usual_shapes_in_two_pieces(body):
    """The pieces' path is taken (else the pure core is 12-50x orjson.loads at 64 KB), and gives decode's reading."""
    py = load("mcp_notifications", "py")
    payload = b"\x00" + body
    split = py._split(payload)
    assert type(split) is py.LazyNotification
    frame = py.decode(payload)
    assert split.method == frame.method and json.loads(split.params_json) == frame.notification["params"]
    assert (split.method, split.params_json) == (py.decode_lazy(payload).method, py.decode_lazy(payload).params_json)


def test_the_stdlib_json_path_reads_the_pieces_alike():
    """Both cores with DIVERGE_CODEC_STDLIB_JSON=1, in a child: the same methods, params and refusals' classes."""
    from hypothesis import HealthCheck, settings

    found = []

    @settings(max_examples=300, database=None, suppress_health_check=list(HealthCheck))
    @given(split_bodies())
    def collect(body):
        found.append(b"\x00" + body)
    collect()
    found += [b"\x00" + b'{"method":"m","params":{"a":' + b"[" * n + b"]" * n + b"}}" for n in (1022, 1023)]
    script = (
        "import importlib, json, sys\n"
        "from diverge_codec import _json\n"
        "def module(suffix):\n"
        "    try:\n"
        "        return importlib.import_module('diverge_codec._mcp_notifications_' + suffix)\n"
        "    except ImportError:  # a pure install: the compiled core is not there\n"
        "        return None\n"
        "mods = [mod for mod in (module('py'), module('c')) if mod is not None]\n"
        "def outcome(mod, data):\n"
        "    try:\n"
        "        lazy = mod.decode_lazy(data)\n"
        "    except Exception as error:\n"
        "        return [type(error).__name__, str(error) if 'must be' in str(error) else '']\n"
        "    return ['lazy', lazy.method, None if lazy.params_json is None else lazy.params_json.hex()]\n"
        "print(json.dumps([_json.BACKEND, [[outcome(m, bytes.fromhex(d)) for m in mods] for d in json.load(sys.stdin)]]))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], input=json.dumps([payload.hex() for payload in found]),
                         env={**os.environ, "DIVERGE_CODEC_STDLIB_JSON": "1"}, capture_output=True, text=True, check=True)
    backend, rows = json.loads(run.stdout)
    assert backend == "json"
    py = load("mcp_notifications", "py")
    for payload, row in zip(found, rows):
        try:
            lazy = py.decode_lazy(payload)
            expected = ["lazy", lazy.method, None if lazy.params_json is None else lazy.params_json.hex()]
        except Exception as error:  # noqa: BLE001 - the class and message are what is compared
            expected = [type(error).__name__, str(error) if "must be" in str(error) else ""]
        assert row == [expected] * len(row), payload[:80]


SERIES_READ = [
    b"[[1,2],[3,4],[5,6]]", b"[[1],[2]]", b"[[1,2,3,4,5,6,7,8],[9]]", b"[[-1,-2.5],[-0,3e2],[0.5,1E-3]]",
    b'[[1,"a"],[2,"b"]]', b"[[1,true],[2,null]]", b"[[1, 2],[3 ,4]]", b"[[1,2] ,[3,4]]", b"[[1,2],[ 3]]",
    b'[[1,[2]],[3,{"a":4}]]', b"[[1,2],[]]", b"[0,[1,2],[3,4],5]", b'["a",[1,2]]',
    b"[" * 1021 + b"0,[1,2]" + b"]" * 1021,  # the pair at depth 1024, the deepest orjson reads
    # siblings read on from a run (dc_number_run): one number, a string, spacing, an exponent, other values
    b"[[1,2],[3],[4,5]]", b'[[1,2],[3,"a"],[4,5]]', b"[[1,2],[3, 4],[5,6]]", b"[[1,2],[3,4e5],[-6,7.25]]",
    b"[[1,2],[3,4],{}]", b"[[1,2,3],[4,5,6],[7,8,9],[0,0,0]]", b"[[[1,2],[3,4]],[[5,6]]]",
]
SERIES_REFUSED = [
    b"[[1,2],[01]]", b"[[1,2],[1,]]", b"[[1,2],[1,2", b"[[1,2],[-]]", b"[[1,2],[1.]]", b"[[1,2],[1,-]]",
    b"[[1,2],[1,2]", b"[[1,2],[1 2]]", b"[[1,2],[1,2]]]", b"[[1,2],[1e400,2]]", b"[[1,2],[2,1e400]]",
    b"[[1,2],[1,2}]", b"[[1,2],[1,02]]",
    b"[" * 1022 + b"0,[1,2]" + b"]" * 1022,  # the pair at depth 1025
    b"[[1,2],[3,4],[05,6]]", b"[[1,2],[3,4],[5,]]", b"[[1,2],[3,4],[-,6]]", b"[[1,2],[3,4],[5,6]",
    b"[[1,2],[3,4]],[5,6]]", b"[[1,2],[3,4],[5,1e400]]", b"[[1,2],[3,4],[5,6}]",
    b"[1,2],[3,4]", b"[1,2],[3]",  # a sibling after an array in an object: no array holds them
]


@pytest.mark.parametrize("series", SERIES_READ + SERIES_REFUSED)
def test_a_series_of_number_arrays_is_read_as_orjson_reads_it(mn, series):
    """A metric series' [t, v] pairs: the compiled scan reads an array of numbers after a comma without opening it
    (issue 44). Spaced out past the window, the scan's verdict is orjson's (scanner_check: a false refusal would
    only slow decode_lazy, which asks the parser then), both cores and both calls agree, and on the verdict pinned."""
    message = b'{"method":"m","params":{"p":' + series + b"}}"
    scanner_check.check(message)
    check(b"\x00" + message)
    for body in (message, *scanner_check.windowed(message)):
        if series in SERIES_READ:
            assert type(mn.decode_lazy(b"\x00" + body)) is mn.LazyNotification
        else:
            with pytest.raises(mn.NotificationParseError):
                mn.decode_lazy(b"\x00" + body)


@pytest.mark.parametrize("message", [b"[[1,2],[3,4]]", b"[[1,2],[3,4]] ", b"[1,2],[3,4]", b"[[1,2],[3,4]],[5,6]"])
def test_a_series_at_the_root_is_read_as_orjson_reads_it(message):
    """The root's array has no array above it: ``[1,2],[3,4]`` is a value and more, never a series."""
    scanner_check.check(message)
