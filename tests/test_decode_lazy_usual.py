"""Issue 35: the pure decode_lazy's short cuts (the usual heads and tails read without the regex or a
parse of the rest; params read through a view and settled by being flat) give what decode gives:
held by check_one (both cores, decode_lazy against decode) on every head, tail and method spelling
around them, and on nesting at the limit with and without a '[' in the first 512 bytes."""
from __future__ import annotations

import pytest

from test_decode_lazy import check_one

HEADS = [b'{"jsonrpc":"2.0","method":"', b'{"method":"', b'{"jsonrpc":"1.0","method":"', b'{ "method":"', b'{"x":1,"method":"']
TAILS = [b"}", b',"jsonrpc":"2.0"}', b',"jsonrpc":"2.0"} ', b"}\n", b',"jsonrpc":"2.1"}', b',"params":{}}', b',"x":"\\""}',
         b',"jsonrpc":2}', b"}}", b"", b",}", b',"x"}', b',"jsonrpc":"2.0",}']
METHODS = [b"notifications/progress", b"", b"a b", b"caf\xc3\xa9", b"tab\there", b"q\\\"", b"\\u0041", b"\x7f", b"~", b"\xff"]
PARAMS = [b"{}", b'{"a":1}', b'{"s":"[{"}', b'{"a":{"b":1}}', b'{"a":[1]}', b'{"_meta":[]}', b'{"_meta":{}}', b"null",
          b"[]", b'{"a":1}x', b'{"a":1},{"b":2}', b"{" + b",".join(b'"k%d":%d' % (i, i) for i in range(40)) + b"}"]


@pytest.mark.parametrize("head", HEADS, ids=repr)
def test_every_head_tail_method_and_params(head):
    for method in METHODS:
        for tail in TAILS:
            for params in PARAMS:
                check_one(b"\x00" + head + method + b'","params":' + params + tail)


def nested(lead: int, depth: int, inner: bytes) -> bytes:
    """Params nested depth deep (inner counted), with a string of lead bytes first where lead is set."""
    if not lead:
        k = depth + 1 - (inner == b"[1]")
        return b'{"a":' * (k - 1) + (inner if k else b"") + b"}" * (k - 1) if k > 1 else inner
    k = depth - (inner == b"[1]")
    return b'{"s":"' + b"x" * lead + b'","a":' + b'{"a":' * (k - 1) + b"{}" * (k == 0) + (inner if k else b"") + b"}" * (k - 1) + b"}"


@pytest.mark.parametrize("lead", [0, 500, 520], ids=lambda n: f"a {n}-byte string first")
def test_nesting_at_the_limit_through_the_view_and_in_brackets(lead):
    # The body's root counts one: params nested 1023 deep are read, 1024 deep refused (the params alone
    # would be read), whether read through the view first (no '[' in the first 512 bytes) or in brackets.
    for depth in (16, 17, 1022, 1023, 1024, 1025):
        for inner in (b"1", b"[1]"):
            check_one(b'\x00{"jsonrpc":"2.0","method":"m","params":' + nested(lead, depth, inner) + b"}")
        lists = b"[" * (depth - 1) + b"1" + b"]" * (depth - 1)  # a list's nesting, under a flat-looking first member
        check_one(b'\x00{"method":"m","params":{"s":"' + b"x" * lead + b'","a":' + lists + b"}}")
