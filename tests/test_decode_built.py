"""Issue 35: the compiled decode reads a short notification with the scan and builds its mapping from
it (floats by the correctly rounded conversion, ints of up to 18 digits, plain strings, literals,
objects and arrays to 32 deep); the rest goes to orjson whole. Held to orjson.loads exactly: the
same values of the same types (an int is no float, -0.0 keeps its sign), the same key order,
the last of duplicate keys; and to the pure core, which parses with orjson."""
from __future__ import annotations

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import load
from strategies import json_values, names

orjson = pytest.importorskip("orjson", reason="the reference decode is held to")


def exactly(value):
    """A value as its types and digits: 1 and 1.0, 0.0 and -0.0 differ; keys in order."""
    if type(value) is dict:
        return ("dict", [(key, exactly(item)) for key, item in value.items()])
    if type(value) is list:
        return ("list", [exactly(item) for item in value])
    if type(value) is float:
        return ("float", value.hex())
    return (type(value).__name__, value)


def same_as_orjson(body: bytes) -> None:
    expected = orjson.loads(body)
    for core in ("c", "py"):
        frame = load("mcp_notifications", core).decode(b"\x00" + body)
        assert exactly(dict(frame.notification)) == exactly(expected), core
        assert frame.method == expected["method"]


NUMBERS = [
    "0", "-0", "7", "-7", "123456789012345678", "-123456789012345678", "999999999999999999", "1000000000000000000",
    "9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551615", "18446744073709551616",
    "-9223372036854775809", "1" * 30, "0.0", "-0.0", "0.1", "1.5", "-2.25", "1e0", "1E2", "1e+2", "1e-2", "-0e0", "0e-0",
    "2.2250738585072011e-308", "2.2250738585072014e-308", "4.9e-324", "5e-324", "2.4703282292062327e-324",
    "2.4703282292062328e-324", "1e-400", "-1e-400", "1.7976931348623157e308", "1.7976931348623158e308",
    "0.30000000000000001665334536937734810635447502136230468750", "9007199254740993", "9007199254740993.0",
    "123456789.123456789e-5", "1" + "0" * 36 + ".5", "0." + "0" * 40 + "1", "3.141592653589793238462643383279",
]


@pytest.mark.parametrize("number", NUMBERS)
def test_every_kind_of_number_as_orjson_reads_it(number):
    for spelled in (number, f"[{number}]", f'{{"a":{number},"b":[{number},{number}]}}'):
        same_as_orjson(f'{{"method":"m","params":{{"n":{spelled}}},"x":{number}}}'.encode())


@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**70), 2**70))
def test_any_number(number):
    for text in {json.dumps(number), repr(number), f"{number!r}".replace("e", "E")}:
        if text in ("inf", "-inf") or "nan" in text:
            continue
        same_as_orjson(f'{{"method":"m","params":{{"n":{text},"m":[{text}]}}}}'.encode())


@given(st.dictionaries(names, json_values, max_size=5), st.dictionaries(names, json_values, max_size=3))
def test_any_params_and_members(params, extra):
    assume(type(params.get("_meta", {})) in (dict, type(None)))  # a refusal: test_decode_lazy's
    body = {"jsonrpc": "2.0", "method": "notifications/x", "params": params}
    body.update({key: value for key, value in extra.items() if key not in ("method", "params")})
    same_as_orjson(json.dumps(body, ensure_ascii=False).encode())
    same_as_orjson(json.dumps(body, ensure_ascii=True, indent=1).encode())  # escapes and whitespace: the parser's


@pytest.mark.parametrize("body", [
    b'{"method":"m","params":{"a":1,"a":2,"b":{"c":1,"c":[3]}},"params":{"z":0}}',  # duplicates: the last wins
    b'{"params":{"k":"v"},"method":"m","params":null}',
    b'{"method":"a","method":"b"}',
    b'{"m\\u0065thod":"m","params":{}}',  # an escaped key: the parser's
    b'{"method":"m\\n","params":{}}',  # an escaped method
    b'{"method":"m","params":{"s":"caf\\u00e9","t":"\xc3\xa9\xf0\x9f\x98\x80"}}',
    b'{"method":"m","a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7}',  # more members than the scan records
    b' \t{ "method" : "m" , "params" : { "a" : [ 1 , { } , [ ] , "" ] , "b" : true , "c" : false , "d" : null } } \n',
    b'{"method":"m","params":{"a":' + b'[' * 40 + b']' * 40 + b'}}',  # past the built depth
    b'{"method":"m","params":{"x":' + b'{"y":' * 30 + b'1' + b'}' * 30 + b'}}',
    b'{"method":"m","params":{"":"","\\"":"\\\\"}}',
])
def test_the_edges_of_what_is_built(body):
    same_as_orjson(body)


@pytest.mark.parametrize("mantissa", [0, 1, 7, 123456789012345, 999999999999999, 9007199254740991, 9007199254740992,
                                      9007199254740993, 12345678901234567, 99999999999999999, 123456789012345678])
def test_decimals_around_the_exact_fast_path(mantissa):
    # A mantissa of at most 2**53 times or over a power of ten up to 10**22 is one rounding; past either, dtoa.
    digits = str(mantissa)
    for scale in range(-26, 27):
        texts = [f"{digits}e{scale}", f"{digits}E+{scale}" if scale >= 0 else f"{digits}E{scale}"]
        for point in range(1, len(digits)):
            texts.append(f"{digits[:point]}.{digits[point:]}e{scale}")
        texts.append(f"0.{digits}e{scale}")
        texts.append(f"-{digits}.0e{scale}")
        for text in texts:
            same_as_orjson(f'{{"method":"m","params":{{"n":{text}}}}}'.encode())


ESCAPES = [b"\\n", b"\\t", b'\\"', b"\\\\", b"\\/", b"\\b", b"\\f", b"\\r", b"\\u0000", b"\\u0041", b"\\u007f", b"\\u0080",
           b"\\u00e9", b"\\u07ff", b"\\u0800", b"\\u20ac", b"\\uffff", b"\\ud800\\udc00", b"\\ud83d\\ude00", b"\\udbff\\udfff"]


@pytest.mark.parametrize("escape", ESCAPES, ids=repr)
def test_escaped_strings_are_built_as_orjson_reads_them(escape):
    # In a value, a key and a top-level member, at every place of a short string, beside raw UTF-8.
    for lead in range(0, 20, 3):
        text = b"a" * lead + escape + b"\xc3\xa9z" + escape
        same_as_orjson(b'{"method":"m","params":{"s":"' + text + b'","' + text + b'":[' + b'"' + text + b'"]},"x":"' + text + b'"}')


REFUSED = [
    b'{"method":"m","params":{"n":01}}', b'{"method":"m","params":{"n":-01}}', b'{"method":"m","params":{"n":1.}}',
    b'{"method":"m","params":{"n":.5}}', b'{"method":"m","params":{"n":-}}', b'{"method":"m","params":{"n":1e}}',
    b'{"method":"m","params":{"n":+1}}', b'{"method":"m","params":{"n":1e400}}', b'{"method":"m","params":{"b":tru}}',
    b'{"method":"m","params":{"b":nul}}', b'{"method":"m","params":{"a":[1,]}}', b'{"method":"m","params":{"a":1,}}',
    b'{"method":"m","params":{"a" 1}}', b'{"method":"m","params":{1:1}}', b'{"method":"m","params":{"a":[1 2]}}',
    b'{"method":"m"}x', b'{"method":"m"}{}', b'{"method":"m"\x00}', b'{"method":"m","params":{"s":"\x01"}}',
    b'{"method":"m","params":{"s":"\xff"}}', b'{"method":"m","params":{"\xc3":1}}', b'{"method":"m\x1f"}',
    b'{"method":"m","jsonrpc":"2.0', b'{"method":"m","jsonrpc":"2.0}',
    b'{"method":"m","params":' + b'[' * 40 + b']' * 39 + b'}',
    # valid, refused by the channel's rules
    b'{"method":5}', b'{"method":"m","method":null}', b'{"params":{}}', b'{"method":"m","params":[]}',
    b'{"method":"m","params":{"_meta":5}}', b'{"method":"m","params":{},"params":{"_meta":[]}}', b'[]', b'  ', b'',
]


@pytest.mark.parametrize("body", REFUSED, ids=repr)
def test_a_short_body_refused_as_the_pure_core_words_it(body):
    # The one pass leaves what it does not settle to orjson: the same error class and message on both cores.
    worded = []
    for core in ("c", "py"):
        module = load("mcp_notifications", core)
        with pytest.raises(module.FrameError) as refused:
            module.decode(b"\x00" + body)
        worded.append((type(refused.value).__name__, str(refused.value)))
    assert worded[0] == worded[1]


@pytest.mark.parametrize("body", [
    b'{"method":"m","params":{"_meta":5},"params":{"_meta":{}}}',  # the last params' _meta is the one read
    b'{"method":"m","params":{"_meta":5},"params":{}}',
    b'{"method":"m","params":{"a":{"_meta":5}}}',  # a nested _meta is no rule's
    b'{"jsonrpc":"2.0","jsonrpc":"2.01","method":"m"}', b'{"method":"m","jsonrpc":2.0}', b'{"jsonrpc":"2.0 ","method":"m"}', b'{"jsonrpc":"","method":"m"}',
])
def test_the_members_the_one_pass_reads_by_name(body):
    same_as_orjson(body)


def test_the_one_pass_hands_out_the_same_names_methods_and_version():
    # The compiled core's pass makes no new str for an MCP member's name, a method read before (two by
    # turns) or the envelope's "2.0"; the values are orjson's either way (same_as_orjson above).
    decode = load("mcp_notifications", "c").decode
    bodies = [b'\x00{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1,'
              b'"total":2,"message":"m","_meta":{}}}',
              b'\x00{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"l","data":1}}']
    first = [decode(body).notification for body in bodies]
    again = [decode(body).notification for body in bodies]
    for made, remade in zip(first, again):
        assert made["method"] is remade["method"] and made["jsonrpc"] is remade["jsonrpc"]
        assert [id(key) for key in made["params"]] == [id(key) for key in remade["params"]]
        assert [id(key) for key in made] == [id(key) for key in remade]


@pytest.mark.parametrize("member", ["level", "logger", "progressToken"])
def test_the_one_pass_hands_out_the_same_str_for_a_repeated_level_logger_or_token(member):
    # A log line's level and logger and a progress token repeat from one notification to the next: the
    # second decode hands out the first's str (the key cache); any other member's string is made anew.
    decode = load("mcp_notifications", "c").decode
    body = (b'\x00{"method":"m","params":{"%s":"info","other":"info","escaped":"\\u0069nfo"}}' % member.encode())
    made, remade = (decode(body).notification["params"] for _ in range(2))
    assert made == remade == {member: "info", "other": "info", "escaped": "info"}
    assert made[member] is remade[member]
    assert made["other"] is not remade["other"]
