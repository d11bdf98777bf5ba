"""Writes ``corpus_scanner/``: server lines for the relay scanner's fuzzer (``fuzz_scanner.py``).

Run from the repository root: ``python fuzz/make_scanner_corpus.py``. The files are
committed; rerun it when the cases below change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

CORPUS = Path(__file__).with_name("corpus_scanner")
CAPTURES = Path(__file__).resolve().parent.parent / "benchmarks" / "data"

LINES = [
    # As the SDKs write them: mcp 2.x envelope first, the TypeScript SDK and mcp 1.x envelope last.
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}\n',
    b'{"method":"notifications/progress","params":{"progressToken":"t","progress":3,"total":10},"jsonrpc":"2.0"}\n',
    b'{"method":"notifications/message","params":{"level":"info","logger":"x","data":"\xf0\x9f\x98\x80 ok"},"jsonrpc":"2.0"}\n',
    b'{"method":"notifications/tasks/status","params":{"taskId":"a","status":"working"},"jsonrpc":"2.0"}',
    b'{"method":"notifications/resources/updated","params":{"uri":"test://static/resource/1"},"jsonrpc":"2.0"}\r\n',
    b'{"method":"custom/thing","params":{"_meta":{"k":[1,2,{"id":3}]}},"jsonrpc":"2.0"}',
    # Envelope in the middle, odd whitespace, duplicates, escaped keys.
    b'{ "method" : "n/x" ,\t"jsonrpc"\n:\r"2.0" , "params" : { } }',
    b'{"method":"n/x","jsonrpc":"2.0","jsonrpc":"1.0"}', b'{"jsonrpc":"2.0","method":"n/x","jsonrpc":"2.0","params":{}}',
    b'{"jsonrpc":1,"jsonrpc":2}', b'{"jsonrpc":"2.0"}', b'{}', b'{"\\u006asonrpc":"2.0","method":"n/x"}',
    b'{"method":"a","method":7}', b'{"method":7,"method":"a"}', b'{"method":"a","params":{"_meta":1,"_meta":{}}}',
    b'{"method":"a","params":[]}', b'{"method":"a","params":null}', b'{"method":"a","params":{"_meta":null}}',
    b'{"method":"a","params":{"_meta":"x"}}', b'{"method":"a","params":{"\\u005fmeta":1}}', b'{"method":"\\u0061"}',
    # Shapes the strategies pin (tests/strategies.py SHAPES): _meta in a sibling after params, an earlier
    # params' _meta, whitespace before an envelope last's comma, role names nested and repeated.
    b'{"method":"m","params":{},"x":{"_meta":1}}', b'{"method":"m","params":{"a":{}},"x":[{"_meta":"s"}],"jsonrpc":"2.0"}',
    b'{"params":{"_meta":1},"method":"m","params":{}}', b'{"method":"m","params":{},"params":{"_meta":1}}',
    b'{"method":"m" ,"jsonrpc":"2.0"}', b'{"method":"m"\n,\t"jsonrpc":"2.0"}', b'{"method":"m" , "jsonrpc" : "2.0" }',
    b'{"method":"m","_meta":1,"params":{"p":{"_meta":2}}}', b'{"method":"m","params":{"params":{"_meta":1}}}',
    b'{"jsonrpc":"2.0","method":"m","jsonrpc":"2.0","params":{}}', b'{"method":"m","params":{"_meta":{},"_meta":"x"}}',
    b'{"_meta":{"_meta":1},"method":"m","params":{"_meta":null}}', b'{"x":{"params":1},"method":"m","params":{"a":[{"_meta":7}]}}',
    b'{"method":"m","x":{},"params":{"_meta":[]}}', b'{"\\u006dethod":"m","p\\u0061rams":{"\\u005fmeta":{}},"x":{"_meta":0}}',
    # Requests and responses: an id in any spelling.
    b'{"jsonrpc":"2.0","id":1,"result":{}}', b'{"method":"ping","id":2,"jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","method":"ping","\\u0069d":1}', b'{"jsonrpc":"2.0","method":"ping","i\\u0064":null}',
    b'{"jsonrpc":"2.0","method":"ping","params":{"id":1}}', b'[{"jsonrpc":"2.0","method":"n/x"}]', b'7', b'"s"', b'null',
    # What orjson refuses: lone surrogates (JavaScript cuts a string inside an emoji), bad UTF-8, numbers, depth.
    b'{"method":"notifications/message","params":{"data":"cut \\ud83d"},"jsonrpc":"2.0"}',
    b'{"jsonrpc":"2.0","method":"n/x","params":{"data":"\\udc00"}}', b'{"method":"n/x","params":{"d":"\\ud83d\\ude00"}}',
    b'{"method":"n/x","params":{"d":"\xed\xa0\x80"}}', b'{"method":"n/x","params":{"d":"\xc0\x80"}}',
    b'{"method":"n/x","params":{"d":"\xff"}}', b'\xef\xbb\xbf{"method":"n/x"}', b'{"method":"n/x","params":{"n":1e400}}',
    b'{"method":"n/x","params":{"n":-1e-400}}', b'{"method":"n/x","params":{"n":18446744073709551616}}',
    b'{"method":"n/x","params":{"n":NaN}}', b'{"method":"n/x","params":{"n":Infinity}}', b'{"method":"n/x","params":{"n":01}}',
    b'{"method":"n/x","params":{"n":1.7976931348623159e308}}', b'{"method":"n/x","params":{"n":1.7976931348623158e308}}',
    b'{"method":"n/x","params":{"d":' + b"[" * 1022 + b"]" * 1022 + b"}}",
    b'{"method":"n/x","params":{"d":' + b"[" * 1023 + b"]" * 1023 + b"}}",
    b'{"method":"n/x","params":{"d":"\x01"}}', b'{"method":"n/x",}', b'{"method":"n/x"} x', b'{"method":"n/x"',
    b'{"method":"n/x"}\x00', b'not json', b'', b' \n', b'\n\n', b'{"method":"n/x"}{"method":"n/y"}',
    b'{"method":"n/x"/* c */}', b"{'method':'n/x'}",
    # A metric series past the window (512 bytes): [t, v] pairs read by one number run, siblings in an
    # object (no array holds them), a refused number in the last pair.
    b'{"method":"n/x","params":{"points":[' + b",".join(b"[%d,%d.25]" % (1767225600 + i, i) for i in range(40)) + b"]}}",
    b'{"method":"n/x","params":{"p":' + b" " * 512 + b"[1,2],[3,4]}}",
    b'{"method":"n/x","params":{"points":[' + b",".join(b"[%d,%d]" % (i, i) for i in range(60)) + b",[7,01]]}}",
]


def _capture_lines() -> list[bytes]:
    lines: list[bytes] = []
    for capture in sorted(CAPTURES.glob("**/*.jsonl")):
        lines.extend(capture.read_bytes().splitlines()[:20])
    return lines


def main() -> None:
    CORPUS.mkdir(exist_ok=True)
    for line in dict.fromkeys(LINES + _capture_lines()):
        (CORPUS / hashlib.sha256(line).hexdigest()[:16]).write_bytes(line)


if __name__ == "__main__":
    main()
